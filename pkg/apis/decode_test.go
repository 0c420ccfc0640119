package apis

import (
	"testing"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
)

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content map[string]any
		into    any
		want    string // "" for no error
	}{
		{"a valid federated object", map[string]any{"spec": map[string]any{"placement": map[string]any{"topologies": []any{map[string]any{"name": "a"}}}}}, &typesv1beta2.FederatedObject{}, ""},
		{"a string for a list", map[string]any{"spec": map[string]any{"placement": map[string]any{"topologies": "a"}}}, &typesv1beta2.FederatedObject{}, "spec.placement.topologies must be a list, not a string"},
		{"a number for a string", map[string]any{"spec": map[string]any{"cluster": int64(1)}}, &cellv1alpha1.Cell{}, "spec.cluster must be a string, not a number"},
		{"a list for an object", map[string]any{"spec": []any{"x"}}, &cellv1alpha1.Cell{}, "spec must be an object, not a list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Decode(tc.content, tc.into)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("Decode = %q, want %q", got, tc.want)
			}
		})
	}
}
