package nativestatus

import "testing"

// TestDuplicatedReplicas: with replicas run in full in each cell (the
// default), the plane's Deployment status compares with spec.replicas as
// one cluster's does: kubectl rollout status and kstatus call it done
// only when every cell is, whatever the number of cells.
func TestDuplicatedReplicas(t *testing.T) {
	const gen, want = 5, 3
	cur := func(name string, st map[string]any) Cell {
		return Cell{Name: name, Current: true, MemberGeneration: num(st, "observedGeneration"), Status: st}
	}
	cases := []struct {
		name                         string
		cells                        []Cell
		replicas, updated, available int64
		kubectlDone                  bool
		kstatus                      string
	}{
		{"two cells rolled out", []Cell{cur("a", rolledOut(2, 3)), cur("b", rolledOut(7, 3))}, 3, 3, 3, true, "Current"},
		{"one cell", []Cell{cur("a", rolledOut(2, 3))}, 3, 3, 3, true, "Current"},
		{"one cell mid rollout", []Cell{cur("a", rolledOut(2, 3)), cur("b", midRollout(7, 4, 2, 3))}, 3, 1, 2, false, "InProgress"},
		{"a cell reports an older observedGeneration", []Cell{cur("a", rolledOut(2, 3)), {Name: "b", Current: true, MemberGeneration: 8, Status: rolledOut(7, 3)}}, 3, 0, 3, false, "InProgress"},
		{"a held-back cell", []Cell{cur("a", rolledOut(2, 3)), {Name: "b", HeldBack: true, Status: rolledOut(6, 3)}}, 3, 0, 3, false, "InProgress"},
		{"a held-back cell it never ran in", []Cell{cur("a", rolledOut(2, 3)), {Name: "b", HeldBack: true}}, 0, 0, 0, false, "InProgress"},
		{"an offline cell", []Cell{cur("a", rolledOut(2, 3)), {Name: "b", Offline: true, Current: true, MemberGeneration: 7, Status: rolledOut(7, 3)}}, 3, 3, 0, false, "InProgress"},
		{"a cell overridden to more replicas, rolled out", []Cell{cur("a", rolledOut(2, 3)), cur("b", rolledOut(7, 5))}, 3, 3, 3, true, "Current"},
		{"a cell scaled to zero", []Cell{cur("a", rolledOut(2, 3)), cur("b", rolledOut(7, 0))}, 3, 3, 3, true, "Current"},
		// Just created on a member whose Deployment controller has not
		// handled it yet: its status is {} (no observedGeneration), and
		// nothing runs there.
		{"a cell whose member has not written a status yet", []Cell{cur("a", rolledOut(2, 3)), {Name: "b", Current: true, MemberGeneration: 1, Status: map[string]any{}}}, 0, 0, 0, false, "InProgress"},
		{"every cell just created", []Cell{{Name: "a", Current: true, MemberGeneration: 1, Status: map[string]any{}}, {Name: "b", Current: true, MemberGeneration: 1, Status: map[string]any{}}}, 0, 0, 0, false, "InProgress"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, ok := Aggregate(Input{Kind: deploymentKind, Generation: gen, Spec: map[string]any{"replicas": int64(want)}, Cells: tc.cells, Now: t0})
			if !ok {
				t.Fatal("Deployment not aggregated")
			}
			if r, u, a := num(st, "replicas"), num(st, "updatedReplicas"), num(st, "availableReplicas"); r != tc.replicas || u != tc.updated || a != tc.available {
				t.Errorf("replicas/updated/available = %d/%d/%d, want %d/%d/%d", r, u, a, tc.replicas, tc.updated, tc.available)
			}
			if done, _ := kubectlRolloutStatus(gen, want, st); done != tc.kubectlDone {
				t.Errorf("kubectl rollout status done = %v, want %v (status %v)", done, tc.kubectlDone, st)
			}
			if got := kstatusCurrent(gen, want, st); got != tc.kstatus {
				t.Errorf("kstatus = %s, want %s (status %v)", got, tc.kstatus, st)
			}
		})
	}
}

func TestShare(t *testing.T) {
	for _, tc := range []struct{ want, part, whole, out int64 }{
		{3, 3, 3, 3}, {3, 2, 4, 1}, {3, 0, 0, 3}, {3, 5, 3, 3}, {1 << 40, 1 << 30, 1 << 31, 1 << 39},
	} {
		if got := share(tc.want, tc.part, tc.whole); got != tc.out {
			t.Errorf("share(%d, %d, %d) = %d, want %d", tc.want, tc.part, tc.whole, got, tc.out)
		}
	}
}
