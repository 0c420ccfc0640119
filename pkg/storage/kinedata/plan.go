package kinedata

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Differences are the keys whose content differs between two stores.
type Differences struct {
	// Missing keys are in the source only, Extra in the target only,
	// Changed in both with different rows.
	Missing, Extra, Changed []string
}

// Empty is true when both stores hold the same keys with the same rows.
func (d Differences) Empty() bool {
	return len(d.Missing)+len(d.Extra)+len(d.Changed) == 0
}

// String lists the differences, at most limit keys of each kind.
func (d Differences) String() string {
	if d.Empty() {
		return "no differences"
	}
	var b strings.Builder
	for _, part := range []struct {
		what string
		keys []string
	}{
		{"missing in the target", d.Missing},
		{"only in the target", d.Extra},
		{"with different rows (value, revisions, lease or flags)", d.Changed},
	} {
		if len(part.keys) == 0 {
			continue
		}
		fmt.Fprintf(&b, "%d key(s) %s:", len(part.keys), part.what)
		for i, k := range part.keys {
			if i == 10 {
				fmt.Fprintf(&b, "\n  … and %d more", len(part.keys)-i)
				break
			}
			fmt.Fprintf(&b, "\n  %s", k)
		}
		b.WriteString("\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Diff compares two stores' key digests.
func Diff(source, target map[string]KeyHash) Differences {
	var d Differences
	for k, s := range source {
		t, ok := target[k]
		switch {
		case !ok:
			d.Missing = append(d.Missing, k)
		case t != s:
			d.Changed = append(d.Changed, k)
		}
	}
	for k := range target {
		if _, ok := source[k]; !ok {
			d.Extra = append(d.Extra, k)
		}
	}
	slices.Sort(d.Missing)
	slices.Sort(d.Extra)
	slices.Sort(d.Changed)
	return d
}

// StartMode says what to do with a target that already holds rows.
type StartMode int

const (
	// StartRefuse refuses a non-empty target.
	StartRefuse StartMode = iota
	// StartResume continues an interrupted copy after the target's rows.
	StartResume
	// StartForce deletes the target's rows first.
	StartForce
)

// ErrTargetNotEmpty is returned for a target holding rows without
// --resume or --force.
var ErrTargetNotEmpty = errors.New("target is not empty")

// Start decides where a copy starts: after which source id, and whether
// the target's rows are deleted first. targetMax is the target's highest
// id, 0 when it holds no rows.
func Start(targetMax int64, mode StartMode) (after int64, wipe bool, err error) {
	switch {
	case targetMax == 0:
		return 0, false, nil
	case mode == StartResume:
		return targetMax, false, nil
	case mode == StartForce:
		return 0, true, nil
	}
	return 0, false, fmt.Errorf("%w: it holds rows up to revision %d", ErrTargetNotEmpty, targetMax)
}

// Overlap is the id range (from, to] a resumed copy re-reads on both sides
// to prove the target's last rows are the source's: the last batch the
// interrupted run may have written.
func Overlap(targetMax, batch int64) (from, to int64) {
	return max(0, targetMax-batch), targetMax
}

// Progress reports a copy's progress with its rate and an ETA.
type Progress struct {
	// Total rows to copy in this run and Done so far.
	Total, Done int64
	Started     time.Time
}

// Line is one progress line at now.
func (p Progress) Line(now time.Time) string {
	elapsed := now.Sub(p.Started)
	pct := 100.0
	if p.Total > 0 {
		pct = 100 * float64(p.Done) / float64(p.Total)
	}
	rate := 0.0
	if elapsed > 0 {
		rate = float64(p.Done) / elapsed.Seconds()
	}
	eta := "unknown"
	switch {
	case p.Done >= p.Total:
		eta = "0s"
	case rate > 0:
		eta = (time.Duration(float64(p.Total-p.Done)/rate*float64(time.Second)) + time.Second/2).Truncate(time.Second).String()
	}
	return fmt.Sprintf("copied %d/%d rows (%.1f%%), %.0f rows/s, ETA %s", p.Done, p.Total, pct, rate, eta)
}

// DefaultRevisionGap is how far above every known revision a restored
// store starts, for the writes a lost database may have served after its
// last known revision. Revisions are 64-bit: a million per restore costs
// nothing.
const DefaultRevisionGap = 1_000_000

// RestoreRevision is the revision a restored store starts at: above the
// backup's newest row, the overwritten store's newest row and any revision
// the operator knows clients have seen, plus gap. The restore writes its
// compaction marker there, so every resourceVersion a client holds is
// older than the compacted revision (410 Gone, and client-go relists)
// and none is newer than the store (no watch can start in its future).
func RestoreRevision(backupMax, overwrittenMax, seen, gap int64) int64 {
	return max(backupMax, overwrittenMax, seen) + max(gap, 1)
}
