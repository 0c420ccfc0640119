package kinedata

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cellfed/cellfed/pkg/storage"
)

// SplitOptions configure Split.
type SplitOptions struct {
	// From is the plane's store the resource leaves; it is only read,
	// while the plane runs.
	From storage.Database
	// To is the resource's own database.
	To storage.Database
	// Prefix is the resource's key prefix, e.g. /registry/leases/.
	Prefix string
	// Force deletes the target's rows first; without it a target that
	// holds rows is refused.
	Force bool
	// Batch is the rows read and written per statement.
	Batch int64
	// Out receives progress lines and the verification report.
	Out io.Writer
	// ProgressEvery is the least time between two progress lines.
	ProgressEvery time.Duration
}

// SplitResult is what a split copy did.
type SplitResult struct {
	// Rows and Keys copied (every row of every key: the history too).
	Rows, Keys int64
	// Revision is the source's newest revision at the snapshot: the
	// target starts there.
	Revision int64
	Elapsed  time.Duration
}

// Split copies one resource's rows from a running plane's store into a
// database of its own, with their ids (every resourceVersion stays valid),
// plus kine's compaction marker, from one consistent snapshot. The target
// then starts at the source's newest revision (a gap row there, as kine
// fills its own gaps) and hands out ids above it, so no client holds a
// resourceVersion the new store has not reached and none is handed out
// twice. Last it re-reads the source and compares every key of the
// resource by hash: a write that slipped past the freeze shows there.
//
// The resource's writes must be frozen while it runs (see package
// writefreeze); the copy is repeatable with Force.
func Split(ctx context.Context, o SplitOptions) (SplitResult, error) {
	var res SplitResult
	if o.Batch <= 0 {
		return res, fmt.Errorf("batch size must be positive, got %d", o.Batch)
	}
	if !strings.HasPrefix(o.Prefix, "/") || !strings.HasSuffix(o.Prefix, "/") {
		return res, fmt.Errorf("key prefix %q must start and end with /", o.Prefix)
	}
	src, dst, err := OpenPair(ctx, o.From, o.To)
	if err != nil {
		return res, err
	}
	defer src.Close()
	defer dst.Close()

	dstStats, err := dst.StatsOf(ctx, dst.DB)
	if err != nil {
		return res, err
	}
	if dstStats.Rows > 0 {
		if !o.Force {
			return res, fmt.Errorf("%s already holds %d rows: give the resource an empty database, or pass --force to delete them first (a repeated split of the same resource)", o.To.Description, dstStats.Rows)
		}
		fmt.Fprintf(o.Out, "deleting the %d rows of %s (--force)\n", dstStats.Rows, o.To.Description)
		if err := dst.Wipe(ctx); err != nil {
			return res, err
		}
	}

	start := time.Now()
	tx, err := src.ReadTx(ctx)
	if err != nil {
		return res, err
	}
	defer func() { _ = tx.Rollback() }()
	srcStats, err := src.StatsOf(ctx, tx)
	if err != nil {
		return res, err
	}
	res.Revision = srcStats.MaxID
	fmt.Fprintf(o.Out, "copying the rows under %s (revisions up to %d) from %s to %s\n", o.Prefix, srcStats.MaxID, o.From.Description, o.To.Description)
	keys := map[string]bool{}
	var pending []Row
	flush := func() error {
		if err := dst.Insert(ctx, pending); err != nil {
			return err
		}
		pending = pending[:0]
		return nil
	}
	lastLine := start
	var scanned int64
	err = src.EachRow(ctx, tx, 0, o.Batch, func(r Row) error {
		scanned++
		if !movesWith(r.Name, o.Prefix) {
			return nil
		}
		if r.Name != CompactKey {
			keys[r.Name] = true
			res.Rows++
		}
		pending = append(pending, r)
		if int64(len(pending)) >= o.Batch {
			if err := flush(); err != nil {
				return err
			}
		}
		if now := time.Now(); now.Sub(lastLine) >= o.ProgressEvery {
			fmt.Fprintf(o.Out, "read %d of %d rows, %d of them the resource's (%.0f rows/s)\n", scanned, srcStats.Rows, res.Rows, float64(scanned)/now.Sub(start).Seconds())
			lastLine = now
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	last := int64(0)
	if len(pending) > 0 {
		last = pending[len(pending)-1].ID
	}
	if err := flush(); err != nil {
		return res, err
	}
	if last < srcStats.MaxID {
		if err := dst.Insert(ctx, []Row{startRow(srcStats.MaxID)}); err != nil {
			return res, err
		}
	}
	if err := dst.SetCounter(ctx, dst.DB, srcStats.MaxID); err != nil {
		return res, err
	}
	_ = tx.Rollback()
	res.Keys = int64(len(keys))
	res.Elapsed = time.Since(start)

	d, err := verifyPrefix(ctx, src, dst, o.Prefix, o.Batch)
	if err != nil {
		return res, err
	}
	if !d.Empty() {
		fmt.Fprintln(o.Out, d.String())
		return res, fmt.Errorf("%w under %s: were its writes frozen? Run the split again with --force once they are", ErrDiffer, o.Prefix)
	}
	fmt.Fprintf(o.Out, "verified: %d keys (%d rows) under %s equal in both databases; %s starts at revision %d\n",
		res.Keys, res.Rows, o.Prefix, o.To.Description, srcStats.MaxID)
	return res, nil
}

// movesWith reports whether a row goes to the resource's database: its
// keys, and kine's compaction marker, so that resourceVersions the source
// had compacted stay compacted.
func movesWith(name, prefix string) bool {
	return strings.HasPrefix(name, prefix) || name == CompactKey
}

// startRow is the gap row that makes a split-off store's newest revision
// the source's: kine's own gap filler (a deleted "gap-<id>" row, which
// kine never serves).
func startRow(id int64) Row {
	return Row{ID: id, Name: fmt.Sprintf("gap-%d", id), Deleted: 1}
}

// verifyPrefix compares the rows of every key under prefix in both stores.
func verifyPrefix(ctx context.Context, src, dst *Store, prefix string, batch int64) (Differences, error) {
	a, err := src.keyHashesUnder(ctx, prefix, batch)
	if err != nil {
		return Differences{}, err
	}
	b, err := dst.keyHashesUnder(ctx, prefix, batch)
	if err != nil {
		return Differences{}, err
	}
	return Diff(a, b), nil
}

// keyHashesUnder digests every key under prefix in one read transaction.
func (s *Store) keyHashesUnder(ctx context.Context, prefix string, batch int64) (map[string]KeyHash, error) {
	tx, err := s.ReadTx(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }()
	h := NewKeyHashes()
	err = s.EachRow(ctx, tx, 0, batch, func(r Row) error {
		if strings.HasPrefix(r.Name, prefix) {
			h.Add(r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return h.Sums(), nil
}
