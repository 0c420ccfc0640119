package clusters

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
