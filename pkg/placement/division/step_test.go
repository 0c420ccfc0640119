package division

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func TestStep(t *testing.T) {
	tests := []struct {
		name     string
		moves    []Move
		maxSurge int32
		want     map[string]int32
	}{
		{"nothing to move",
			[]Move{{"a", 2, 2, 2}, {"b", 4, 4, 4}}, 1,
			map[string]int32{"a": 2, "b": 4}},
		{"a move raises first and keeps the leaving cell",
			[]Move{{"a", 4, 2, 4}, {"b", 0, 2, 0}}, 1,
			map[string]int32{"a": 4, "b": 1}},
		{"a wider surge raises more at once",
			[]Move{{"a", 4, 2, 4}, {"b", 0, 2, 0}}, 5,
			map[string]int32{"a": 4, "b": 2}},
		{"ready replicas where they go pay for the decrease",
			[]Move{{"a", 4, 2, 4}, {"b", 2, 2, 2}}, 1,
			map[string]int32{"a": 2, "b": 2}},
		{"unready replicas where they go hold the decrease",
			[]Move{{"a", 4, 2, 4}, {"b", 2, 2, 0}}, 1,
			map[string]int32{"a": 4, "b": 2}},
		{"a scale-down lowers at once when all are ready",
			[]Move{{"a", 4, 2, 4}, {"b", 4, 2, 4}}, 1,
			map[string]int32{"a": 2, "b": 2}},
		{"a scale-up raises at once",
			[]Move{{"a", 2, 4, 2}, {"b", 2, 4, 0}}, 1,
			map[string]int32{"a": 4, "b": 4}},
		{"maxSurge 0 is 1, or nothing would move",
			[]Move{{"a", 4, 2, 4}, {"b", 0, 2, 0}}, 0,
			map[string]int32{"a": 4, "b": 1}},
		{"a failing cell's unready replicas go at once",
			[]Move{{"a", 5, 0, 0}, {"b", 5, 10, 5}}, 2,
			map[string]int32{"a": 0, "b": 10}},
		{"unready replicas go first, ready ones wait",
			[]Move{{"a", 5, 0, 3}, {"b", 5, 10, 5}}, 2,
			map[string]int32{"a": 3, "b": 9}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Step(tc.moves, tc.maxSurge)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Step = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStepRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		moves []Move
		want  string
	}{
		{"negative", []Move{{"a", -1, 0, 0}}, "negative"},
		{"twice", []Move{{"a", 1, 1, 1}, {"a", 1, 1, 1}}, "listed twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Step(tc.moves, 1); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Step: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestStepNeverDropsAvailability plays rebalances to the end: each round
// writes Step's assignment, then some of the written replicas become
// ready (at most a few per cell per round, never more than written; a
// lowered cell loses its replicas at once). Through every round the
// ready total stays at or above the smaller of the two totals, the
// written total stays within maxSurge above the larger, and the move ends
// at the target.
func TestStepNeverDropsAvailability(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 3))
	for trial := range 500 {
		n := 1 + rng.IntN(5)
		maxSurge := int32(1 + rng.IntN(4))
		moves := make([]Move, n)
		var sumCur, sumTgt int32
		for i := range moves {
			c := int32(rng.IntN(10))
			moves[i] = Move{Name: fmt.Sprint(i), Current: c, Target: int32(rng.IntN(10)), Ready: c}
			sumCur += c
			sumTgt += moves[i].Target
		}
		floor, ceiling := min(sumCur, sumTgt), max(sumCur, sumTgt)+maxSurge
		done := false
		for round := 0; round < 200 && !done; round++ {
			next, err := Step(moves, maxSurge)
			if err != nil {
				t.Fatal(err)
			}
			var written, ready int32
			done = true
			for i := range moves {
				m := &moves[i]
				m.Current = next[m.Name]
				m.Ready = min(m.Ready, m.Current)
				written += m.Current
				ready += m.Ready
				// Readiness arrives after the write is checked.
				m.Ready = min(m.Current, m.Ready+int32(rng.IntN(3)))
				if m.Current != m.Target {
					done = false
				}
			}
			if ready < floor {
				t.Fatalf("trial %d, round %d: %d ready, below the floor %d: %+v", trial, round, ready, floor, moves)
			}
			if written > ceiling {
				t.Fatalf("trial %d, round %d: %d written, above %d (maxSurge %d)", trial, round, written, ceiling, maxSurge)
			}
		}
		if !done {
			t.Fatalf("trial %d: not at the target after 200 rounds: %+v", trial, moves)
		}
	}
}
