package cells

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fedv1b1 "sigs.k8s.io/kubefed/pkg/apis/core/v1beta1"

	corev1a1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

func TestMoveBlock(t *testing.T) {
	cell := func(mv *corev1a1.CellMove) *corev1a1.Cell {
		return &corev1a1.Cell{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "rz00a", Generation: 3},
			Spec: corev1a1.CellSpec{Cluster: "member-1", Move: mv}}
	}
	cluster := func(owner string) *fedv1b1.KubeFedCluster {
		c := &fedv1b1.KubeFedCluster{ObjectMeta: metav1.ObjectMeta{Name: "member-3", Labels: map[string]string{"region": "eu"}}}
		if owner != "" {
			c.Labels[corev1a1.LabelTenant] = owner
		}
		return c
	}
	to3 := &corev1a1.CellMove{To: "member-3"}
	for _, tc := range []struct {
		name       string
		cell       *corev1a1.Cell
		target     *fedv1b1.KubeFedCluster
		tenant     string
		wantReason string   // "" for not blocked
		wantInMsg  []string // what the message must say
	}{
		{name: "not moving", cell: cell(nil), target: nil, tenant: "acme"},
		{name: "to a shared cluster", cell: cell(to3), target: cluster(""), tenant: "acme"},
		{name: "to a cluster dedicated to the cell's tenant", cell: cell(to3), target: cluster("acme"), tenant: "acme"},
		{name: "to a cluster dedicated to another tenant", cell: cell(to3), target: cluster("globex"), tenant: "acme",
			wantReason: ReasonMoveTargetDedicated, wantInMsg: []string{`dedicated to tenant "globex"`, "shop/rz00a", "--undo", "cellfed.io/tenant-"}},
		{name: "to a cluster that is gone", cell: cell(to3), target: nil, tenant: "acme",
			wantReason: ReasonMoveTargetNotFound, wantInMsg: []string{"kube-federation-system/member-3", "does not exist", "cellfedctl cell move rz00a -n shop --undo", "cellfedctl join member-3"}},
		{name: "an undo from a cluster dedicated to another tenant", cell: cell(&corev1a1.CellMove{To: "member-3", Undo: true}), target: cluster("globex"), tenant: "acme"},
		{name: "an undo from a cluster that is gone", cell: cell(&corev1a1.CellMove{To: "member-3", Undo: true}), target: nil, tenant: "acme"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := moveBlock(tc.cell, tc.target, tc.tenant, "kube-federation-system")
			if tc.wantReason == "" {
				if got != nil {
					t.Fatalf("moveBlock = %+v, want not blocked", got)
				}
				return
			}
			if got == nil {
				t.Fatalf("moveBlock = nil, want blocked with reason %s", tc.wantReason)
			}
			if got.Type != corev1a1.CellMoveBlocked || got.Status != metav1.ConditionTrue || got.Reason != tc.wantReason || got.ObservedGeneration != 3 {
				t.Errorf("condition = %s=%s reason %s generation %d, want %s=True reason %s generation 3", got.Type, got.Status, got.Reason, got.ObservedGeneration, corev1a1.CellMoveBlocked, tc.wantReason)
			}
			for _, want := range tc.wantInMsg {
				if !strings.Contains(got.Message, want) {
					t.Errorf("message %q does not say %q", got.Message, want)
				}
			}
		})
	}
}
