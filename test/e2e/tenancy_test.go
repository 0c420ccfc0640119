package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cellfed/cellfed/test/framework"
)

// TestTenantPreSelection runs the plane without cellfed's admission, so
// nothing stops a placement from naming another workspace's clusters:
// cellfed-controller itself never reads or writes them.
func TestTenantPreSelection(t *testing.T) {
	t.Parallel()
	f := startFederationWith(t, 2, framework.PlaneOptions{Args: []string{"--disable-admission-plugins=CellfedFederation"}})
	ctx := context.Background()
	cm := func(name, clusters string) string {
		return `apiVersion: types.kubefed.io/v1beta1
kind: FederatedConfigMap
metadata: {name: ` + name + `, namespace: shop}
spec:
  template: {data: {k: v}}
  placement: {clusters: [` + clusters + `]}
`
	}
	clusterStatus := func(name string) map[string]string {
		obj, err := f.dyn.Resource(fedCMV1).Namespace("shop").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return map[string]string{"error": err.Error()}
		}
		out := map[string]string{}
		list, _ := field(obj.Object, "status", "clusters").([]any)
		for _, e := range list {
			m := e.(map[string]any)
			out[fmt.Sprint(m["name"])] = fmt.Sprint(m["status"])
		}
		st, _ := obj.Object["status"].(map[string]any)
		cond := conditionOf(st, "Propagation")
		out["condition"] = fmt.Sprint(cond["status"], " ", cond["message"])
		return out
	}

	t.Run("another namespace's cell is not written and the status says why", func(t *testing.T) {
		// shop2.rz00a is tenant beta's cell on member-0; shop.rz10a is
		// shop's own cell on member-1.
		f.kubectl.MustRun(t, cm("trespass", "{name: shop2.rz00a}, {name: shop.rz10a}"), "apply", "-f", "-")
		eventually(t, "trespass propagated to its own cell only", func() (bool, string) {
			st := clusterStatus("trespass")
			return st["shop2.rz00a"] == "OutsideWorkspace" && st["shop.rz10a"] == "<nil>" &&
				f.memberObject(t, 1, configmaps, "shop", "trespass") != nil, fmt.Sprint(st)
		})
		if f.memberObject(t, 0, configmaps, "shop", "trespass") != nil {
			t.Fatal("a config map placed through tenant beta's cell was written to member-0")
		}
		if st := clusterStatus("trespass"); !strings.Contains(st["condition"], "another namespace's cell or a cluster dedicated to another tenant") {
			t.Errorf("Propagation condition %q does not explain shop2.rz00a", st["condition"])
		}
	})

	t.Run("a physical cluster dedicated to another tenant is not written", func(t *testing.T) {
		// Physical clusters need the namespace federated there (KubeFed's
		// rule); cells do not.
		f.kubectl.MustRun(t, `apiVersion: types.kubefed.io/v1beta1
kind: FederatedNamespace
metadata: {name: shop, namespace: shop}
spec:
  placement: {clusters: [{name: member-0}, {name: member-1}]}
`, "apply", "-f", "-")
		f.kubectl.MustRun(t, "", "-n", framework.KubeFedNamespace, "label", "kubefedclusters", "member-0", "cellfed.io/tenant=beta")
		f.kubectl.MustRun(t, cm("dedicated", "{name: member-0}, {name: member-1}"), "apply", "-f", "-")
		eventually(t, "dedicated refused on member-0", func() (bool, string) {
			st := clusterStatus("dedicated")
			return st["member-0"] == "OutsideWorkspace" && st["member-1"] == "<nil>", fmt.Sprint(st)
		})
		if f.memberObject(t, 0, configmaps, "shop", "dedicated") != nil {
			t.Fatal("a config map was written to a cluster dedicated to tenant beta")
		}
		// Dedicated to the object's own tenant, it is written.
		f.kubectl.MustRun(t, "", "-n", framework.KubeFedNamespace, "label", "--overwrite", "kubefedclusters", "member-0", "cellfed.io/tenant=acme")
		eventually(t, "dedicated written once member-0 is acme's", func() (bool, string) {
			st := clusterStatus("dedicated")
			return st["member-0"] == "<nil>" && f.memberObject(t, 0, configmaps, "shop", "dedicated") != nil, fmt.Sprint(st)
		})
	})

	t.Run("deletion does not wait for clusters outside the workspace", func(t *testing.T) {
		f.kubectl.MustRun(t, "", "-n", framework.KubeFedNamespace, "label", "--overwrite", "kubefedclusters", "member-0", "cellfed.io/tenant=beta")
		eventually(t, "member-0 reported outside the workspace", func() (bool, string) {
			st := clusterStatus("dedicated")
			return st["member-0"] == "OutsideWorkspace", fmt.Sprint(st)
		})
		f.kubectl.MustRun(t, "", "-n", "shop", "delete", "federatedconfigmaps.v1beta1.types.kubefed.io", "dedicated", "--timeout=60s")
		if f.memberObject(t, 1, configmaps, "shop", "dedicated") != nil {
			t.Error("the config map is still in member-1, a cluster of the workspace")
		}
	})
}

// testTenantIsolation runs in TestPropagation's federation (admission on):
// tenants acme (shop) and beta (shop2) share members; cells rz00a of both
// are on member-0.
func testTenantIsolation(t *testing.T, f *federation) {
	ctx := context.Background()
	// beta's object, same name as acme's below, on the shared member-0.
	f.kubectl.MustRun(t, configMap("shop2", "same", "owner: beta", []string{"rz00a"}, ""), "apply", "-f", "-")
	var theirs *unstructured.Unstructured
	eventually(t, "beta's object on member-0", func() (bool, string) {
		theirs = f.memberObject(t, 0, configmaps, "shop2", "same")
		return theirs != nil, ""
	})
	// acme's whole life cycle of a same-named object on the same member.
	f.kubectl.MustRun(t, configMap("shop", "same", "owner: acme", []string{"rz00a"}, ""), "apply", "-f", "-")
	f.waitStatus(t, fedCMV2, "shop", "same", "rz00a=OK", "True")
	f.kubectl.MustRun(t, configMap("shop", "same", "owner: acme2", []string{"rz00a"}, ""), "apply", "-f", "-")
	f.kubectl.MustRun(t, `apiVersion: types.kubefed.io/v1beta2
kind: FederatedConfigMap
metadata: {name: same, namespace: shop}
spec:
  placement: {topologySelector: {matchLabels: {zone: z1}}}
  template: {data: {owner: acme3}}
`, "apply", "-f", "-")
	f.waitStatus(t, fedCMV2, "shop", "same", "rz10a=OK", "True")
	f.kubectl.MustRun(t, configMap("shop", "same", "owner: acme4", []string{"rz01a"}, ""), "apply", "-f", "-") // back to member-0, through acme's other cell
	f.waitStatus(t, fedCMV2, "shop", "same", "rz01a=OK", "True")
	f.kubectl.MustRun(t, "", "-n", "shop", "annotate", "federatedconfigmaps.v1beta2.types.kubefed.io", "same", "kubefed.io/orphan=true")
	f.kubectl.MustRun(t, "", "-n", "shop", "delete", "federatedconfigmaps.v1beta2.types.kubefed.io", "same", "--timeout=60s")
	after := f.memberObject(t, 0, configmaps, "shop2", "same")
	if after == nil || after.GetUID() != theirs.GetUID() || after.GetResourceVersion() != theirs.GetResourceVersion() {
		t.Fatalf("beta's member object changed while acme worked on its namesake: before uid %s rv %s, after %v", theirs.GetUID(), theirs.GetResourceVersion(), after)
	}

	// A cluster dedicated to beta refuses acme's cell, and a cluster
	// acme's cells use cannot be dedicated to beta.
	f.kubectl.MustRun(t, `apiVersion: core.kubefed.io/v1beta1
kind: KubeFedCluster
metadata: {name: beta-only, namespace: kube-federation-system, labels: {cellfed.io/tenant: beta}}
spec: {apiEndpoint: "https://127.0.0.1:1", secretRef: {name: beta-only-token}}
`, "apply", "-f", "-")
	defer f.kubectl.MustRun(t, "", "-n", framework.KubeFedNamespace, "delete", "kubefedcluster", "beta-only")
	f.ctl.fails(t, `cluster "beta-only" is dedicated to tenant "beta"`, "cell", "create", "rz99a", "-n", "shop", "--cluster=beta-only")
	if _, err := f.kubectl.Run(ctx, "", "-n", framework.KubeFedNamespace, "label", "kubefedcluster", "member-2", "cellfed.io/tenant=beta"); err == nil ||
		!strings.Contains(err.Error(), "cannot be dedicated to tenant \"beta\"") || !strings.Contains(err.Error(), `shop/rz20a (tenant "acme")`) {
		t.Errorf("dedicating member-2 to beta: err = %v, want a refusal naming shop/rz20a", err)
	}
	// A workspace's tenancy labels cannot change under its objects.
	if _, err := f.kubectl.Run(ctx, "", "label", "--overwrite", "namespace", "shop", "cellfed.io/tenant=beta"); err == nil ||
		!strings.Contains(err.Error(), "would strand them") || !strings.Contains(err.Error(), "Cell/rz00a") {
		t.Errorf("relabelling namespace shop: err = %v, want a refusal naming its cells", err)
		if err == nil { // put it back for the other subtests
			f.kubectl.MustRun(t, "", "label", "--overwrite", "namespace", "shop", "cellfed.io/tenant=acme")
		}
	}
}
