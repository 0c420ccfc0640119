package propagation

import (
	"encoding/hex"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	typesv1b1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
	"github.com/cellfed/cellfed/pkg/controller/clusters"
)

var (
	deploymentType = &Type{
		Name:          "deployments.apps",
		Target:        schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
		TargetKind:    "Deployment",
		Federated:     schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "federateddeployments"},
		Stored:        schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta2", Resource: "federateddeployments"},
		FederatedKind: "FederatedDeployment",
		Namespaced:    true,
	}
	clusterRoleType = &Type{
		Name:          "clusterroles.rbac.authorization.k8s.io",
		Target:        schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
		TargetKind:    "ClusterRole",
		Federated:     schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "federatedclusterroles"},
		Stored:        schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta2", Resource: "federatedclusterroles"},
		FederatedKind: "FederatedClusterRole",
		Namespaced:    false,
	}
	namespaceType = &Type{
		Name:          "namespaces",
		Target:        schema.GroupVersionResource{Version: "v1", Resource: "namespaces"},
		TargetKind:    "Namespace",
		Federated:     schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "federatednamespaces"},
		Stored:        schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta2", Resource: "federatednamespaces"},
		FederatedKind: "FederatedNamespace",
		Namespaced:    true,
	}
)

func fedObj(namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta1",
		"kind":       "FederatedDeployment",
		"metadata":   map[string]any{"name": name, "resourceVersion": "99", "uid": "fed-uid"},
	}}
	if namespace != "" {
		u.SetNamespace(namespace)
	}
	return u
}

// deployTemplate is a template as users write it, with metadata and
// status that must never reach a member.
func deployTemplate() map[string]any {
	return map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata": map[string]any{
			"name":                       "template-name",
			"namespace":                  "template-ns",
			"generateName":               "gen-",
			"resourceVersion":            "123",
			"uid":                        "abc-uid",
			"creationTimestamp":          "2024-01-01T00:00:00Z",
			"generation":                 int64(7),
			"managedFields":              []any{map[string]any{"manager": "kubectl"}},
			"selfLink":                   "/apis/apps/v1/x",
			"deletionTimestamp":          "2024-01-02T00:00:00Z",
			"deletionGracePeriodSeconds": int64(30),
			"ownerReferences":            []any{map[string]any{"name": "owner"}},
			"finalizers":                 []any{"x/y"},
			"labels":                     map[string]any{"app": "web"},
			"annotations":                map[string]any{"note": "kept"},
		},
		"spec": map[string]any{
			"replicas": int64(2),
			"paused":   false,
			"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{
				"spec": map[string]any{
					"containers": []any{
						map[string]any{"name": "web", "image": "nginx:1"},
					},
				},
			},
		},
		"status": map[string]any{"readyReplicas": int64(2)},
	}
}

// wantDeploy is what build should make of deployTemplate for web in ns1
// before any override: cleaned metadata, managed label, template labels
// and annotations (the hash annotation is checked separately).
func wantDeploy() map[string]any {
	return map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata": map[string]any{
			"name":        "web",
			"namespace":   "ns1",
			"labels":      map[string]any{"app": "web", clusters.ManagedLabel: "true"},
			"annotations": map[string]any{"note": "kept"},
		},
		"spec": map[string]any{
			"replicas": int64(2),
			"paused":   false,
			"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{
				"spec": map[string]any{
					"containers": []any{
						map[string]any{"name": "web", "image": "nginx:1"},
					},
				},
			},
		},
	}
}

func ov(op, path, value string) typesv1b1.ClusterOverride {
	o := typesv1b1.ClusterOverride{Op: op, Path: path}
	if value != "" {
		o.Value = &runtime.RawExtension{Raw: []byte(value)}
	}
	return o
}

// stripHash checks the hash annotation is present and well formed, and
// returns the object without it (dropping an annotations map it leaves
// empty) for comparison.
func stripHash(t *testing.T, d desired) map[string]any {
	t.Helper()
	ann := d.obj.GetAnnotations()
	if ann[HashAnnotation] == "" {
		t.Fatalf("hash annotation %s missing: %v", HashAnnotation, ann)
	}
	if ann[HashAnnotation] != d.hash {
		t.Fatalf("hash annotation %q != desired.hash %q", ann[HashAnnotation], d.hash)
	}
	if _, err := hex.DecodeString(d.hash); err != nil || len(d.hash) != 32 {
		t.Fatalf("hash %q is not 32 hex characters", d.hash)
	}
	// The tracked labels are the member object's labels but the managed
	// label.
	labels := maps.Clone(d.obj.GetLabels())
	delete(labels, clusters.ManagedLabel)
	if got, want := ann[ManagedLabelsAnnotation], strings.Join(slices.Sorted(maps.Keys(labels)), ","); got != want {
		t.Fatalf("%s = %q, want %q", ManagedLabelsAnnotation, got, want)
	}
	obj := d.obj.DeepCopy()
	delete(ann, HashAnnotation)
	delete(ann, ManagedLabelsAnnotation)
	if len(ann) == 0 {
		unstructured.RemoveNestedField(obj.Object, "metadata", "annotations")
	} else {
		obj.SetAnnotations(ann)
	}
	return obj.Object
}

func TestBuildNamesAndMetadata(t *testing.T) {
	clusterRole := map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1",
		"kind":       "ClusterRole",
		"metadata":   map[string]any{"name": "x", "namespace": "stray", "uid": "u", "labels": map[string]any{"team": "a"}},
		"rules":      []any{map[string]any{"verbs": []any{"get"}}},
	}
	nsTemplate := map[string]any{
		"apiVersion": "v1",
		"kind":       "Namespace",
		"metadata":   map[string]any{"name": "whatever", "resourceVersion": "1"},
		"spec":       map[string]any{"finalizers": []any{"kubernetes"}},
		"status":     map[string]any{"phase": "Active"},
	}
	tests := []struct {
		name     string
		typ      *Type
		fed      *unstructured.Unstructured
		template map[string]any
		want     map[string]any
	}{
		{
			name:     "namespaced type takes name and namespace from the federated object",
			typ:      deploymentType,
			fed:      fedObj("ns1", "web"),
			template: deployTemplate(),
			want:     wantDeploy(),
		},
		{
			name:     "cluster-scoped type has no namespace even if the federated object or template has one",
			typ:      clusterRoleType,
			fed:      fedObj("ns1", "reader"),
			template: clusterRole,
			want: map[string]any{
				"apiVersion": "rbac.authorization.k8s.io/v1",
				"kind":       "ClusterRole",
				"metadata":   map[string]any{"name": "reader", "labels": map[string]any{"team": "a", clusters.ManagedLabel: "true"}},
				"rules":      []any{map[string]any{"verbs": []any{"get"}}},
			},
		},
		{
			name:     "cluster-scoped federated object",
			typ:      clusterRoleType,
			fed:      fedObj("", "reader"),
			template: clusterRole,
			want: map[string]any{
				"apiVersion": "rbac.authorization.k8s.io/v1",
				"kind":       "ClusterRole",
				"metadata":   map[string]any{"name": "reader", "labels": map[string]any{"team": "a", clusters.ManagedLabel: "true"}},
				"rules":      []any{map[string]any{"verbs": []any{"get"}}},
			},
		},
		{
			name:     "namespaces type is named after the federated object's namespace",
			typ:      namespaceType,
			fed:      fedObj("tenant-a", "anything"),
			template: nsTemplate,
			want: map[string]any{
				"apiVersion": "v1",
				"kind":       "Namespace",
				"metadata":   map[string]any{"name": "tenant-a", "labels": map[string]any{clusters.ManagedLabel: "true"}},
				"spec":       map[string]any{"finalizers": []any{"kubernetes"}},
			},
		},
		{
			name:     "empty template still yields a typed, named, labelled object",
			typ:      deploymentType,
			fed:      fedObj("ns1", "web"),
			template: nil,
			want: map[string]any{
				"apiVersion": "apps/v1",
				"kind":       "Deployment",
				"metadata":   map[string]any{"name": "web", "namespace": "ns1", "labels": map[string]any{clusters.ManagedLabel: "true"}},
			},
		},
		{
			name: "template apiVersion and kind are replaced by the type's",
			typ:  deploymentType,
			fed:  fedObj("ns1", "web"),
			template: map[string]any{
				"apiVersion": "extensions/v1beta1", "kind": "Wrong",
				"metadata": map[string]any{"labels": map[string]any{clusters.ManagedLabel: "false"}},
			},
			want: map[string]any{
				"apiVersion": "apps/v1",
				"kind":       "Deployment",
				"metadata":   map[string]any{"name": "web", "namespace": "ns1", "labels": map[string]any{clusters.ManagedLabel: "true"}},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before map[string]any
			if tc.template != nil {
				before = runtime.DeepCopyJSON(tc.template)
			}
			fedBefore := tc.fed.DeepCopy()
			d, err := build(tc.typ, tc.fed, tc.template, nil, false)
			if err != nil {
				t.Fatalf("build: %v", err)
			}
			if got := stripHash(t, d); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("build:\n got %#v\nwant %#v", got, tc.want)
			}
			if tc.template != nil && !reflect.DeepEqual(before, tc.template) {
				t.Errorf("build modified the template (it comes from the informer cache)")
			}
			if !reflect.DeepEqual(fedBefore, tc.fed) {
				t.Errorf("build modified the federated object")
			}
		})
	}
}

func TestBuildOverrides(t *testing.T) {
	tests := []struct {
		name      string
		overrides []typesv1b1.ClusterOverride
		// edit turns wantDeploy() into the expected object.
		edit    func(m map[string]any)
		wantErr string
	}{
		{
			name:      "replace is the default op",
			overrides: []typesv1b1.ClusterOverride{ov("", "/spec/replicas", "5")},
			edit:      func(m map[string]any) { set(m, int64(5), "spec", "replicas") },
		},
		{
			name:      "explicit replace with a float value",
			overrides: []typesv1b1.ClusterOverride{ov("add", "/spec/ratio", "0.5"), ov("replace", "/spec/replicas", "0")},
			edit: func(m map[string]any) {
				set(m, 0.5, "spec", "ratio")
				set(m, int64(0), "spec", "replicas")
			},
		},
		{
			name:      "add a label keeps the template's labels and the managed label",
			overrides: []typesv1b1.ClusterOverride{ov("add", "/metadata/labels/tier", `"gold"`)},
			edit:      func(m map[string]any) { set(m, "gold", "metadata", "labels", "tier") },
		},
		{
			name:      "add with an escaped key",
			overrides: []typesv1b1.ClusterOverride{ov("add", "/metadata/annotations/example.com~1owner", `"ops"`)},
			edit:      func(m map[string]any) { set(m, "ops", "metadata", "annotations", "example.com/owner") },
		},
		{
			name:      "add on the whole annotations map replaces it (KubeFed semantics)",
			overrides: []typesv1b1.ClusterOverride{ov("add", "/metadata/annotations", `{"x":"y"}`)},
			edit:      func(m map[string]any) { set(m, map[string]any{"x": "y"}, "metadata", "annotations") },
		},
		{
			name:      "remove",
			overrides: []typesv1b1.ClusterOverride{ov("remove", "/spec/paused", "")},
			edit:      func(m map[string]any) { delete(m["spec"].(map[string]any), "paused") },
		},
		{
			name:      "remove the labels map still leaves the managed label",
			overrides: []typesv1b1.ClusterOverride{ov("remove", "/metadata/labels", "")},
			edit:      func(m map[string]any) { set(m, map[string]any{clusters.ManagedLabel: "true"}, "metadata", "labels") },
		},
		{
			name:      "nested path through an array index",
			overrides: []typesv1b1.ClusterOverride{ov("", "/spec/template/spec/containers/0/image", `"nginx:2"`)},
			edit: func(m map[string]any) {
				set(m, []any{map[string]any{"name": "web", "image": "nginx:2"}}, "spec", "template", "spec", "containers")
			},
		},
		{
			name: "add an array element by index and by -",
			overrides: []typesv1b1.ClusterOverride{
				ov("add", "/spec/template/spec/containers/0", `{"name":"init","image":"busybox"}`),
				ov("add", "/spec/template/spec/containers/-", `{"name":"tail","image":"alpine","ports":[{"containerPort":80}]}`),
			},
			edit: func(m map[string]any) {
				set(m, []any{
					map[string]any{"name": "init", "image": "busybox"},
					map[string]any{"name": "web", "image": "nginx:1"},
					map[string]any{"name": "tail", "image": "alpine", "ports": []any{map[string]any{"containerPort": int64(80)}}},
				}, "spec", "template", "spec", "containers")
			},
		},
		{
			name:      "value object",
			overrides: []typesv1b1.ClusterOverride{ov("add", "/spec/strategy", `{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1,"maxUnavailable":"25%"}}`)},
			edit: func(m map[string]any) {
				set(m, map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": int64(1), "maxUnavailable": "25%"}}, "spec", "strategy")
			},
		},
		{
			name:      "replace with no value sets null",
			overrides: []typesv1b1.ClusterOverride{ov("replace", "/spec/paused", "")},
			edit:      func(m map[string]any) { m["spec"].(map[string]any)["paused"] = nil },
		},
		{
			// json-patch v4, like KubeFed, lets replace create a missing
			// key when its parent exists.
			name:      "replace of a missing key under an existing parent adds it",
			overrides: []typesv1b1.ClusterOverride{ov("replace", "/spec/minReadySeconds", "10")},
			edit:      func(m map[string]any) { set(m, int64(10), "spec", "minReadySeconds") },
		},
		{
			name:      "operations apply in order",
			overrides: []typesv1b1.ClusterOverride{ov("", "/spec/replicas", "3"), ov("", "/spec/replicas", "4")},
			edit:      func(m map[string]any) { set(m, int64(4), "spec", "replicas") },
		},
		{
			name: "apiVersion and kind cannot be changed",
			overrides: []typesv1b1.ClusterOverride{
				ov("replace", "/apiVersion", `"apps/v2"`),
				ov("replace", "/kind", `"StatefulSet"`),
			},
			edit: func(map[string]any) {},
		},
		{
			// Admission rejects such paths; for an object admitted before
			// the rule build fails (unclearly: "Object 'Kind' is missing")
			// rather than writing a member without a kind.
			name:      "removing kind fails the build",
			overrides: []typesv1b1.ClusterOverride{ov("remove", "/kind", ""), ov("remove", "/apiVersion", "")},
			wantErr:   "overridden object",
		},
		{
			name:      "overrides cannot rename the object",
			overrides: []typesv1b1.ClusterOverride{ov("replace", "/metadata/name", `"other"`)},
			edit:      func(map[string]any) {},
		},
		{
			name:      "overrides cannot move the object to another namespace",
			overrides: []typesv1b1.ClusterOverride{ov("replace", "/metadata/namespace", `"elsewhere"`)},
			edit:      func(map[string]any) {},
		},
		{
			name:      "the managed label cannot be overridden",
			overrides: []typesv1b1.ClusterOverride{ov("replace", "/metadata/labels/kubefed.io~1managed", `"false"`)},
			edit:      func(map[string]any) {},
		},
		{
			name:      "replace under a missing parent fails",
			overrides: []typesv1b1.ClusterOverride{ov("", "/spec/nope/x", "1")},
			wantErr:   "/spec/nope/x",
		},
		{
			name:      "remove of a missing key fails",
			overrides: []typesv1b1.ClusterOverride{ov("remove", "/spec/missing", "")},
			wantErr:   "/spec/missing",
		},
		{
			name:      "add under a missing parent fails",
			overrides: []typesv1b1.ClusterOverride{ov("add", "/spec/nope/x", "1")},
			wantErr:   "/spec/nope/x",
		},
		{
			name:      "array index out of range fails",
			overrides: []typesv1b1.ClusterOverride{ov("", "/spec/template/spec/containers/3/image", `"x"`)},
			wantErr:   "applying overrides",
		},
		{
			name:      "unknown op fails",
			overrides: []typesv1b1.ClusterOverride{ov("merge", "/spec/replicas", "1")},
			wantErr:   "merge",
		},
		{
			name:      "an error in a later op fails the whole patch",
			overrides: []typesv1b1.ClusterOverride{ov("", "/spec/replicas", "3"), ov("remove", "/spec/missing", "")},
			wantErr:   "/spec/missing",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			template := deployTemplate()
			before := runtime.DeepCopyJSON(template)
			d, err := build(deploymentType, fedObj("ns1", "web"), template, tc.overrides, false)
			if !reflect.DeepEqual(before, template) {
				t.Errorf("build modified the template")
			}
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("build succeeded with %s, want an error mentioning %q", d.obj.Object, tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %q does not mention %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("build: %v", err)
			}
			want := wantDeploy()
			tc.edit(want)
			if got := stripHash(t, d); !reflect.DeepEqual(got, want) {
				t.Errorf("build:\n got %#v\nwant %#v", got, want)
			}
		})
	}
}

func set(m map[string]any, v any, path ...string) {
	if err := unstructured.SetNestedField(m, v, path...); err != nil {
		panic(err)
	}
}

// TestBuildEncoded: a built object's create body is its JSON, with the
// hash annotation, encoded once however many members ask for it.
func TestBuildEncoded(t *testing.T) {
	d, err := build(deploymentType, fedObj("ns1", "web"), deployTemplate(), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	first, err := d.encoded()
	if err != nil {
		t.Fatal(err)
	}
	if want, err := json.Marshal(d.obj.Object); err != nil || string(first) != string(want) {
		t.Errorf("body %s is not the object %s (%v)", first, want, err)
	}
	if !strings.Contains(string(first), `"`+HashAnnotation+`":"`+d.hash+`"`) {
		t.Errorf("body %s lacks the hash annotation %s", first, d.hash)
	}
	copied := d // desired is passed by value to each member's goroutine
	again, err := copied.encoded()
	if err != nil || &again[0] != &first[0] {
		t.Errorf("a second create encoded the object again (%v)", err)
	}
	if plain, err := (desired{obj: d.obj}).encoded(); err != nil || string(plain) != string(first) {
		t.Errorf("a desired without a shared encoding encodes %s, %v; want %s", plain, err, first)
	}
}

func TestBuildHash(t *testing.T) {
	type input struct {
		typ            *Type
		fed            *unstructured.Unstructured
		template       map[string]any
		overrides      []typesv1b1.ClusterOverride
		retainReplicas bool
	}
	base := func() input {
		return input{typ: deploymentType, fed: fedObj("ns1", "web"), template: deployTemplate(),
			overrides: []typesv1b1.ClusterOverride{ov("", "/spec/replicas", "3")}}
	}
	hashOf := func(t *testing.T, in input) string {
		t.Helper()
		d, err := build(in.typ, in.fed, in.template, in.overrides, in.retainReplicas)
		if err != nil {
			t.Fatalf("build: %v", err)
		}
		return d.hash
	}
	baseHash := hashOf(t, base())
	tests := []struct {
		name string
		edit func(in *input)
		same bool
	}{
		{name: "identical input", edit: func(*input) {}, same: true},
		{name: "fresh federated object resourceVersion", edit: func(in *input) { in.fed.SetResourceVersion("100") }, same: true},
		{name: "template metadata only the server sets", edit: func(in *input) {
			set(in.template, "999", "metadata", "resourceVersion")
			set(in.template, "other-uid", "metadata", "uid")
			set(in.template, int64(8), "metadata", "generation")
		}, same: true},
		{name: "template status", edit: func(in *input) { set(in.template, int64(0), "status", "readyReplicas") }, same: true},
		{name: "replicas as float64 in the override value", edit: func(in *input) {
			in.overrides = []typesv1b1.ClusterOverride{ov("", "/spec/replicas", "3.0")}
		}, same: true},
		{name: "override equal to the template's value", edit: func(in *input) {
			set(in.template, int64(3), "spec", "replicas")
			in.overrides = nil
		}, same: true},
		{name: "template spec", edit: func(in *input) {
			set(in.template, []any{map[string]any{"name": "web", "image": "nginx:2"}}, "spec", "template", "spec", "containers")
		}},
		{name: "template label", edit: func(in *input) { set(in.template, "x", "metadata", "labels", "extra") }},
		{name: "template annotation", edit: func(in *input) { set(in.template, "changed", "metadata", "annotations", "note") }},
		{name: "override value", edit: func(in *input) { in.overrides = []typesv1b1.ClusterOverride{ov("", "/spec/replicas", "4")} }},
		{name: "no overrides", edit: func(in *input) { in.overrides = nil }},
		{name: "extra override", edit: func(in *input) {
			in.overrides = append(in.overrides, ov("add", "/metadata/labels/tier", `"gold"`))
		}},
		{name: "retainReplicas", edit: func(in *input) { in.retainReplicas = true }},
		{name: "federated object name", edit: func(in *input) { in.fed.SetName("web2") }},
		{name: "federated object namespace", edit: func(in *input) { in.fed.SetNamespace("ns2") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := base()
			tc.edit(&in)
			got := hashOf(t, in)
			if tc.same && got != baseHash {
				t.Errorf("hash changed: %s != %s", got, baseHash)
			}
			if !tc.same && got == baseHash {
				t.Errorf("hash did not change: %s", got)
			}
		})
	}
}

func TestRetain(t *testing.T) {
	u := func(m map[string]any) *unstructured.Unstructured { return &unstructured.Unstructured{Object: m} }
	tests := []struct {
		name           string
		want, existing map[string]any
		retainReplicas bool
		expect         map[string]any
	}{
		{
			name: "metadata owned by the member is kept, ours wins on conflicting keys",
			want: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "c", "namespace": "n",
					"labels":      map[string]any{"app": "web", clusters.ManagedLabel: "true"},
					"annotations": map[string]any{HashAnnotation: "new", "shared": "ours"}},
				"data": map[string]any{"k": "v"},
			},
			existing: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "c", "namespace": "n", "resourceVersion": "42", "uid": "member-uid",
					"finalizers":      []any{"member/finalizer"},
					"ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "pod-uid"}},
					"labels":          map[string]any{"app": "old", "member": "x", clusters.ManagedLabel: "true"},
					"annotations":     map[string]any{HashAnnotation: "old", "shared": "theirs", "member": "y"}},
				"data": map[string]any{"k": "drifted", "extra": "member"},
			},
			expect: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "c", "namespace": "n", "resourceVersion": "42",
					"finalizers":      []any{"member/finalizer"},
					"ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "pod-uid"}},
					"labels":          map[string]any{"app": "web", "member": "x", clusters.ManagedLabel: "true"},
					"annotations":     map[string]any{HashAnnotation: "new", "shared": "ours", "member": "y"}},
				"data": map[string]any{"k": "v"},
			},
		},
		{
			name: "member without labels, annotations or finalizers",
			want: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "c", "labels": map[string]any{"a": "b"}}},
			existing: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "c", "resourceVersion": "1"}},
			expect: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "c", "resourceVersion": "1", "labels": map[string]any{"a": "b"}}},
		},
		{
			name: "Service allocated fields are kept when the template leaves them unset",
			want: svc(map[string]any{"type": "NodePort"}),
			existing: svc(map[string]any{"type": "NodePort", "clusterIP": "10.0.0.5", "clusterIPs": []any{"10.0.0.5", "fd00::5"},
				"healthCheckNodePort": int64(32000), "ipFamilies": []any{"IPv4", "IPv6"}, "ipFamilyPolicy": "PreferDualStack",
				"sessionAffinity": "None"}),
			expect: svc(map[string]any{"type": "NodePort", "clusterIP": "10.0.0.5", "clusterIPs": []any{"10.0.0.5", "fd00::5"},
				"healthCheckNodePort": int64(32000), "ipFamilies": []any{"IPv4", "IPv6"}, "ipFamilyPolicy": "PreferDualStack"}),
		},
		{
			name: "Service fields the template sets are the template's",
			want: svc(map[string]any{"clusterIP": "None", "clusterIPs": []any{"None"}, "ipFamilies": []any{"IPv4"},
				"healthCheckNodePort": int64(31111)}),
			existing: svc(map[string]any{"clusterIP": "10.0.0.5", "clusterIPs": []any{"10.0.0.5"}, "ipFamilies": []any{"IPv6"},
				"healthCheckNodePort": int64(32000), "ipFamilyPolicy": "SingleStack"}),
			expect: svc(map[string]any{"clusterIP": "None", "clusterIPs": []any{"None"}, "ipFamilies": []any{"IPv4"},
				"healthCheckNodePort": int64(31111), "ipFamilyPolicy": "SingleStack"}),
		},
		{
			name: "Service node ports are kept per port, matched by name and port",
			want: svc(map[string]any{"ports": []any{
				map[string]any{"name": "http", "port": int64(80)},
				map[string]any{"name": "https", "port": int64(443), "nodePort": int64(30443)},
				map[string]any{"name": "metrics", "port": int64(9090)},
				map[string]any{"name": "grpc", "port": float64(8080)},
				map[string]any{"name": "new", "port": int64(7000)},
			}}),
			existing: svc(map[string]any{"ports": []any{
				map[string]any{"name": "https", "port": int64(443), "nodePort": int64(31000)},
				map[string]any{"name": "http", "port": int64(80), "nodePort": int64(30080)},
				map[string]any{"name": "metrics", "port": int64(9091), "nodePort": int64(30090)},
				map[string]any{"name": "grpc", "port": int64(8080), "nodePort": int64(30081)},
				map[string]any{"name": "other", "port": int64(7000), "nodePort": int64(30070)},
			}}),
			expect: svc(map[string]any{"ports": []any{
				map[string]any{"name": "http", "port": int64(80), "nodePort": int64(30080)},
				map[string]any{"name": "https", "port": int64(443), "nodePort": int64(30443)},
				map[string]any{"name": "metrics", "port": int64(9090)},
				map[string]any{"name": "grpc", "port": float64(8080), "nodePort": int64(30081)},
				map[string]any{"name": "new", "port": int64(7000)},
			}}),
		},
		{
			name:     "unnamed single Service port keeps its node port",
			want:     svc(map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}),
			existing: svc(map[string]any{"ports": []any{map[string]any{"port": int64(80), "nodePort": int64(30080), "protocol": "TCP"}}}),
			expect:   svc(map[string]any{"ports": []any{map[string]any{"port": int64(80), "nodePort": int64(30080)}}}),
		},
		{
			name: "ServiceAccount secrets are kept when the template has none",
			want: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "sa"}},
			existing: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "sa"},
				"secrets": []any{map[string]any{"name": "sa-token-x"}}},
			expect: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "sa"},
				"secrets": []any{map[string]any{"name": "sa-token-x"}}},
		},
		{
			name: "ServiceAccount secrets the template sets are the template's",
			want: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "sa"},
				"secrets": []any{map[string]any{"name": "mine"}}},
			existing: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "sa"},
				"secrets": []any{map[string]any{"name": "sa-token-x"}}},
			expect: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "sa"},
				"secrets": []any{map[string]any{"name": "mine"}}},
		},
		{
			name: "Service-only fields are not retained for other kinds",
			want: map[string]any{"apiVersion": "example.com/v1", "kind": "Gateway", "metadata": map[string]any{"name": "g"},
				"spec": map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}},
			existing: map[string]any{"apiVersion": "example.com/v1", "kind": "Gateway", "metadata": map[string]any{"name": "g"},
				"spec":    map[string]any{"clusterIP": "1.2.3.4", "ports": []any{map[string]any{"port": int64(80), "nodePort": int64(30080)}}},
				"secrets": []any{"s"}},
			expect: map[string]any{"apiVersion": "example.com/v1", "kind": "Gateway", "metadata": map[string]any{"name": "g"},
				"spec": map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}},
		},
		{
			name:     "replicas are the template's without retainReplicas",
			want:     deploy(int64(2)),
			existing: deploy(int64(7)),
			expect:   deploy(int64(2)),
		},
		{
			name:           "replicas are the member's with retainReplicas",
			want:           deploy(int64(2)),
			existing:       deploy(int64(7)),
			retainReplicas: true,
			expect:         deploy(int64(7)),
		},
		{
			name:           "retainReplicas with a member lacking replicas keeps the template's",
			want:           deploy(int64(2)),
			existing:       deploy(nil),
			retainReplicas: true,
			expect:         deploy(int64(2)),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want, existing := u(tc.want), u(tc.existing)
			wantBefore, existingBefore := want.DeepCopy(), existing.DeepCopy()
			gvk := want.GroupVersionKind()
			policy := PolicyFor(&Type{Target: schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version}, TargetKind: gvk.Kind})
			got := retain(policy, want, existing, tc.retainReplicas)
			if !reflect.DeepEqual(got.Object, tc.expect) {
				t.Errorf("retain:\n got %#v\nwant %#v", got.Object, tc.expect)
			}
			if !reflect.DeepEqual(want, wantBefore) {
				t.Errorf("retain modified the desired object")
			}
			// The result must share nothing with the member's cached
			// object: scribble over it and check the member is intact.
			scribble(got.Object)
			if !reflect.DeepEqual(existing, existingBefore) {
				t.Errorf("retain's result aliases the member object (cache corruption)")
			}
			if !reflect.DeepEqual(want, wantBefore) {
				t.Errorf("retain's result aliases the desired object")
			}
		})
	}
}

func svc(spec map[string]any) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "s", "namespace": "n"}, "spec": spec}
}

func deploy(replicas any) map[string]any {
	spec := map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}}
	if replicas != nil {
		spec["replicas"] = replicas
	}
	return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "d", "namespace": "n"}, "spec": spec}
}

// scribble overwrites every scalar and empties nothing: it replaces the
// contents of every map and slice in place, so aliasing shows up.
func scribble(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			switch e.(type) {
			case map[string]any, []any:
				scribble(e)
			default:
				x[k] = "scribbled"
			}
		}
	case []any:
		for i, e := range x {
			switch e.(type) {
			case map[string]any, []any:
				scribble(e)
			default:
				x[i] = "scribbled"
			}
		}
	}
}

func TestCovers(t *testing.T) {
	tests := []struct {
		name       string
		have, want any
		covers     bool
	}{
		{"equal scalars", "a", "a", true},
		{"different strings", "a", "b", false},
		{"int64 vs float64 equal", int64(3), float64(3), true},
		{"float64 vs int64 equal", float64(3), int64(3), true},
		{"int vs int64", 3, int64(3), true},
		{"int64 vs float64 different", int64(3), float64(3.5), false},
		{"number vs string", "3", int64(3), false},
		{"bools", true, true, true},
		{"bool differs", false, true, false},
		{"nil want matches anything", "x", nil, true},
		{"nil want matches nil", nil, nil, true},
		{"scalar want, nil have", nil, "x", false},
		{"map covers subset", map[string]any{"a": "1", "b": "2"}, map[string]any{"a": "1"}, true},
		{"missing key", map[string]any{"b": "2"}, map[string]any{"a": "1"}, false},
		{"nil in want matches absent key", map[string]any{}, map[string]any{"a": nil}, true},
		{"empty map in want matches absent key", map[string]any{}, map[string]any{"a": map[string]any{}}, true},
		{"empty list in want matches absent key", map[string]any{}, map[string]any{"a": []any{}}, true},
		{"empty string in want does not match absent key", map[string]any{}, map[string]any{"a": ""}, false},
		{"zero in want does not match absent key", map[string]any{}, map[string]any{"a": int64(0)}, false},
		{"empty map in want matches null", map[string]any{"a": nil}, map[string]any{"a": map[string]any{}}, true},
		{"empty list in want matches null", map[string]any{"a": nil}, map[string]any{"a": []any{}}, true},
		{"empty map in want, extra fields in have", map[string]any{"a": map[string]any{"x": "1"}}, map[string]any{"a": map[string]any{}}, true},
		{"map want, scalar have", map[string]any{"a": "s"}, map[string]any{"a": map[string]any{"x": "1"}}, false},
		{"empty map want, scalar have", "s", map[string]any{}, false},
		{"list want, scalar have", "s", []any{"a"}, false},
		{"empty list want, non-empty have", []any{"a"}, []any{}, false},
		{"list equal", []any{"a", int64(1)}, []any{"a", float64(1)}, true},
		{"list longer have", []any{"a", "b"}, []any{"a"}, false},
		{"list shorter have", []any{"a"}, []any{"a", "b"}, false},
		{"list order matters", []any{"b", "a"}, []any{"a", "b"}, false},
		{"list of maps with defaulted fields", []any{map[string]any{"name": "c", "imagePullPolicy": "Always"}}, []any{map[string]any{"name": "c"}}, true},
		{
			"extra member fields ignored (defaults, status)",
			map[string]any{
				"metadata": map[string]any{"name": "x", "uid": "u", "resourceVersion": "3", "labels": map[string]any{"a": "b", "member": "y"}},
				"spec":     map[string]any{"replicas": int64(2), "progressDeadlineSeconds": int64(600)},
				"status":   map[string]any{"readyReplicas": int64(2)},
			},
			map[string]any{
				"metadata": map[string]any{"name": "x", "labels": map[string]any{"a": "b"}},
				"spec":     map[string]any{"replicas": float64(2)},
			},
			true,
		},
		{
			"changed nested value",
			map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx:1"}}}}}},
			map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx:2"}}}}}},
			false,
		},
		{
			"changed deeply nested number",
			map[string]any{"a": map[string]any{"b": []any{map[string]any{"c": int64(1)}}}},
			map[string]any{"a": map[string]any{"b": []any{map[string]any{"c": int64(2)}}}},
			false,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := covers(tc.have, tc.want); got != tc.covers {
				t.Errorf("covers(%#v, %#v) = %v, want %v", tc.have, tc.want, got, tc.covers)
			}
		})
	}
}

// TestCoversBuiltObject checks the case the controller relies on: a
// member object as the API server returns it (the built object plus
// server fields and defaults) covers what build made, and stops covering
// it when the template changes.
func TestCoversBuiltObject(t *testing.T) {
	d, err := build(deploymentType, fedObj("ns1", "web"), deployTemplate(), []typesv1b1.ClusterOverride{ov("", "/spec/replicas", "3")}, false)
	if err != nil {
		t.Fatal(err)
	}
	member := d.obj.DeepCopy()
	member.SetResourceVersion("10")
	member.SetUID("member-uid")
	member.SetGeneration(1)
	set(member.Object, int64(600), "spec", "progressDeadlineSeconds")
	containers, _, _ := unstructured.NestedSlice(member.Object, "spec", "template", "spec", "containers")
	containers[0].(map[string]any)["imagePullPolicy"] = "Always"
	set(member.Object, containers, "spec", "template", "spec", "containers")
	set(member.Object, int64(3), "status", "replicas")
	l := member.GetLabels()
	l["member-added"] = "x"
	member.SetLabels(l)
	if !covers(member.Object, d.obj.Object) {
		t.Fatalf("a member object holding everything build made is not covered")
	}
	d2, err := build(deploymentType, fedObj("ns1", "web"), deployTemplate(), []typesv1b1.ClusterOverride{ov("", "/spec/replicas", "4")}, false)
	if err != nil {
		t.Fatal(err)
	}
	if covers(member.Object, d2.obj.Object) {
		t.Fatalf("a member object with the old replicas covers the new desired object")
	}
}

func TestTypeFor(t *testing.T) {
	ftc := func(name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "core.kubefed.io/v1beta1",
			"kind":       "FederatedTypeConfig",
			"metadata":   map[string]any{"name": name, "namespace": "kube-federation-system"},
			"spec":       spec,
		}}
	}
	res := func(group, version, kind, plural, scope string) map[string]any {
		m := map[string]any{"version": version, "kind": kind, "pluralName": plural, "scope": scope}
		if group != "" {
			m["group"] = group
		}
		return m
	}
	fed := func(kind, plural string) map[string]any {
		return res("types.kubefed.io", "v1beta1", kind, plural, "Namespaced")
	}
	without := func(m map[string]any, key string) map[string]any {
		delete(m, key)
		return m
	}
	tests := []struct {
		name    string
		obj     *unstructured.Unstructured
		want    *Type
		ok      bool
		wantErr string
	}{
		{
			name: "namespaced type, enabled",
			obj: ftc("deployments.apps", map[string]any{"propagation": "Enabled",
				"targetType": res("apps", "v1", "Deployment", "deployments", "Namespaced"), "federatedType": fed("FederatedDeployment", "federateddeployments")}),
			want: deploymentType,
			ok:   true,
		},
		{
			name: "cluster-scoped type",
			obj: ftc("clusterroles.rbac.authorization.k8s.io", map[string]any{"propagation": "Enabled",
				"targetType":    res("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", "Cluster"),
				"federatedType": res("types.kubefed.io", "v1beta1", "FederatedClusterRole", "federatedclusterroles", "Cluster")}),
			want: clusterRoleType,
			ok:   true,
		},
		{
			name: "namespaces are namespaced from the federated side",
			obj: ftc("namespaces", map[string]any{"propagation": "Enabled",
				"targetType": res("", "v1", "Namespace", "namespaces", "Cluster"), "federatedType": fed("FederatedNamespace", "federatednamespaces")}),
			want: namespaceType,
			ok:   true,
		},
		{
			name: "federated version is always v1beta1, stored v1beta2",
			obj: ftc("configmaps", map[string]any{"propagation": "Enabled",
				"targetType":    res("", "v1", "ConfigMap", "configmaps", "Namespaced"),
				"federatedType": res("types.kubefed.io", "v1alpha1", "FederatedConfigMap", "federatedconfigmaps", "Namespaced")}),
			want: &Type{Name: "configmaps", Target: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, TargetKind: "ConfigMap",
				Federated:     schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "federatedconfigmaps"},
				Stored:        schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta2", Resource: "federatedconfigmaps"},
				FederatedKind: "FederatedConfigMap", Namespaced: true},
			ok: true,
		},
		{
			name: "a replicas path",
			obj: ftc("configmaps", map[string]any{"propagation": "Enabled", "replicasPath": "/spec/workers/count",
				"targetType":    res("", "v1", "ConfigMap", "configmaps", "Namespaced"),
				"federatedType": fed("FederatedConfigMap", "federatedconfigmaps")}),
			want: &Type{Name: "configmaps", Target: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, TargetKind: "ConfigMap",
				Federated:     schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "federatedconfigmaps"},
				Stored:        schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta2", Resource: "federatedconfigmaps"},
				FederatedKind: "FederatedConfigMap", Namespaced: true, ReplicasPath: "/spec/workers/count"},
			ok: true,
		},
		{
			// The type runs; divide refuses each divided object.
			name: "a replicas path that is not a JSON pointer",
			obj: ftc("configmaps", map[string]any{"propagation": "Enabled", "replicasPath": "spec.replicas",
				"targetType":    res("", "v1", "ConfigMap", "configmaps", "Namespaced"),
				"federatedType": fed("FederatedConfigMap", "federatedconfigmaps")}),
			want: &Type{Name: "configmaps", Target: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, TargetKind: "ConfigMap",
				Federated:     schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "federatedconfigmaps"},
				Stored:        schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta2", Resource: "federatedconfigmaps"},
				FederatedKind: "FederatedConfigMap", Namespaced: true, ReplicasPath: "spec.replicas"},
			ok: true,
		},
		{
			name: "disabled",
			obj: ftc("deployments.apps", map[string]any{"propagation": "Disabled",
				"targetType": res("apps", "v1", "Deployment", "deployments", "Namespaced"), "federatedType": fed("FederatedDeployment", "federateddeployments")}),
		},
		{
			name: "disabled is not checked further",
			obj:  ftc("broken", map[string]any{"propagation": "Disabled"}),
		},
		{
			name: "missing propagation counts as disabled",
			obj: ftc("deployments.apps", map[string]any{
				"targetType": res("apps", "v1", "Deployment", "deployments", "Namespaced"), "federatedType": fed("FederatedDeployment", "federateddeployments")}),
		},
		{
			name:    "missing target pluralName",
			obj:     ftc("deployments.apps", map[string]any{"propagation": "Enabled", "targetType": without(res("apps", "v1", "Deployment", "", "Namespaced"), "pluralName"), "federatedType": fed("FederatedDeployment", "federateddeployments")}),
			wantErr: "deployments.apps",
		},
		{
			name:    "missing target kind",
			obj:     ftc("deployments.apps", map[string]any{"propagation": "Enabled", "targetType": without(res("apps", "v1", "", "deployments", "Namespaced"), "kind"), "federatedType": fed("FederatedDeployment", "federateddeployments")}),
			wantErr: "kind",
		},
		{
			name:    "missing target version",
			obj:     ftc("deployments.apps", map[string]any{"propagation": "Enabled", "targetType": without(res("apps", "", "Deployment", "deployments", "Namespaced"), "version"), "federatedType": fed("FederatedDeployment", "federateddeployments")}),
			wantErr: "version",
		},
		{
			name:    "missing federated pluralName",
			obj:     ftc("deployments.apps", map[string]any{"propagation": "Enabled", "targetType": res("apps", "v1", "Deployment", "deployments", "Namespaced"), "federatedType": without(fed("FederatedDeployment", ""), "pluralName")}),
			wantErr: "pluralName",
		},
		{
			name:    "missing federated group",
			obj:     ftc("deployments.apps", map[string]any{"propagation": "Enabled", "targetType": res("apps", "v1", "Deployment", "deployments", "Namespaced"), "federatedType": res("", "v1beta1", "FederatedDeployment", "federateddeployments", "Namespaced")}),
			wantErr: "federatedType",
		},
		{
			name:    "missing targetType",
			obj:     ftc("deployments.apps", map[string]any{"propagation": "Enabled", "federatedType": fed("FederatedDeployment", "federateddeployments")}),
			wantErr: "targetType",
		},
		{
			name:    "undecodable spec",
			obj:     ftc("bad", map[string]any{"propagation": "Enabled", "targetType": "apps/v1"}),
			wantErr: "decoding FederatedTypeConfig bad",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := TypeFor(tc.obj)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("TypeFor = %+v, %v; want an error mentioning %q", got, ok, tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %q does not mention %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("TypeFor: %v", err)
			}
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if !tc.ok {
				if got != nil {
					t.Fatalf("disabled type returned %+v", got)
				}
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("TypeFor:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestIsNamespace(t *testing.T) {
	tests := []struct {
		typ  *Type
		want bool
	}{
		{namespaceType, true},
		{deploymentType, false},
		{clusterRoleType, false},
		{&Type{Target: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "namespaces"}}, false},
	}
	for _, tc := range tests {
		if got := tc.typ.IsNamespace(); got != tc.want {
			t.Errorf("%v.IsNamespace() = %v, want %v", tc.typ.Target, got, tc.want)
		}
	}
}

// TestAnnotationAndLabelRules: with annotation rules, keys matching a
// pattern are propagated, tracked and removed once they leave the
// template; other keys are the member's. Labels are tracked always.
func TestAnnotationAndLabelRules(t *testing.T) {
	svc := &Type{Name: "services", Target: schema.GroupVersionResource{Version: "v1", Resource: "services"}, TargetKind: "Service",
		Namespaced: true, AnnotationRules: true, PropagatingAnnotations: "service.beta.kubernetes.io/*,example.com/exact"}
	template := func(labels, ann map[string]any) map[string]any {
		return map[string]any{"metadata": map[string]any{"labels": labels, "annotations": ann}, "spec": map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}}
	}
	d1, err := build(svc, fedObj("ns1", "web"), template(
		map[string]any{"app": "web", "tier": "front"},
		map[string]any{"service.beta.kubernetes.io/lb": "nlb", "example.com/exact": "1", "status.cafe.sofastack.io/loadbalancer": "from-template"},
	), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	ann := d1.obj.GetAnnotations()
	if _, ok := ann["status.cafe.sofastack.io/loadbalancer"]; ok {
		t.Errorf("a status-like template annotation was propagated: %v", ann)
	}
	if ann[ManagedAnnotationsAnnotation] != "example.com/exact,service.beta.kubernetes.io/lb" || ann[ManagedLabelsAnnotation] != "app,tier" {
		t.Errorf("tracked keys: annotations %q labels %q", ann[ManagedAnnotationsAnnotation], ann[ManagedLabelsAnnotation])
	}
	// The member as written, plus what its own controllers added.
	member := d1.obj.DeepCopy()
	member.SetResourceVersion("7")
	ma := member.GetAnnotations()
	ma["status.cafe.sofastack.io/loadbalancer"] = "ready"
	member.SetAnnotations(ma)
	ml := member.GetLabels()
	ml["member-added"] = "x"
	member.SetLabels(ml)
	if !upToDate(d1, member) {
		t.Errorf("the member's own status-like annotation and label made the object out of date")
	}

	// The template drops a label and a spec-like annotation.
	d2, err := build(svc, fedObj("ns1", "web"), template(
		map[string]any{"app": "web"},
		map[string]any{"service.beta.kubernetes.io/lb": "alb"},
	), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if upToDate(d2, member) {
		t.Fatalf("dropped keys did not make the object out of date")
	}
	out := retain(PolicyFor(svc), d2.obj, member, false)
	gotAnn, gotLabels := out.GetAnnotations(), out.GetLabels()
	for k, want := range map[string]string{"service.beta.kubernetes.io/lb": "alb", "status.cafe.sofastack.io/loadbalancer": "ready", ManagedAnnotationsAnnotation: "service.beta.kubernetes.io/lb"} {
		if gotAnn[k] != want {
			t.Errorf("annotation %s = %q, want %q", k, gotAnn[k], want)
		}
	}
	if _, ok := gotAnn["example.com/exact"]; ok {
		t.Errorf("a spec-like annotation that left the template is still there: %v", gotAnn)
	}
	if _, ok := gotLabels["tier"]; ok || gotLabels["member-added"] != "x" || gotLabels["app"] != "web" {
		t.Errorf("labels after the write: %v (want tier removed, member-added and app kept)", gotLabels)
	}
	if !upToDate(d2, out) {
		t.Errorf("the object just written is not up to date")
	}
	// Drift: an edit of a spec-like key is corrected, of a status-like one
	// left alone.
	drift := out.DeepCopy()
	da := drift.GetAnnotations()
	da["status.cafe.sofastack.io/loadbalancer"] = "changed by the member"
	drift.SetAnnotations(da)
	if !upToDate(d2, drift) {
		t.Errorf("a member edit of a status-like annotation made the object out of date")
	}
	da["service.beta.kubernetes.io/lb"] = "edited"
	drift.SetAnnotations(da)
	if upToDate(d2, drift) {
		t.Errorf("a member edit of a spec-like annotation is not corrected")
	}
}

// TestUnchanged checks the cache-only no-op check on lean member objects
// (metadata and status, as the member cache keeps them): anything it does
// not find right sends the controller to the member for the content.
func TestUnchanged(t *testing.T) {
	d, err := build(deploymentType, fedObj("ns1", "web"), deployTemplate(), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	lean := func(edit func(u *unstructured.Unstructured)) *unstructured.Unstructured {
		out, err := clusters.Lean([]string{"replicas"})(d.obj.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		u, ok, err := clusters.Expand(out)
		if err != nil || !ok {
			t.Fatalf("expanding the cache entry: %v, %v", ok, err)
		}
		u.SetGeneration(4)
		if edit != nil {
			edit(u)
		}
		return u
	}
	for _, tc := range []struct {
		name     string
		cached   *unstructured.Unstructured
		recorded string
		want     bool
	}{
		{"the recorded version, as written", lean(nil), "gen:4", true},
		{"no record (restart without one, takeover)", lean(nil), "", false},
		{"a newer version (drift on the member)", lean(nil), "gen:3", false},
		{"written by KubeFed: no hash", lean(func(u *unstructured.Unstructured) {
			a := u.GetAnnotations()
			delete(a, HashAnnotation)
			u.SetAnnotations(a)
		}), "gen:4", true},
		{"another hash", lean(func(u *unstructured.Unstructured) {
			a := u.GetAnnotations()
			a[HashAnnotation] = "other"
			u.SetAnnotations(a)
		}), "gen:4", false},
		{"a template label taken off on the member", lean(func(u *unstructured.Unstructured) { u.SetLabels(nil) }), "gen:4", false},
		{"member additions", lean(func(u *unstructured.Unstructured) {
			l := u.GetLabels()
			l["member-added"] = "x"
			u.SetLabels(l)
		}), "gen:4", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := unchanged(d, tc.cached, tc.recorded); got != tc.want {
				t.Errorf("unchanged = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestOutdated(t *testing.T) {
	d, err := build(deploymentType, fedObj("ns1", "web"), deployTemplate(), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	withHash := func(h string) *unstructured.Unstructured {
		u := d.obj.DeepCopy()
		a := u.GetAnnotations()
		if h == "" {
			delete(a, HashAnnotation)
		} else {
			a[HashAnnotation] = h
		}
		u.SetAnnotations(a)
		return u
	}
	for _, tc := range []struct {
		name   string
		cached *unstructured.Unstructured
		want   bool
	}{
		{"our last write was this content", withHash(d.hash), false},
		{"our last write was other content (a release)", withHash("older"), true},
		{"no hash (KubeFed's or a hand-made object): content decides", withHash(""), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := outdated(d, tc.cached); got != tc.want {
				t.Errorf("outdated = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCachedSpec(t *testing.T) {
	for _, tc := range []struct {
		name      string
		policy    Policy
		want      []string
		fromCache bool
	}{
		{"deployment: readiness", PolicyFor(deploymentType), []string{"replicas"}, true},
		{"service: what a write keeps", Policy{RetainSpec: []string{"clusterIP", "clusterIPs"}, RetainNodePorts: true}, []string{"clusterIP", "clusterIPs", "ports", "replicas"}, true},
		{"service account: top-level secrets are not cached", Policy{RetainTop: []string{"secrets"}}, []string{"replicas"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.policy.CachedSpec(); !slices.Equal(got, tc.want) {
				t.Errorf("CachedSpec = %v, want %v", got, tc.want)
			}
			if got := tc.policy.UpdatesFromCache(); got != tc.fromCache {
				t.Errorf("UpdatesFromCache = %v, want %v", got, tc.fromCache)
			}
		})
	}
}
