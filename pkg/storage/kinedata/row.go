// Package kinedata moves kine's table between databases with every
// revision kept: migrate (copy a stopped plane's store to another
// database), backup (a consistent snapshot of a running plane's store into
// a file) and restore (that file into a stopped plane's store, started
// above every revision clients may have seen).
//
// kine keeps one table, kine, in which every write is a row and the row id
// IS the etcd revision (a Kubernetes resourceVersion). Copying rows with
// their ids, create_revision, prev_revision, lease, flags, value and
// old_value, and the compaction marker row compact_rev_key, keeps every
// resourceVersion a client holds valid. The pure parts (hashing, diffing,
// resume and progress decisions, the restore revision) are separate from
// the database and file I/O.
package kinedata

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
)

// CompactKey is the name of kine's compaction marker row: its
// prev_revision is the revision below which history is compacted.
const CompactKey = "compact_rev_key"

// Row is one row of kine's table.
type Row struct {
	ID             int64  `json:"id"`
	Name           string `json:"name"`
	Created        int64  `json:"created,omitempty"`
	Deleted        int64  `json:"deleted,omitempty"`
	CreateRevision int64  `json:"createRevision,omitempty"`
	PrevRevision   int64  `json:"prevRevision,omitempty"`
	Lease          int64  `json:"lease,omitempty"`
	Value          []byte `json:"value,omitempty"`
	OldValue       []byte `json:"oldValue,omitempty"`
}

// KeyHash is the digest of every row of one key, in id order.
type KeyHash [sha256.Size]byte

// KeyHashes accumulates one digest per key over rows given in id order.
// A key's digest covers its name (the map key) and, for each of its rows,
// the id (the revision), both flags, create_revision, prev_revision,
// lease, value and old_value, so a changed byte or revision anywhere
// differs. NULL and empty values hash alike: drivers disagree on them.
type KeyHashes struct {
	sums map[string]hash.Hash
}

// NewKeyHashes returns an empty accumulator.
func NewKeyHashes() *KeyHashes { return &KeyHashes{sums: map[string]hash.Hash{}} }

// Add hashes one row.
func (k *KeyHashes) Add(r Row) {
	h, ok := k.sums[r.Name]
	if !ok {
		h = sha256.New()
		k.sums[r.Name] = h
	}
	writeRow(h, r)
}

// Sums returns the digest of every key seen.
func (k *KeyHashes) Sums() map[string]KeyHash {
	out := make(map[string]KeyHash, len(k.sums))
	for name, h := range k.sums {
		var s KeyHash
		copy(s[:], h.Sum(nil))
		out[name] = s
	}
	return out
}

// RowHash is the digest of one row, name included.
func RowHash(r Row) KeyHash {
	h := sha256.New()
	writeBytes(h, []byte(r.Name))
	writeRow(h, r)
	var s KeyHash
	copy(s[:], h.Sum(nil))
	return s
}

func writeRow(h hash.Hash, r Row) {
	var b [8]byte
	for _, n := range []int64{r.ID, r.Created, r.Deleted, r.CreateRevision, r.PrevRevision, r.Lease} {
		binary.BigEndian.PutUint64(b[:], uint64(n))
		h.Write(b[:])
	}
	writeBytes(h, r.Value)
	writeBytes(h, r.OldValue)
}

func writeBytes(h hash.Hash, p []byte) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(len(p)))
	h.Write(b[:])
	h.Write(p)
}
