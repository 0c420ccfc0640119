// Package division divides a federated workload's replicas among the
// cells (or clusters) it is placed on: the pure decision behind
// spec.replicaDivision. It reads no clients and no clock; the caller says
// what each cell reports (reflowed status) and whether it is failing, and
// gets back how many replicas each cell should run.
//
// # The rule
//
// Replicas are handed out one at a time, always to the same cell for the
// same inputs. Every cell first gets its minReplicas (while replicas
// last, by the priority below). Each further replica goes to the cell,
// among those below their maxReplicas (and their capacity), with the
// highest priority
//
//	weight / (2·assigned + 1)
//
// (Sainte-Laguë, Webster's divisor method), which follows the weights as
// closely as whole replicas can. Ties are broken by a hash of the object
// key and the cell name (FNV-1a), then by the cell name, so the extra
// replica of an uneven division lands on the same cell on every reconcile
// and after every restart, while different objects spread their extras
// over different cells instead of all on the first name.
//
// Divide computes that outcome without handing replicas out one at a
// time: proportional shares by a threshold, then the last few replicas
// in the order above (handout.go), in O(cells log cells) whatever the
// replicas, with 64-bit (and 128-bit for comparisons) arithmetic, so
// MaxInt32 replicas or weights cost what 10 do.
//
// Because the division of n+1 replicas is the division of n plus one more
// step of the same sequence, scaling up by one adds one replica to
// exactly one cell and never removes one from any cell; scaling down by
// one removes exactly one.
//
// # What holds a cell's count
//
//   - An explicit per-cell replicas override wins: the cell runs exactly
//     that, and the others divide what is left.
//   - A cell outside the placement mask keeps what it runs now (Current):
//     a staged release never moves replicas. Targets are still computed
//     over the whole placement, so a released cell never absorbs the share
//     of a held one.
//   - With failover, a cell that is offline or whose replicas do not
//     become ready (Failing, decided by the caller) gets nothing, and its
//     share is divided among the others; if every cell is failing the
//     division is left as if none were.
//   - With dynamic capacity, a cell that reports fewer available replicas
//     than it was asked to run (Available < Current) gets at most what it
//     reports it can run; the rest goes to the others.
package division

import (
	"fmt"
	"hash/fnv"
	"sort"
)

// Mode says whether replicas are divided among cells or run in full in
// each.
type Mode string

const (
	// ModeDuplicate runs the template's replicas in every cell (KubeFed's and
	// cellfed's behaviour without a division). The default.
	ModeDuplicate Mode = "Duplicate"
	// ModeDivide divides the template's replicas among the cells.
	ModeDivide Mode = "Divide"
)

// Cell is one placed cell (or cluster) and what is known about it.
type Cell struct {
	// Name of the cell (or cluster), unique in the input.
	Name string
	// Weight is the cell's relative share. 0 gives it only MinReplicas.
	Weight int32
	// MinReplicas is handed out first, while replicas last.
	MinReplicas int32
	// MaxReplicas caps the cell; nil: no cap.
	MaxReplicas *int32
	// Override is an explicit replicas override for this cell; it wins.
	Override *int32
	// Current is what the cell is assigned now (the last division
	// written there); held cells keep it.
	Current int32
	// Held says the cell is outside the placement mask.
	Held bool
	// Available is the member object's reported available replicas
	// (status reflow); nil while unknown.
	Available *int32
	// Failing says the cell is offline or its replicas have not become
	// ready within the caller's window.
	Failing bool
}

// Input is a division to make.
type Input struct {
	// Key names the object (namespace/name); it seeds the tie-break so
	// different objects place their remainders on different cells.
	Key string
	// Mode is Divide or Duplicate ("" is Duplicate).
	Mode Mode
	// Replicas is the template's replicas.
	Replicas int32
	// Dynamic caps a cell that runs fewer available replicas than it was
	// assigned at what it reports available.
	Dynamic bool
	// Failover moves a failing cell's share to the others.
	Failover bool
	// Cells are the placed cells, in any order.
	Cells []Cell
}

// Assignment is the outcome for one cell.
type Assignment struct {
	// Name of the cell.
	Name string
	// Target is what the cell runs once the division is applied in full.
	Target int32
	// Replicas is what to write to the cell now: Target, except for a
	// held cell, which keeps Current.
	Replicas int32
	// Reason says why the cell's count is not the weighted share: one of
	// the Reason constants, "" when it is.
	Reason Reason
}

// Reason explains an assignment that is not simply the weighted share.
type Reason string

// Reasons, in the order they win.
const (
	ReasonOverride Reason = "Override" // an explicit per-cell replicas override
	ReasonHeld     Reason = "Held"     // outside the placement mask: keeps Current
	ReasonFailover Reason = "Failover" // failing: its share moved to the others
	ReasonCapacity Reason = "Capacity" // capped at its reported available replicas
	ReasonMax      Reason = "MaxReplicas"
)

// Result is a division.
type Result struct {
	// Cells are the assignments, sorted by name.
	Cells []Assignment
	// Unplaced is how many replicas no cell could take (every cell at its
	// max or capacity, or overrides taking more than the total).
	// Negative when overrides add up to more than Replicas.
	Unplaced int32
}

// Replicas returns the assignment of the named cell (Replicas) and
// whether it is in the result.
func (r Result) Replicas(name string) (int32, bool) {
	for _, a := range r.Cells {
		if a.Name == name {
			return a.Replicas, true
		}
	}
	return 0, false
}

// Divide divides in.Replicas among in.Cells by the rule in the package
// comment. It fails only on an input no caller should build: duplicate
// or empty names, negative numbers, a max below its min.
func Divide(in Input) (Result, error) {
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
	var seats []*seat
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
		s := newSeat(in, i, c)
		seats = append(seats, &s)
	}
	var unplaced int64
	if left < 0 {
		unplaced = left
		left = 0
	}
	handed := handOut(seats, left)
	out.Unplaced = clampInt32(unplaced + left - handed)
	blocked := blockedSeats(seats, left, handed)
	for k, s := range seats {
		a := &out.Cells[s.i]
		a.Target = int32(s.n) // s.n <= in.Replicas
		switch {
		case blocked[k] && s.capped:
			a.Reason = ReasonCapacity
		case blocked[k]:
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

// seat is a cell taking part in the hand-out.
type seat struct {
	i      int
	name   string
	weight int64
	min    int64
	max    int64 // -1: none
	capped bool  // max comes from reported capacity
	tie    uint32
	n      int64
}

func newSeat(in Input, i int, c Cell) seat {
	s := seat{i: i, weight: int64(c.Weight), min: int64(c.MinReplicas), max: -1, tie: tieBreak(in.Key, c.Name), name: c.Name}
	if c.MaxReplicas != nil {
		s.max = int64(*c.MaxReplicas)
	}
	if in.Dynamic && c.Available != nil && *c.Available < c.Current {
		if s.max < 0 || int64(*c.Available) < s.max {
			s.max, s.capped = int64(*c.Available), true
		}
	}
	return s
}

// before says whether s gets the next replica rather than o: a cell below
// its minimum first, then the higher weight/(2n+1) (among cells below
// their minimum too), then the tie-break.
func (s *seat) before(o *seat) bool {
	sm, om := s.n < s.min, o.n < o.min
	if sm != om {
		return sm
	}
	// s.weight/(2 s.n+1) vs o.weight/(2 o.n+1), without division.
	if c := compareShares(s.weight, s.n, o.weight, o.n); c != 0 {
		return c > 0
	}
	if s.tie != o.tie {
		return s.tie < o.tie
	}
	return s.name < o.name
}

func tieBreak(key, name string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(name))
	return h.Sum32()
}

func validate(in Input) error {
	if in.Mode != "" && in.Mode != ModeDivide && in.Mode != ModeDuplicate {
		return fmt.Errorf("division mode %q: want %s or %s", in.Mode, ModeDivide, ModeDuplicate)
	}
	if in.Replicas < 0 {
		return fmt.Errorf("division of %d replicas: replicas must not be negative", in.Replicas)
	}
	seen := make(map[string]bool, len(in.Cells))
	for _, c := range in.Cells {
		switch {
		case c.Name == "":
			return fmt.Errorf("division: a cell has no name")
		case seen[c.Name]:
			return fmt.Errorf("division: cell %q is listed twice", c.Name)
		case c.Weight < 0 || c.MinReplicas < 0 || c.Current < 0:
			return fmt.Errorf("division: cell %q has a negative weight, minReplicas or current count", c.Name)
		case c.MaxReplicas != nil && *c.MaxReplicas < c.MinReplicas:
			return fmt.Errorf("division: cell %q has maxReplicas %d below minReplicas %d", c.Name, *c.MaxReplicas, c.MinReplicas)
		case c.Override != nil && *c.Override < 0:
			return fmt.Errorf("division: cell %q has a negative replicas override", c.Name)
		}
		seen[c.Name] = true
	}
	return nil
}
