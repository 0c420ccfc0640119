package clusters

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
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
			if got := out.(*unstructured.Unstructured).Object; !equality.Semantic.DeepEqual(got, tc.want) {
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
}
