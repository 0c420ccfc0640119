package admission

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/federatedtypes"
)

// The plane the tests run against.
//
//	namespaces: shop     (tenant acme, workspace shop-ws)
//	            other-ns (tenant other, workspace other-ws)
//	            half     (tenant acme only)
//	            plain    (no tenancy labels)
//	            broken   (reading it fails)
//	cells of shop: rz00a on c1 (region=east, zone=z1)
//	               rz00b on c2 (region=east, zone=z2)
//	               rz00c on c1 (region=west, zone=z1)
//	cells of other-ns: rz00a on c2
//	KubeFedClusters: c1, c2
//	enabled types: FederatedDeployment → apps/v1 Deployment,
//	               FederatedService → v1 Service
const fedNamespace = "kube-federation-system"

type fakeLookup struct {
	namespaces map[string]*corev1.Namespace
	cells      map[string][]*cellv1alpha1.Cell
	clusters   map[string]bool
	// clusterLabels are the labels of the clusters that exist.
	clusterLabels map[string]map[string]string
	federated     map[string][]string
	targets       map[string]federatedtypes.Target
	selectors     map[string][]SelectorUse
	// placing names the objects placing each cluster.
	placing map[string][]string
}

func (f *fakeLookup) CellSelectors(namespace string) ([]SelectorUse, error) {
	return f.selectors[namespace], nil
}

var errBroken = errors.New("cache unavailable")

func (f *fakeLookup) Namespace(name string) (*corev1.Namespace, error) {
	if name == "broken" {
		return nil, errBroken
	}
	return f.namespaces[name], nil
}

func (f *fakeLookup) Cell(namespace, name string) (*cellv1alpha1.Cell, error) {
	for _, c := range f.cells[namespace] {
		if c.Name == name {
			return c.DeepCopy(), nil
		}
	}
	return nil, nil
}

func (f *fakeLookup) Cells(namespace string, selector labels.Selector) ([]*cellv1alpha1.Cell, error) {
	var out []*cellv1alpha1.Cell
	for _, c := range f.cells[namespace] {
		if selector.Matches(labels.Set(c.Labels)) {
			out = append(out, c.DeepCopy())
		}
	}
	return out, nil
}

func (f *fakeLookup) ClusterLabels(name string) (map[string]string, bool, error) {
	if !f.clusters[name] {
		return nil, false, nil
	}
	return f.clusterLabels[name], true, nil
}

func (f *fakeLookup) CellsOnCluster(cluster string) ([]*cellv1alpha1.Cell, error) {
	var out []*cellv1alpha1.Cell
	for _, cells := range f.cells {
		for _, c := range cells {
			if c.Spec.Cluster == cluster || (c.Spec.Move != nil && c.Spec.Move.To == cluster) {
				out = append(out, c.DeepCopy())
			}
		}
	}
	return out, nil
}

func (f *fakeLookup) FederatedObjects(namespace string, limit int) ([]string, error) {
	out := f.federated[namespace]
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (f *fakeLookup) ObjectsPlacing(namespace, cluster string, _ map[string]string, limit int) ([]string, int, error) {
	all := f.placing[cluster]
	if len(all) > limit {
		return all[:limit], len(all), nil
	}
	return all, len(all), nil
}

func (f *fakeLookup) Target(kind string) (federatedtypes.Target, bool, error) {
	if kind == "FederatedBroken" {
		return federatedtypes.Target{}, false, errBroken
	}
	t, ok := f.targets[kind]
	return t, ok, nil
}

func newAdmitter() *Admitter {
	ns := func(name string, lbls map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}
	}
	cell := func(ns, name, cluster string, lbls map[string]string) *cellv1alpha1.Cell {
		return &cellv1alpha1.Cell{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
			Spec:       cellv1alpha1.CellSpec{Cluster: cluster},
		}
	}
	return &Admitter{
		FederationNamespace: fedNamespace,
		Lookup: &fakeLookup{
			namespaces: map[string]*corev1.Namespace{
				"shop":       ns("shop", map[string]string{cellv1alpha1.LabelTenant: "acme", cellv1alpha1.LabelWorkspace: "shop-ws"}),
				"other-ns":   ns("other-ns", map[string]string{cellv1alpha1.LabelTenant: "other", cellv1alpha1.LabelWorkspace: "other-ws"}),
				"half":       ns("half", map[string]string{cellv1alpha1.LabelTenant: "acme"}),
				"plain":      ns("plain", nil),
				fedNamespace: ns(fedNamespace, nil),
			},
			cells: map[string][]*cellv1alpha1.Cell{
				"shop": {
					cell("shop", "rz00a", "c1", map[string]string{"region": "east", "zone": "z1"}),
					cell("shop", "rz00b", "c2", map[string]string{"region": "east", "zone": "z2"}),
					cell("shop", "rz00c", "c1", map[string]string{"region": "west", "zone": "z1"}),
				},
				"other-ns": {cell("other-ns", "rz00a", "c2", nil)},
			},
			clusters:      map[string]bool{"c1": true, "c2": true, "c3": true},
			clusterLabels: map[string]map[string]string{"c3": {cellv1alpha1.LabelTenant: "other"}},
			federated:     map[string][]string{"shop": {"FederatedDeployment/web"}},
			targets: map[string]federatedtypes.Target{
				"FederatedDeployment": {Group: "apps", Version: "v1", Kind: "Deployment", Plural: "deployments", Namespaced: true},
				"FederatedService":    {Group: "", Version: "v1", Kind: "Service", Plural: "services", Namespaced: true},
				"FederatedNamespace":  {Group: "", Version: "v1", Kind: "Namespace", Plural: "namespaces", Namespaced: false},
				"FederatedConfigMap":  {Group: "", Version: "v1", Kind: "ConfigMap", Plural: "configmaps", Namespaced: true},
			},
		},
	}
}

// Building objects and requests.

// object parses a YAML manifest, as kubectl would send it.
func object(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	if manifest == "" {
		return nil
	}
	j, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatalf("bad YAML in test: %v\n%s", err, manifest)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatalf("bad object in test: %v\n%s", err, manifest)
	}
	return u
}

// indent indents every line of s by n spaces.
func indent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = pad + l
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// federated is a federated object "web" in namespace ns; meta is extra
// metadata, spec the spec, both as YAML at column 0.
func federated(version, kind, ns, meta, spec string) string {
	s := fmt.Sprintf("apiVersion: types.kubefed.io/%s\nkind: %s\nmetadata:\n  name: web\n  namespace: %s\n", version, kind, ns)
	if meta != "" {
		s += indent(meta, 2)
	}
	if spec != "" {
		if !strings.Contains(spec, "template:") {
			spec += "\ntemplate: {}\n" // every federated object needs one
		}
		s += "spec:\n" + indent(spec, 2)
	}
	return s
}

// v2 is a v1beta2 FederatedDeployment in shop.
func v2(spec string) string { return federated("v1beta2", "FederatedDeployment", "shop", "", spec) }

// v1 is a v1beta1 FederatedDeployment in shop.
func v1(spec string) string { return federated("v1beta1", "FederatedDeployment", "shop", "", spec) }

func cellManifest(ns, name, cluster string) string {
	s := fmt.Sprintf("apiVersion: core.cellfed.io/v1alpha1\nkind: Cell\nmetadata:\n  name: %s\n  namespace: %s\n", name, ns)
	if cluster != "" {
		s += "spec:\n  cluster: " + cluster + "\n"
	}
	return s
}

func request(op Operation, sub string, obj, old *unstructured.Unstructured) Request {
	src := obj
	if src == nil {
		src = old
	}
	gvk := src.GroupVersionKind()
	r := Request{
		Operation:   op,
		Kind:        gvk,
		Resource:    schema.GroupResource{Group: gvk.Group, Resource: strings.ToLower(gvk.Kind) + "s"},
		Namespace:   src.GetNamespace(),
		Name:        src.GetName(),
		SubResource: sub,
		Object:      obj,
		OldObject:   old,
	}
	return r
}

// Outcomes.

type outcome int

const (
	allowed outcome = iota
	invalid
	forbidden
	internal
)

func (o outcome) String() string {
	return [...]string{"allowed", "Invalid", "Forbidden", "InternalError"}[o]
}

func checkOutcome(t *testing.T, err error, want outcome, msgs []string) {
	t.Helper()
	if want == allowed {
		if err != nil {
			t.Fatalf("want allowed, got %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("want %s, got allowed", want)
	}
	got := map[outcome]bool{invalid: apierrors.IsInvalid(err), forbidden: apierrors.IsForbidden(err), internal: apierrors.IsInternalError(err)}
	if !got[want] {
		t.Fatalf("want %s, got %v (reason %q)", want, err, apierrors.ReasonForError(err))
	}
	for _, m := range msgs {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("message lacks %q:\n%s", m, err.Error())
		}
	}
	// Messages are for people: no Go values or converter internals.
	for _, leak := range []string{"&LabelSelector", "map[", "[]interface", "cannot restore", "cannot convert", "Go struct"} {
		if strings.Contains(err.Error(), leak) {
			t.Errorf("message shows Go internals (%q):\n%s", leak, err.Error())
		}
	}
}

// Validate.

type validateCase struct {
	name string
	op   Operation // CREATE when empty
	sub  string
	obj  string // the new object; empty for a DELETE without one
	old  string // the current object on UPDATE and DELETE
	want outcome
	msgs []string // substrings of the error message
	// replace makes the request a whole-object update (PUT).
	replace bool
}

func runValidate(t *testing.T, cases []validateCase) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("duplicate case name %q", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			op := c.op
			if op == "" {
				op = Create
			}
			obj, old := object(t, c.obj), object(t, c.old)
			var before *unstructured.Unstructured
			if obj != nil {
				before = obj.DeepCopy()
			}
			r := request(op, c.sub, obj, old)
			r.Replace = c.replace
			err := newAdmitter().Validate(r)
			checkOutcome(t, err, c.want, c.msgs)
			if obj != nil && !reflect.DeepEqual(before.Object, obj.Object) {
				t.Errorf("Validate changed the object:\nbefore %v\nafter  %v", before.Object, obj.Object)
			}
		})
	}
}

const deploymentTemplate = `template:
  metadata:
    labels: {app: web}
  spec:
    replicas: 1
`

func TestValidateFederatedV1beta2Placement(t *testing.T) {
	runValidate(t, []validateCase{
		{
			name: "two cells on different clusters",
			obj: v2(deploymentTemplate + `placement:
  topologies: [{name: rz00a}, {name: rz00b}]
`),
		},
		{
			name: "topologyType cell spelled out",
			obj: v2(`placement:
  topologyType: cell
  topologies: [{name: rz00a}]
`),
		},
		{
			name: "empty placement",
			obj:  v2(`placement: {topologies: []}`),
		},
		{
			name: "no spec at all",
			obj:  v2(""),
			want: invalid,
			msgs: []string{"spec.template", "Required value", "give the Deployment to create in the members"},
		},
		{
			name: "two cells on the same physical cluster",
			obj: v2(`placement:
  topologies: [{name: rz00a}, {name: rz00c}]
`),
			want: invalid,
			msgs: []string{"spec.placement", `"rz00a"`, `"rz00c"`, `cluster "c1"`},
		},
		{
			name: "topologySelector matching two cells of one cluster",
			obj: v2(`placement:
  topologySelector:
    matchLabels: {zone: z1}
`),
			want: invalid,
			msgs: []string{"spec.placement", `"rz00a"`, `"rz00c"`, `cluster "c1"`},
		},
		{
			name: "topologySelector matching cells of different clusters",
			obj: v2(`placement:
  topologySelector:
    matchLabels: {region: east}
`),
		},
		{
			name: "named cell and selector picking another cell of its cluster",
			obj: v2(`placement:
  topologies: [{name: rz00a}]
  topologySelector:
    matchLabels: {region: west}
`),
			want: invalid,
			msgs: []string{`"rz00a"`, `"rz00c"`, `cluster "c1"`},
		},
		{
			name: "named cell also matched by the selector",
			obj: v2(`placement:
  topologies: [{name: rz00a}]
  topologySelector:
    matchLabels: {zone: z1, region: east}
`),
		},
		{
			name: "missing cell",
			obj: v2(`placement:
  topologies: [{name: rz00a}, {name: rz99}]
`),
			want: invalid,
			msgs: []string{"spec.placement.topologies[1].name", `cell "rz99"`, "namespace shop", "cellfedctl cell create rz99"},
		},
		{
			name: "a cell of another namespace is missing here",
			obj: federated("v1beta2", "FederatedDeployment", "other-ns", "", `placement:
  topologies: [{name: rz00b}]
`),
			want: invalid,
			msgs: []string{"spec.placement.topologies[0].name", `cell "rz00b"`, "namespace other-ns"},
		},
		{
			name: "placementMask with a missing cell",
			obj: v2(`placement:
  topologies: [{name: rz00a}, {name: rz00b}]
placementMask:
  topologies: [{name: rz98}]
`),
			want: invalid,
			msgs: []string{"spec.placementMask.topologies[0].name", `cell "rz98"`, "namespace shop"},
		},
		{
			name: "placementMask naming an existing cell outside the placement",
			obj: v2(`placement:
  topologies: [{name: rz00a}]
placementMask:
  topologies: [{name: rz00a}, {name: rz00c}]
`),
			want: invalid,
			msgs: []string{"spec.placementMask.topologies[1].name", `cell "rz00c" is not in spec.placement.topologies`, "add the cell to the placement first or remove it from the mask"},
		},
		{
			name: "placementMask naming a cell the selector does not select",
			obj: v2(`placement:
  topologySelector: {matchLabels: {region: east}}
placementMask:
  topologies: [{name: rz00a}, {name: rz00c}]
`),
			want: invalid,
			msgs: []string{"spec.placementMask.topologies[1].name", `cell "rz00c" is not selected by the placement's selector`},
		},
		{
			name: "placementMask within a selector's cells",
			obj: v2(`placement:
  topologySelector: {matchLabels: {region: east}}
placementMask:
  topologies: [{name: rz00b}]
`),
		},
		{
			name: "an empty placementMask holds everything back",
			obj: v2(`placement:
  topologies: [{name: rz00a}]
placementMask:
  topologies: []
`),
		},
		{
			name: "placementMask of clusters within a cluster placement",
			obj: v2(`placement:
  topologyType: cluster
  topologies: [{name: c1}, {name: c2}]
placementMask:
  topologies: [{name: c2}]
`),
		},
		{
			name: "placementMask of clusters outside a cluster placement",
			obj: v2(`placement:
  topologyType: cluster
  topologies: [{name: c1}]
placementMask:
  topologies: [{name: c2}]
`),
			want: invalid,
			msgs: []string{"spec.placementMask.topologies[0].name", `cluster "c2" is not in the placement`},
		},
		{
			name: "UPDATE that only narrows the mask to a placed cell",
			op:   Update,
			obj: v2(`placement:
  topologies: [{name: rz00a}, {name: rz00b}]
placementMask:
  topologies: [{name: rz00a}]
`),
			old: v2(`placement:
  topologies: [{name: rz00a}, {name: rz00b}]
`),
		},
		{
			name: "UPDATE with unchanged placement whose cells are gone",
			op:   Update,
			obj: v2(deploymentTemplate + `placement:
  topologies: [{name: rz00a}, {name: gone1}]
placementMask:
  topologies: [{name: gone2}]
`),
			old: v2(`placement:
  topologies: [{name: rz00a}, {name: gone1}]
placementMask:
  topologies: [{name: gone2}]
`),
		},
		{
			name: "UPDATE with unchanged placement on cells now sharing a cluster",
			op:   Update,
			obj: v2(`placement:
  topologies: [{name: rz00a}, {name: rz00c}]
`),
			old: v2(`placement:
  topologies: [{name: rz00a}, {name: rz00c}]
`),
		},
		{
			name: "UPDATE adding a missing cell",
			op:   Update,
			obj: v2(`placement:
  topologies: [{name: rz00a}, {name: gone1}, {name: rz97}]
`),
			old: v2(`placement:
  topologies: [{name: rz00a}, {name: gone1}]
`),
			want: invalid,
			msgs: []string{"spec.placement.topologies[2].name", `cell "rz97"`},
		},
		{
			name: "UPDATE adding a cell on an already used cluster",
			op:   Update,
			obj: v2(`placement:
  topologies: [{name: rz00a}, {name: rz00c}]
`),
			old: v2(`placement:
  topologies: [{name: rz00a}]
`),
			want: invalid,
			msgs: []string{`"rz00a"`, `"rz00c"`, `cluster "c1"`},
		},
		{
			name: "deletionTimestamp set, cells gone",
			op:   Update,
			obj: federated("v1beta2", "FederatedDeployment", "shop", `deletionTimestamp: "2024-01-01T00:00:00Z"
finalizers: []
`, `placement:
  topologies: [{name: gone1}, {name: rz00a}, {name: rz00c}]
`),
			old: federated("v1beta2", "FederatedDeployment", "shop", `deletionTimestamp: "2024-01-01T00:00:00Z"
finalizers: [kubefed.io/sync-controller]
`, `placement:
  topologies: [{name: rz00a}]
`),
		},
		{
			name: "topologyType cluster: physical clusters are not looked up",
			obj: v2(`placement:
  topologyType: cluster
  topologies: [{name: c1}, {name: c9}]
`),
		},
	})
}

func TestValidateFederatedV1beta2Names(t *testing.T) {
	runValidate(t, []validateCase{
		{
			name: "invalid topology name",
			obj: v2(`placement:
  topologies: [{name: Bad_Name}]
`),
			want: invalid,
			msgs: []string{"spec.placement.topologies[0].name", "Bad_Name", "cell names are DNS labels"},
		},
		{
			name: "empty topology name",
			obj: v2(`placement:
  topologies: [{name: ""}]
`),
			want: invalid,
			msgs: []string{"spec.placement.topologies[0].name", "Required", "name the cell"},
		},
		{
			name: "invalid name in placementMask",
			obj: v2(`placement:
  topologies: [{name: rz00a}]
placementMask:
  topologies: [{name: Bad_Name}]
`),
			want: invalid,
			msgs: []string{"spec.placementMask.topologies[0].name", "Bad_Name"},
		},
		{
			name: "duplicate topology in placement",
			obj: v2(`placement:
  topologies: [{name: rz00a}, {name: rz00b}, {name: rz00a}]
`),
			want: invalid,
			msgs: []string{"spec.placement.topologies[2].name", "Duplicate value", `"rz00a"`},
		},
		{
			name: "duplicate topology in overrides",
			obj: v2(`placement:
  topologies: [{name: rz00a}]
overrides:
- topologyName: rz00a
  clusterOverrides: [{path: /spec/replicas, value: 2}]
- topologyName: rz00a
  clusterOverrides: [{path: /spec/replicas, value: 3}]
`),
			want: invalid,
			msgs: []string{"spec.overrides[1].topologyName", "Duplicate value", `"rz00a"`},
		},
		{
			name: "invalid topology name in overrides",
			obj: v2(`overrides:
- topologyName: Bad_Name
`),
			want: invalid,
			msgs: []string{"spec.overrides[0].topologyName", "Bad_Name"},
		},
		{
			name: "type cluster with another namespace's cell",
			obj: v2(`placement:
  topologyType: cluster
  topologies: [{name: bank.rz00a}]
`),
			want: invalid,
			msgs: []string{"spec.placement.topologies[0].name", "bank.rz00a", `cell "rz00a" of namespace "bank"`, "own namespace's cells"},
		},
		{
			name: "type cluster with a dotted name that is no cell",
			obj: v2(`placement:
  topologyType: cluster
  topologies: [{name: a.b.c}]
`),
			want: invalid,
			msgs: []string{"spec.placement.topologies[0].name", "a.b.c", "per-cell clusters", "topologyType: cell"},
		},
		{
			name: "type cluster with another namespace's cell in overrides",
			obj: v2(`placement:
  topologyType: cluster
overrides:
- topologyName: bank.rz00a
`),
			want: invalid,
			msgs: []string{"spec.overrides[0].topologyName", "bank.rz00a", "own namespace's cells"},
		},
		{
			// The stored form of a v1beta1 placement on a physical
			// cluster and a cell (the fuzzer found v1beta2 refusing it).
			name: "type cluster with a physical cluster and an own cell",
			obj: v2(`placement:
  topologyType: cluster
  topologies: [{name: shop.rz00a}, {name: c2}]
`),
			want: allowed,
		},
		{
			name: "selector with reserved key cellfed.io/namespace",
			obj: v2(`placement:
  topologySelector:
    matchLabels: {cellfed.io/namespace: shop}
`),
			want: invalid,
			msgs: []string{"spec.placement.topologySelector", "cellfed.io/namespace", "reserved"},
		},
		{
			name: "selector expression with reserved key cellfed.io/cell",
			obj: v2(`placement:
  topologySelector:
    matchExpressions:
    - {key: cellfed.io/cell, operator: In, values: [rz00a]}
`),
			want: invalid,
			msgs: []string{"spec.placement.topologySelector", "cellfed.io/cell", "reserved"},
		},
		{
			name: "type cluster selector with reserved key",
			obj: v2(`placement:
  topologyType: cluster
  topologySelector:
    matchLabels: {cellfed.io/topology-type: cell}
`),
			want: invalid,
			msgs: []string{"spec.placement.topologySelector", "cellfed.io/topology-type"},
		},
		{
			name: "selector with a bad operator",
			obj: v2(`placement:
  topologySelector:
    matchExpressions:
    - {key: zone, operator: Near, values: [z1]}
`),
			want: invalid,
			msgs: []string{`spec.placement.topologySelector.matchExpressions[0].operator: Invalid value: "Near"`},
		},
		{
			name: "placement topologies given a string",
			obj:  v2("placement: {topologies: rz00a}\n"),
			want: invalid,
			msgs: []string{"spec.placement.topologies: Invalid value: must be a list, not a string"},
		},
		{
			name: "unknown version",
			obj:  federated("v1alpha9", "FederatedDeployment", "shop", "", `placement: {}`),
			want: invalid,
			msgs: []string{"apiVersion", "types.kubefed.io/v1alpha9", "v1beta1 or v1beta2"},
		},
	})
}

func TestValidateFederatedOverrides(t *testing.T) {
	withOverride := func(ops string) string {
		return v2("placement:\n  topologies: [{name: rz00a}]\noverrides:\n- topologyName: rz00a\n  clusterOverrides:\n" + indent(ops, 2))
	}
	var cases []validateCase
	for _, path := range []string{"/metadata/name", "/metadata/namespace", "/metadata/generateName", "/kind", "/apiVersion", "/metadata/name/x", "/metadata/namespace/x", "/metadata"} {
		cases = append(cases, validateCase{
			name: "forbidden path " + path,
			obj:  withOverride("- {op: replace, path: " + path + ", value: x}\n"),
			want: invalid,
			msgs: []string{"spec.overrides[0].clusterOverrides[0].path", "cannot be overridden", "forbidden: /metadata/name, /metadata/namespace"},
		})
	}
	cases = append(cases, []validateCase{
		{
			name: "forbidden path in v1beta1",
			obj: v1(`placement:
  clusters: [{name: c1}]
overrides:
- clusterName: c1
  clusterOverrides: [{path: /metadata/name, value: x}]
`),
			want: invalid,
			msgs: []string{"spec.overrides[0].clusterOverrides[0].path", "/metadata/name", "cannot be overridden"},
		},
		{
			name: "allowed paths next to forbidden ones",
			obj: withOverride(`- {path: /metadata/labels/x, value: "y"}
- {path: /metadata/annotations, value: {a: b}}
- {path: /kindness, value: 1}
- {op: add, path: /spec/template/spec/containers/0/env/-, value: {name: A, value: B}}
- {op: remove, path: /metadata/namespaceSelector}
`),
		},
		{
			name: "an invalid JSON-pointer escape",
			obj:  withOverride("- {path: /data/~2, value: x}\n"),
			want: invalid,
			msgs: []string{"spec.overrides[0].clusterOverrides[0].path", "/data/~2", "invalid JSON-pointer escape", "~1"},
		},
		{
			name: "a pointer ending in a lone tilde",
			obj:  withOverride("- {path: /data/a~, value: x}\n"),
			want: invalid,
			msgs: []string{"invalid JSON-pointer escape"},
		},
		{
			name: "valid escapes",
			obj:  withOverride("- {path: /metadata/annotations/example.com~1key, value: \"v\"}\n- {path: /data/a~0b, value: x}\n"),
		},
		{
			name: "annotations replaced with a non-string value",
			obj:  withOverride("- {op: add, path: /metadata/annotations, value: {replicas: 3}}\n"),
			want: invalid,
			msgs: []string{"spec.overrides[0].clusterOverrides[0].value", `metadata.annotations["replicas"] must be a string: quote it, e.g. "3"`},
		},
		{
			name: "an annotation given a number",
			obj:  withOverride("- {path: /metadata/annotations/example.com~1n, value: 3}\n"),
			want: invalid,
			msgs: []string{`metadata.annotations["example.com/n"] must be a string: quote it, e.g. "3"`},
		},
		{
			name: "annotations given a list",
			obj:  withOverride("- {path: /metadata/annotations, value: [a]}\n"),
			want: invalid,
			msgs: []string{"metadata.annotations is a map of strings"},
		},
		{
			name: "a label value that is not a label value",
			obj:  withOverride("- {path: /metadata/labels/tier, value: \"not ok!\"}\n"),
			want: invalid,
			msgs: []string{`label "tier"`},
		},
		{
			name: "removing annotations needs no value check",
			obj:  withOverride("- {op: remove, path: /metadata/annotations}\n"),
		},
		{
			name: "path not starting with a slash",
			obj:  withOverride("- {path: spec/replicas, value: 2}\n"),
			want: invalid,
			msgs: []string{"spec.overrides[0].clusterOverrides[0].path", "spec/replicas", "JSON pointer"},
		},
		{
			name: "path with an empty segment",
			obj:  withOverride("- {path: /spec//replicas, value: 2}\n"),
			want: invalid,
			msgs: []string{"spec.overrides[0].clusterOverrides[0].path", "JSON pointer"},
		},
		{
			name: "path missing",
			obj:  withOverride("- {value: 2}\n"),
			want: invalid,
			msgs: []string{"spec.overrides[0].clusterOverrides[0].path", "Required"},
		},
		{
			name: "op add without value",
			obj:  withOverride("- {op: add, path: /spec/replicas}\n"),
			want: invalid,
			msgs: []string{"spec.overrides[0].clusterOverrides[0].value", "Required", `"add" needs a value`},
		},
		{
			name: "default op without value",
			obj:  withOverride("- {op: remove, path: /spec/paused}\n- {path: /spec/replicas}\n"),
			want: invalid,
			msgs: []string{"spec.overrides[0].clusterOverrides[1].value", `"replace" needs a value`},
		},
		{
			name: "unknown op",
			obj:  withOverride("- {op: move, path: /spec/replicas, value: 2}\n"),
			want: invalid,
			msgs: []string{"spec.overrides[0].clusterOverrides[0].op", "Unsupported value", `"move"`, `"add"`, `"remove"`, `"replace"`},
		},
	}...)
	runValidate(t, cases)
}

func TestValidateFederatedTemplate(t *testing.T) {
	runValidate(t, []validateCase{
		{
			name: "template kind mismatch",
			obj: v2(`template:
  kind: Service
`),
			want: invalid,
			msgs: []string{"spec.template.kind", "Service", `set kind "Deployment"`},
		},
		{
			name: "template apiVersion mismatch",
			obj: v2(`template:
  apiVersion: apps/v1beta1
`),
			want: invalid,
			msgs: []string{"spec.template.apiVersion", "apps/v1beta1", `set apiVersion "apps/v1"`},
		},
		{
			name: "both wrong",
			obj: v1(`template:
  apiVersion: v1
  kind: Service
`),
			want: invalid,
			msgs: []string{"spec.template.kind", "spec.template.apiVersion", `"Deployment"`, `"apps/v1"`},
		},
		{
			name: "template with matching kind and apiVersion",
			obj: v2(`template:
  apiVersion: apps/v1
  kind: Deployment
`),
		},
		{
			name: "template without kind and apiVersion",
			obj:  v2(deploymentTemplate),
		},
		{
			name: "core group target: v1 is right",
			obj: federated("v1beta2", "FederatedService", "shop", "", `template:
  apiVersion: v1
  kind: Service
`),
		},
		{
			name: "core group target: core/v1 is wrong",
			obj: federated("v1beta2", "FederatedService", "shop", "", `template:
  apiVersion: core/v1
`),
			want: invalid,
			msgs: []string{"spec.template.apiVersion", `set apiVersion "v1"`},
		},
		{
			name: "kind not enabled: template not checked",
			obj: federated("v1beta2", "FederatedWidget", "shop", "", `template:
  apiVersion: apps/v1
  kind: Deployment
placement:
  topologies: [{name: rz00a}]
`),
		},
		{
			name: "kind not enabled: placement still checked",
			obj: federated("v1beta2", "FederatedConfigMap", "shop", "", `placement:
  topologies: [{name: rz99}]
`),
			want: invalid,
			msgs: []string{`cell "rz99"`},
		},
		{
			name: "reading the type configs fails",
			obj:  federated("v1beta2", "FederatedBroken", "shop", "", `placement: {}`),
			want: internal,
			msgs: []string{"cache unavailable"},
		},
	})
}

func TestValidateFederatedV1beta1(t *testing.T) {
	stashed := func(stash, spec string) string {
		return federated("v1beta1", "FederatedDeployment", "shop", "annotations:\n  conversion.cellfed.io/v1beta2-spec: '"+stash+"'\n", spec)
	}
	runValidate(t, []validateCase{
		{
			name: "a stashed mask is checked as a v1beta2 mask: invalid and foreign names",
			obj: stashed(`{"placement":{"topologyType":"cell","topologies":[{"name":"rz00a"}]},"placementMask":{"topologies":[{"name":"Bad_Name"},{"name":"rz98"}]}}`,
				`placement:
  clusters: [{name: shop.rz00a}]
`),
			want: invalid,
			msgs: []string{`metadata.annotations[conversion.cellfed.io/v1beta2-spec].placementMask.topologies[0].name`, "Bad_Name", "DNS labels"},
		},
		// The probe's mask bypasses (issue 29): a stash that does not
		// parse as a v1beta2 spec was accepted, or its mask dropped.
		{
			name: "a stashed mask whose topologies is not a list",
			obj: stashed(`{"placement":{"topologyType":"cell","topologies":[{"name":"rz00a"}]},"placementMask":{"topologies":"x"}}`,
				"placement:\n  clusters: [{name: shop.rz00a}]\n"),
			want: invalid,
			msgs: []string{`metadata.annotations[conversion.cellfed.io/v1beta2-spec].spec.placementMask.topologies`},
		},
		{
			name: "a stashed mask whose name is a number",
			obj: stashed(`{"placement":{"topologyType":"cell","topologies":[{"name":"rz00a"}]},"placementMask":{"name":12345}}`,
				"placement:\n  clusters: [{name: shop.rz00a}]\n"),
			want: invalid,
			msgs: []string{`metadata.annotations[conversion.cellfed.io/v1beta2-spec]`},
		},
		{
			name: "a stash that is not JSON",
			obj:  stashed(`{"placement":{"topologyType":"cell"`, "placement:\n  clusters: [{name: shop.rz00a}]\n"),
			want: invalid,
			msgs: []string{`metadata.annotations[conversion.cellfed.io/v1beta2-spec]`, "must be the JSON object of the v1beta2 spec"},
		},
		{
			name: "a stashed mask naming a cell that does not exist",
			obj: stashed(`{"placement":{"topologyType":"cell","topologies":[{"name":"rz00a"}]},"placementMask":{"topologies":[{"name":"rz98"}]}}`,
				`placement:
  clusters: [{name: shop.rz00a}]
`),
			want: invalid,
			msgs: []string{`placementMask.topologies[0].name`, `cell "rz98" does not exist`},
		},
		{
			name: "a stashed cluster mask cannot name another namespace's cell",
			obj: stashed(`{"placement":{"topologyType":"cluster","topologies":[{"name":"c1"}]},"placementMask":{"topologies":[{"name":"other-ns.rz00a"}]}}`,
				`placement:
  clusters: [{name: c1}]
`),
			want: invalid,
			msgs: []string{`placementMask.topologies[0].name`, "other-ns.rz00a", "own namespace's cells"},
		},
		{
			name: "a stashed mask outside the placement",
			obj: stashed(`{"placement":{"topologyType":"cell","topologies":[{"name":"rz00a"}]},"placementMask":{"topologies":[{"name":"rz00b"}]}}`,
				`placement:
  clusters: [{name: shop.rz00a}]
`),
			want: invalid,
			msgs: []string{`placementMask.topologies[0].name`, `cell "rz00b" is not in spec.placement.topologies`},
		},
		{
			name: "a valid stashed mask",
			obj: stashed(`{"placement":{"topologyType":"cell","topologies":[{"name":"rz00a"},{"name":"rz00b"}]},"placementMask":{"topologies":[{"name":"rz00a"}]}}`,
				`placement:
  clusters: [{name: shop.rz00a}, {name: shop.rz00b}]
`),
		},
		{
			name: "a stale stash (the placement changed since) carries no mask",
			obj: stashed(`{"placement":{"topologyType":"cell","topologies":[{"name":"rz00c"}]},"placementMask":{"topologies":[{"name":"Bad_Name"}]}}`,
				`placement:
  clusters: [{name: shop.rz00a}]
`),
		},
		{
			name: "selector that could reach other tenants' cells",
			obj: v1(`placement:
  clusterSelector: {matchLabels: {zone: z1}}
`),
			want: invalid,
			msgs: []string{`spec.placement.clusterSelector: Invalid value: "zone=z1"`, "other namespaces' cells", "DoesNotExist"},
		},
		{
			name: "selector of physical clusters only",
			obj: v1(`placement:
  clusterSelector: {matchLabels: {zone: z1}, matchExpressions: [{key: cellfed.io/topology-type, operator: DoesNotExist}]}
`),
		},
		{
			name: "selector pinned to own cells, as conversion writes it",
			obj: v1(`placement:
  clusterSelector:
    matchLabels: {zone: z1}
    matchExpressions: [{key: cellfed.io/topology-type, operator: In, values: [cell]}, {key: cellfed.io/namespace, operator: In, values: [shop]}]
`),
		},
		{
			name: "selector pinned to another namespace",
			obj: v1(`placement:
  clusterSelector:
    matchExpressions: [{key: cellfed.io/topology-type, operator: In, values: [cell]}, {key: cellfed.io/namespace, operator: In, values: [other-ns]}]
`),
			want: forbidden,
			msgs: []string{"spec.placement.clusterSelector.matchExpressions[1]", "its own namespace's cells"},
		},
		{
			name: "selector with another namespace in matchLabels",
			obj: v1(`placement:
  clusterSelector: {matchLabels: {cellfed.io/namespace: other-ns, cellfed.io/topology-type: cell}}
`),
			want: forbidden,
			msgs: []string{"spec.placement.clusterSelector.matchLabels[cellfed.io/namespace]"},
		},
		{
			name: "a physical cluster and a cell on it",
			obj: v1(`placement:
  clusters: [{name: c1}, {name: shop.rz00a}]
`),
			want: invalid,
			msgs: []string{"spec.placement", `cell "rz00a" is on cluster "c1", which is placed too`},
		},
		{
			name: "another namespace's cell",
			obj: v1(`placement:
  clusters: [{name: other-ns.rz00a}]
`),
			want: forbidden,
			msgs: []string{"spec.placement.clusters[0].name", "other-ns.rz00a", `namespace "other-ns"`, "its own namespace's cells"},
		},
		{
			name: "another namespace's cell in overrides",
			obj: v1(`placement:
  clusters: [{name: c1}]
overrides:
- clusterName: other-ns.rz00a
`),
			want: forbidden,
			msgs: []string{"spec.overrides[0].clusterName", "other-ns.rz00a"},
		},
		{
			name: "own cells on different clusters",
			obj: v1(deploymentTemplate + `placement:
  clusters: [{name: shop.rz00a}, {name: shop.rz00b}]
overrides:
- clusterName: shop.rz00b
  clusterOverrides: [{path: /spec/replicas, value: 2}]
`),
		},
		{
			name: "own cells on the same cluster",
			obj: v1(`placement:
  clusters: [{name: shop.rz00a}, {name: shop.rz00c}]
`),
			want: invalid,
			msgs: []string{"spec.placement", `"rz00a"`, `"rz00c"`, `cluster "c1"`},
		},
		{
			name: "own cell missing",
			obj: v1(`placement:
  clusters: [{name: c1}, {name: shop.rz99}]
`),
			want: invalid,
			msgs: []string{"spec.placement.clusters[1].name", `cell "rz99"`, "namespace shop"},
		},
		{
			name: "physical clusters are not looked up",
			obj: v1(`placement:
  clusters: [{name: c1}, {name: c9}]
overrides:
- clusterName: c9
  clusterOverrides: [{path: /spec/replicas, value: 2}]
`),
		},
		{
			name: "physical clusters and own cells",
			obj: v1(`placement:
  clusters: [{name: c2}, {name: shop.rz00a}]
`),
		},
		{
			name: "UPDATE with unchanged placement whose cell is gone",
			op:   Update,
			obj: v1(`placement:
  clusters: [{name: shop.gone1}, {name: c1}]
`),
			old: v1(`placement:
  clusters: [{name: shop.gone1}, {name: c1}]
`),
		},
		{
			name: "deletionTimestamp set, cell gone",
			op:   Update,
			obj: federated("v1beta1", "FederatedDeployment", "shop", `deletionTimestamp: "2024-01-01T00:00:00Z"
`, `placement:
  clusters: [{name: shop.gone1}]
`),
		},
		{
			name: "duplicate cluster",
			obj: v1(`placement:
  clusters: [{name: c1}, {name: c1}]
`),
			want: invalid,
			msgs: []string{"spec.placement.clusters[1].name", "Duplicate value", `"c1"`},
		},
		{
			name: "duplicate override",
			obj: v1(`overrides:
- clusterName: shop.rz00a
- clusterName: shop.rz00a
`),
			want: invalid,
			msgs: []string{"spec.overrides[1].clusterName", "Duplicate value"},
		},
		{
			name: "not a cluster name",
			obj: v1(`placement:
  clusters: [{name: Bad_Name}]
`),
			want: invalid,
			msgs: []string{"spec.placement.clusters[0].name", "Bad_Name", "not a cluster name"},
		},
		{
			name: "empty cluster name",
			obj: v1(`placement:
  clusters: [{name: ""}]
`),
			want: invalid,
			msgs: []string{"spec.placement.clusters[0].name", "Required"},
		},
		{
			name: "template kind mismatch",
			obj: v1(`template:
  kind: Service
placement:
  clusters: [{name: c1}]
`),
			want: invalid,
			msgs: []string{"spec.template.kind", `set kind "Deployment"`},
		},
		{
			name: "clusterSelector pinned to own cells (as converted from v1beta2)",
			obj: v1(`placement:
  clusterSelector:
    matchLabels: {cellfed.io/topology-type: cell, cellfed.io/namespace: shop, zone: z1}
`),
		},
	})
}

func TestValidateNeverRejects(t *testing.T) {
	bad := v2(`template: {kind: Service}
placement:
  topologies: [{name: Bad_Name}, {name: rz99}, {name: rz00a}, {name: rz00c}]
overrides:
- topologyName: rz00a
  clusterOverrides: [{op: move, path: /metadata/name}]
`)
	runValidate(t, []validateCase{
		{name: "status update of a federated object", op: Update, sub: "status", obj: bad, old: bad},
		{name: "DELETE of a federated object", op: Delete, old: bad},
		{name: "DELETE with an object", op: Delete, obj: bad, old: bad},
		{name: "status update of a cell", op: Update, sub: "status", obj: cellManifest("plain", "bad.cell", ""), old: cellManifest("plain", "bad.cell", "")},
		{name: "DELETE of a cell", op: Delete, old: cellManifest("plain", "bad.cell", "")},
		{name: "DELETE of a cluster", op: Delete, old: "apiVersion: core.kubefed.io/v1beta1\nkind: KubeFedCluster\nmetadata: {name: a.b.c, namespace: " + fedNamespace + "}\n"},
		{name: "other kinds", obj: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: plain, labels: {cellfed.io/tenant: evil}}\n"},
	})
}

func TestValidateCell(t *testing.T) {
	runValidate(t, []validateCase{
		{
			name: "valid cell",
			obj: `apiVersion: core.cellfed.io/v1alpha1
kind: Cell
metadata:
  name: rz01a
  namespace: shop
  labels: {zone: z1}
spec:
  cluster: c1
`,
		},
		{
			name: "name with a dot",
			obj:  cellManifest("shop", "rz.01a", "c1"),
			want: invalid,
			msgs: []string{"metadata.name", "rz.01a", "DNS labels", "no dots"},
		},
		{
			name: "namespace not a tenant workspace",
			obj:  cellManifest("plain", "rz01a", "c1"),
			want: forbidden,
			msgs: []string{"metadata.namespace", "tenant workspaces", "label namespace plain", "cellfed.io/tenant=<tenant>", "cellfed.io/workspace=<workspace>"},
		},
		{
			name: "namespace with a tenant but no workspace",
			obj:  cellManifest("half", "rz01a", "c1"),
			want: forbidden,
			msgs: []string{"metadata.namespace", "label namespace half"},
		},
		{
			name: "spec.cluster missing",
			obj:  cellManifest("shop", "rz01a", ""),
			want: invalid,
			msgs: []string{"spec.cluster", "Required", "physical KubeFedCluster"},
		},
		{
			name: "spec.cluster with a dot",
			obj:  cellManifest("shop", "rz01a", "shop.rz00a"),
			want: invalid,
			msgs: []string{"spec.cluster", "shop.rz00a", "per-cell clusters"},
		},
		{
			name: "spec.cluster does not exist",
			obj:  cellManifest("shop", "rz01a", "c9"),
			want: invalid,
			msgs: []string{"spec.cluster", `KubeFedCluster "c9" does not exist`, fedNamespace, "register the cluster first"},
		},
		{
			name: "UPDATE with the same cluster, now gone",
			op:   Update,
			obj:  cellManifest("shop", "rz01a", "c9"),
			old:  cellManifest("shop", "rz01a", "c9"),
		},
		{
			name: "UPDATE moving to a cluster that does not exist",
			op:   Update,
			obj:  cellManifest("shop", "rz01a", "c8"),
			old:  cellManifest("shop", "rz01a", "c9"),
			want: invalid,
			msgs: []string{"spec.cluster", `"c8"`},
		},
		{
			name: "permission and validity errors together are Forbidden",
			obj:  cellManifest("plain", "rz.01a", ""),
			want: forbidden,
			msgs: []string{"metadata.namespace", "metadata.name", "spec.cluster"},
		},
		{
			name: "reading the namespace fails",
			obj:  cellManifest("broken", "rz01a", "c1"),
			want: internal,
			msgs: []string{"cache unavailable"},
		},
	})
}

func movingCell(cluster, move string) string {
	return cellManifest("shop", "rz01a", cluster) + "  move: " + move + "\n"
}

func TestValidateCellMove(t *testing.T) {
	runValidate(t, []validateCase{
		{name: "a move to an existing cluster", op: Update, obj: movingCell("c1", "{to: c2, batch: 5}"), old: cellManifest("shop", "rz01a", "c1")},
		{name: "a new cell may be created moving", obj: movingCell("c1", "{to: c2}")},
		{
			name: "to a cluster that does not exist",
			op:   Update, obj: movingCell("c1", "{to: c9}"), old: cellManifest("shop", "rz01a", "c1"),
			want: invalid,
			msgs: []string{"spec.move.to", `KubeFedCluster "c9" does not exist`, "register the cluster first"},
		},
		{
			name: "to its own cluster",
			op:   Update, obj: movingCell("c1", "{to: c1}"), old: cellManifest("shop", "rz01a", "c1"),
			want: invalid,
			msgs: []string{"spec.move.to", "on cluster c1 already"},
		},
		{
			name: "to a per-cell cluster",
			op:   Update, obj: movingCell("c1", "{to: shop.rz00a}"), old: cellManifest("shop", "rz01a", "c1"),
			want: invalid,
			msgs: []string{"spec.move.to", "per-cell clusters"},
		},
		{
			name: "an undo with no move",
			op:   Update, obj: movingCell("c1", "{to: c2, undo: true}"), old: cellManifest("shop", "rz01a", "c1"),
			want: forbidden,
			msgs: []string{"spec.move.undo", "no move to undo"},
		},
		{
			name: "a move under way pointed elsewhere",
			op:   Update, obj: movingCell("c1", "{to: c3}"), old: movingCell("c1", "{to: c2}"),
			want: forbidden,
			msgs: []string{"spec.move.to", "moving to cluster c2", "--undo"},
		},
		{
			name: "the cluster edited during a move",
			op:   Update, obj: movingCell("c3", "{to: c2}"), old: movingCell("c1", "{to: c2}"),
			want: forbidden,
			msgs: []string{"spec.cluster", "changes when the move ends"},
		},
		{name: "the move's end: the cluster becomes its target", op: Update, obj: cellManifest("shop", "rz01a", "c2"), old: movingCell("c1", "{to: c2}")},
		{name: "an undo's end: the cluster stays", op: Update, obj: cellManifest("shop", "rz01a", "c1"), old: movingCell("c1", "{to: c2, undo: true}")},
		{
			name: "a move's end elsewhere",
			op:   Update, obj: cellManifest("shop", "rz01a", "c3"), old: movingCell("c1", "{to: c2}"),
			want: forbidden,
			msgs: []string{"spec.cluster", "can only end there or stay on c1"},
		},
		{
			name: "an undo resumed",
			op:   Update, obj: movingCell("c1", "{to: c2}"), old: movingCell("c1", "{to: c2, undo: true}"),
			want: forbidden,
			msgs: []string{"spec.move.undo", "cannot be resumed"},
		},
		{name: "paused and resumed", op: Update, obj: movingCell("c1", "{to: c2, paused: true}"), old: movingCell("c1", "{to: c2}")},
	})
}

func kubeFedCluster(name, labels, spec string) string {
	s := "apiVersion: core.kubefed.io/v1beta1\nkind: KubeFedCluster\nmetadata:\n  name: " + name + "\n  namespace: " + fedNamespace + "\n"
	if labels != "" {
		s += "  labels:\n" + indent(labels, 4)
	}
	return s + "spec:\n" + indent(spec, 2)
}

const clusterSpec = `apiEndpoint: https://10.0.0.1:6443
secretRef: {name: c3-token}
`

func TestValidateKubeFedCluster(t *testing.T) {
	cellLabels := "cellfed.io/topology-type: cell\ncellfed.io/namespace: shop\ncellfed.io/cell: rz00a\n"
	runValidate(t, []validateCase{
		{name: "physical cluster", obj: kubeFedCluster("c3", "zone: z1", clusterSpec+"caBundle: Zm9v\nproxyURL: socks5://proxy:1080\n")},
		{name: "a moving cell's move cluster", obj: kubeFedCluster("shop.rz00a.move", cellLabels+"cellfed.io/move: copy\n", clusterSpec)},
		{
			name: "a move cluster without its move label",
			obj:  kubeFedCluster("shop.rz00a.move", cellLabels, clusterSpec),
			want: invalid,
			msgs: []string{"cellfed.io/move", `"copy"`, `"undo"`},
		},
		{
			name: "a move cluster of another cell's labels",
			obj:  kubeFedCluster("shop.rz00b.move", cellLabels+"cellfed.io/move: copy\n", clusterSpec),
			want: invalid,
			msgs: []string{"move cluster of cell shop/rz00b", "cellfed.io/cell=rz00b"},
		},
		{
			name: "a physical cluster with the move label",
			obj:  kubeFedCluster("c3", "cellfed.io/move: copy", clusterSpec),
			want: forbidden,
			msgs: []string{"cellfed.io/move", "cellfedctl cell move"},
		},
		{
			name: "apiEndpoint missing",
			obj:  kubeFedCluster("c3", "", "secretRef: {name: c3-token}"),
			want: invalid,
			msgs: []string{"spec.apiEndpoint", "Required", "https://"},
		},
		{
			name: "apiEndpoint not a URL",
			obj:  kubeFedCluster("c3", "", "apiEndpoint: '://10.0.0.1'\nsecretRef: {name: c3-token}"),
			want: invalid,
			msgs: []string{"spec.apiEndpoint", "use a URL such as https://10.0.0.1:6443"},
		},
		{
			// KubeFed (and client-go) read a bare host as https://host.
			name: "apiEndpoint without scheme is https, as in KubeFed",
			obj:  kubeFedCluster("c3", "", "apiEndpoint: 10.0.0.1\nsecretRef: {name: c3-token}"),
		},
		{
			name: "apiEndpoint with another scheme",
			obj:  kubeFedCluster("c3", "", "apiEndpoint: ftp://10.0.0.1\nsecretRef: {name: c3-token}"),
			want: invalid,
			msgs: []string{"spec.apiEndpoint", `"ftp"`, "http", "https"},
		},
		{
			name: "apiEndpoint with a port out of range",
			obj:  kubeFedCluster("c3", "", "apiEndpoint: https://10.0.0.1:70000\nsecretRef: {name: c3-token}"),
			want: invalid,
			msgs: []string{"spec.apiEndpoint", "between 1 and 65535"},
		},
		{
			name: "disabledTLSValidations: unknown value and * with others",
			obj:  kubeFedCluster("c3", "", "apiEndpoint: https://10.0.0.1\nsecretRef: {name: c3-token}\ndisabledTLSValidations: ['*', Everything]"),
			want: invalid,
			msgs: []string{"spec.disabledTLSValidations[1]", `"Everything"`, "when * is specified, it is expected to be the only option in list"},
		},
		{
			name: "apiEndpoint host:port without scheme",
			obj:  kubeFedCluster("c3", "", "apiEndpoint: api.example.com:6443\nsecretRef: {name: c3-token}"),
		},
		{
			name: "proxyURL without host",
			obj:  kubeFedCluster("c3", "", clusterSpec+"proxyURL: http://\n"),
			want: invalid,
			msgs: []string{"spec.proxyURL", "scheme and host"},
		},
		{
			name: "secretRef.name missing",
			obj:  kubeFedCluster("c3", "", "apiEndpoint: https://10.0.0.1:6443\nsecretRef: {}"),
			want: invalid,
			msgs: []string{"spec.secretRef.name", "Required", `key "token"`},
		},
		{
			name: "secretRef.name not a Secret name",
			obj:  kubeFedCluster("c3", "", "apiEndpoint: https://10.0.0.1:6443\nsecretRef: {name: Bad_Name}"),
			want: invalid,
			msgs: []string{"spec.secretRef.name", "Bad_Name"},
		},
		{
			name: "physical name with a dot not following the rule",
			obj:  kubeFedCluster("east.zone.c1", "", clusterSpec),
			want: invalid,
			msgs: []string{"metadata.name", "east.zone.c1", "reserved for per-cell clusters"},
		},
		{
			name: "per-cell cluster with correct labels",
			obj:  kubeFedCluster("shop.rz00a", cellLabels+"zone: z1\n", clusterSpec),
		},
		{
			name: "per-cell cluster labelled for another cell",
			obj:  kubeFedCluster("shop.rz00a", "cellfed.io/topology-type: cell\ncellfed.io/namespace: shop\ncellfed.io/cell: rz00b\n", clusterSpec),
			want: invalid,
			msgs: []string{"metadata.labels[cellfed.io/cell]", "rz00b", "per-cell cluster of cell shop/rz00a", "cellfed.io/cell=rz00a"},
		},
		{
			name: "per-cell cluster without labels",
			obj:  kubeFedCluster("shop.rz00a", "", clusterSpec),
			want: invalid,
			msgs: []string{"metadata.labels[cellfed.io/topology-type]", "metadata.labels[cellfed.io/namespace]", "metadata.labels[cellfed.io/cell]", "cellfed.io/namespace=shop"},
		},
		{
			name: "physical cluster carrying cellfed.io/topology-type",
			obj:  kubeFedCluster("c3", "cellfed.io/topology-type: cell\n", clusterSpec),
			want: forbidden,
			msgs: []string{"metadata.labels[cellfed.io/topology-type]", "reserved for per-cell clusters"},
		},
		{
			name: "physical cluster carrying cellfed.io/namespace and cellfed.io/cell",
			obj:  kubeFedCluster("c3", "cellfed.io/namespace: shop\ncellfed.io/cell: rz00a\n", clusterSpec),
			want: forbidden,
			msgs: []string{"metadata.labels[cellfed.io/namespace]", "metadata.labels[cellfed.io/cell]"},
		},
	})
}

// Mutate.

type mutateCase struct {
	name string
	op   Operation // CREATE when empty
	sub  string
	obj  string
	old  string
	want outcome
	msgs []string
	// labels are the object's labels after an allowed Mutate; nil means
	// the object is unchanged.
	labels map[string]string
}

func TestMutate(t *testing.T) {
	acme := map[string]string{cellv1alpha1.LabelTenant: "acme", cellv1alpha1.LabelWorkspace: "shop-ws"}
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range acme {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	cases := []mutateCase{
		{
			name:   "federated object gets the namespace's labels",
			obj:    v2(`placement: {topologies: [{name: rz00a}]}`),
			labels: acme,
		},
		{
			name:   "v1beta1 object keeps its own labels",
			obj:    federated("v1beta1", "FederatedService", "shop", "labels: {app: web}\n", `placement: {clusters: []}`),
			labels: with(map[string]string{"app": "web"}),
		},
		{
			name:   "cell gets the namespace's labels",
			obj:    cellManifest("shop", "rz01a", "c1"),
			labels: acme,
		},
		{
			name:   "UPDATE sets them too",
			op:     Update,
			obj:    federated("v1beta2", "FederatedDeployment", "shop", "labels: {cellfed.io/tenant: acme}\n", ""),
			labels: acme,
		},
		{
			name: "object with the same values",
			obj:  federated("v1beta2", "FederatedDeployment", "shop", "labels: {cellfed.io/tenant: acme, cellfed.io/workspace: shop-ws, app: web}\n", ""),
		},
		{
			name: "object with another tenant",
			obj:  federated("v1beta2", "FederatedDeployment", "shop", "labels: {cellfed.io/tenant: evil}\n", ""),
			want: forbidden,
			msgs: []string{"metadata.labels[cellfed.io/tenant]", "namespace shop", `cellfed.io/tenant "acme"`, `not "evil"`},
		},
		{
			name: "cell with another workspace",
			obj: `apiVersion: core.cellfed.io/v1alpha1
kind: Cell
metadata:
  name: rz01a
  namespace: shop
  labels: {cellfed.io/workspace: other-ws}
spec: {cluster: c1}
`,
			want: forbidden,
			msgs: []string{"metadata.labels[cellfed.io/workspace]", `cellfed.io/workspace "shop-ws"`, `not "other-ws"`},
		},
		{
			name: "namespace without tenancy labels, object with a tenant",
			obj:  federated("v1beta2", "FederatedDeployment", "plain", "labels: {cellfed.io/tenant: acme}\n", ""),
			want: forbidden,
			msgs: []string{"metadata.labels[cellfed.io/tenant]", "namespace plain is not a tenant workspace", "remove this label"},
		},
		{
			name: "namespace with a tenant only, object with a workspace",
			obj:  federated("v1beta2", "FederatedDeployment", "half", "labels: {cellfed.io/workspace: shop-ws}\n", ""),
			want: forbidden,
			msgs: []string{"metadata.labels[cellfed.io/workspace]", "namespace half is not a tenant workspace"},
		},
		{
			name:   "namespace with a tenant only",
			obj:    federated("v1beta2", "FederatedDeployment", "half", "", ""),
			labels: map[string]string{cellv1alpha1.LabelTenant: "acme"},
		},
		{
			name: "never strand: an UPDATE keeping labels the namespace no longer has goes through",
			op:   Update,
			obj:  federated("v1beta2", "FederatedDeployment", "plain", "labels: {cellfed.io/tenant: acme, cellfed.io/workspace: shop-ws}\n", ""),
			old:  federated("v1beta2", "FederatedDeployment", "plain", "labels: {cellfed.io/tenant: acme, cellfed.io/workspace: shop-ws}\nfinalizers: [kubefed.io/sync-controller]\n", ""),
		},
		{
			name: "an UPDATE that changes tenancy labels is still checked",
			op:   Update,
			obj:  federated("v1beta2", "FederatedDeployment", "shop", "labels: {cellfed.io/tenant: evil}\n", ""),
			old:  federated("v1beta2", "FederatedDeployment", "shop", "labels: {cellfed.io/tenant: acme}\n", ""),
			want: forbidden,
			msgs: []string{"metadata.labels[cellfed.io/tenant]", `not "evil"`},
		},
		{
			name: "namespace without tenancy labels, object without them",
			obj:  federated("v1beta2", "FederatedDeployment", "plain", "", ""),
		},
		{
			name: "namespace does not exist",
			obj:  federated("v1beta2", "FederatedDeployment", "nowhere", "labels: {cellfed.io/tenant: evil}\n", ""),
		},
		{
			name: "reading the namespace fails",
			obj:  federated("v1beta2", "FederatedDeployment", "broken", "", ""),
			want: internal,
			msgs: []string{"cache unavailable"},
		},
		{
			name: "KubeFedCluster untouched",
			obj:  kubeFedCluster("shop.rz00a", "cellfed.io/tenant: evil\n", clusterSpec),
		},
		{
			name: "KubeFedCluster in a tenant namespace untouched",
			obj:  "apiVersion: core.kubefed.io/v1beta1\nkind: KubeFedCluster\nmetadata: {name: c3, namespace: shop}\nspec: {apiEndpoint: 'https://x'}\n",
		},
		{
			name: "other kinds untouched",
			obj:  "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\n",
		},
		{
			name: "status subresource untouched",
			op:   Update,
			sub:  "status",
			obj:  federated("v1beta2", "FederatedDeployment", "shop", "labels: {cellfed.io/tenant: evil}\n", ""),
		},
		{
			name: "DELETE untouched",
			op:   Delete,
			obj:  federated("v1beta2", "FederatedDeployment", "shop", "labels: {cellfed.io/tenant: evil}\n", ""),
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			op := c.op
			if op == "" {
				op = Create
			}
			obj := object(t, c.obj)
			before := obj.DeepCopy()
			err := newAdmitter().Mutate(request(op, c.sub, obj, object(t, c.old)))
			checkOutcome(t, err, c.want, c.msgs)
			if c.want != allowed || c.labels == nil {
				if !reflect.DeepEqual(before.Object, obj.Object) {
					t.Errorf("object changed:\nbefore %v\nafter  %v", before.Object, obj.Object)
				}
				return
			}
			if got := obj.GetLabels(); !reflect.DeepEqual(got, c.labels) {
				t.Errorf("labels = %v, want %v", got, c.labels)
			}
			// Only the labels change.
			after := obj.DeepCopy()
			after.SetLabels(before.GetLabels())
			if !reflect.DeepEqual(before.Object, after.Object) {
				t.Errorf("more than the labels changed:\nbefore %v\nafter  %v", before.Object, obj.Object)
			}
		})
	}
}

// Mutate then Validate, as the API server runs them.
func TestMutateThenValidate(t *testing.T) {
	a := newAdmitter()
	obj := object(t, v2(deploymentTemplate+"placement: {topologies: [{name: rz00a}, {name: rz00b}]}\n"))
	r := request(Create, "", obj, nil)
	if err := a.Mutate(r); err != nil {
		t.Fatalf("Mutate: %v", err)
	}
	if err := a.Validate(r); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if got := obj.GetLabels()[cellv1alpha1.LabelTenant]; got != "acme" {
		t.Errorf("tenant label = %q, want acme", got)
	}
}

func TestPinPhysicalSelector(t *testing.T) {
	pin := map[string]any{"key": "cellfed.io/topology-type", "operator": "DoesNotExist"}
	tests := []struct {
		name    string
		version string
		sel     map[string]any
		want    map[string]any // nil: unchanged
	}{
		{"KubeFed's all clusters", "v1beta1", map[string]any{}, map[string]any{"matchExpressions": []any{pin}}},
		{"kubefedctl federate's empty matchLabels", "v1beta1", map[string]any{"matchLabels": map[string]any{}},
			map[string]any{"matchLabels": map[string]any{}, "matchExpressions": []any{pin}}},
		{"a selector on clusters' own labels", "v1beta1", map[string]any{"matchExpressions": []any{map[string]any{"key": "region", "operator": "Exists"}}},
			map[string]any{"matchExpressions": []any{map[string]any{"key": "region", "operator": "Exists"}, pin}}},
		{"a selector pinned to cells is left as written", "v1beta1", map[string]any{"matchLabels": map[string]any{"cellfed.io/namespace": "shop"}}, nil},
		{"a selector already pinned is left as written", "v1beta1", map[string]any{"matchExpressions": []any{pin}}, nil},
		{"v1beta2 objects are left alone", "v1beta2", map[string]any{}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj := map[string]any{"apiVersion": "types.kubefed.io/" + tc.version, "spec": map[string]any{"placement": map[string]any{"clusterSelector": tc.sel}}}
			before := runtime.DeepCopyJSON(obj)
			changed := pinPhysicalSelector(obj)
			got := obj["spec"].(map[string]any)["placement"].(map[string]any)["clusterSelector"]
			switch {
			case tc.want == nil && (changed || !reflect.DeepEqual(obj, before)):
				t.Errorf("changed to %v", got)
			case tc.want != nil && (!changed || !reflect.DeepEqual(got, tc.want)):
				t.Errorf("selector = %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("no selector", func(t *testing.T) {
		obj := map[string]any{"apiVersion": "types.kubefed.io/v1beta1", "spec": map[string]any{"placement": map[string]any{"clusters": []any{}}}}
		if pinPhysicalSelector(obj) {
			t.Error("an object without a selector was changed")
		}
	})
}

func TestValidateFederatedTemplateContent(t *testing.T) {
	big := strings.Repeat("x", MaxSpecBytes)
	cases := []validateCase{
		{
			name: "a template with string labels and annotations",
			obj:  v2("placement: {topologies: [{name: rz00a}]}\ntemplate: {metadata: {labels: {app: web}, annotations: {a: b}}}\n"),
		},
		{
			name: "v1beta1 without a template",
			obj:  federated("v1beta1", "FederatedDeployment", "shop", "", "placement: {clusters: [{name: c1}]}\ntemplate: null\n"),
			want: invalid,
			msgs: []string{"spec.template", "Required value"},
		},
		{
			name: "a FederatedConfigMap without a template",
			obj:  federated("v1beta1", "FederatedConfigMap", "shop", "", "placement: {clusters: [{name: c1}]}\ntemplate: null\n"),
			want: invalid,
			msgs: []string{"spec.template", "give the ConfigMap to create in the members"},
		},
		{
			name: "a FederatedNamespace needs no template",
			obj:  strings.Replace(federated("v1beta1", "FederatedNamespace", "shop", "", "placement: {clusters: [{name: c1}]}\ntemplate: null\n"), "name: web", "name: shop", 1),
		},
		{
			// KubeFed propagates the namespace the object is in, whatever
			// its name: a FederatedNamespace "billing" in shop would report
			// success doing nothing, and its deletion would remove shop's
			// namespace from the members.
			name: "a FederatedNamespace named other than its namespace",
			obj:  federated("v1beta1", "FederatedNamespace", "shop", "", "placement: {clusters: [{name: c1}]}\ntemplate: null\n"),
			want: invalid,
			msgs: []string{"metadata.name", `"web"`, "must be named after its namespace", "name: shop"},
		},
		{
			name: "a v1beta2 FederatedNamespace named other than its namespace",
			obj:  federated("v1beta2", "FederatedNamespace", "shop", "", "placement: {topologies: [{name: rz00a}]}\ntemplate: null\n"),
			want: invalid,
			msgs: []string{"metadata.name", "must be named after its namespace"},
		},
		{
			name: "an existing misnamed FederatedNamespace can still be updated (and so deleted)",
			op:   Update,
			obj:  federated("v1beta1", "FederatedNamespace", "shop", "finalizers: []", "placement: {clusters: [{name: c1}]}\ntemplate: null\n"),
			old:  federated("v1beta1", "FederatedNamespace", "shop", "finalizers: [kubefed.io/sync-controller]", "placement: {clusters: [{name: c1}]}\ntemplate: null\n"),
		},
		{
			name: "a template annotation that is not a string",
			obj:  v2("placement: {topologies: [{name: rz00a}]}\ntemplate: {metadata: {annotations: {count: 3}}}\n"),
			want: invalid,
			msgs: []string{"spec.template.metadata.annotations[count]", "must be a string"},
		},
		{
			name: "a template larger than a member accepts",
			obj:  v2("placement: {topologies: [{name: rz00a}]}\ntemplate: {metadata: {annotations: {big: " + big + "}}}\n"),
			want: invalid,
			msgs: []string{"spec: Too long", "1.5 MiB", "split it"},
		},
	}
	runValidate(t, cases)
}

func typeConfig(name, spec string) string {
	return "apiVersion: core.kubefed.io/v1beta1\nkind: FederatedTypeConfig\nmetadata:\n  name: " + name + "\n  namespace: " + fedNamespace + "\nspec:\n" + indent(spec, 2)
}

const goodTypeConfig = `targetType: {group: apps, version: v1, kind: Deployment, pluralName: deployments, scope: Namespaced}
federatedType: {group: types.kubefed.io, version: v1beta1, kind: FederatedDeployment, pluralName: federateddeployments, scope: Namespaced}
propagation: Enabled
`

func TestValidateFederatedTypeConfig(t *testing.T) {
	runValidate(t, []validateCase{
		{name: "as kubefedctl enable writes it", obj: typeConfig("deployments.apps", goodTypeConfig)},
		{name: "a core type is named by its plural", obj: typeConfig("configmaps", `targetType: {version: v1, kind: ConfigMap, pluralName: configmaps, scope: Namespaced}
federatedType: {group: types.kubefed.io, version: v1beta1, kind: FederatedConfigMap, pluralName: federatedconfigmaps, scope: Namespaced}
propagation: Disabled
statusCollection: Enabled
`)},
		{name: "name that is not plural.group", obj: typeConfig("deployments", goodTypeConfig), want: invalid,
			msgs: []string{"metadata.name", "TARGET_PLURAL_NAME(.TARGET_GROUP_NAME)", `"deployments.apps"`}},
		{name: "missing target fields", obj: typeConfig("deployments.apps", `targetType: {group: apps}
federatedType: {group: types.kubefed.io, version: v1beta1, kind: FederatedDeployment, pluralName: federateddeployments, scope: Namespaced}
propagation: Enabled
`), want: invalid, msgs: []string{"spec.targetType.version: Required", "spec.targetType.kind: Required", "spec.targetType.pluralName: Required", "spec.targetType.scope: Required"}},
		{name: "unknown enum values", obj: typeConfig("deployments.apps", `targetType: {group: apps, version: v1, kind: Deployment, pluralName: deployments, scope: Everywhere}
federatedType: {group: types.kubefed.io, version: v1beta1, kind: FederatedDeployment, pluralName: federateddeployments, scope: Namespaced}
propagation: Sometimes
statusCollection: Maybe
`), want: invalid, msgs: []string{`spec.targetType.scope: Unsupported value: "Everywhere"`, `spec.propagation: Unsupported value: "Sometimes"`, `spec.statusCollection: Unsupported value: "Maybe"`}},
		{name: "a federated group without a dot", obj: typeConfig("deployments.apps", `targetType: {group: apps, version: v1, kind: Deployment, pluralName: deployments, scope: Namespaced}
federatedType: {group: types, version: v1beta1, kind: FederatedDeployment, pluralName: federateddeployments, scope: Namespaced}
propagation: Enabled
`), want: invalid, msgs: []string{"spec.federatedType.group", "at least one dot"}},
		{name: "names that are not DNS labels", obj: typeConfig("Deploy_ments.apps", `targetType: {group: apps, version: V1, kind: Deploy_ment, pluralName: Deploy_ments, scope: Namespaced}
federatedType: {group: types.kubefed.io, version: v1beta1, kind: FederatedDeployment, pluralName: federateddeployments, scope: Namespaced}
propagation: Enabled
`), want: invalid, msgs: []string{"spec.targetType.version", "spec.targetType.kind", "spec.targetType.pluralName"}},
		{name: "status updates are not checked here", sub: "status", op: Update, obj: typeConfig("x", "{}"), old: typeConfig("x", "{}")},
		{name: "annotation propagation patterns", obj: typeConfig("deployments.apps", goodTypeConfig+`propagatingAnnotations: ["service.beta.kubernetes.io/*", "example.com/exact-key"]
`)},
		{name: "bad annotation propagation patterns", obj: typeConfig("deployments.apps", goodTypeConfig+`propagatingAnnotations: ["Bad Key/*", "", "example.com/x", "example.com/x"]
`), want: invalid, msgs: []string{"spec.propagatingAnnotations[0]", "not an annotation key pattern", "spec.propagatingAnnotations[1]", "matches nothing", "spec.propagatingAnnotations[3]: Duplicate"}},
		{name: "a replicas path", obj: typeConfig("deployments.apps", goodTypeConfig+`replicasPath: /spec/replicas
`)},
		{name: "a replicas path that is not a JSON pointer", obj: typeConfig("deployments.apps", goodTypeConfig+`replicasPath: spec.replicas
`), want: invalid, msgs: []string{"spec.replicasPath", "not a JSON pointer", "/spec/replicas"}},
		{name: "a replicas path outside spec", obj: typeConfig("deployments.apps", goodTypeConfig+`replicasPath: /status/replicas
`), want: invalid, msgs: []string{"spec.replicasPath", "not below spec"}},
	})
}

func kubeFedConfig(spec string) string {
	return "apiVersion: core.kubefed.io/v1beta1\nkind: KubeFedConfig\nmetadata:\n  name: kubefed\n  namespace: " + fedNamespace + "\nspec:\n" + indent(spec, 2)
}

// TestKubeFedConfigDefaults: a partial KubeFedConfig gets KubeFed's
// defaults and is then valid; what is set stays.
func TestKubeFedConfigDefaults(t *testing.T) {
	a := newAdmitter()
	obj := object(t, kubeFedConfig("scope: Cluster\nleaderElect: {leaseDuration: 30s}\nfeatureGates: [{name: RawResourceStatusCollection, configuration: Enabled}]\n"))
	r := request(Create, "", obj, nil)
	if err := a.Mutate(r); err != nil {
		t.Fatalf("Mutate: %v", err)
	}
	if err := a.Validate(r); err != nil {
		t.Fatalf("Validate after defaulting: %v", err)
	}
	want := map[string]any{
		"scope":              "Cluster",
		"controllerDuration": map[string]any{"availableDelay": "20s", "unavailableDelay": "1m0s", "cacheSyncTimeout": "5m0s"},
		"leaderElect":        map[string]any{"leaseDuration": "30s", "renewDeadline": "10s", "retryPeriod": "5s", "resourceLock": "configmaps"},
		"featureGates": []any{
			map[string]any{"name": "PushReconciler", "configuration": "Enabled"},
			map[string]any{"name": "RawResourceStatusCollection", "configuration": "Enabled"},
			map[string]any{"name": "SchedulerPreferences", "configuration": "Enabled"},
		},
		"clusterHealthCheck": map[string]any{"period": "10s", "timeout": "3s", "failureThreshold": int64(3), "successThreshold": int64(1)},
		"syncController":     map[string]any{"maxConcurrentReconciles": int64(1), "adoptResources": "Enabled"},
		"statusController":   map[string]any{"maxConcurrentReconciles": int64(1)},
	}
	if got := obj.Object["spec"]; !reflect.DeepEqual(got, want) {
		t.Errorf("defaulted spec:\n got %v\nwant %v", got, want)
	}
	// Defaulting a complete config changes nothing.
	again := obj.DeepCopy()
	if err := a.Mutate(request(Update, "", again, obj)); err != nil || !reflect.DeepEqual(again.Object, obj.Object) {
		t.Errorf("defaulting twice changed the object (err %v)", err)
	}
}

func TestValidateKubeFedConfig(t *testing.T) {
	full := `scope: Cluster
controllerDuration: {availableDelay: 20s, unavailableDelay: 60s, cacheSyncTimeout: 5m}
leaderElect: {leaseDuration: 15s, renewDeadline: 10s, retryPeriod: 5s, resourceLock: configmaps}
featureGates: [{name: PushReconciler, configuration: Enabled}]
clusterHealthCheck: {period: 10s, timeout: 3s, failureThreshold: 3, successThreshold: 1}
syncController: {maxConcurrentReconciles: 1, adoptResources: Enabled}
statusController: {maxConcurrentReconciles: 1}
`
	replace := func(old, new string) string { return strings.Replace(full, old, new, 1) }
	runValidate(t, []validateCase{
		{name: "complete", obj: kubeFedConfig(full)},
		{name: "partial (Validate alone: defaulting runs first in the plane)", obj: kubeFedConfig("scope: Cluster\n"), want: invalid,
			msgs: []string{"spec.controllerDuration: Required", "spec.leaderElect: Required", "spec.clusterHealthCheck: Required"}},
		{name: "no scope", obj: kubeFedConfig(replace("scope: Cluster", "scope: ''")), want: invalid, msgs: []string{"spec.scope: Required"}},
		{name: "unknown scope", obj: kubeFedConfig(replace("scope: Cluster", "scope: Galaxy")), want: invalid, msgs: []string{`spec.scope: Unsupported value: "Galaxy"`}},
		{name: "scope is immutable", op: Update, obj: kubeFedConfig(replace("scope: Cluster", "scope: Namespaced")), old: kubeFedConfig(full), want: invalid,
			msgs: []string{"spec.scope", "immutable", "delete and recreate"}},
		{name: "zero and negative durations", obj: kubeFedConfig(replace("availableDelay: 20s", "availableDelay: 0s")), want: invalid,
			msgs: []string{"spec.controllerDuration.availableDelay", "greater than 0"}},
		{name: "lease not longer than the renew deadline", obj: kubeFedConfig(replace("leaseDuration: 15s", "leaseDuration: 10s")), want: invalid,
			msgs: []string{"leaseDuration must be greater than renewDeadline"}},
		{name: "renew deadline not above jittered retry", obj: kubeFedConfig(replace("retryPeriod: 5s", "retryPeriod: 9s")), want: invalid,
			msgs: []string{"renewDeadline must be greater than retryPeriod*JitterFactor(1.2)"}},
		{name: "unknown resource lock", obj: kubeFedConfig(replace("resourceLock: configmaps", "resourceLock: leases")), want: invalid,
			msgs: []string{`spec.leaderElect.resourceLock: Unsupported value: "leases"`}},
		{name: "unknown and duplicate feature gates", obj: kubeFedConfig(replace("featureGates: [{name: PushReconciler, configuration: Enabled}]",
			"featureGates: [{name: PushReconciler, configuration: Sometimes}, {name: PushReconciler, configuration: Enabled}, {name: Teleport, configuration: Enabled}]")), want: invalid,
			msgs: []string{`spec.featureGates[0].configuration: Unsupported value: "Sometimes"`, `spec.featureGates[1].name: Duplicate value: "PushReconciler"`, `spec.featureGates[2].name: Unsupported value: "Teleport"`}},
		{name: "thresholds and reconcilers must be positive", obj: kubeFedConfig(replace("failureThreshold: 3", "failureThreshold: 0")), want: invalid,
			msgs: []string{"spec.clusterHealthCheck.failureThreshold", "greater than 0"}},
		{name: "unknown adoption", obj: kubeFedConfig(replace("adoptResources: Enabled", "adoptResources: Sometimes")), want: invalid,
			msgs: []string{`spec.syncController.adoptResources: Unsupported value: "Sometimes"`}},
	})
}

func TestCellWarnings(t *testing.T) {
	a := newAdmitter()
	a.Lookup.(*fakeLookup).selectors = map[string][]SelectorUse{"shop": {
		{Kind: "FederatedDeployment", Name: "gold", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}},
		{Kind: "FederatedDeployment", Name: "silver", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "silver"}}},
	}}
	cells := a.Lookup.(*fakeLookup).cells
	gold := &cellv1alpha1.Cell{ObjectMeta: metav1.ObjectMeta{Name: "rz05a", Namespace: "shop", Labels: map[string]string{"tier": "gold"}}, Spec: cellv1alpha1.CellSpec{Cluster: "c1"}}
	cells["shop"] = append(cells["shop"], gold)
	defer func() { cells["shop"] = cells["shop"][:len(cells["shop"])-1] }()
	tests := []struct {
		name string
		cell string
		want []string // substrings of the one warning; nil: none
	}{
		{"a second gold cell on c1 warns, naming the object, both cells and the cluster",
			cellManifest("shop", "rz06a", "c1") + "  labels: {tier: gold}\n",
			[]string{"FederatedDeployment shop/gold", `"rz05a" and "rz06a"`, `cluster "c1"`, `only "rz05a" will be written`, "PlacementConflict"}},
		{"a gold cell on another cluster is fine", cellManifest("shop", "rz07a", "c2") + "  labels: {tier: gold}\n", nil},
		{"a cell the selector does not pick is fine", cellManifest("shop", "rz08a", "c1") + "  labels: {tier: bronze}\n", nil},
		{"the cell itself being updated is not a conflict", cellManifest("shop", "rz05a", "c1") + "  labels: {tier: gold}\n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj := object(t, moveLabels(tc.cell))
			got, err := a.Warnings(request(Create, "", obj, nil))
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if len(got) != 0 {
					t.Errorf("warnings %v, want none", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("warnings %v, want one", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got[0], w) {
					t.Errorf("warning %q lacks %q", got[0], w)
				}
			}
		})
	}
}

// moveLabels turns a cellManifest with a trailing "  labels:" line into
// one with the labels under metadata.
func moveLabels(m string) string {
	i := strings.Index(m, "  labels:")
	if i < 0 {
		return m
	}
	labels := m[i:]
	m = m[:i]
	return strings.Replace(m, "metadata:\n", "metadata:\n"+labels, 1)
}

func namespaceManifest(name, labels string) string {
	return "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + name + "\n  labels: {" + labels + "}\n"
}

func TestValidateTenancy(t *testing.T) {
	runValidate(t, []validateCase{
		{name: "a cell on a cluster dedicated to another tenant", obj: cellManifest("shop", "rz09a", "c3"), want: forbidden,
			msgs: []string{"spec.cluster", `cluster "c3" is dedicated to tenant "other"`, `namespace shop belongs to tenant "acme"`, "shared cluster"}},
		{name: "a cell with a reserved label", obj: `apiVersion: core.cellfed.io/v1alpha1
kind: Cell
metadata: {name: rz09a, namespace: shop, labels: {cellfed.io/cell: other}}
spec: {cluster: c1}
`, want: forbidden, msgs: []string{"metadata.labels[cellfed.io/cell]", "reserved"}},
		{name: "dedicating a cluster other tenants' cells use", op: Update,
			obj: kubeFedCluster("c2", "cellfed.io/tenant: acme\n", clusterSpec), old: kubeFedCluster("c2", "", clusterSpec), want: forbidden,
			msgs: []string{"metadata.labels[cellfed.io/tenant]", `cannot be dedicated to tenant "acme"`, `other-ns/rz00a (tenant "other")`}},
		{name: "dedicating a cluster only the tenant's cells use", op: Update,
			obj: kubeFedCluster("c1", "cellfed.io/tenant: acme\n", clusterSpec), old: kubeFedCluster("c1", "", clusterSpec)},
		{name: "relabelling a workspace that holds cells and objects", op: Update,
			obj: namespaceManifest("shop", "cellfed.io/tenant: evil, cellfed.io/workspace: shop-ws"),
			old: namespaceManifest("shop", "cellfed.io/tenant: acme, cellfed.io/workspace: shop-ws"), want: forbidden,
			msgs: []string{"metadata.labels[cellfed.io/tenant]", "Cell/rz00a", "FederatedDeployment/web", "would strand them"}},
		{name: "removing a workspace label", op: Update,
			obj: namespaceManifest("shop", "cellfed.io/tenant: acme"),
			old: namespaceManifest("shop", "cellfed.io/tenant: acme, cellfed.io/workspace: shop-ws"), want: forbidden,
			msgs: []string{"metadata.labels[cellfed.io/workspace]"}},
		{name: "other labels of a workspace change freely", op: Update,
			obj: namespaceManifest("shop", "cellfed.io/tenant: acme, cellfed.io/workspace: shop-ws, team: a"),
			old: namespaceManifest("shop", "cellfed.io/tenant: acme, cellfed.io/workspace: shop-ws")},
		{name: "an empty namespace can become a workspace", op: Update,
			obj: namespaceManifest("plain", "cellfed.io/tenant: acme, cellfed.io/workspace: w"), old: namespaceManifest("plain", "")},
		{name: "a new namespace can be created as a workspace",
			obj: namespaceManifest("fresh", "cellfed.io/tenant: acme, cellfed.io/workspace: w")},
		// `tenant create` refuses the plane's namespaces; kubectl label must too.
		{name: "kube-system labelled into a tenant", op: Update,
			obj: namespaceManifest("kube-system", "cellfed.io/tenant: acme"), old: namespaceManifest("kube-system", ""), want: forbidden,
			msgs: []string{"metadata.labels[cellfed.io/tenant]", "namespace kube-system is reserved for the plane"}},
		{name: "default created as a workspace",
			obj: namespaceManifest("default", "cellfed.io/tenant: acme, cellfed.io/workspace: w"), want: forbidden,
			msgs: []string{"namespace default is reserved for the plane"}},
		{name: "the federation namespace labelled into a workspace", op: Update,
			obj: namespaceManifest(fedNamespace, "cellfed.io/workspace: w"), old: namespaceManifest(fedNamespace, ""), want: forbidden,
			msgs: []string{"metadata.labels[cellfed.io/workspace]", "reserved for the plane"}},
		{name: "other labels of kube-system change freely", op: Update,
			obj: namespaceManifest("kube-system", "team: platform"), old: namespaceManifest("kube-system", "")},
	})
}

func TestValidateFederatedReplicaDivision(t *testing.T) {
	placed := deploymentTemplate + `placement:
  topologies: [{name: rz00a}, {name: rz00b}]
`
	runValidate(t, []validateCase{
		{
			name: "weights and limits on placed cells",
			obj: v2(placed + `replicaDivision:
  mode: Divide
  dynamic: AvailableReplicas
  failover: true
  maxSurge: 2
  topologies: [{name: rz00a, weight: 1, minReplicas: 1, maxReplicas: 5}, {name: rz00b, weight: 2}]
`),
		},
		{
			name: "no mode is Duplicate",
			obj:  v2(placed + "replicaDivision: {}\n"),
		},
		{
			name: "unknown mode",
			obj:  v2(placed + "replicaDivision: {mode: Spread}\n"),
			want: invalid,
			msgs: []string{"spec.replicaDivision.mode", "Spread", "use Divide", "or Duplicate"},
		},
		{
			name: "unknown dynamic weight",
			obj:  v2(placed + "replicaDivision: {mode: Divide, dynamic: CPU}\n"),
			want: invalid,
			msgs: []string{"spec.replicaDivision.dynamic", "CPU", "use AvailableReplicas"},
		},
		{
			name: "a cell that is not placed",
			obj:  v2(placed + "replicaDivision: {mode: Divide, topologies: [{name: rz09z, weight: 1}]}\n"),
			want: invalid,
			msgs: []string{"spec.replicaDivision.topologies[0].name", `cell "rz09z" is not placed`, "add it to spec.placement.topologies"},
		},
		{
			name: "a cell named twice",
			obj:  v2(placed + "replicaDivision: {mode: Divide, topologies: [{name: rz00a}, {name: rz00a}]}\n"),
			want: invalid,
			msgs: []string{"spec.replicaDivision.topologies[1].name", "Duplicate value"},
		},
		{
			name: "a cell without a name",
			obj:  v2(placed + "replicaDivision: {mode: Divide, topologies: [{weight: 1}]}\n"),
			want: invalid,
			msgs: []string{"spec.replicaDivision.topologies[0].name", "Required", "name the cell"},
		},
		{
			name: "max below min",
			obj:  v2(placed + "replicaDivision: {mode: Divide, topologies: [{name: rz00a, minReplicas: 3, maxReplicas: 2}]}\n"),
			want: invalid,
			msgs: []string{"spec.replicaDivision.topologies[0].maxReplicas", "below minReplicas 3", "raise maxReplicas or lower minReplicas"},
		},
		{
			name: "negative weight and minimum",
			obj:  v2(placed + "replicaDivision: {mode: Divide, topologies: [{name: rz00a, weight: -1, minReplicas: -2}]}\n"),
			want: invalid,
			msgs: []string{"spec.replicaDivision.topologies[0].weight", "spec.replicaDivision.topologies[0].minReplicas", "must not be negative"},
		},
		{
			name: "no surge",
			obj:  v2(placed + "replicaDivision: {mode: Divide, maxSurge: 0}\n"),
			want: invalid,
			msgs: []string{"spec.replicaDivision.maxSurge", "at least 1", "dropping availability"},
		},
		{
			name: "negative failover delay",
			obj:  v2(placed + "replicaDivision: {mode: Divide, failover: true, failoverAfterSeconds: -1}\n"),
			want: invalid,
			msgs: []string{"spec.replicaDivision.failoverAfterSeconds", "must not be negative"},
		},
		{
			name: "divide with retained replicas",
			obj:  v2(placed + "retainReplicas: true\nreplicaDivision: {mode: Divide}\n"),
			want: invalid,
			msgs: []string{"spec.replicaDivision.mode", "retainReplicas", "use mode Duplicate"},
		},
		{
			name: "a selector placement cannot be checked by name",
			obj: v2(deploymentTemplate + `placement:
  topologySelector: {matchLabels: {zone: nowhere}}
replicaDivision: {mode: Divide, topologies: [{name: rz09z, weight: 2}]}
`),
		},
		{
			name: "through the v1beta1 stash",
			obj: federated("v1beta1", "FederatedDeployment", "shop",
				`annotations:
  conversion.cellfed.io/v1beta2-spec: '{"placement":{"topologyType":"cell","topologies":[{"name":"rz00a"}]},"replicaDivision":{"mode":"Divide","maxSurge":0}}'
`,
				deploymentTemplate+"placement: {clusters: [{name: shop.rz00a}]}\n"),
			want: invalid,
			msgs: []string{"replicaDivision.maxSurge", "at least 1"},
		},
	})
}
