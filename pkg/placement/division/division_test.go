package division

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func i32(v int32) *int32 { return &v }

// counts renders a result as "name=replicas(target,reason) ..." for
// compact expectations; target and reason only when they differ from
// the plain case.
func counts(r Result) string {
	var b strings.Builder
	for i, a := range r.Cells {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d", a.Name, a.Replicas)
		if a.Target != a.Replicas || a.Reason != "" {
			fmt.Fprintf(&b, "(%d", a.Target)
			if a.Reason != "" {
				fmt.Fprintf(&b, ",%s", a.Reason)
			}
			b.WriteByte(')')
		}
	}
	if r.Unplaced != 0 {
		fmt.Fprintf(&b, " unplaced=%d", r.Unplaced)
	}
	return strings.TrimSpace(b.String())
}

func weighted(ws ...int32) []Cell {
	cells := make([]Cell, len(ws))
	for i, w := range ws {
		cells[i] = Cell{Name: string(rune('a' + i)), Weight: w}
	}
	return cells
}

func with(cells []Cell, name string, f func(*Cell)) []Cell {
	out := append([]Cell(nil), cells...)
	for i := range out {
		if out[i].Name == name {
			f(&out[i])
		}
	}
	return out
}

func TestDivide(t *testing.T) {
	const key = "shop/web"
	tests := []struct {
		name string
		in   Input
		want string
	}{
		{"duplicate is the default: every cell runs all",
			Input{Key: key, Replicas: 6, Cells: weighted(1, 2, 2)},
			"a=6 b=6 c=6"},
		{"duplicate: an override wins, a held cell keeps what it runs",
			Input{Key: key, Mode: ModeDuplicate, Replicas: 6, Cells: with(with(weighted(1, 1, 1), "a", func(c *Cell) { c.Override = i32(2) }), "b", func(c *Cell) { c.Held, c.Current = true, 5 })},
			"a=2(2,Override) b=5(6,Held) c=6"},
		{"weights 1:2:2 divide 10 exactly",
			Input{Key: key, Mode: ModeDivide, Replicas: 10, Cells: weighted(1, 2, 2)},
			"a=2 b=4 c=4"},
		{"weights 1:2:2, 11: the extra goes to one of the heavy cells",
			Input{Key: key, Mode: ModeDivide, Replicas: 11, Cells: weighted(1, 2, 2)},
			"a=2 b=5 c=4"},
		{"weights 1:2:2, 11, another object: its extra may land elsewhere",
			Input{Key: "shop/mail", Mode: ModeDivide, Replicas: 11, Cells: weighted(1, 2, 2)},
			"a=2 b=4 c=5"},
		{"equal weights, remainder of 1",
			Input{Key: key, Mode: ModeDivide, Replicas: 10, Cells: weighted(1, 1, 1)},
			"a=4 b=3 c=3"},
		{"equal weights, remainder of 1, another object",
			Input{Key: "shop/mail", Mode: ModeDivide, Replicas: 10, Cells: weighted(1, 1, 1)},
			"a=3 b=3 c=4"},
		{"weight 0 gets only its minimum",
			Input{Key: key, Mode: ModeDivide, Replicas: 10, Cells: with(weighted(0, 1, 1), "a", func(c *Cell) { c.MinReplicas = 2 })},
			"a=2 b=4 c=4"},
		{"all weights 0: only minimums, the rest unplaced",
			Input{Key: key, Mode: ModeDivide, Replicas: 5, Cells: with(weighted(0, 0), "a", func(c *Cell) { c.MinReplicas = 1 })},
			"a=1 b=0 unplaced=4"},
		{"minimums come first",
			Input{Key: key, Mode: ModeDivide, Replicas: 6, Cells: with(weighted(1, 5), "a", func(c *Cell) { c.MinReplicas = 3 })},
			"a=3 b=3"},
		{"minimums above the total: by weight",
			Input{Key: key, Mode: ModeDivide, Replicas: 3, Cells: with(with(weighted(1, 3), "a", func(c *Cell) { c.MinReplicas = 2 }), "b", func(c *Cell) { c.MinReplicas = 2 })},
			"a=1 b=2"},
		{"a maximum moves the rest to the others",
			Input{Key: key, Mode: ModeDivide, Replicas: 10, Cells: with(weighted(1, 2, 2), "c", func(c *Cell) { c.MaxReplicas = i32(2) })},
			"a=3 b=5 c=2(2,MaxReplicas)"},
		{"a maximum above the share is not a reason",
			Input{Key: key, Mode: ModeDivide, Replicas: 10, Cells: with(weighted(1, 2, 2), "c", func(c *Cell) { c.MaxReplicas = i32(4) })},
			"a=2 b=4 c=4"},
		{"every cell at its maximum: the rest is unplaced",
			Input{Key: key, Mode: ModeDivide, Replicas: 10, Cells: with(with(weighted(1, 1), "a", func(c *Cell) { c.MaxReplicas = i32(3) }), "b", func(c *Cell) { c.MaxReplicas = i32(3) })},
			"a=3(3,MaxReplicas) b=3(3,MaxReplicas) unplaced=4"},
		{"an explicit override wins, the others divide the rest",
			Input{Key: key, Mode: ModeDivide, Replicas: 10, Cells: with(weighted(1, 2, 2), "b", func(c *Cell) { c.Override = i32(7) })},
			"a=1 b=7(7,Override) c=2"},
		{"overrides above the total: nothing left, reported",
			Input{Key: key, Mode: ModeDivide, Replicas: 4, Cells: with(weighted(1, 1), "a", func(c *Cell) { c.Override = i32(6) })},
			"a=6(6,Override) b=0 unplaced=-2"},
		{"mask: a held cell keeps what it runs, the released ones get their targets",
			Input{Key: key, Mode: ModeDivide, Replicas: 11, Cells: with(withCurrent(weighted(1, 2, 2), 2, 4, 4), "c", func(c *Cell) { c.Held = true })},
			"a=2 b=5 c=4(4,Held)"},
		{"mask: a released cell does not absorb a held cell's share",
			Input{Key: key, Mode: ModeDivide, Replicas: 10, Cells: with(withCurrent(weighted(1, 2, 2), 0, 0, 0), "c", func(c *Cell) { c.Held = true })},
			"a=2 b=4 c=0(4,Held)"},
		{"mask: an override on a held cell still wins",
			Input{Key: key, Mode: ModeDivide, Replicas: 10, Cells: with(withCurrent(weighted(1, 2, 2), 2, 4, 4), "c", func(c *Cell) { c.Held, c.Override = true, i32(1) })},
			"a=3 b=6 c=1(1,Override)"},
		{"failover: a failing cell's share moves to the others",
			Input{Key: key, Mode: ModeDivide, Failover: true, Replicas: 10, Cells: with(weighted(1, 2, 2), "c", func(c *Cell) { c.Failing = true })},
			"a=3 b=7 c=0(0,Failover)"},
		{"failover off: a failing cell keeps its share",
			Input{Key: key, Mode: ModeDivide, Replicas: 10, Cells: with(weighted(1, 2, 2), "c", func(c *Cell) { c.Failing = true })},
			"a=2 b=4 c=4"},
		{"failover with every cell failing: divided as if none were",
			Input{Key: key, Mode: ModeDivide, Failover: true, Replicas: 10, Cells: with(with(weighted(1, 1), "a", func(c *Cell) { c.Failing = true }), "b", func(c *Cell) { c.Failing = true })},
			"a=5 b=5"},
		{"failover respects the others' maximums",
			Input{Key: key, Mode: ModeDivide, Failover: true, Replicas: 10, Cells: with(with(weighted(1, 1, 1), "c", func(c *Cell) { c.Failing = true }), "b", func(c *Cell) { c.MaxReplicas = i32(4) })},
			"a=6 b=4(4,MaxReplicas) c=0(0,Failover) "},
		{"dynamic: a cell running fewer available than assigned is capped at them",
			Input{Key: key, Mode: ModeDivide, Dynamic: true, Replicas: 10, Cells: with(withCurrent(weighted(1, 2, 2), 2, 4, 4), "c", func(c *Cell) { c.Available = i32(1) })},
			"a=3 b=6 c=1(1,Capacity)"},
		{"dynamic: a cell running all it was assigned is not capped",
			Input{Key: key, Mode: ModeDivide, Dynamic: true, Replicas: 12, Cells: with(withCurrent(weighted(1, 2, 2), 2, 4, 4), "c", func(c *Cell) { c.Available = i32(4) })},
			"a=2 b=5 c=5"},
		{"dynamic: a cell that has not reported is not capped",
			Input{Key: key, Mode: ModeDivide, Dynamic: true, Replicas: 10, Cells: withCurrent(weighted(1, 2, 2), 2, 4, 4)},
			"a=2 b=4 c=4"},
		{"dynamic off: reported availability is ignored",
			Input{Key: key, Mode: ModeDivide, Replicas: 10, Cells: with(withCurrent(weighted(1, 2, 2), 2, 4, 4), "c", func(c *Cell) { c.Available = i32(1) })},
			"a=2 b=4 c=4"},
		{"dynamic: the smaller of capacity and maximum caps",
			Input{Key: key, Mode: ModeDivide, Dynamic: true, Replicas: 10, Cells: with(withCurrent(weighted(1, 2, 2), 2, 4, 4), "c", func(c *Cell) { c.Available, c.MaxReplicas = i32(3), i32(2) })},
			"a=3 b=5 c=2(2,MaxReplicas)"},
		{"no cells: everything unplaced",
			Input{Key: key, Mode: ModeDivide, Replicas: 3},
			"unplaced=3"},
		{"zero replicas",
			Input{Key: key, Mode: ModeDivide, Replicas: 0, Cells: weighted(1, 2, 2)},
			"a=0 b=0 c=0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Divide(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if c := counts(got); c != strings.TrimSpace(tc.want) {
				t.Errorf("Divide = %s\nwant     %s", c, tc.want)
			}
			// The order of the cells does not matter.
			rev := tc.in
			rev.Cells = append([]Cell(nil), tc.in.Cells...)
			for i, j := 0, len(rev.Cells)-1; i < j; i, j = i+1, j-1 {
				rev.Cells[i], rev.Cells[j] = rev.Cells[j], rev.Cells[i]
			}
			again, err := Divide(rev)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(again, got) {
				t.Errorf("cells in reverse order: %s, in order: %s", counts(again), counts(got))
			}
		})
	}
}

func withCurrent(cells []Cell, current ...int32) []Cell {
	out := append([]Cell(nil), cells...)
	for i := range out {
		out[i].Current = current[i]
	}
	return out
}

func TestDivideRefuses(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want string
	}{
		{"unknown mode", Input{Mode: "Spread"}, `mode "Spread"`},
		{"negative replicas", Input{Mode: ModeDivide, Replicas: -1}, "must not be negative"},
		{"unnamed cell", Input{Mode: ModeDivide, Cells: []Cell{{Weight: 1}}}, "no name"},
		{"duplicate name", Input{Mode: ModeDivide, Cells: []Cell{{Name: "a"}, {Name: "a"}}}, `"a" is listed twice`},
		{"negative weight", Input{Mode: ModeDivide, Cells: []Cell{{Name: "a", Weight: -1}}}, "negative weight"},
		{"max below min", Input{Mode: ModeDivide, Cells: []Cell{{Name: "a", MinReplicas: 3, MaxReplicas: i32(2)}}}, "maxReplicas 2 below minReplicas 3"},
		{"negative override", Input{Mode: ModeDivide, Cells: []Cell{{Name: "a", Override: i32(-1)}}}, "negative replicas override"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Divide(tc.in)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Divide: %v, want no error", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Divide: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestScaleUpByOne checks the stability promises on many divisions:
// n+1 replicas is n plus exactly one replica on exactly one cell, so a
// scale-up never removes replicas from a cell, and the division does not
// depend on the order of the cells.
func TestScaleUpByOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 1))
	for trial := range 300 {
		n := 1 + rng.IntN(6)
		in := Input{Key: fmt.Sprintf("ns/obj-%d", trial), Mode: ModeDivide, Dynamic: rng.IntN(2) == 0, Failover: rng.IntN(2) == 0}
		for i := range n {
			c := Cell{Name: fmt.Sprintf("cell-%d", i), Weight: int32(rng.IntN(5)), MinReplicas: int32(rng.IntN(3)), Current: int32(rng.IntN(8))}
			if rng.IntN(3) == 0 {
				c.MaxReplicas = i32(c.MinReplicas + int32(rng.IntN(6)))
			}
			if rng.IntN(4) == 0 {
				c.Available = i32(int32(rng.IntN(8)))
			}
			if rng.IntN(5) == 0 {
				c.Failing = true
			}
			if rng.IntN(6) == 0 {
				c.Override = i32(int32(rng.IntN(4)))
			}
			if rng.IntN(6) == 0 {
				c.Held = true
			}
			in.Cells = append(in.Cells, c)
		}
		prev, err := Divide(in)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		for r := int32(1); r <= 60; r++ {
			in.Replicas = r
			cur, err := Divide(in)
			if err != nil {
				t.Fatalf("trial %d, %d replicas: %v", trial, r, err)
			}
			changed := 0
			for i := range cur.Cells {
				d := cur.Cells[i].Target - prev.Cells[i].Target
				switch {
				case d < 0:
					t.Fatalf("trial %d: %d → %d replicas removes from %s: %s → %s", trial, r-1, r, cur.Cells[i].Name, counts(prev), counts(cur))
				case d > 1:
					t.Fatalf("trial %d: %d → %d replicas adds %d to %s", trial, r-1, r, d, cur.Cells[i].Name)
				case d == 1:
					changed++
				}
			}
			if placed := changed == 1; placed == (cur.Unplaced == prev.Unplaced+1) {
				t.Fatalf("trial %d: %d → %d replicas changes %d cells (unplaced %d → %d): %s → %s", trial, r-1, r, changed, prev.Unplaced, cur.Unplaced, counts(prev), counts(cur))
			}
			prev = cur
		}
	}
}

// TestDivideFollowsWeights checks that each cell is within one replica
// of its exact weighted share when nothing else constrains it.
func TestDivideFollowsWeights(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 2))
	for trial := range 300 {
		in := Input{Key: fmt.Sprint(trial), Mode: ModeDivide, Replicas: int32(rng.IntN(200))}
		var total int32
		for i := range 1 + rng.IntN(6) {
			w := int32(1 + rng.IntN(9))
			total += w
			in.Cells = append(in.Cells, Cell{Name: fmt.Sprint(i), Weight: w})
		}
		r, err := Divide(in)
		if err != nil {
			t.Fatal(err)
		}
		var sum int32
		for i, a := range r.Cells {
			exact := float64(in.Replicas) * float64(in.Cells[i].Weight) / float64(total)
			if d := float64(a.Target) - exact; d <= -1 || d >= 1 {
				t.Fatalf("trial %d: cell %s gets %d, its exact share is %.2f: %s", trial, a.Name, a.Target, exact, counts(r))
			}
			sum += a.Target
		}
		if sum != in.Replicas || r.Unplaced != 0 {
			t.Fatalf("trial %d: %d of %d placed, unplaced %d", trial, sum, in.Replicas, r.Unplaced)
		}
	}
}
