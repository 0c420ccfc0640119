package division

import (
	"fmt"
	"sort"
)

// Move is one cell in a rebalance: what it is assigned now, where the
// division wants it, and how many of its replicas are ready (reflowed
// status).
type Move struct {
	Name    string
	Current int32
	Target  int32
	Ready   int32
}

// Step is the next assignment on the way from each cell's Current to its
// Target that never drops availability: cells that gain replicas are
// raised first, at most maxSurge replicas above the larger of the two
// totals in all; cells that lose replicas lose their unready ones at
// once and their ready ones only as far as the ready total stays at or
// above the floor, the smaller of the two totals (or the ready total
// now, when it is already below).
// Called again with the cells' new Current and Ready (each reconcile),
// it reaches Target; while replicas where they go are not ready, it
// holds. maxSurge below 1 is taken as 1, or nothing could ever move.
//
// Cells are handled in name order, so a step is the same for the same
// input. The result maps every cell to the count to write now.
func Step(moves []Move, maxSurge int32) (map[string]int32, error) {
	ms := append([]Move(nil), moves...)
	sort.Slice(ms, func(i, j int) bool { return ms[i].Name < ms[j].Name })
	var sumCur, sumTgt, sumReady int64
	for i, m := range ms {
		if m.Current < 0 || m.Target < 0 || m.Ready < 0 {
			return nil, fmt.Errorf("rebalance step: cell %q has a negative count", m.Name)
		}
		if i > 0 && ms[i-1].Name == m.Name {
			return nil, fmt.Errorf("rebalance step: cell %q is listed twice", m.Name)
		}
		sumCur += int64(m.Current)
		sumTgt += int64(m.Target)
		sumReady += int64(min(m.Ready, m.Current))
	}
	if maxSurge < 1 {
		maxSurge = 1
	}
	floor := min(sumCur, sumTgt)
	out := make(map[string]int32, len(ms))

	// Lower first. Replicas that are not ready go at once: removing them
	// costs no availability (a ReplicaSet scales down unready pods
	// first), and a failing cell's would otherwise block the move. Ready
	// ones go only beyond the floor: what was raised in earlier steps and
	// became ready pays for them. A floor that is not met (replicas
	// failing) is held where it is.
	removable := max(0, sumReady-min(floor, sumReady))
	var written int64
	for _, m := range ms {
		w := m.Current
		if m.Target < m.Current {
			unready := m.Current - min(m.Ready, m.Current)
			w -= min(m.Current-m.Target, unready)
			d := min(int64(w-m.Target), removable)
			w -= int32(d)
			removable -= d
		}
		out[m.Name] = w
		written += int64(w)
	}
	// Then raise, within the surge budget.
	// The budget counts from the target's total, not from the current
	// one: a move in progress has surged already.
	budget := sumTgt + int64(maxSurge) - written
	for _, m := range ms {
		if m.Target > m.Current && budget > 0 {
			d := min(int64(m.Target-m.Current), budget)
			out[m.Name] += int32(d)
			budget -= d
		}
	}
	return out, nil
}
