package storage

import (
	"bytes"
	"context"
	"fmt"

	"github.com/k3s-io/kine/pkg/server"
)

// checkedCreate is a kine backend that acknowledges a create only when the
// new row is in the database, and with the revision of that row.
//
// kine v0.17.5's Create, when its insert fails, looks the key up; when that
// read works and finds no key, it returns revision 0 and no error, and
// kine's server answers the transaction as succeeded at its current
// revision. The API server then acknowledges an object that was never
// written, and no watch ever sees it. It takes an insert that fails while
// a read succeeds: a PostgreSQL backend that outlived its killed
// postmaster beside one that did not (seen in TestPlaneSurvivesDatabaseRestart),
// a MySQL deadlock or lock wait timeout, a full disk, a trigger.
//
// Its create of a key that was deleted before (a second insert, after
// the first one found the key's history) stores the row but reports
// kine's current revision instead of the row's, since the second insert's
// revision goes to a variable that shadows the one returned. While other
// writes land, that is another write's revision: the API server would
// hand clients a wrong resourceVersion, and a read-back at it misses the
// row, so the create was retried and refused as "already exists" though
// it had been stored (seen in TestJoinStatusUnjoin: a join after an
// unjoin).
//
// Each create is therefore read back: the key's newest row, or the create
// that began its current life, must be this create's; its revision is the
// one returned. A create that stored nothing is an error, which the API
// server returns and its client retries. It costs one indexed read per
// create, two when the object changed between the write and the read.
type checkedCreate struct {
	server.Backend
}

func (c checkedCreate) Create(ctx context.Context, key string, value []byte, lease int64) (int64, error) {
	var err error
	for range createTries {
		var rev, stored int64
		rev, err = c.Backend.Create(ctx, key, value, lease)
		if err != nil {
			return rev, err
		}
		if stored, err = c.storedRevision(ctx, key, rev, value); err != nil {
			return 0, err
		}
		if stored != 0 {
			return stored, nil
		}
		// The insert failed and nothing was stored: a transient failure
		// (a busy or failing connection) is worth another try.
		err = fmt.Errorf("create of %s was not stored: kine reported revision %d without its row (an insert that failed); retry the request", key, rev)
	}
	return 0, err
}

// storedRevision returns the revision of the row a create of value
// stored, or 0 when there is none. reported is the revision kine
// reported.
func (c checkedCreate) storedRevision(ctx context.Context, key string, reported int64, value []byte) (int64, error) {
	_, kv, err := c.Backend.Get(ctx, key, 0, false)
	if err != nil {
		return 0, fmt.Errorf("create of %s: reading it back: %w", key, err)
	}
	if kv != nil && kv.ModRevision != kv.CreateRevision {
		// Changed since: the row that began this life of the key. A
		// compacted one is not an answer; the reported row may be.
		if _, created, err := c.Backend.Get(ctx, key, kv.CreateRevision, false); err == nil {
			kv = created
		}
	}
	if isCreateOf(kv, value) {
		return kv.ModRevision, nil
	}
	// Deleted since, or another life of the key began: the reported
	// revision, when it is the create's.
	_, kv, err = c.Backend.Get(ctx, key, reported, false)
	if err != nil {
		return 0, fmt.Errorf("create of %s: reading it back at revision %d: %w", key, reported, err)
	}
	if isCreateOf(kv, value) && kv.ModRevision == reported {
		return reported, nil
	}
	return 0, nil
}

// createTries bounds the creates tried when kine reports one it did not
// store.
const createTries = 3

// isCreateOf reports whether kv is a row that created its key with value.
// Values the API server writes carry the object's uid, so no other
// create has the same bytes.
func isCreateOf(kv *server.KeyValue, value []byte) bool {
	return kv != nil && kv.ModRevision == kv.CreateRevision && bytes.Equal(kv.Value, value)
}
