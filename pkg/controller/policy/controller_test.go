package policy

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestChanged(t *testing.T) {
	base := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "cfg", "namespace": "shop", "resourceVersion": "1", "labels": map[string]any{"app": "web"}},
			"data":     map[string]any{"a": "b"},
			"status":   map[string]any{"x": "y"},
		}}
	}
	tests := []struct {
		name string
		edit func(u *unstructured.Unstructured)
		want bool
	}{
		{name: "resync", edit: func(*unstructured.Unstructured) {}, want: true},
		{name: "status only", edit: func(u *unstructured.Unstructured) {
			u.SetResourceVersion("2")
			u.Object["status"] = map[string]any{"x": "z"}
		}},
		{name: "managedFields only", edit: func(u *unstructured.Unstructured) {
			u.SetResourceVersion("2")
			u.Object["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{"manager": "m"}}
		}},
		{name: "data", edit: func(u *unstructured.Unstructured) {
			u.SetResourceVersion("2")
			u.Object["data"] = map[string]any{"a": "c"}
		}, want: true},
		{name: "labels", edit: func(u *unstructured.Unstructured) {
			u.SetResourceVersion("2")
			u.SetLabels(map[string]string{"app": "api"})
		}, want: true},
		{name: "deletion", edit: func(u *unstructured.Unstructured) {
			u.SetResourceVersion("2")
			u.Object["metadata"].(map[string]any)["deletionTimestamp"] = "2026-12-07T00:00:00Z"
		}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, cur := base(), base()
			tt.edit(cur)
			if got := changed(old, cur); got != tt.want {
				t.Errorf("changed = %v, want %v", got, tt.want)
			}
		})
	}
}
