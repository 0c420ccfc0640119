package division

import "sort"

// referenceDivide is the division as it was first written: replicas
// handed out one at a time to the cell with the highest priority
// (seat.before), O(replicas × cells). It stays here as the reference
// the O(cells log cells) Divide must match on small inputs.
func referenceDivide(in Input) (Result, error) {
	if err := validate(in); err != nil {
		return Result{}, err
	}
	cells := append([]Cell(nil), in.Cells...)
	sort.Slice(cells, func(i, j int) bool { return cells[i].Name < cells[j].Name })
	out := Result{Cells: make([]Assignment, len(cells))}
	for i, c := range cells {
		out.Cells[i].Name = c.Name
	}
	if in.Mode != ModeDivide {
		for i, c := range cells {
			a := &out.Cells[i]
			a.Target = in.Replicas
			if c.Override != nil {
				a.Target, a.Reason = *c.Override, ReasonOverride
			}
			a.Replicas = a.Target
			if c.Held && a.Reason == "" {
				a.Replicas, a.Reason = c.Current, ReasonHeld
			}
		}
		return out, nil
	}
	left := int64(in.Replicas)
	anyHealthy := false
	for _, c := range cells {
		if c.Override == nil && !c.Failing {
			anyHealthy = true
		}
	}
	type refSeat struct {
		seat
		blocked bool
	}
	var seats []*refSeat
	for i, c := range cells {
		a := &out.Cells[i]
		switch {
		case c.Override != nil:
			a.Target, a.Reason = *c.Override, ReasonOverride
			left -= int64(*c.Override)
			continue
		case in.Failover && c.Failing && anyHealthy:
			a.Reason = ReasonFailover
			continue
		}
		s := &refSeat{seat: newSeat(in, i, c)}
		seats = append(seats, s)
	}
	var unplaced int64
	if left < 0 {
		unplaced = left
		left = 0
	}
	var full []*refSeat
	for ; left > 0; left-- {
		var best *refSeat
		full = full[:0]
		for _, s := range seats {
			if s.max >= 0 && s.n >= s.max {
				full = append(full, s)
				continue
			}
			if s.weight == 0 && s.n >= s.min {
				continue
			}
			if best == nil || s.before(&best.seat) {
				best = s
			}
		}
		for _, s := range full {
			if best == nil || s.before(&best.seat) {
				s.blocked = true
			}
		}
		if best == nil {
			break
		}
		best.n++
	}
	out.Unplaced = clampInt32(unplaced + left)
	for _, s := range seats {
		a := &out.Cells[s.i]
		a.Target = int32(s.n)
		switch {
		case s.blocked && s.capped:
			a.Reason = ReasonCapacity
		case s.blocked:
			a.Reason = ReasonMax
		}
	}
	for i, c := range cells {
		a := &out.Cells[i]
		a.Replicas = a.Target
		if c.Held && a.Reason != ReasonOverride {
			a.Replicas, a.Reason = c.Current, ReasonHeld
		}
	}
	return out, nil
}
