package propagation

import (
	"maps"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	typesv1b1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
)

// TestPlanMoveToDedicatedCluster: cell shop.a (tenant acme) moves from
// member M1 to M2, whose physical cluster is dedicated to a tenant (the
// cell controller labels the move cluster LabelClusterTenant). Another
// tenant's cluster is never written, and the cell's own copy is never
// removed for a copy there.
func TestPlanMoveToDedicatedCluster(t *testing.T) {
	moveCluster := Candidate{Name: cellv1alpha1.MoveClusterName("shop", "a"), Member: "M2", Ready: true, Labels: map[string]string{
		cellv1alpha1.LabelTopologyType: cellv1alpha1.TopologyTypeCell, cellv1alpha1.LabelNamespace: "shop", cellv1alpha1.LabelCell: "a",
		cellv1alpha1.LabelMove: cellv1alpha1.MoveCopy,
	}}
	// dedicated labels M2's clusters as a dedication of its physical
	// cluster m2 to owner does: m2 itself, and (by the cell controller)
	// the per-cell and move clusters reaching it.
	dedicated := func(owner string) []Candidate {
		cs := append(fixture(), moveCluster)
		for i := range cs {
			if cs[i].Member != "M2" || owner == "" {
				continue
			}
			cs[i].Labels = maps.Clone(cs[i].Labels)
			if cs[i].Name == "m2" {
				cs[i].Labels[cellv1alpha1.LabelTenant] = owner
			} else {
				cs[i].Labels[cellv1alpha1.LabelClusterTenant] = owner
			}
		}
		return cs
	}
	readyOnM2 := func(cs []Candidate) {
		for i := range cs {
			if cs[i].Member == "M2" {
				cs[i].Holds, cs[i].ObjectReady = true, true
			}
		}
	}
	onA := typesv1b1.Placement{Clusters: names("shop.a")}
	move := "shop.a.move"
	outside := Intent{Verb: Leave, Clusters: []string{move}, Status: StatusOutsideWorkspace, Report: true}
	for _, tc := range []struct {
		name   string
		in     Input
		owner  string
		change []func([]Candidate)
		want   []Intent
	}{
		{
			name:  "admitted, target dedicated to another tenant: not copied, reported OutsideWorkspace",
			in:    Input{Namespace: "shop", Tenant: "acme", Placement: onA, MoveAdmitted: sets.New("shop.a")},
			owner: "globex",
			want: []Intent{
				{Verb: Ensure, Member: "M1", Clusters: []string{"shop.a"}, Writer: "shop.a", Report: true},
				outside,
			},
		},
		{
			name:   "copied before the dedication and ready there: the cell's copy stays, the copy is left alone",
			in:     Input{Namespace: "shop", Tenant: "acme", Placement: onA, Recorded: sets.New("shop.a", move)},
			owner:  "globex",
			change: []func([]Candidate){readyOnM2},
			want: []Intent{
				{Verb: Ensure, Member: "M1", Clusters: []string{"shop.a"}, Writer: "shop.a", Report: true},
				outside,
			},
		},
		{
			name:   "moved before the dedication: left alone, still reported",
			in:     Input{Namespace: "shop", Tenant: "acme", Placement: onA, Recorded: sets.New(move)},
			owner:  "globex",
			change: []func([]Candidate){readyOnM2},
			want: []Intent{
				{Verb: Ensure, Member: "M1", Clusters: []string{"shop.a"}, Writer: "shop.a", Report: true},
				outside,
			},
		},
		{
			name:  "target dedicated to the object's own tenant: copied",
			in:    Input{Namespace: "shop", Tenant: "acme", Placement: onA, MoveAdmitted: sets.New("shop.a")},
			owner: "acme",
			want: []Intent{
				{Verb: Ensure, Member: "M1", Clusters: []string{"shop.a"}, Writer: "shop.a", Report: true},
				{Verb: Ensure, Member: "M2", Clusters: []string{move}, Writer: move, OverridesOf: "shop.a", Report: true},
			},
		},
		{
			name: "target shared: copied",
			in:   Input{Namespace: "shop", Tenant: "acme", Placement: onA, MoveAdmitted: sets.New("shop.a")},
			want: []Intent{
				{Verb: Ensure, Member: "M1", Clusters: []string{"shop.a"}, Writer: "shop.a", Report: true},
				{Verb: Ensure, Member: "M2", Clusters: []string{move}, Writer: move, OverridesOf: "shop.a", Report: true},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			planOn(t, tc.in, dedicated(tc.owner), tc.change, tc.want)
		})
	}
}
