package cells

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

func TestLeanRecord(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   any
		want any
	}{
		{
			name: "record: cluster names and metadata kept, versions and managedFields dropped",
			in: &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "core.kubefed.io/v1alpha1", "kind": "PropagatedVersion",
				"metadata": map[string]any{"name": "configmap-a", "namespace": "ns", "resourceVersion": "5",
					"managedFields": []any{map[string]any{"manager": "cellfed-controller"}}},
				"status": map[string]any{"templateVersion": "t", "overrideVersion": "o", "clusterVersions": []any{
					map[string]any{"clusterName": "ns.rz01", "version": "rv:10"},
					map[string]any{"clusterName": "ns.rz02", "version": "rv:11"},
				}},
			}},
			want: &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "core.kubefed.io/v1alpha1", "kind": "PropagatedVersion",
				"metadata": map[string]any{"name": "configmap-a", "namespace": "ns", "resourceVersion": "5"},
				"status": map[string]any{"clusterVersions": []any{
					map[string]any{"clusterName": "ns.rz01"}, map[string]any{"clusterName": "ns.rz02"},
				}},
			}},
		},
		{
			name: "tombstone",
			in:   cache.DeletedFinalStateUnknown{Key: "ns/configmap-a"},
			want: cache.DeletedFinalStateUnknown{Key: "ns/configmap-a"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := leanRecord(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("leanRecord:\n got %v\nwant %v", got, tc.want)
			}
			if u, ok := got.(*unstructured.Unstructured); ok && len(recordClusters(u)) != 2 {
				t.Errorf("recordClusters of the lean record: %v", recordClusters(u))
			}
		})
	}
}
