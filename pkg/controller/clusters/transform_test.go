package clusters

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

func TestStripManagedFields(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   any
	}{
		{"object with managed fields", &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": "a", "resourceVersion": "7", "annotations": map[string]any{"x": "y"},
				"managedFields": []any{map[string]any{"manager": "cellfed-controller", "fieldsV1": map[string]any{"f:data": map[string]any{}}}}},
			"data": map[string]any{"k": "v"},
		}}},
		{"object without metadata", &unstructured.Unstructured{Object: map[string]any{"data": map[string]any{}}}},
		{"tombstone", "not an object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := StripManagedFields(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			u, ok := out.(*unstructured.Unstructured)
			if !ok {
				if out != tc.in {
					t.Fatalf("a non-object changed: %v", out)
				}
				return
			}
			if _, has, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "managedFields"); has {
				t.Error("managedFields kept")
			}
			if md, ok := u.Object["metadata"].(map[string]any); ok && (md["resourceVersion"] != "7" || u.GetAnnotations()["x"] != "y") {
				t.Errorf("other metadata lost: %v", md)
			}
		})
	}
}

func TestLean(t *testing.T) {
	meta := func() map[string]any {
		return map[string]any{
			"name": "a", "namespace": "ns", "resourceVersion": "7", "generation": int64(3),
			"labels":        map[string]any{"kubefed.io/managed": "true"},
			"annotations":   map[string]any{"cellfed.io/propagated-hash": "h", "big": "kept whole"},
			"finalizers":    []any{"f"},
			"managedFields": []any{map[string]any{"manager": "cellfed-controller"}},
		}
	}
	leanMeta := meta()
	delete(leanMeta, "managedFields")
	for _, tc := range []struct {
		name string
		spec []string
		in   map[string]any
		want map[string]any
	}{
		{
			name: "configmap: data and binaryData dropped",
			in: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(),
				"data": map[string]any{"k": "v"}, "binaryData": map[string]any{"b": "AA=="}, "immutable": true},
			want: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": leanMeta},
		},
		{
			name: "deployment: status and the named spec fields kept",
			spec: []string{"replicas", "paused"},
			in: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(),
				"spec":   map[string]any{"replicas": int64(2), "template": map[string]any{"spec": map[string]any{}}},
				"status": map[string]any{"readyReplicas": int64(2)}},
			want: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": leanMeta,
				"spec":   map[string]any{"replicas": int64(2)},
				"status": map[string]any{"readyReplicas": int64(2)}},
		},
		{
			name: "service: no spec field asked, spec dropped",
			in: map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": meta(),
				"spec": map[string]any{"clusterIP": "10.0.0.1"}, "status": map[string]any{}},
			want: map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": leanMeta, "status": map[string]any{}},
		},
		{
			name: "role: rules dropped",
			spec: []string{"replicas"},
			in: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta(),
				"rules": []any{map[string]any{"verbs": []any{"get"}}}},
			want: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": leanMeta},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Lean(tc.spec)(&unstructured.Unstructured{Object: tc.in})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := out.(metav1.Object); !ok {
				t.Fatalf("a cache entry is no metav1.Object: %T", out)
			}
			u, ok, err := Expand(out)
			if err != nil || !ok {
				t.Fatalf("expanding the entry: %v, %v", ok, err)
			}
			if got := u.Object; !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("lean object:\n got %v\nwant %v", got, tc.want)
			}
		})
	}
	t.Run("tombstone", func(t *testing.T) {
		tomb := cache.DeletedFinalStateUnknown{Key: "ns/a"}
		if out, err := Lean(nil)(tomb); err != nil || out != tomb {
			t.Errorf("a tombstone changed: %v, %v", out, err)
		}
	})
	t.Run("entry passes through", func(t *testing.T) {
		e, err := Lean(nil)(&unstructured.Unstructured{Object: map[string]any{"metadata": meta()}})
		if err != nil {
			t.Fatal(err)
		}
		if out, err := Lean(nil)(e); err != nil || out != e {
			t.Errorf("an entry changed: %v, %v", out, err)
		}
	})
}

// TestEntryRoundTrip checks that what the member cache keeps of an object
// comes back out of it whole, and what it drops stays dropped.
func TestEntryRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec []string
		in   string // the member object as JSON
		want string // what Expand gives back, as JSON
	}{
		{
			name: "every metadata field but managedFields",
			in: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","generateName":"we-","namespace":"shop",
				"selfLink":"/x","uid":"u-1","resourceVersion":"42","generation":7,"creationTimestamp":"2026-11-23T19:40:00Z",
				"deletionTimestamp":"2026-11-23T20:00:00Z","deletionGracePeriodSeconds":30,
				"labels":{"kubefed.io/managed":"true","app":"web"},"annotations":{"cellfed.io/propagated-hash":"h","a":"","b":"x"},
				"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"owner","uid":"u-0","controller":true,"blockOwnerDeletion":true}],
				"finalizers":["f1","f2"],"managedFields":[{"manager":"m"}]},
				"spec":{"replicas":3,"paused":false,"template":{"spec":{}}},
				"status":{"observedGeneration":7,"readyReplicas":3,"ratio":0.5,"conditions":[{"type":"Available","status":"True"}]}}`,
			spec: []string{"replicas", "paused"},
			want: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","generateName":"we-","namespace":"shop",
				"selfLink":"/x","uid":"u-1","resourceVersion":"42","generation":7,"creationTimestamp":"2026-11-23T19:40:00Z",
				"deletionTimestamp":"2026-11-23T20:00:00Z","deletionGracePeriodSeconds":30,
				"labels":{"kubefed.io/managed":"true","app":"web"},"annotations":{"cellfed.io/propagated-hash":"h","a":"","b":"x"},
				"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"owner","uid":"u-0","controller":true,"blockOwnerDeletion":true}],
				"finalizers":["f1","f2"]},
				"spec":{"replicas":3,"paused":false},
				"status":{"observedGeneration":7,"readyReplicas":3,"ratio":0.5,"conditions":[{"type":"Available","status":"True"}]}}`,
		},
		{
			name: "cluster-scoped, bare metadata, content dropped",
			in:   `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"},"spec":{"finalizers":["kubernetes"]}}`,
			want: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}}`,
		},
		{
			name: "empty status kept, no spec field asked",
			in:   `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s","namespace":"n"},"spec":{"clusterIP":"10.0.0.1"},"status":{}}`,
			spec: []string{"replicas"},
			want: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s","namespace":"n"},"status":{}}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, want := &unstructured.Unstructured{}, &unstructured.Unstructured{}
			if err := in.UnmarshalJSON([]byte(tc.in)); err != nil {
				t.Fatal(err)
			}
			if err := want.UnmarshalJSON([]byte(tc.want)); err != nil {
				t.Fatal(err)
			}
			e, err := Lean(tc.spec)(in.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			for i := range 2 { // a fresh object each time, unchanged by the last one's edits
				got, ok, err := Expand(e)
				if err != nil || !ok {
					t.Fatalf("expanding: %v, %v", ok, err)
				}
				if !equality.Semantic.DeepEqual(got.Object, want.Object) {
					t.Errorf("round trip %d:\n got %v\nwant %v", i, got.Object, want.Object)
				}
				got.SetLabels(map[string]string{"edited": "yes"})
				if err := unstructured.SetNestedField(got.Object, "edited", "status", "x"); err != nil {
					t.Fatal(err)
				}
			}
			// The metav1.Object view agrees with the expanded one.
			m, err := meta.Accessor(e.(metav1.ObjectMetaAccessor).GetObjectMeta())
			if err != nil {
				t.Fatal(err)
			}
			if m.GetName() != want.GetName() || m.GetNamespace() != want.GetNamespace() || m.GetResourceVersion() != want.GetResourceVersion() ||
				!equality.Semantic.DeepEqual(m.GetLabels(), want.GetLabels()) || !equality.Semantic.DeepEqual(m.GetAnnotations(), want.GetAnnotations()) {
				t.Errorf("metav1.Object view %+v differs from %v", m, want.Object["metadata"])
			}
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(cache.DeletedFinalStateUnknown{Key: "k", Obj: e}); err != nil || key != "k" {
				t.Errorf("tombstone key %q, %v", key, err)
			}
			if key, err := cache.MetaNamespaceKeyFunc(e); err != nil || key != cacheKey(want) {
				t.Errorf("key %q, %v; want %q", key, err, cacheKey(want))
			}
			if tomb, ok, err := Expand(cache.DeletedFinalStateUnknown{Key: "k", Obj: e}); err != nil || !ok || tomb.GetName() != want.GetName() {
				t.Errorf("tombstone expanded to %v, %v, %v", tomb, ok, err)
			}
		})
	}
}

func cacheKey(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetName()
	}
	return u.GetNamespace() + "/" + u.GetName()
}
