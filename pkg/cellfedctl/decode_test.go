package cellfedctl

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cellfed/cellfed/pkg/rollout"
)

// TestMalformedObjects: an object that does not decode is reported as
// malformed, by field, with how to fix it, never with converter internals
// or a guess about versions.
func TestMalformedObjects(t *testing.T) {
	cell := func(spec any) unstructured.Unstructured {
		return unstructured.Unstructured{Object: map[string]any{"apiVersion": "core.cellfed.io/v1alpha1", "kind": "Cell",
			"metadata": map[string]any{"name": "rz00a", "namespace": "shop"}, "spec": spec}}
	}
	fed := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "types.kubefed.io/v1beta2", "kind": "FederatedDeployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop"}, "spec": map[string]any{"placement": map[string]any{"topologies": "rz00a"}}}}
	_, fedErr := rollout.Decode(fed)
	_, cellErr := decodeCells([]unstructured.Unstructured{cell(map[string]any{"cluster": int64(1)})})
	_, okErr := decodeCells([]unstructured.Unstructured{cell(map[string]any{"cluster": "m1"})})
	for _, tc := range []struct {
		name string
		err  error
		want string // "" for no error
	}{
		{"a valid cell", okErr, ""},
		{"a cell with a number for its cluster", cellErr, "cell shop/rz00a is malformed: spec.cluster must be a string, not a number; fix it with `kubectl edit cells.core.cellfed.io rz00a -n shop`"},
		{"a federated object with a string for its topologies", fedErr, "FederatedDeployment shop/web is malformed: spec.placement.topologies must be a list, not a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if tc.err != nil {
				got = tc.err.Error()
			}
			if got != tc.want {
				t.Errorf("error = %q, want %q", got, tc.want)
			}
			if strings.Contains(got, "newer") || strings.Contains(got, "cannot") {
				t.Errorf("error %q guesses or shows internals", got)
			}
		})
	}
}
