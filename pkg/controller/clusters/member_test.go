package clusters

import (
	"testing"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

func TestMemberName(t *testing.T) {
	cell := map[string]string{cellv1alpha1.LabelTopologyType: "cell", cellv1alpha1.LabelCell: "rz00a"}
	move := map[string]string{cellv1alpha1.LabelMove: "Copy"}
	for _, tc := range []struct {
		name     string
		clusters map[string]map[string]string
		want     string
	}{
		{"one physical cluster", map[string]map[string]string{"member-1": nil}, "member-1"},
		{"the physical cluster among its cells", map[string]map[string]string{"a.rz00a": cell, "member-2": {"region": "x"}, "b.rz10a": cell}, "member-2"},
		{"the first of two physical clusters", map[string]map[string]string{"member-b": nil, "member-a": nil, "a.rz00a": cell}, "member-a"},
		{"cells only: the first cell cluster", map[string]map[string]string{"shop.rz10a": cell, "shop.rz00a": cell}, "shop.rz00a"},
		{"a move cluster is not physical", map[string]map[string]string{"shop.rz00a.move": move, "zz.rz00a": cell}, "shop.rz00a.move"},
		{"a move cluster beside the physical one", map[string]map[string]string{"a.rz00a.move": move, "member-3": nil}, "member-3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := memberName(tc.clusters); got != tc.want {
				t.Errorf("memberName(%v) = %q, want %q", tc.clusters, got, tc.want)
			}
		})
	}
}

func TestMemberNameBeforeTheRegistryNamesIt(t *testing.T) {
	m := &Member{key: "54f5094"}
	if got := m.Name(); got != "54f5094" {
		t.Errorf("Name() = %q before setClusters, want the key", got)
	}
	m.setClusters([]string{"member-1", "shop.rz00a"}, "member-1")
	if got := m.Name(); got != "member-1" {
		t.Errorf("Name() = %q, want member-1", got)
	}
}
