package admission

import (
	"testing"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

// TestValidateDedicationOfAMoveTarget: a cluster a cell moves to is used
// by that cell as much as the one it is on (issue #40: a move crossed a
// dedication made after it started).
func TestValidateDedicationOfAMoveTarget(t *testing.T) {
	a := newAdmitter()
	f := a.Lookup.(*fakeLookup)
	// shop/rz00a (tenant acme) is on c1, moving to c2; other-ns/rz00a
	// (tenant other) is on c2.
	for _, c := range f.cells["shop"] {
		if c.Name == "rz00a" {
			c.Spec.Move = &cellv1alpha1.CellMove{To: "c2"}
		}
	}
	f.clusters["c4"] = true
	f.cells["shop"][1].Spec.Move = &cellv1alpha1.CellMove{To: "c4"} // rz00b, c2 → c4
	for _, tc := range []struct {
		name string
		obj  string
		old  string
		want outcome
		msgs []string
	}{
		{name: "dedicating the target of another tenant's move",
			obj: kubeFedCluster("c4", "cellfed.io/tenant: globex\n", clusterSpec), old: kubeFedCluster("c4", "", clusterSpec), want: forbidden,
			msgs: []string{"metadata.labels[cellfed.io/tenant]", `cannot be dedicated to tenant "globex"`, `shop/rz00b (tenant "acme", moving to it)`, "--undo"}},
		{name: "creating the target of another tenant's move dedicated",
			obj: kubeFedCluster("c4", "cellfed.io/tenant: globex\n", clusterSpec), want: forbidden,
			msgs: []string{`shop/rz00b (tenant "acme", moving to it)`}},
		{name: "dedicating the target of the tenant's own move",
			obj: kubeFedCluster("c4", "cellfed.io/tenant: acme\n", clusterSpec), old: kubeFedCluster("c4", "", clusterSpec)},
		{name: "dedicating a cluster with cells on it and moving to it names both",
			obj: kubeFedCluster("c2", "cellfed.io/tenant: other\n", clusterSpec), old: kubeFedCluster("c2", "", clusterSpec), want: forbidden,
			msgs: []string{`shop/rz00a (tenant "acme", moving to it)`, `shop/rz00b (tenant "acme")`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := Create
			if tc.old != "" {
				op = Update
			}
			err := a.Validate(request(op, "", object(t, tc.obj), object(t, tc.old)))
			checkOutcome(t, err, tc.want, tc.msgs)
		})
	}
}
