package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cellfed/cellfed/test/framework"
)

// TestTenantPreSelection runs the plane without cellfed's admission, so
// nothing stops a placement from naming another workspace's clusters:
// cellfed-controller itself never reads or writes them.
func TestTenantPreSelection(t *testing.T) {
	t.Parallel()
	f := startFederationWith(t, 2, framework.PlaneOptions{Args: []string{"--disable-admission-plugins=CellfedFederation"}})
	ctx := context.Background()
	fedCMV1 := schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "federatedconfigmaps"}
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
