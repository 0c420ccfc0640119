package conversion

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/utils/ptr"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	typesv1beta1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
)

// obj parses YAML-free JSON test input the way the API server decodes
// custom resources.
func obj(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := utiljson.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("bad test object: %v\n%s", err, s)
	}
	return m
}

func toJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func convert(t testing.TB, in map[string]any, apiVersion string) map[string]any {
	t.Helper()
	out := runtime.DeepCopyJSON(in)
	if err := Convert(out, apiVersion); err != nil {
		t.Fatalf("Convert to %s: %v", apiVersion, err)
	}
	return out
}

func TestConvertExamples(t *testing.T) {
	tests := []struct {
		name    string
		v1beta2 string
		v1beta1 string
	}{
		{
			name: "two cells",
			v1beta2: `{"apiVersion":"types.kubefed.io/v1beta2","kind":"FederatedDeployment","metadata":{"name":"web","namespace":"shop"},
				"spec":{"template":{"spec":{"replicas":2}},"placement":{"topologyType":"cell","topologies":[{"name":"rz00a"},{"name":"rz01a"}]}}}`,
			v1beta1: `{"apiVersion":"types.kubefed.io/v1beta1","kind":"FederatedDeployment","metadata":{"name":"web","namespace":"shop"},
				"spec":{"template":{"spec":{"replicas":2}},"placement":{"clusters":[{"name":"shop.rz00a"},{"name":"shop.rz01a"}]}}}`,
		},
		{
			name: "clusters map one to one",
			v1beta2: `{"apiVersion":"types.kubefed.io/v1beta2","kind":"FederatedService","metadata":{"name":"s","namespace":"shop"},
				"spec":{"placement":{"topologyType":"cluster","topologies":[{"name":"member1"}]}}}`,
			v1beta1: `{"apiVersion":"types.kubefed.io/v1beta1","kind":"FederatedService","metadata":{"name":"s","namespace":"shop"},
				"spec":{"placement":{"clusters":[{"name":"member1"}]}}}`,
		},
		{
			name: "cell selector is pinned to the namespace's cells",
			v1beta2: `{"apiVersion":"types.kubefed.io/v1beta2","kind":"FederatedDeployment","metadata":{"name":"web","namespace":"shop"},
				"spec":{"placement":{"topologyType":"cell","topologySelector":{"matchLabels":{"zone":"z1"}}}}}`,
			v1beta1: `{"apiVersion":"types.kubefed.io/v1beta1","kind":"FederatedDeployment","metadata":{"name":"web","namespace":"shop"},
				"spec":{"placement":{"clusterSelector":{"matchLabels":{"zone":"z1"},"matchExpressions":[
					{"key":"cellfed.io/topology-type","operator":"In","values":["cell"]},
					{"key":"cellfed.io/namespace","operator":"In","values":["shop"]}]}}}}`,
		},
		{
			name: "cluster selector excludes per-cell clusters",
			v1beta2: `{"apiVersion":"types.kubefed.io/v1beta2","kind":"FederatedDeployment","metadata":{"name":"web","namespace":"shop"},
				"spec":{"placement":{"topologyType":"cluster","topologySelector":{"matchLabels":{"env":"prod"}}}}}`,
			v1beta1: `{"apiVersion":"types.kubefed.io/v1beta1","kind":"FederatedDeployment","metadata":{"name":"web","namespace":"shop"},
				"spec":{"placement":{"clusterSelector":{"matchLabels":{"env":"prod"},"matchExpressions":[
					{"key":"cellfed.io/topology-type","operator":"DoesNotExist"}]}}}}`,
		},
		{
			name: "overrides and status by cell",
			v1beta2: `{"apiVersion":"types.kubefed.io/v1beta2","kind":"FederatedDeployment","metadata":{"name":"web","namespace":"shop"},
				"spec":{"placement":{"topologyType":"cell","topologies":[{"name":"rz00a"}]},
					"overrides":[{"topologyName":"rz00a","clusterOverrides":[{"path":"/spec/replicas","value":5}]}]},
				"status":{"observedGeneration":3,"conditions":[{"type":"Propagation","status":"True"}],
					"topologies":[{"name":"rz00a","cluster":"shop.rz00a","status":"OK"}]}}`,
			v1beta1: `{"apiVersion":"types.kubefed.io/v1beta1","kind":"FederatedDeployment","metadata":{"name":"web","namespace":"shop"},
				"spec":{"placement":{"clusters":[{"name":"shop.rz00a"}]},
					"overrides":[{"clusterName":"shop.rz00a","clusterOverrides":[{"path":"/spec/replicas","value":5}]}]},
				"status":{"observedGeneration":3,"conditions":[{"type":"Propagation","status":"True"}],
					"clusters":[{"name":"shop.rz00a"}]}}`,
		},
		{
			name: "placement mask is stashed",
			v1beta2: `{"apiVersion":"types.kubefed.io/v1beta2","kind":"FederatedDeployment","metadata":{"name":"web","namespace":"shop"},
				"spec":{"placement":{"topologyType":"cell","topologies":[{"name":"a"},{"name":"b"}]},"placementMask":{"topologies":[{"name":"a"}]}}}`,
			v1beta1: `{"apiVersion":"types.kubefed.io/v1beta1","kind":"FederatedDeployment","metadata":{"name":"web","namespace":"shop",
				"annotations":{"conversion.cellfed.io/v1beta2-spec":"{\"placement\":{\"topologies\":[{\"name\":\"a\"},{\"name\":\"b\"}],\"topologyType\":\"cell\"},\"placementMask\":{\"topologies\":[{\"name\":\"a\"}]}}"}},
				"spec":{"placement":{"clusters":[{"name":"shop.a"},{"name":"shop.b"}]}}}`,
		},
		{
			name: "replica division is stashed, assigned replicas reflow",
			v1beta2: `{"apiVersion":"types.kubefed.io/v1beta2","kind":"FederatedDeployment","metadata":{"name":"web","namespace":"shop"},
				"spec":{"placement":{"topologyType":"cell","topologies":[{"name":"a"}]},"replicaDivision":{"mode":"Divide","topologies":[{"name":"a","weight":2}]}},
				"status":{"topologies":[{"name":"a","cluster":"shop.a","status":"OK","replicas":4}]}}`,
			v1beta1: `{"apiVersion":"types.kubefed.io/v1beta1","kind":"FederatedDeployment","metadata":{"name":"web","namespace":"shop",
				"annotations":{"conversion.cellfed.io/v1beta2-spec":"{\"placement\":{\"topologies\":[{\"name\":\"a\"}],\"topologyType\":\"cell\"},\"replicaDivision\":{\"mode\":\"Divide\",\"topologies\":[{\"name\":\"a\",\"weight\":2}]}}"}},
				"spec":{"placement":{"clusters":[{"name":"shop.a"}]}},
				"status":{"clusters":[{"name":"shop.a","replicas":4}]}}`,
		},
		{
			name: "empty cluster placement keeps its type",
			v1beta2: `{"apiVersion":"types.kubefed.io/v1beta2","kind":"FederatedDeployment","metadata":{"name":"web","namespace":"shop"},
				"spec":{"placement":{"topologyType":"cluster","topologies":[]}}}`,
			v1beta1: `{"apiVersion":"types.kubefed.io/v1beta1","kind":"FederatedDeployment","metadata":{"name":"web","namespace":"shop",
				"annotations":{"conversion.cellfed.io/v1beta2-spec":"{\"placement\":{\"topologies\":[],\"topologyType\":\"cluster\"}}"}},
				"spec":{"placement":{"clusters":[]}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v2, v1 := obj(t, tt.v1beta2), obj(t, tt.v1beta1)
			if got := convert(t, v2, apiVersionV1beta1); !reflect.DeepEqual(got, v1) {
				t.Errorf("v1beta2 → v1beta1:\n got %s\nwant %s", toJSON(t, got), toJSON(t, v1))
			}
			if got := convert(t, v1, apiVersionV1beta2); !reflect.DeepEqual(got, v2) {
				t.Errorf("v1beta1 → v1beta2:\n got %s\nwant %s", toJSON(t, got), toJSON(t, v2))
			}
		})
	}
}

func TestConvertCommunityObjects(t *testing.T) {
	tests := []struct {
		name    string
		v1beta1 string
		want    string // v1beta2 spec.placement
	}{
		{"own cells become cells", `{"clusters":[{"name":"shop.a"},{"name":"shop.b"}]}`, `{"topologyType":"cell","topologies":[{"name":"a"},{"name":"b"}]}`},
		{"physical clusters stay clusters", `{"clusters":[{"name":"member1"}]}`, `{"topologyType":"cluster","topologies":[{"name":"member1"}]}`},
		{"another namespace's cell is a cluster name", `{"clusters":[{"name":"other.a"}]}`, `{"topologyType":"cluster","topologies":[{"name":"other.a"}]}`},
		{"mixed names fall back to clusters", `{"clusters":[{"name":"shop.a"},{"name":"member1"}]}`, `{"topologyType":"cluster","topologies":[{"name":"shop.a"},{"name":"member1"}]}`},
		{"unpinned selector is a cluster selector", `{"clusterSelector":{"matchLabels":{"env":"prod"}}}`, `{"topologyType":"cluster","topologySelector":{"matchLabels":{"env":"prod"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := obj(t, `{"apiVersion":"types.kubefed.io/v1beta1","kind":"FederatedConfigMap","metadata":{"name":"c","namespace":"shop"},"spec":{"placement":`+tt.v1beta1+`}}`)
			got := convert(t, in, apiVersionV1beta2)
			spec := got["spec"].(map[string]any)
			if want := obj(t, tt.want); !reflect.DeepEqual(spec["placement"], want) {
				t.Errorf("placement = %s, want %s", toJSON(t, spec["placement"]), tt.want)
			}
			if back := convert(t, got, apiVersionV1beta1); !reflect.DeepEqual(back, in) {
				t.Errorf("round trip changed the object:\n got %s\nwant %s", toJSON(t, back), toJSON(t, in))
			}
		})
	}
}

func TestStaleStashIsIgnored(t *testing.T) {
	// A v1beta1 client (KubeFed) changes the placement of an object whose
	// v1beta2 placement mask was stashed: the stash no longer describes the
	// object and must not resurrect the old placement.
	v2 := obj(t, `{"apiVersion":"types.kubefed.io/v1beta2","kind":"FederatedDeployment","metadata":{"name":"web","namespace":"shop"},
		"spec":{"placement":{"topologyType":"cell","topologies":[{"name":"a"}]},"placementMask":{"topologies":[{"name":"a"}]}}}`)
	v1 := convert(t, v2, apiVersionV1beta1)
	v1["spec"].(map[string]any)["placement"] = map[string]any{"clusters": []any{map[string]any{"name": "shop.b"}}}
	got := convert(t, v1, apiVersionV1beta2)
	want := obj(t, `{"apiVersion":"types.kubefed.io/v1beta2","kind":"FederatedDeployment","metadata":{"name":"web","namespace":"shop"},
		"spec":{"placement":{"topologyType":"cell","topologies":[{"name":"b"}]}}}`)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %s\nwant %s", toJSON(t, got), toJSON(t, want))
	}
}

func TestConvertRejectsUnknownVersions(t *testing.T) {
	for _, tt := range []struct{ from, to string }{
		{"types.kubefed.io/v1beta1", "types.kubefed.io/v2"},
		{"apps/v1", "types.kubefed.io/v1beta2"},
	} {
		o := map[string]any{"apiVersion": tt.from}
		if err := Convert(o, tt.to); err == nil || !strings.Contains(err.Error(), "cannot convert") {
			t.Errorf("Convert(%s → %s) error = %v, want cannot convert", tt.from, tt.to, err)
		}
	}
}

// TestSelectorNeverReachesAnotherTenant evaluates translated cell
// selectors against the labels per-cell KubeFedClusters carry: a cell of
// the same namespace with matching labels is selected, the same cell in any
// other namespace never is, whatever the user put in the selector.
func TestSelectorNeverReachesAnotherTenant(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		sel := randomSelector(r, true)
		v2 := &typesv1beta2.FederatedObject{
			TypeMeta:   metav1.TypeMeta{APIVersion: apiVersionV1beta2, Kind: "FederatedDeployment"},
			ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "tenant-a"},
			Spec:       typesv1beta2.Spec{Placement: typesv1beta2.Placement{TopologyType: typesv1beta2.TopologyCell, TopologySelector: sel}},
		}
		v1 := convert(t, unstructuredOf(t, v2), apiVersionV1beta1)
		var typed typesv1beta1.FederatedObject
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(v1, &typed); err != nil {
			t.Fatal(err)
		}
		clusterSel, err := metav1.LabelSelectorAsSelector(typed.Spec.Placement.ClusterSelector)
		if err != nil {
			t.Fatalf("translated selector invalid: %v", err)
		}
		userSel, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			t.Fatal(err)
		}
		cellLabels := randomLabels(r)
		for _, ns := range []string{"tenant-a", "tenant-b", "tenant-a-x", ""} {
			l := labels.Set{}
			for k, v := range cellLabels {
				l[k] = v
			}
			l[cellv1alpha1.LabelTopologyType] = cellv1alpha1.TopologyTypeCell
			l[cellv1alpha1.LabelNamespace] = ns
			l[cellv1alpha1.LabelCell] = "c1"
			if ns != "tenant-a" && clusterSel.Matches(l) {
				t.Fatalf("selector %s of namespace tenant-a matches a cell of namespace %q (labels %v)", clusterSel, ns, l)
			}
			if ns == "tenant-a" && userSel.Matches(l) != clusterSel.Matches(l) {
				t.Fatalf("selector %s and its translation %s disagree on own cell %v", userSel, clusterSel, l)
			}
		}
		// Physical clusters carry no topology-type label: never selected.
		if clusterSel.Matches(labels.Set(cellLabels)) {
			t.Fatalf("cell selector %s matches a physical cluster %v", clusterSel, cellLabels)
		}
	}
}

func unstructuredOf(t testing.TB, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := utiljson.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// Random objects for the property and fuzz tests.

var (
	labelKeys   = []string{"zone", "region", "env", cellv1alpha1.LabelNamespace, cellv1alpha1.LabelTopologyType, cellv1alpha1.LabelCell, "topology.kubernetes.io/zone"}
	labelValues = []string{"z1", "z2", "prod", "tenant-a", "tenant-b", "cell", "c1", ""}
	namespaces  = []string{"tenant-a", "shop", "t"}
	cellNames   = []string{"rz00a", "rz01a", "a", "c1"}
	clusters    = []string{"member1", "member2", "m"}
)

func pickOne[T any](r *rand.Rand, list []T) T { return list[r.IntN(len(list))] }

func randomLabels(r *rand.Rand) map[string]string {
	l := map[string]string{}
	for i := r.IntN(3); i > 0; i-- {
		l[pickOne(r, labelKeys[:3])] = pickOne(r, labelValues[:3])
	}
	return l
}

func randomSelector(r *rand.Rand, reservedKeys bool) *metav1.LabelSelector {
	keys := labelKeys[:3]
	if reservedKeys {
		keys = labelKeys
	}
	sel := &metav1.LabelSelector{}
	if r.IntN(2) == 0 {
		sel.MatchLabels = map[string]string{}
		for i := r.IntN(3) + 1; i > 0; i-- {
			sel.MatchLabels[pickOne(r, keys)] = pickOne(r, labelValues[:6])
		}
	}
	for i := r.IntN(3); i > 0; i-- {
		req := metav1.LabelSelectorRequirement{Key: pickOne(r, keys)}
		switch r.IntN(4) {
		case 0:
			req.Operator = metav1.LabelSelectorOpIn
			req.Values = []string{pickOne(r, labelValues[:6])}
		case 1:
			req.Operator = metav1.LabelSelectorOpNotIn
			req.Values = []string{pickOne(r, labelValues[:6]), pickOne(r, labelValues[:6])}
		case 2:
			req.Operator = metav1.LabelSelectorOpExists
		default:
			req.Operator = metav1.LabelSelectorOpDoesNotExist
		}
		sel.MatchExpressions = append(sel.MatchExpressions, req)
	}
	return sel
}

func randomValue(r *rand.Rand) *runtime.RawExtension {
	switch r.IntN(5) {
	case 0:
		return nil
	case 1:
		return &runtime.RawExtension{Raw: []byte(fmt.Sprint(r.IntN(100)))}
	case 2:
		return &runtime.RawExtension{Raw: []byte(`"v` + fmt.Sprint(r.IntN(9)) + `"`)}
	case 3:
		return &runtime.RawExtension{Raw: []byte(`{"k":[1,"x",{"y":null}]}`)}
	default:
		return &runtime.RawExtension{Raw: []byte(`1.5`)}
	}
}

func randomClusterOverrides(r *rand.Rand) []typesv1beta2.ClusterOverride {
	var out []typesv1beta2.ClusterOverride
	for i := r.IntN(3); i > 0; i-- {
		out = append(out, typesv1beta2.ClusterOverride{Op: pickOne(r, []string{"", "add", "remove", "replace"}), Path: pickOne(r, []string{"/spec/replicas", "/metadata/labels/x", "/spec/template/spec/containers/0/image"}), Value: randomValue(r)})
	}
	return out
}

// randomV1beta2 returns a v1beta2 object as the API serves it: topology
// type set (it is defaulted), status entries naming their cluster.
func randomV1beta2(r *rand.Rand) map[string]any {
	ns := pickOne(r, namespaces)
	typ := pickOne(r, typesv1beta2.TopologyTypes)
	names := cellNames
	if typ == typesv1beta2.TopologyCluster {
		names = append(append([]string{}, clusters...), cellv1alpha1.CellClusterName(ns, "a"), cellv1alpha1.CellClusterName("other", "a"))
	}
	o := &typesv1beta2.FederatedObject{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiVersionV1beta2, Kind: "FederatedDeployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "o", Namespace: ns},
	}
	if r.IntN(4) == 0 {
		o.Annotations = map[string]string{"team": "x"}
	}
	o.Spec.Template = runtime.RawExtension{Raw: []byte(`{"spec":{"replicas":3}}`)}
	o.Spec.Placement.TopologyType = typ
	switch r.IntN(3) {
	case 0:
		o.Spec.Placement.Topologies = []typesv1beta2.Topology{}
	case 1:
		for i := r.IntN(4); i > 0; i-- {
			o.Spec.Placement.Topologies = append(o.Spec.Placement.Topologies, typesv1beta2.Topology{Name: pickOne(r, names)})
		}
	}
	if r.IntN(2) == 0 {
		o.Spec.Placement.TopologySelector = randomSelector(r, false)
	}
	if r.IntN(3) == 0 {
		o.Spec.PlacementMask = &typesv1beta2.PlacementMask{Topologies: []typesv1beta2.Topology{{Name: pickOne(r, names)}}}
	}
	for i := r.IntN(3); i > 0; i-- {
		o.Spec.Overrides = append(o.Spec.Overrides, typesv1beta2.Override{TopologyName: pickOne(r, names), ClusterOverrides: randomClusterOverrides(r)})
	}
	if r.IntN(3) == 0 {
		o.Spec.ReplicaDivision = randomDivision(r, names)
	}
	if r.IntN(2) == 0 {
		o.Status = &typesv1beta2.Status{ObservedGeneration: int64(r.IntN(5))}
		for i := r.IntN(3); i > 0; i-- {
			name := pickOne(r, names)
			ts := typesv1beta2.TopologyStatus{Name: name, Cluster: clusterNameOf(ns, typ, name), Status: "OK", RemoteStatus: randomValue(r)}
			if r.IntN(2) == 0 {
				ts.Replicas = ptr.To(int32(r.IntN(5)))
			}
			o.Status.Topologies = append(o.Status.Topologies, ts)
		}
	}
	return unstructuredOfNoT(o)
}

// randomDivision returns a replica division as the API serves it (mode
// defaulted), with any of its optional fields.
func randomDivision(r *rand.Rand, names []string) *typesv1beta2.ReplicaDivision {
	d := &typesv1beta2.ReplicaDivision{Mode: pickOne(r, typesv1beta2.DivisionModes), Failover: r.IntN(2) == 0}
	if r.IntN(2) == 0 {
		d.Dynamic = typesv1beta2.DynamicAvailableReplicas
	}
	if r.IntN(2) == 0 {
		d.MaxSurge = ptr.To(int32(1 + r.IntN(3)))
	}
	if r.IntN(2) == 0 {
		d.FailoverAfterSeconds = ptr.To(int32(r.IntN(600)))
	}
	for i := r.IntN(3); i > 0; i-- {
		t := typesv1beta2.DivisionTopology{Name: pickOne(r, names), MinReplicas: int32(r.IntN(3))}
		if r.IntN(2) == 0 {
			t.Weight = ptr.To(int32(r.IntN(4)))
		}
		if r.IntN(2) == 0 {
			t.MaxReplicas = ptr.To(t.MinReplicas + int32(r.IntN(4)))
		}
		d.Topologies = append(d.Topologies, t)
	}
	return d
}

func randomV1beta1(r *rand.Rand) map[string]any {
	ns := pickOne(r, namespaces)
	names := []string{cellv1alpha1.CellClusterName(ns, "a"), cellv1alpha1.CellClusterName(ns, "b"), cellv1alpha1.CellClusterName("other", "a"), "member1", "m"}
	if r.IntN(2) == 0 {
		names = names[:2] // often only own cells, so the cell type is inferred
	}
	o := &typesv1beta1.FederatedObject{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiVersionV1beta1, Kind: "FederatedService"},
		ObjectMeta: metav1.ObjectMeta{Name: "o", Namespace: ns},
	}
	if r.IntN(6) == 0 {
		o.Namespace = "" // cluster-scoped federated type
	}
	switch r.IntN(3) {
	case 0:
		o.Spec.Placement.Clusters = []typesv1beta1.ClusterReference{}
	case 1:
		for i := r.IntN(4); i > 0; i-- {
			o.Spec.Placement.Clusters = append(o.Spec.Placement.Clusters, typesv1beta1.ClusterReference{Name: pickOne(r, names)})
		}
	}
	if r.IntN(2) == 0 {
		sel := randomSelector(r, false)
		switch r.IntN(3) {
		case 0:
			for _, p := range cellPins(ns) {
				sel.MatchExpressions = append(sel.MatchExpressions, requirementOf(p))
			}
		case 1:
			sel.MatchExpressions = append(sel.MatchExpressions, requirementOf(clusterPins()[0]))
		}
		o.Spec.Placement.ClusterSelector = sel
	}
	for i := r.IntN(3); i > 0; i-- {
		co := randomClusterOverrides(r)
		o.Spec.Overrides = append(o.Spec.Overrides, typesv1beta1.Override{ClusterName: pickOne(r, names), ClusterOverrides: v1beta1Overrides(co)})
	}
	if r.IntN(2) == 0 {
		o.Status = &typesv1beta1.Status{ObservedGeneration: 1, Conditions: []typesv1beta1.Condition{{Type: "Propagation", Status: "True"}}}
		for i := r.IntN(3); i > 0; i-- {
			// KubeFed's OK is no status; v1beta2 says "OK".
			o.Status.Clusters = append(o.Status.Clusters, typesv1beta1.ClusterStatus{Name: pickOne(r, names), Status: pickOne(r, []string{"", "ClusterNotReady"})})
		}
	}
	return unstructuredOfNoT(o)
}

func requirementOf(p any) metav1.LabelSelectorRequirement {
	m := p.(map[string]any)
	req := metav1.LabelSelectorRequirement{Key: m["key"].(string), Operator: metav1.LabelSelectorOperator(m["operator"].(string))}
	if vals, ok := m["values"].([]any); ok {
		for _, v := range vals {
			req.Values = append(req.Values, v.(string))
		}
	}
	return req
}

// v1beta1Overrides converts overrides between the two identical shapes.
func v1beta1Overrides(in []typesv1beta2.ClusterOverride) []typesv1beta1.ClusterOverride {
	out := make([]typesv1beta1.ClusterOverride, len(in))
	for i, c := range in {
		out[i] = typesv1beta1.ClusterOverride(c)
	}
	return out
}

func unstructuredOfNoT(v any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var m map[string]any
	if err := utiljson.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	return m
}

// checkRoundTrips converts in to the other version and back, and also
// through JSON (as the webhook and the API server do) in between.
func checkRoundTrips(t testing.TB, in map[string]any) {
	t.Helper()
	from := in["apiVersion"].(string)
	to := apiVersionV1beta1
	if from == apiVersionV1beta1 {
		to = apiVersionV1beta2
	}
	mid := convert(t, in, to)
	mid = unstructuredOfNoT(mid)
	back := convert(t, mid, from)
	if !reflect.DeepEqual(back, in) {
		t.Fatalf("round trip %s → %s → %s changed the object\n  in: %s\n mid: %s\nback: %s", from, to, from, toJSON(t, in), toJSON(t, mid), toJSON(t, back))
	}
}

func TestRoundTripRandomObjects(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for i := 0; i < 5000; i++ {
		checkRoundTrips(t, randomV1beta2(r))
		checkRoundTrips(t, randomV1beta1(r))
	}
}

// FuzzRoundTrip drives the random object generators from fuzzer input;
// the seeds under testdata/fuzz/FuzzRoundTrip run with every `go test`.
func FuzzRoundTrip(f *testing.F) {
	for _, seed := range []uint64{0, 1, 42, 1 << 40} {
		f.Add(seed, seed*31+7)
	}
	f.Fuzz(func(t *testing.T, a, b uint64) {
		r := rand.New(rand.NewPCG(a, b))
		checkRoundTrips(t, randomV1beta2(r))
		checkRoundTrips(t, randomV1beta1(r))
	})
}

// FuzzReview feeds arbitrary bytes to the webhook's review function: it
// must answer or refuse, never panic, answer with valid JSON, and what it
// converts must convert back. (Exact round trips are proven over valid
// objects by FuzzRoundTrip; arbitrary input may carry stale stashes.)
func FuzzReview(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"1","desiredAPIVersion":"types.kubefed.io/v1beta1","objects":[{"apiVersion":"types.kubefed.io/v1beta2","kind":"FederatedDeployment","metadata":{"name":"a","namespace":"shop"},"spec":{"placement":{"topologyType":"cell","topologies":[{"name":"rz00a"}]}}}]}}`))
	f.Add([]byte(`{"request":{"desiredAPIVersion":"types.kubefed.io/v1beta2","objects":[{"apiVersion":"types.kubefed.io/v1beta1","spec":"x"}]}}`))
	f.Add([]byte(`{"request":{"desiredAPIVersion":"types.kubefed.io/v1beta2","objects":[{"apiVersion":"types.kubefed.io/v1beta1","metadata":{"namespace":"n"},"spec":{"placement":{"clusters":[{"name":"n.c"},7]}}}]}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		out, _, err := Review(body)
		if err != nil {
			return
		}
		var review struct {
			Request  struct{ Objects []json.RawMessage }
			Response struct {
				Result           struct{ Status string }
				ConvertedObjects []json.RawMessage
			}
		}
		if err := json.Unmarshal(out, &review); err != nil {
			t.Fatalf("response is not JSON: %v", err)
		}
		if review.Response.Result.Status != "Success" {
			return
		}
		var in struct {
			Request struct {
				Objects []map[string]any `json:"objects"`
			} `json:"request"`
		}
		if err := utiljson.Unmarshal(body, &in); err != nil || len(in.Request.Objects) != len(review.Response.ConvertedObjects) {
			return
		}
		for i, raw := range review.Response.ConvertedObjects {
			var converted map[string]any
			if err := utiljson.Unmarshal(raw, &converted); err != nil {
				t.Fatalf("converted object %d is not JSON: %v", i, err)
			}
			orig := in.Request.Objects[i]
			from, _ := orig["apiVersion"].(string)
			if from != apiVersionV1beta1 && from != apiVersionV1beta2 {
				continue
			}
			if err := Convert(converted, from); err != nil {
				t.Fatalf("converting back: %v", err)
			}
		}
	})
}

func TestSpecNotAnObject(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec any
		want string
	}{
		{"a list", []any{"x"}, "spec must be an object, not a list"},
		{"a string", "x", "spec must be an object, not a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := map[string]any{"apiVersion": apiVersionV1beta2, "spec": tc.spec}
			if err := Convert(o, apiVersionV1beta1); err == nil || err.Error() != tc.want {
				t.Errorf("Convert error = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestV1beta1View: the in-process view is exactly what Convert makes of
// a copy, and leaves the stored object as it was; StatusToV1beta2 turns
// the view's status back into the stored one.
func TestV1beta1View(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for i := 0; i < 2000; i++ {
		in := randomV1beta2(r)
		before := runtime.DeepCopyJSON(in)
		view, err := V1beta1View(in)
		if err != nil {
			t.Fatalf("V1beta1View: %v", err)
		}
		if want := convert(t, in, apiVersionV1beta1); !reflect.DeepEqual(view, want) {
			t.Fatalf("view differs from Convert\n view: %s\n want: %s", toJSON(t, view), toJSON(t, want))
		}
		if !reflect.DeepEqual(in, before) {
			t.Fatalf("V1beta1View changed its input\n  now: %s\n was: %s", toJSON(t, in), toJSON(t, before))
		}
		status, ok := view["status"].(map[string]any)
		if !ok {
			continue
		}
		status = runtime.DeepCopyJSON(status)
		StatusToV1beta2(in, status)
		if !reflect.DeepEqual(status, in["status"]) {
			t.Fatalf("StatusToV1beta2 of the view's status\n  got: %s\n want: %s", toJSON(t, status), toJSON(t, in["status"]))
		}
	}
	v1 := obj(t, `{"apiVersion":"types.kubefed.io/v1beta1","metadata":{"name":"a"}}`)
	if view, err := V1beta1View(v1); err != nil || !reflect.DeepEqual(view, v1) {
		t.Errorf("a v1beta1 object's view = %v, %v; want the object itself", view, err)
	}
}

// TestStashChanged: a v1beta1 update changes the v1beta2 spec through the
// stash only when the v1beta1 spec stays and the stash's view differs.
func TestStashChanged(t *testing.T) {
	v1 := func(stash string) map[string]any {
		o := map[string]any{"apiVersion": apiVersionV1beta1, "kind": "FederatedDeployment",
			"metadata": map[string]any{"name": "web", "namespace": "shop"},
			"spec":     map[string]any{"placement": map[string]any{"clusters": []any{map[string]any{"name": "shop.a"}, map[string]any{"name": "shop.b"}}}}}
		if stash != "" {
			o["metadata"].(map[string]any)["annotations"] = map[string]any{AnnotationV1beta2Spec: stash}
		}
		return o
	}
	const (
		maskA = `{"placement":{"topologyType":"cell","topologies":[{"name":"a"},{"name":"b"}]},"placementMask":{"topologies":[{"name":"a"}]}}`
		maskB = `{"placement":{"topologyType":"cell","topologies":[{"name":"a"},{"name":"b"}]},"placementMask":{"topologies":[{"name":"b"}]}}`
	)
	other := v1(maskB)
	other["spec"].(map[string]any)["placement"] = map[string]any{"clusters": []any{map[string]any{"name": "shop.a"}}}
	v2 := v1("")
	v2["apiVersion"] = apiVersionV1beta2
	for _, tc := range []struct {
		name     string
		old, obj map[string]any
		want     bool
	}{
		{"mask moved through the stash", v1(maskA), v1(maskB), true},
		{"mask added through the stash", v1(""), v1(maskB), true},
		{"mask removed through the stash", v1(maskA), v1(""), true},
		{"stash unchanged", v1(maskA), v1(maskA), false},
		{"spec changed too: counted by the spec", v1(maskA), other, false},
		{"stash not JSON: ignored by conversion", v1(maskA), v1("{"), true},
		{"v1beta2 objects: their mask is spec", v2, v2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := StashChanged(tc.old, tc.obj); got != tc.want {
				t.Errorf("StashChanged = %v, want %v", got, tc.want)
			}
		})
	}
	// Conversion drops the mark whichever way it goes.
	marked := v1(maskB)
	marked[FieldStashChanged] = true
	out := convert(t, marked, apiVersionV1beta2)
	if _, ok := out[FieldStashChanged]; ok {
		t.Errorf("conversion to v1beta2 kept %s", FieldStashChanged)
	}
}
