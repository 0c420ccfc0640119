package placement

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/cellfed/cellfed/pkg/conversion"
)

func TestMaskClusters(t *testing.T) {
	obj := func(version, annotation, spec string) map[string]any {
		var s map[string]any
		if err := json.Unmarshal([]byte(spec), &s); err != nil {
			t.Fatal(err)
		}
		md := map[string]any{"name": "web", "namespace": "shop"}
		if annotation != "" {
			md["annotations"] = map[string]any{conversion.AnnotationV1beta2Spec: annotation}
		}
		return map[string]any{"apiVersion": "types.kubefed.io/" + version, "kind": "FederatedDeployment", "metadata": md, "spec": s}
	}
	tests := []struct {
		name string
		obj  map[string]any
		want []string // nil: no mask
	}{
		{"v1beta2 cells become per-cell clusters",
			obj("v1beta2", "", `{"placement":{"topologies":[{"name":"a"},{"name":"b"}]},"placementMask":{"topologies":[{"name":"a"}]}}`),
			[]string{"shop.a"}},
		{"v1beta2 clusters stay clusters",
			obj("v1beta2", "", `{"placement":{"topologyType":"cluster","topologies":[{"name":"m1"}]},"placementMask":{"topologies":[{"name":"m1"}]}}`),
			[]string{"m1"}},
		{"v1beta2 empty mask", obj("v1beta2", "", `{"placement":{"topologies":[{"name":"a"}]},"placementMask":{"topologies":[]}}`), []string{}},
		{"v1beta2 without a mask", obj("v1beta2", "", `{"placement":{"topologies":[{"name":"a"}]}}`), nil},
		{"v1beta1 with a stash that matches the placement",
			obj("v1beta1", `{"placement":{"topologyType":"cell","topologies":[{"name":"a"},{"name":"b"}]},"placementMask":{"topologies":[{"name":"b"}]}}`,
				`{"placement":{"clusters":[{"name":"shop.a"},{"name":"shop.b"}]}}`),
			[]string{"shop.b"}},
		{"v1beta1 with a stale stash",
			obj("v1beta1", `{"placement":{"topologyType":"cell","topologies":[{"name":"a"},{"name":"b"}]},"placementMask":{"topologies":[{"name":"b"}]}}`,
				`{"placement":{"clusters":[{"name":"shop.a"}]}}`),
			nil},
		{"v1beta1 with a malformed stash", obj("v1beta1", `{not json`, `{"placement":{"clusters":[{"name":"shop.a"}]}}`), nil},
		{"v1beta1 without a stash", obj("v1beta1", "", `{"placement":{"clusters":[{"name":"shop.a"}]}}`), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := MaskClusters(tc.obj)
			if ok != (tc.want != nil) || (ok && !reflect.DeepEqual(got, tc.want)) {
				t.Errorf("MaskClusters = %v, %v; want %v", got, ok, tc.want)
			}
		})
	}
}
