package cellfedctl

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

// TestCellsMovingTo: unjoin refuses a cluster cells are moving to (issue
// #40: the move hung with no condition).
func TestCellsMovingTo(t *testing.T) {
	cell := func(ns, name, cluster string, mv *cellv1alpha1.CellMove) cellv1alpha1.Cell {
		return cellv1alpha1.Cell{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: cellv1alpha1.CellSpec{Cluster: cluster, Move: mv}}
	}
	cells := []cellv1alpha1.Cell{
		cell("shop", "b", "m1", &cellv1alpha1.CellMove{To: "m3"}),
		cell("acme", "a", "m2", &cellv1alpha1.CellMove{To: "m3", Undo: true}),
		cell("shop", "c", "m2", &cellv1alpha1.CellMove{To: "m1"}),
		cell("shop", "d", "m3", nil),
	}
	for _, tc := range []struct {
		name    string
		cluster string
		want    string
	}{
		{"moves and an undo to the cluster", "m3", "acme/a shop/b"},
		{"a cluster cells move from is not a target", "m2", ""},
		{"no cell moves to it", "m4", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(CellsMovingTo(cells, tc.cluster), " "); got != tc.want {
				t.Errorf("CellsMovingTo(%s) = %q, want %q", tc.cluster, got, tc.want)
			}
		})
	}
	checkErr(t, "MovingError", MovingError("cellfedctl", "m3", []string{"acme/a", "shop/b"}),
		"cells are moving to cluster m3 (acme/a, shop/b); undo those moves first (e.g. `cellfedctl cell move a -n acme --undo`")
}
