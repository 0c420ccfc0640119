// Fixtures the benchmarks share: the resources they write and watch (each
// declared once), and the objects, cells and tenant workspaces they create.

package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	fedtypes "github.com/cellfed/cellfed/pkg/apis/types"
	"github.com/cellfed/cellfed/test/framework"
)

// objects is how many objects the plane benchmarks create.
const objects = 1000

// federatedDeployment is v1beta2 FederatedDeployment web-<i> with a
// realistic template, placed on two cells with an override.
func federatedDeployment(i int) *unstructured.Unstructured {
	name := fmt.Sprintf("web-%04d", i)
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta2",
		"kind":       "FederatedDeployment",
		"metadata":   map[string]any{"name": name, "labels": map[string]any{"app": name}},
		"spec": map[string]any{
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": name}},
				"spec": map[string]any{
					"replicas": int64(3),
					"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
					"template": map[string]any{
						"metadata": map[string]any{"labels": map[string]any{"app": name}},
						"spec": map[string]any{"containers": []any{map[string]any{
							"name": "web", "image": "registry.example.com/shop/web:1.27.3",
							"ports":     []any{map[string]any{"containerPort": int64(8080), "name": "http"}},
							"env":       []any{map[string]any{"name": "MODE", "value": "production"}, map[string]any{"name": "REGION", "value": "eu"}},
							"resources": map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}, "limits": map[string]any{"memory": "256Mi"}},
						}}},
					},
				},
			},
			"placement": map[string]any{"topologies": []any{map[string]any{"name": "rz00a"}, map[string]any{"name": "rz10a"}}},
			"overrides": []any{map[string]any{"topologyName": "rz10a", "clusterOverrides": []any{map[string]any{"path": "/spec/replicas", "value": int64(5)}}}},
		},
	}}
}

// cellName is the name of cell i: rz00, rz01, …
func cellName(i int) string { return fmt.Sprintf("rz%02d", i) }

// cellNames are the first n cells: rz00, rz01, …
func cellNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = cellName(i)
	}
	return names
}

// cellYAML is cell i of namespace ns on member-i, as kubectl input.
func cellYAML(ns string, i int) string {
	return fmt.Sprintf("---\napiVersion: core.cellfed.io/v1alpha1\nkind: Cell\nmetadata: {name: %s, namespace: %s}\nspec: {cluster: member-%d}\n", cellName(i), ns, i)
}

// tenantNamespace is a tenant workspace (workspace prod), as kubectl input.
func tenantNamespace(ns, tenant string) string {
	return "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ns + ", labels: {cellfed.io/tenant: " + tenant + ", cellfed.io/workspace: prod}}\n"
}

// placeNamespace places namespace ns's FederatedNamespace on the cells of
// every member (cell i on member i) and waits for the namespace in every
// member: KubeFed propagates a namespaced object only to clusters its
// namespace is placed on.
func placeNamespace(b *testing.B, k framework.Kubectl, members []*framework.Server, ns string) {
	k.MustRun(b, "apiVersion: types.kubefed.io/v1beta2\nkind: FederatedNamespace\nmetadata: {name: "+ns+", namespace: "+ns+"}\n"+
		"spec: {placement: "+framework.CellPlacement(cellNames(len(members))...)+", template: {}}\n", "apply", "-f", "-")
	for i, m := range members {
		c := m.Client(b)
		if err := framework.Poll(context.Background(), 100*time.Millisecond, 2*time.Minute, func(ctx context.Context) (bool, error) {
			_, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return err == nil, nil
		}); err != nil {
			b.Fatalf("namespace %s not in member-%d: %v", ns, i, err)
		}
	}
}

// forEach calls f(0) … f(n-1) on eight goroutines and waits for them.
func forEach(n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				f(i)
			}
		}()
	}
	wg.Wait()
}

// The resources the benchmarks write and watch.
var (
	configMaps       = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	deployments      = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	fedConfigMaps    = fedResource("federatedconfigmaps", "v1beta2")
	fedDeployments   = fedResource("federateddeployments", "v1beta2")
	fedDeploymentsV1 = fedResource("federateddeployments", "v1beta1")
)

// fedResource is the resource of a federated type (plural
// "federatedconfigmaps", ...) in version "v1beta1" (KubeFed's) or
// "v1beta2" (cellfed's).
func fedResource(plural, version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: fedtypes.GroupName, Version: version, Resource: plural}
}
