package propagation

import (
	"math"
	"strings"
	"testing"
	"time"

	typesv1b1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
	typesv1b2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
)

// A bad replicas path or replicas value (a FederatedTypeConfig or an
// object admitted before admission checked them) fails the divided
// object with a message naming the path and the fix; it never falls back
// to a guess (the controller used to divide 1 replica for a string, and
// wrap replicas past int32).
func TestDivideBadReplicas(t *testing.T) {
	spec := &typesv1b2.Spec{ReplicaDivision: &typesv1b2.ReplicaDivision{Mode: typesv1b2.DivisionDivide}}
	intents := []Intent{{Verb: Ensure, Member: "shop.a", Clusters: []string{"shop.a"}, Writer: "shop.a", Report: true}}
	tmpl := map[string]any{"spec": map[string]any{
		"replicas": int64(4),
		"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app"}}}},
		"label":    "x",
	}}
	withReplicas := func(v any) map[string]any {
		return map[string]any{"spec": map[string]any{"replicas": v}}
	}
	tests := []struct {
		name, path string
		tmpl       map[string]any
		want       []string
	}{
		{"a path with ..", "/spec/../metadata", tmpl, []string{"replicasPath", `".."`, "fix spec.replicasPath of the type's FederatedTypeConfig"}},
		{"a path through a list", "/spec/template/spec/containers/0/name", tmpl, []string{"replicasPath /spec/template/spec/containers/0/name does not lead to a field", "fix spec.replicasPath"}},
		{"a path to a string", "/spec/label", tmpl, []string{"/spec/label is a string, not an integer", "fix spec.replicasPath"}},
		{"negative replicas", "/spec/replicas", withReplicas(int64(-5)), []string{"/spec/replicas is -5", "must be >= 0"}},
		{"replicas past int32", "/spec/replicas", withReplicas(int64(math.MaxInt32) + 5), []string{"/spec/replicas is 2147483652", "at most"}},
		{"fractional replicas", "/spec/replicas", withReplicas(2.5), []string{"/spec/replicas is 2.5, not an integer"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _, _, err := divide("shop/web", spec, "shop", tc.tmpl, tc.path, typesv1b1.Status{}, intents, nil, nil, clockInput{Now: time.Now()})
			if err == nil {
				t.Fatalf("divided %v, want an error", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	// The same bad path leaves an object without a division alone.
	if got, _, _, err := divide("shop/web", nil, "shop", tmpl, "/spec/../metadata", typesv1b1.Status{}, intents, nil, nil, clockInput{Now: time.Now()}); err != nil || got != nil {
		t.Errorf("not divided: %v, %v; want nil, nil", got, err)
	}
}
