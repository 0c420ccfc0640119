package kinedata

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/cellfed/cellfed/pkg/storage"
)

// MigrateOptions configure Migrate.
type MigrateOptions struct {
	From, To storage.Database
	// Mode says what to do with a target that holds rows.
	Mode StartMode
	// Batch is the rows copied per transaction.
	Batch int64
	// Out receives progress lines and the verification report.
	Out io.Writer
	// ProgressEvery is the least time between two progress lines.
	ProgressEvery time.Duration
	// AfterBatch, when set, runs after each committed batch with the last
	// copied id; an error stops the copy there (tests interrupt with it).
	AfterBatch func(lastID int64) error
}

// MigrateResult is what a migration did.
type MigrateResult struct {
	Copied  int64
	Source  Stats
	Elapsed time.Duration
}

// ErrDiffer is returned when the verification finds differences.
var ErrDiffer = fmt.Errorf("the target differs from the source")

// Migrate copies every row of a stopped plane's store into another
// database with ids and revisions kept, sets the target's revision
// counter to continue above the source's, and verifies every key. It never
// writes to the source. Interrupted, it is resumed with StartResume.
func Migrate(ctx context.Context, o MigrateOptions) (MigrateResult, error) {
	var res MigrateResult
	if o.Batch <= 0 {
		return res, fmt.Errorf("batch size must be positive, got %d", o.Batch)
	}
	// A plane writing the source would leave the copy behind it; one
	// serving the target would not see the rows copied under it.
	for _, side := range []struct {
		flag string
		db   storage.Database
	}{{"--from", o.From}, {"--to", o.To}} {
		release, err := storage.HoldExclusive(ctx, side.db, "cellfed-apiserver migrate")
		if err != nil {
			return res, fmt.Errorf("refusing to migrate: %s: %w; nothing was copied", side.flag, err)
		}
		defer release()
	}
	src, dst, err := OpenPair(ctx, o.From, o.To)
	if err != nil {
		return res, err
	}
	defer src.Close()
	defer dst.Close()

	srcStats, err := src.StatsOf(ctx, src.DB)
	if err != nil {
		return res, err
	}
	res.Source = srcStats
	dstStats, err := dst.StatsOf(ctx, dst.DB)
	if err != nil {
		return res, err
	}
	after, wipe, err := Start(dstStats.MaxID, o.Mode)
	if err != nil {
		return res, fmt.Errorf("%s: %w; pass --resume to continue an interrupted migration into it, or --force to delete its rows first", o.To.Description, err)
	}
	if wipe {
		fmt.Fprintf(o.Out, "deleting the %d rows of %s (--force)\n", dstStats.Rows, o.To.Description)
		if err := dst.Wipe(ctx); err != nil {
			return res, err
		}
	}
	if after > 0 {
		if err := checkOverlap(ctx, src, dst, after, o.Batch); err != nil {
			return res, err
		}
		fmt.Fprintf(o.Out, "resuming after revision %d: the target's last %d rows match the source's\n", after, min(o.Batch, after))
	}

	var remaining int64
	if err := src.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM kine WHERE id > `+src.ph(1), after).Scan(&remaining); err != nil {
		return res, fmt.Errorf("counting the rows to copy from %s: %w", o.From.Description, err)
	}
	fmt.Fprintf(o.Out, "copying %d rows (revisions %d–%d) from %s to %s\n", remaining, after+1, srcStats.MaxID, o.From.Description, o.To.Description)
	p := Progress{Total: remaining, Started: time.Now()}
	lastLine, printed := p.Started, int64(-1)
	for {
		rows, err := src.ReadRows(ctx, src.DB, after, 0, o.Batch)
		if err != nil {
			return res, err
		}
		if len(rows) == 0 {
			break
		}
		if err := dst.Insert(ctx, rows); err != nil {
			return res, err
		}
		after = rows[len(rows)-1].ID
		p.Done += int64(len(rows))
		res.Copied = p.Done
		if now := time.Now(); now.Sub(lastLine) >= o.ProgressEvery {
			fmt.Fprintln(o.Out, p.Line(now))
			lastLine, printed = now, p.Done
		}
		if o.AfterBatch != nil {
			if err := o.AfterBatch(after); err != nil {
				return res, err
			}
		}
	}
	if printed != p.Done {
		fmt.Fprintln(o.Out, p.Line(time.Now()))
	}
	if err := dst.SetCounter(ctx, dst.DB, srcStats.NextID); err != nil {
		return res, err
	}
	res.Elapsed = time.Since(p.Started)

	d, err := Verify(ctx, src, dst, o.Batch)
	if err != nil {
		return res, err
	}
	if !d.Empty() {
		fmt.Fprintln(o.Out, d.String())
		return res, ErrDiffer
	}
	dstStats, err = dst.StatsOf(ctx, dst.DB)
	if err != nil {
		return res, err
	}
	if dstStats.MaxID != srcStats.MaxID || dstStats.CompactRevision != srcStats.CompactRevision || dstStats.Rows != srcStats.Rows {
		return res, fmt.Errorf("%w: source has %d rows up to revision %d compacted at %d, target %d rows up to %d compacted at %d",
			ErrDiffer, srcStats.Rows, srcStats.MaxID, srcStats.CompactRevision, dstStats.Rows, dstStats.MaxID, dstStats.CompactRevision)
	}
	fmt.Fprintf(o.Out, "verified: %d rows, every key's rows (value, revisions, lease, flags) equal; revision %d, compacted at %d; the target's next revision is %d\n",
		dstStats.Rows, dstStats.MaxID, dstStats.CompactRevision, srcStats.NextID+1)
	return res, nil
}

// checkOverlap proves the target's last batch of rows equals the source's
// rows in that range before a resumed copy continues after them.
func checkOverlap(ctx context.Context, src, dst *Store, targetMax, batch int64) error {
	from, to := Overlap(targetMax, batch)
	a, err := src.ReadRows(ctx, src.DB, from, to, 0)
	if err != nil {
		return err
	}
	b, err := dst.ReadRows(ctx, dst.DB, from, to, 0)
	if err != nil {
		return err
	}
	if len(a) != len(b) {
		return fmt.Errorf("cannot resume: the target holds %d rows in revisions %d–%d where the source holds %d; it is not an interrupted copy of this source — start over with --force", len(b), from+1, to, len(a))
	}
	for i := range a {
		if RowHash(a[i]) != RowHash(b[i]) {
			return fmt.Errorf("cannot resume: the target's row %d (%s) differs from the source's (%s) — it is not an interrupted copy of this source; start over with --force", b[i].ID, b[i].Name, a[i].Name)
		}
	}
	return nil
}

// Verify digests every key of both stores and compares them.
func Verify(ctx context.Context, src, dst *Store, batch int64) (Differences, error) {
	a, err := src.KeyHashes(ctx, batch)
	if err != nil {
		return Differences{}, err
	}
	b, err := dst.KeyHashes(ctx, batch)
	if err != nil {
		return Differences{}, err
	}
	return Diff(a, b), nil
}
