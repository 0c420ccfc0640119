package kinedata

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/cellfed/cellfed/pkg/storage"
)

// IdentityKey is the plane identity record's key (pkg/apiserver writes it).
const IdentityKey = "/cellfed/plane-identity"

// BackupOptions configure Backup.
type BackupOptions struct {
	From storage.Database
	// To is the backup file; written to To.tmp and renamed when complete.
	To string
	// KeyIDOf returns the KMS key ID that encrypted a value, if it is
	// encrypted: the header lists the keys a restore needs.
	KeyIDOf func(value []byte) (string, bool)
	Batch   int64
	// AfterSnapshot, when set, runs once a SQLite store's snapshot is
	// written, with its path; an error stops the backup there (tests look
	// at the snapshot with it).
	AfterSnapshot func(path string) error
}

// Backup writes a consistent snapshot of a store, which may be in use by
// a running plane, to a file. MySQL and PostgreSQL: every row is read in
// one REPEATABLE READ read-only transaction (one consistent snapshot).
// SQLite: VACUUM INTO copies the database in one read transaction to a
// temporary file next to the backup, which is then read.
func Backup(ctx context.Context, o BackupOptions) (Header, error) {
	if o.Batch <= 0 {
		o.Batch = 1000
	}
	from := o.From
	if from.Kind == storage.KindSQLite {
		snap := o.To + ".sqlite-snapshot"
		// VACUUM INTO writes into an empty file as it finds it: one only
		// the owner reads, created here and never through a symlink.
		f, err := createPrivate(snap)
		if err != nil {
			return Header{}, fmt.Errorf("creating the snapshot file: %w", err)
		}
		f.Close()
		defer os.Remove(snap)
		src, err := OpenSource(ctx, from)
		if err != nil {
			return Header{}, err
		}
		_, err = src.DB.ExecContext(ctx, `VACUUM INTO ?`, snap)
		src.Close()
		if err != nil {
			return Header{}, fmt.Errorf("snapshotting %s with VACUUM INTO %s: %w", from.Description, snap, err)
		}
		if o.AfterSnapshot != nil {
			if err := o.AfterSnapshot(snap); err != nil {
				return Header{}, err
			}
		}
		from, err = storage.DatabaseFor("sqlite://" + snap)
		if err != nil {
			return Header{}, err
		}
	}
	src, err := OpenSource(ctx, from)
	if err != nil {
		return Header{}, err
	}
	defer src.Close()
	tx, err := src.ReadTx(ctx)
	if err != nil {
		return Header{}, err
	}
	defer func() { _ = tx.Rollback() }()

	st, err := src.StatsOf(ctx, tx)
	if err != nil {
		return Header{}, err
	}
	h := Header{
		Backend: o.From.Kind, TakenAt: time.Now().UTC(),
		MaxRevision: st.MaxID, NextRevision: st.NextID, CompactRevision: st.CompactRevision, Rows: st.Rows,
	}
	// One pass for what the header needs to say before the rows: the
	// identity record and the KMS keys.
	keys := map[string]bool{}
	err = src.EachRow(ctx, tx, 0, o.Batch, func(r Row) error {
		if r.Name == IdentityKey && r.Deleted == 0 {
			h.Identity = slices.Clone(r.Value)
		}
		if o.KeyIDOf != nil {
			if id, ok := o.KeyIDOf(r.Value); ok {
				keys[id] = true
			}
		}
		return nil
	})
	if err != nil {
		return Header{}, err
	}
	for k := range keys {
		h.KMSKeyIDs = append(h.KMSKeyIDs, k)
	}
	slices.Sort(h.KMSKeyIDs)

	if err := os.MkdirAll(filepath.Dir(o.To), 0o700); err != nil {
		return Header{}, fmt.Errorf("creating the backup's directory: %w", err)
	}
	tmp := o.To + ".tmp"
	f, err := createPrivate(tmp)
	if err != nil {
		return Header{}, fmt.Errorf("creating the backup file: %w", err)
	}
	defer os.Remove(tmp)
	defer f.Close()
	w, err := NewFileWriter(f, h)
	if err != nil {
		return Header{}, err
	}
	if err := src.EachRow(ctx, tx, 0, o.Batch, w.Write); err != nil {
		return Header{}, err
	}
	if err := w.Close(); err != nil {
		return Header{}, err
	}
	if err := f.Sync(); err != nil {
		return Header{}, fmt.Errorf("writing the backup file: %w", err)
	}
	if err := f.Close(); err != nil {
		return Header{}, fmt.Errorf("writing the backup file: %w", err)
	}
	if err := os.Rename(tmp, o.To); err != nil {
		return Header{}, fmt.Errorf("completing the backup file: %w", err)
	}
	return h, nil
}

// createPrivate creates path anew for writing, mode 0600 whatever the
// umask: what is there already (a file an interrupted run left, a
// symlink) is removed, not followed or reused, and the file is created
// with O_EXCL, so nothing planted between the two is written through.
func createPrivate(path string) (*os.File, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	return f, nil
}

// ReadHeader reads a backup file's header.
func ReadHeader(path string) (Header, error) {
	f, r, err := openBackup(path)
	if err != nil {
		return Header{}, err
	}
	defer f.Close()
	return r.Header, nil
}

// openBackup opens a backup file and reads its header; the caller closes
// the file.
func openBackup(path string) (*os.File, *FileReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("opening the backup: %w", err)
	}
	r, err := NewFileReader(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, r, nil
}

// RestoreOptions configure Restore.
type RestoreOptions struct {
	From string
	To   storage.Database
	// Force overwrites a store that holds rows.
	Force bool
	// Seen is a revision clients may have seen (0: none known beyond the
	// backup and the overwritten store); Gap is added above the highest
	// known revision (DefaultRevisionGap when 0).
	Seen, Gap int64
	// Check, when set, vets the header before anything is written (the
	// plane's PKI and KMS keys).
	Check func(Header) error
}

// RestoreResult is what a restore did.
type RestoreResult struct {
	Header Header
	// Revision is the restored store's revision and compacted revision.
	Revision int64
	// Rows written; Dropped rows of compacted history.
	Rows, Dropped  int64
	OverwrittenMax int64
}

// Restore writes a backup into a stopped plane's store in one transaction.
// The store then starts at RestoreRevision, with its compaction marker
// there: clients holding any older resourceVersion (the backup's, or the
// newer ones the lost store served) get 410 Gone and relist, and none can
// watch from a revision the store has not reached. History below that
// revision is compacted as kine would (superseded rows and tombstones
// dropped); every key's newest row is kept as backed up.
func Restore(ctx context.Context, o RestoreOptions) (RestoreResult, error) {
	var res RestoreResult
	// Pass 1: check the whole file (row count, checksum) and collect the
	// rows compaction drops, before touching the target.
	superseded := map[int64]bool{}
	h, err := eachBackupRow(o.From, func(r Row) error {
		if r.Name != CompactKey && r.PrevRevision != 0 {
			superseded[r.PrevRevision] = true
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	res.Header = h
	if o.Check != nil {
		if err := o.Check(h); err != nil {
			return res, err
		}
	}
	// No plane may serve the store while it is replaced: its watch caches
	// would stand at revisions the restored store has not reached.
	release, err := storage.HoldExclusive(ctx, o.To, "cellfed-apiserver restore")
	if err != nil {
		return res, fmt.Errorf("refusing to restore: %w; nothing was written", err)
	}
	defer release()
	dst, err := OpenTarget(ctx, o.To)
	if err != nil {
		return res, err
	}
	defer dst.Close()
	st, err := dst.StatsOf(ctx, dst.DB)
	if err != nil {
		return res, err
	}
	if st.Rows > 0 && !o.Force {
		return res, fmt.Errorf("%s is not empty (%d rows up to revision %d): stop its plane and pass --force to replace its contents with the backup", o.To.Description, st.Rows, st.MaxID)
	}
	res.OverwrittenMax = max(st.MaxID, st.NextID)
	gap := o.Gap
	if gap == 0 {
		gap = DefaultRevisionGap
	}
	res.Revision = RestoreRevision(max(h.MaxRevision, h.NextRevision), res.OverwrittenMax, o.Seen, gap)

	tx, err := dst.DB.BeginTx(ctx, nil)
	if err != nil {
		return res, fmt.Errorf("starting the restore into %s: %w", o.To.Description, err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `DELETE FROM kine`); err != nil {
		return res, fmt.Errorf("deleting the rows of %s: %w", o.To.Description, err)
	}
	var batch []Row
	flush := func() error {
		err := dst.insert(ctx, tx, batch)
		batch = batch[:0]
		return err
	}
	_, err = eachBackupRow(o.From, func(r Row) error {
		if r.Name == CompactKey || r.Deleted != 0 || superseded[r.ID] {
			res.Dropped++
			return nil
		}
		res.Rows++
		batch = append(batch, r)
		if len(batch) == insertChunk {
			return flush()
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	batch = append(batch, Row{ID: res.Revision, Name: CompactKey, Created: 1, PrevRevision: res.Revision})
	if err := flush(); err != nil {
		return res, err
	}
	if err := tx.Commit(); err != nil {
		return res, fmt.Errorf("committing the restore into %s: %w", o.To.Description, err)
	}
	// After the commit: MySQL's ALTER TABLE would commit a transaction.
	if err := dst.SetCounter(ctx, dst.DB, res.Revision); err != nil {
		return res, err
	}
	return res, nil
}

// eachBackupRow reads a whole backup file, checking its trailer.
func eachBackupRow(path string, fn func(Row) error) (Header, error) {
	f, r, err := openBackup(path)
	if err != nil {
		return Header{}, err
	}
	defer f.Close()
	for {
		row, err := r.Next()
		if errors.Is(err, io.EOF) {
			return r.Header, nil
		}
		if err != nil {
			return r.Header, fmt.Errorf("%s: %w", path, err)
		}
		if err := fn(row); err != nil {
			return r.Header, err
		}
	}
}
