package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cellfed/cellfed/test/framework"
)

// TestUpstreamKubeFed runs upstream KubeFed v0.10.0's controller-manager
// (`make kubefed`) against the plane and two real members: v1beta2 objects
// placed on cells, read by KubeFed as v1beta1 objects placed on per-cell
// KubeFedClusters, arrive in exactly the cells' members, and updates,
// per-cell overrides, placement changes and deletion propagate.
//
// KubeFed deletes an object from every ready KubeFedCluster that holds it
// but is not placed, and it sees a member through each KubeFedCluster
// pointing at it. So each member here is reachable through one KubeFedCluster
// only: the physical clusters, which admission needs while Cells are
// created, are deleted before KubeFed starts; the last subtest shows what a
// second one does.
func TestUpstreamKubeFed(t *testing.T) {
	t.Parallel()
	framework.KubeFedBinary(t) // fail before starting servers if it is not built
	plane, members := framework.StartPlaneWithMembers(t, framework.PlaneOptions{}, 2)
	k := framework.Kubectl{Kubeconfig: plane.Kubeconfig}
	m0 := framework.JoinMember(t, plane, members[0], "member-0")
	m1 := framework.JoinMember(t, plane, members[1], "member-1")
	k.MustRun(t, `
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {cellfed.io/tenant: acme, cellfed.io/workspace: prod}}
---
apiVersion: core.cellfed.io/v1alpha1
kind: Cell
metadata: {name: rz00a, namespace: shop}
spec: {cluster: member-0}
---
apiVersion: core.cellfed.io/v1alpha1
kind: Cell
metadata: {name: rz10a, namespace: shop}
spec: {cluster: member-1}
`, "apply", "-f", "-")
	cell0 := framework.JoinCell(t, plane, m0, "shop", "rz00a", nil)
	cell1 := framework.JoinCell(t, plane, m1, "shop", "rz10a", nil)
	k.MustRun(t, "", "-n", framework.KubeFedNamespace, "delete", "kubefedclusters", "member-0", "member-1")
	framework.StartKubeFed(t, plane, framework.KubeFedOptions{})
	framework.WaitKubeFedClustersReady(t, plane, cell0, cell1)

	c0, c1 := members[0].Client(t), members[1].Client(t)
	// KubeFed propagates a namespaced object only to clusters its
	// namespace's FederatedNamespace is placed on too (the intersection),
	// and retries a create that fails for want of the namespace only
	// after 10 s: place the namespace first.
	k.MustRun(t, `
apiVersion: types.kubefed.io/v1beta2
kind: FederatedNamespace
metadata: {name: shop, namespace: shop}
spec:
  placement: {topologies: [{name: rz00a}, {name: rz10a}]}
`, "apply", "-f", "-")
	waitTopologyStatus(t, k, "federatednamespaces.v1beta2.types.kubefed.io", "shop", []string{"rz00a", "rz10a"})

	t.Run("a v1beta2 deployment placed on two cells reaches both cells' members", func(t *testing.T) {
		k.MustRun(t, webDeployment, "apply", "-f", "-")
		for _, c := range []kubernetes.Interface{c0, c1} {
			waitDeployment(t, c, "nginx:1.27", 2)
		}
		waitTopologyStatus(t, k, fdV1beta2, "web", []string{"rz00a", "rz10a"})
		d, err := c0.AppsV1().Deployments("shop").Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil || d.Labels["kubefed.io/managed"] != "true" {
			t.Errorf("member-0's deployment is not labelled kubefed.io/managed=true: %v %v", d.Labels, err)
		}
	})

	t.Run("a v1beta1 config map placed on one per-cell cluster reaches only that member", func(t *testing.T) {
		k.MustRun(t, `
apiVersion: types.kubefed.io/v1beta1
kind: FederatedConfigMap
metadata: {name: settings, namespace: shop}
spec:
  template: {data: {color: blue}}
  placement: {clusters: [{name: shop.rz10a}]}
`, "apply", "-f", "-")
		waitFor(t, "config map settings in member-1", func(ctx context.Context) (bool, error) {
			cm, err := c1.CoreV1().ConfigMaps("shop").Get(ctx, "settings", metav1.GetOptions{})
			return err == nil && cm.Data["color"] == "blue", err
		})
		waitTopologyStatus(t, k, "federatedconfigmaps.v1beta2.types.kubefed.io", "settings", []string{"rz10a"})
		// KubeFed writes status after acting on every cluster: an object
		// created in the wrong member would be there by now.
		if _, err := c0.CoreV1().ConfigMaps("shop").Get(context.Background(), "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("config map placed on shop.rz10a only is in member-0 (err %v)", err)
		}
	})

	t.Run("a placement mask is cellfed-controller's extension: KubeFed ignores it", func(t *testing.T) {
		k.MustRun(t, `
apiVersion: types.kubefed.io/v1beta2
kind: FederatedConfigMap
metadata: {name: masked, namespace: shop}
spec:
  template: {data: {color: green}}
  placement: {topologies: [{name: rz00a}, {name: rz10a}]}
  placementMask: {topologies: [{name: rz00a}]}
`, "apply", "-f", "-")
		for i, c := range []kubernetes.Interface{c0, c1} {
			waitFor(t, fmt.Sprintf("config map masked in member-%d", i), func(ctx context.Context) (bool, error) {
				cm, err := c.CoreV1().ConfigMaps("shop").Get(ctx, "masked", metav1.GetOptions{})
				return err == nil && cm.Data["color"] == "green", err
			})
		}
		waitTopologyStatus(t, k, "federatedconfigmaps.v1beta2.types.kubefed.io", "masked", []string{"rz00a", "rz10a"})
	})

	t.Run("a template update and a per-cell override propagate", func(t *testing.T) {
		k.MustRun(t, "", "-n", "shop", "patch", fdV1beta2, "web", "--type=merge", "-p",
			`{"spec":{"template":{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.28"}]}}}},`+
				`"overrides":[{"topologyName":"rz10a","clusterOverrides":[{"path":"/spec/replicas","value":5}]}]}}`)
		waitDeployment(t, c0, "nginx:1.28", 2)
		waitDeployment(t, c1, "nginx:1.28", 5)
	})

	t.Run("dropping a cell from the placement removes the deployment from its member only", func(t *testing.T) {
		k.MustRun(t, "", "-n", "shop", "patch", fdV1beta2, "web", "--type=merge", "-p", `{"spec":{"placement":{"topologies":[{"name":"rz10a"}]}}}`)
		waitNoDeployment(t, c0)
		waitTopologyStatus(t, k, fdV1beta2, "web", []string{"rz10a"})
		d, err := c1.AppsV1().Deployments("shop").Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil || d.DeletionTimestamp != nil || *d.Spec.Replicas != 5 {
			t.Errorf("member-1's deployment changed when rz00a was dropped: %v", err)
		}
	})

	t.Run("deleting the federated deployment removes it from the members", func(t *testing.T) {
		k.MustRun(t, "", "-n", "shop", "delete", fdV1beta2, "web", "--wait=false")
		waitNoDeployment(t, c1)
	})

	t.Run("upstream limitation: a second KubeFedCluster for a member deletes what a cell placed there", func(t *testing.T) {
		framework.JoinMember(t, plane, members[0], "member-0")
		framework.WaitKubeFedClustersReady(t, plane, "member-0")
		// The FederatedNamespace is placed on shop.rz00a, not on member-0:
		// through member-0, KubeFed deletes the namespace shop.rz00a made.
		waitFor(t, "namespace shop in member-0 to be deleted through KubeFedCluster member-0", func(ctx context.Context) (bool, error) {
			ns, err := c0.CoreV1().Namespaces().Get(ctx, "shop", metav1.GetOptions{})
			return apierrors.IsNotFound(err) || err == nil && ns.DeletionTimestamp != nil, err
		})
		ns, err := c1.CoreV1().Namespaces().Get(context.Background(), "shop", metav1.GetOptions{})
		if err != nil || ns.DeletionTimestamp != nil {
			t.Errorf("namespace shop in member-1, reachable through one KubeFedCluster, was touched: %v", err)
		}
	})

	// KubeFed rechecks a deletion 10 s after deleting from the members
	// before it removes its finalizer; checked last so the wait overlaps
	// the subtest above.
	t.Run("KubeFed completes the deletion of the federated deployment", func(t *testing.T) {
		waitFor(t, "the federated deployment to be gone (KubeFed's finalizer removed)", func(ctx context.Context) (bool, error) {
			_, err := k.Run(ctx, "", "-n", "shop", "get", fdV1beta2, "web")
			return err != nil && strings.Contains(err.Error(), "NotFound"), nil
		})
	})
}

func waitNoDeployment(t *testing.T, c kubernetes.Interface) {
	t.Helper()
	waitFor(t, "deployment shop/web to be removed", func(ctx context.Context) (bool, error) {
		_, err := c.AppsV1().Deployments("shop").Get(ctx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}
