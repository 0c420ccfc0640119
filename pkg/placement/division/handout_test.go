package division

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// randomInput is a small division with every feature in play: minimums,
// caps, weight 0, overrides, held and failing cells, reported capacity.
func randomInput(rng *rand.Rand, trial int) Input {
	in := Input{Key: fmt.Sprintf("ns/obj-%d", trial), Mode: ModeDivide, Replicas: int32(rng.IntN(40)), Dynamic: rng.IntN(2) == 0, Failover: rng.IntN(3) == 0}
	for i := range 1 + rng.IntN(6) {
		c := Cell{Name: fmt.Sprintf("cell-%d", i), Weight: int32(rng.IntN(6)), Current: int32(rng.IntN(12))}
		if rng.IntN(2) == 0 {
			c.MinReplicas = int32(rng.IntN(8))
		}
		if rng.IntN(2) == 0 {
			c.MaxReplicas = i32(c.MinReplicas + int32(rng.IntN(8)))
		}
		if rng.IntN(3) == 0 {
			c.Available = i32(int32(rng.IntN(12)))
		}
		if rng.IntN(6) == 0 {
			c.Failing = true
		}
		if rng.IntN(8) == 0 {
			c.Override = i32(int32(rng.IntN(15)))
		}
		if rng.IntN(6) == 0 {
			c.Held = true
		}
		if rng.IntN(10) == 0 {
			c.Weight = int32(rng.IntN(math.MaxInt32))
		}
		in.Cells = append(in.Cells, c)
	}
	return in
}

// TestDivideMatchesReference compares Divide with the one-at-a-time
// hand-out it replaced (referenceDivide) on many small inputs: the same
// targets, reasons and unplaced count.
func TestDivideMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(40, 1))
	for trial := range 30000 {
		in := randomInput(rng, trial)
		want, wErr := referenceDivide(in)
		got, gErr := Divide(in)
		if (wErr == nil) != (gErr == nil) {
			t.Fatalf("trial %d: error %v, reference %v", trial, gErr, wErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("trial %d: %+v\n got       %s\n reference %s", trial, in, counts(got), counts(want))
		}
	}
}

// TestDivideHugeInputs: a tenant's largest division (MaxInt32 replicas,
// MaxInt32 weights, many cells, overrides adding up past MaxInt32) takes
// no more than cells, never overflows, and places every replica.
func TestDivideHugeInputs(t *testing.T) {
	many := manyCells(2000)
	withMins := manyCells(500)
	for i := range withMins {
		withMins[i].MinReplicas = math.MaxInt32 / 400
		if i%3 == 0 {
			withMins[i].MaxReplicas = i32(math.MaxInt32/400 + int32(i))
		}
		if i%5 == 0 {
			withMins[i].Weight = 0
		}
	}
	tests := []struct {
		name     string
		in       Input
		want     map[string]int32 // some cells' targets
		unplaced int32
	}{
		{"MaxInt32 replicas by weights MaxInt32:1",
			Input{Key: "a/big", Mode: ModeDivide, Replicas: math.MaxInt32, Cells: weighted(math.MaxInt32, 1)},
			map[string]int32{"a": math.MaxInt32 - 1, "b": 1}, 0},
		{"MaxInt32 replicas by weights 1:MaxInt32, the first capped at 5",
			Input{Key: "a/big", Mode: ModeDivide, Replicas: math.MaxInt32, Cells: with(weighted(1, math.MaxInt32), "a", func(c *Cell) { c.MaxReplicas = i32(5) })},
			map[string]int32{"a": 1, "b": math.MaxInt32 - 1}, 0},
		{"MaxInt32 replicas on 2,000 cells",
			Input{Key: "a/big", Mode: ModeDivide, Replicas: math.MaxInt32, Cells: many},
			nil, 0},
		{"MaxInt32 replicas, 500 cells with large minimums and caps",
			Input{Key: "a/big", Mode: ModeDivide, Replicas: math.MaxInt32, Cells: withMins},
			nil, 0},
		{"every cell capped: the rest unplaced",
			Input{Key: "a/big", Mode: ModeDivide, Replicas: math.MaxInt32, Cells: with(with(weighted(math.MaxInt32, 1), "a", func(c *Cell) { c.MaxReplicas = i32(7) }), "b", func(c *Cell) { c.MaxReplicas = i32(3) })},
			map[string]int32{"a": 7, "b": 3}, math.MaxInt32 - 10},
		{"overrides adding up past MaxInt32",
			Input{Key: "a/big", Mode: ModeDivide, Replicas: 10, Cells: with(with(weighted(1, 1, 1), "a", func(c *Cell) { c.Override = i32(math.MaxInt32) }), "b", func(c *Cell) { c.Override = i32(math.MaxInt32) })},
			map[string]int32{"a": math.MaxInt32, "b": math.MaxInt32, "c": 0}, math.MinInt32},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			r, err := Divide(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			// Not a speed target (BenchmarkDivide is): a guard against
			// handing out replicas one at a time, which takes minutes
			// here (66 s for MaxInt32 on two cells), generous enough for
			// the race detector on a loaded machine.
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("took %v: the division must cost cells, not replicas", d)
			}
			var sum int64
			for _, a := range r.Cells {
				if a.Target < 0 {
					t.Errorf("cell %s: target %d", a.Name, a.Target)
				}
				if a.Reason != ReasonOverride {
					sum += int64(a.Target)
				}
				if w, ok := tc.want[a.Name]; ok && a.Target != w {
					t.Errorf("cell %s: target %d, want %d", a.Name, a.Target, w)
				}
			}
			if r.Unplaced != tc.unplaced {
				t.Errorf("unplaced %d, want %d", r.Unplaced, tc.unplaced)
			}
			if tc.unplaced == 0 && sum != int64(tc.in.Replicas) {
				t.Errorf("%d of %d replicas placed", sum, tc.in.Replicas)
			}
		})
	}
}

// TestDivideLargeMatchesReference compares with the reference on inputs
// large enough for the threshold search to matter (thousands of
// replicas), and still quick for the one-at-a-time reference.
func TestDivideLargeMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(40, 2))
	for trial := range 300 {
		in := randomInput(rng, trial)
		in.Replicas = int32(rng.IntN(20000))
		for i := range in.Cells {
			in.Cells[i].MinReplicas *= int32(1 + rng.IntN(500))
			if in.Cells[i].MaxReplicas != nil {
				in.Cells[i].MaxReplicas = i32(in.Cells[i].MinReplicas + int32(rng.IntN(5000)))
			}
			in.Cells[i].Current *= 500
			if in.Cells[i].Available != nil {
				in.Cells[i].Available = i32(*in.Cells[i].Available * int32(rng.IntN(1000)))
			}
		}
		want, wErr := referenceDivide(in)
		got, gErr := Divide(in)
		if (wErr == nil) != (gErr == nil) {
			t.Fatalf("trial %d: error %v, reference %v", trial, gErr, wErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("trial %d: %+v\n got       %s\n reference %s", trial, in, counts(got), counts(want))
		}
	}
}
