package placement

import (
	"reflect"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	typesv1beta1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
)

func TestClusters(t *testing.T) {
	cell := map[string]string{cellv1alpha1.LabelTopologyType: cellv1alpha1.TopologyTypeCell, cellv1alpha1.LabelNamespace: "shop", "region": "eu"}
	candidates := []Topology{
		{"m1", map[string]string{"region": "eu"}},
		{"m2", map[string]string{"region": "us"}},
		{"shop.a", cell},
	}
	id := func(t Topology) Topology { return t }
	for _, tc := range []struct {
		name    string
		p       typesv1beta1.Placement
		want    []string
		wantErr bool
	}{
		{"no placement", typesv1beta1.Placement{}, nil, false},
		{"names that exist", typesv1beta1.Placement{Clusters: []typesv1beta1.ClusterReference{{Name: "m2"}, {Name: "gone"}, {Name: "shop.a"}}}, []string{"m2", "shop.a"}, false},
		{"empty selector: every physical cluster", typesv1beta1.Placement{ClusterSelector: &metav1.LabelSelector{}}, []string{"m1", "m2"}, false},
		{"user labels: physical clusters only", typesv1beta1.Placement{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}}, []string{"m1"}, false},
		{"pinned to cells", typesv1beta1.Placement{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{cellv1alpha1.LabelNamespace: "shop"}}}, []string{"shop.a"}, false},
		{"bad selector", typesv1beta1.Placement{ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Clusters(tc.p, candidates, id)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err == nil && !got.Equal(sets.New(tc.want...)) {
				t.Errorf("Clusters = %v, want %v", sets.List(got), tc.want)
			}
		})
	}
}

func TestTopologies(t *testing.T) {
	cands := []Topology{{"rz20a", map[string]string{"zone": "z2"}}, {"rz00a", map[string]string{"zone": "z0"}}, {"rz10a", map[string]string{"zone": "z2"}}}
	listed := func(names ...string) typesv1beta2.Placement {
		var p typesv1beta2.Placement
		for _, n := range names {
			p.Topologies = append(p.Topologies, typesv1beta2.Topology{Name: n})
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		p       typesv1beta2.Placement
		want    []string
		wantErr bool
	}{
		{"listed: as listed without duplicates", listed("rz10a", "rz00a", "rz10a"), []string{"rz10a", "rz00a"}, false},
		{"selector: the selected in name order", typesv1beta2.Placement{TopologySelector: &metav1.LabelSelector{MatchLabels: map[string]string{"zone": "z2"}}}, []string{"rz10a", "rz20a"}, false},
		{"bad selector", typesv1beta2.Placement{TopologySelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "zone", Operator: "Bogus"}}}}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Topologies(tc.p, cands)
			if (err != nil) != tc.wantErr || !slices.Equal(got, tc.want) {
				t.Errorf("Topologies = %v, %v; want %v (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestSelectorKeys(t *testing.T) {
	ls := &metav1.LabelSelector{
		MatchLabels:      map[string]string{"zone": "a", cellv1alpha1.LabelNamespace: "shop"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists}, {Key: cellv1alpha1.LabelTopologyType, Operator: metav1.LabelSelectorOpDoesNotExist}},
	}
	if got, want := SelectorKeys(ls), []string{"app", cellv1alpha1.LabelNamespace, cellv1alpha1.LabelTopologyType, "zone"}; !slices.Equal(got, want) {
		t.Errorf("SelectorKeys = %v, want %v", got, want)
	}
	if got, want := ReservedKeys(ls), []string{cellv1alpha1.LabelNamespace, cellv1alpha1.LabelTopologyType}; !slices.Equal(got, want) {
		t.Errorf("ReservedKeys = %v, want %v", got, want)
	}
}

func TestMaskWriteRead(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "types.kubefed.io/v1beta2", "metadata": map[string]any{"namespace": "shop"}, "spec": map[string]any{}}}
	if err := SetMask(obj, []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	if got, ok := MaskClusters(obj.Object); !ok || !slices.Equal(got, []string{"shop.a", "shop.b"}) {
		t.Errorf("after SetMask: MaskClusters = %v, %v", got, ok)
	}
	RemoveMask(obj)
	if got, ok := MaskClusters(obj.Object); ok {
		t.Errorf("after RemoveMask: MaskClusters = %v, %v; want no mask", got, ok)
	}
}

func TestFormatSelector(t *testing.T) {
	for _, tc := range []struct {
		name string
		ls   *metav1.LabelSelector
		want string
	}{
		{"nil", nil, "<none>"},
		{"empty: everything", &metav1.LabelSelector{}, "{}"},
		{"labels and expressions", &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}, MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "zone", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}}, "region=eu,zone in (a,b)"},
		{"does not parse: JSON", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "zone", Operator: "Bogus"}}}, `{"matchExpressions":[{"key":"zone","operator":"Bogus"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FormatSelector(tc.ls); got != tc.want {
				t.Errorf("FormatSelector = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCandidates(t *testing.T) {
	obj := func(name string, l map[string]string) metav1.Object {
		return &metav1.ObjectMeta{Name: name, Labels: l}
	}
	eu := map[string]string{"region": "eu"}
	tests := []struct {
		name string
		typ  typesv1beta2.TopologyType
		objs []metav1.Object
		want []Topology
	}{
		{"cells in name order", typesv1beta2.TopologyCell, []metav1.Object{obj("b", nil), obj("a", eu)},
			[]Topology{{Name: "a", Labels: eu}, {Name: "b"}}},
		{"physical clusters only", typesv1beta2.TopologyCluster, []metav1.Object{obj("shop.a", nil), obj("m2", nil), obj("m1", eu)},
			[]Topology{{Name: "m1", Labels: eu}, {Name: "m2"}}},
		{"nothing to choose from", typesv1beta2.TopologyCluster, nil, []Topology{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Candidates(tc.typ, tc.objs); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Candidates = %v, want %v", got, tc.want)
			}
		})
	}
}
