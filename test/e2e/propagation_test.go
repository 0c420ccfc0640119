package e2e

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/test/framework"
)

// waitReplicas waits until each member i in want holds ns/name with
// want[i] replicas (-1: absent).
func (f *federation) waitReplicas(t *testing.T, ns, name string, want map[int]int64) {
	t.Helper()
	eventually(t, fmt.Sprintf("deployment %s/%s in members", ns, name), func() (bool, string) {
		var got []string
		ok := true
		for i, w := range want {
			obj := f.memberObject(t, i, deployments, ns, name)
			r := int64(-1)
			if obj != nil {
				r, _, _ = unstructured.NestedInt64(obj.Object, "spec", "replicas")
			}
			got = append(got, fmt.Sprintf("member-%d=%d", i, r))
			ok = ok && r == w
		}
		return ok, strings.Join(got, " ")
	})
}

// TestPropagation runs cellfed-controller against three real member
// kube-apiservers and two tenants: the whole life of federated objects.
func TestPropagation(t *testing.T) {
	t.Parallel()
	f := startFederation(t, 3)
	ctx := context.Background()
	// Controllers started in a subtest must outlive it: they belong to
	// the whole test.
	outer := t

	t.Run("cells get their clusters and readiness", func(t *testing.T) {
		eventually(t, "cells ready", func() (bool, string) {
			out, err := f.kubectl.Run(ctx, "", "get", "cells", "-A", "-o", `jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}={.status.kubeFedCluster}:{.status.conditions[?(@.type=="Ready")].status} {end}`)
			want := "shop/rz00a=shop.rz00a:True shop/rz01a=shop.rz01a:True shop/rz10a=shop.rz10a:True shop/rz20a=shop.rz20a:True shop2/rz00a=shop2.rz00a:True shop2/rz20a=shop2.rz20a:True "
			return err == nil && out == want, out
		})
		// Per-cell clusters carry the cell's topology, tenancy and labels,
		// so a selector over them works.
		out := f.kubectl.MustRun(t, "", "get", "kubefedclusters", "-n", "kube-federation-system",
			"-l", "cellfed.io/tenant=acme,zone=z1", "-o", "name")
		if strings.TrimSpace(out) != "kubefedcluster.core.kubefed.io/shop.rz10a" {
			t.Fatalf("clusters of tenant acme in zone z1: %q", out)
		}
	})

	t.Run("create, override, update, move, delete", func(t *testing.T) {
		f.kubectl.MustRun(t, deployment("shop", "web", "nginx:1.27", []string{"rz00a", "rz10a"}, `  overrides:
  - topologyName: rz10a
    clusterOverrides: [{path: /spec/replicas, value: 5}]
`), "apply", "-f", "-")
		f.waitReplicas(t, "shop", "web", map[int]int64{0: 2, 1: 5, 2: -1})
		f.waitStatus(t, fedDeployV2, "shop", "web", "rz00a=OK,rz10a=OK", "True")
		m0 := f.memberObject(t, 0, deployments, "shop", "web")
		if m0.GetLabels()["kubefed.io/managed"] != "true" || m0.GetLabels()["app"] != "web" {
			t.Fatalf("member labels %v: want the template's and kubefed.io/managed=true", m0.GetLabels())
		}

		// Update the template: every placed member follows.
		f.kubectl.MustRun(t, deployment("shop", "web", "nginx:1.28", []string{"rz00a", "rz10a"}, `  overrides:
  - topologyName: rz10a
    clusterOverrides: [{path: /spec/replicas, value: 5}]
`), "apply", "-f", "-")
		eventually(t, "image updated in both members", func() (bool, string) {
			a, b := f.memberObject(t, 0, deployments, "shop", "web"), f.memberObject(t, 1, deployments, "shop", "web")
			return image(a) == "nginx:1.28" && image(b) == "nginx:1.28", image(a) + " " + image(b)
		})

		// Move rz10a (member-1) to rz20a (member-2): gone from member-1,
		// created in member-2 without the old cell's override.
		f.kubectl.MustRun(t, deployment("shop", "web", "nginx:1.28", []string{"rz00a", "rz20a"}, ""), "apply", "-f", "-")
		f.waitReplicas(t, "shop", "web", map[int]int64{0: 2, 1: -1, 2: 2})
		f.waitStatus(t, fedDeployV2, "shop", "web", "rz00a=OK,rz20a=OK", "True")

		// Move rz00a to rz01a, another cell of the same member: the member
		// object stays as it is — no delete and re-create.
		before := f.memberObject(t, 0, deployments, "shop", "web")
		f.kubectl.MustRun(t, deployment("shop", "web", "nginx:1.28", []string{"rz01a", "rz20a"}, ""), "apply", "-f", "-")
		f.waitStatus(t, fedDeployV2, "shop", "web", "rz01a=OK,rz20a=OK", "True")
		after := f.memberObject(t, 0, deployments, "shop", "web")
		if after == nil || after.GetUID() != before.GetUID() || after.GetResourceVersion() != before.GetResourceVersion() {
			t.Fatalf("moving between cells of one member rewrote the member object (uid %v→%v, rv %s→%s)",
				before.GetUID(), after.GetUID(), before.GetResourceVersion(), after.GetResourceVersion())
		}

		f.kubectl.MustRun(t, "", "delete", "federateddeployments.v1beta2.types.kubefed.io", "-n", "shop", "web", "--wait=true", "--timeout=60s")
		f.waitReplicas(t, "shop", "web", map[int]int64{0: -1, 1: -1, 2: -1})
		if _, err := f.dyn.Resource(kubefed.PropagatedVersionsResource).Namespace("shop").Get(ctx, "deployment-web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("PropagatedVersion deployment-web after deletion: err=%v, want NotFound", err)
		}
	})

	t.Run("created objects carry the finalizer from admission while the controller runs", func(t *testing.T) {
		// The controller reports the type Running in its
		// FederatedTypeConfig; from then on the plane's admission sets
		// KubeFed's sync finalizer on create, so the controller does not
		// write a new object just to add it (a server-side dry run shows
		// what admission did, with no controller involved).
		cm := "apiVersion: types.kubefed.io/v1beta2\nkind: FederatedConfigMap\nmetadata: {name: fin, namespace: shop}\nspec: {placement: {topologies: [{name: rz00a}]}, template: {data: {a: b}}}\n"
		eventually(t, "a dry-run create to carry kubefed.io/sync-controller", func() (bool, string) {
			out, err := f.kubectl.Run(ctx, cm, "create", "--dry-run=server", "-o", "jsonpath={.metadata.finalizers}", "-f", "-")
			return err == nil && strings.Contains(out, "kubefed.io/sync-controller"), fmt.Sprintf("%q %v", out, err)
		})
		f.kubectl.MustRun(t, "", "-n", "kube-federation-system", "patch", "federatedtypeconfigs", "configmaps", "--type=merge", "-p", `{"spec":{"propagation":"Disabled"}}`)
		eventually(t, "creates of a type no longer propagated to go without the finalizer", func() (bool, string) {
			out, err := f.kubectl.Run(ctx, cm, "create", "--dry-run=server", "-o", "jsonpath={.metadata.finalizers}", "-f", "-")
			return err == nil && !strings.Contains(out, "kubefed.io/sync-controller"), fmt.Sprintf("%q %v", out, err)
		})
		f.kubectl.MustRun(t, "", "-n", "kube-federation-system", "patch", "federatedtypeconfigs", "configmaps", "--type=merge", "-p", `{"spec":{"propagation":"Enabled"}}`)
		eventually(t, "the controller to run configmaps again", func() (bool, string) {
			out, err := f.kubectl.Run(ctx, "", "-n", "kube-federation-system", "get", "federatedtypeconfigs", "configmaps", "-o", "jsonpath={.status.propagationController} {.status.observedGeneration} {.metadata.generation}")
			st := strings.Fields(out)
			return err == nil && len(st) == 3 && st[0] == "Running" && st[1] == st[2], out
		})
	})

	t.Run("tenants reach only their own cells", func(t *testing.T) {
		// Same name in two tenants, same cell name rz00a, both on member-0:
		// each lands in its own namespace.
		for _, ns := range []string{"shop", "shop2"} {
			f.kubectl.MustRun(t, configMap(ns, "settings", "tenant: "+ns, []string{"rz00a"}, ""), "apply", "-f", "-")
		}
		eventually(t, "both tenants' config maps in member-0", func() (bool, string) {
			a, b := f.memberObject(t, 0, configmaps, "shop", "settings"), f.memberObject(t, 0, configmaps, "shop2", "settings")
			if a == nil || b == nil {
				return false, "missing"
			}
			da, _, _ := unstructured.NestedString(a.Object, "data", "tenant")
			db, _, _ := unstructured.NestedString(b.Object, "data", "tenant")
			return da == "shop" && db == "shop2", da + " " + db
		})
		for i := 1; i < 3; i++ {
			if f.memberObject(t, i, configmaps, "shop2", "settings") != nil {
				t.Fatalf("shop2/settings leaked to member-%d", i)
			}
		}
	})

	t.Run("drift on a member is corrected, member additions kept", func(t *testing.T) {
		f.kubectl.MustRun(t, deployment("shop", "drift", "nginx:1.27", []string{"rz10a"}, ""), "apply", "-f", "-")
		f.waitReplicas(t, "shop", "drift", map[int]int64{1: 2})
		mk := framework.Kubectl{Kubeconfig: f.members[1].Kubeconfig}
		mk.MustRun(t, "", "scale", "deployment", "-n", "shop", "drift", "--replicas=9")
		mk.MustRun(t, "", "label", "deployment", "-n", "shop", "drift", "owner=member-team")
		f.waitReplicas(t, "shop", "drift", map[int]int64{1: 2})
		if got := f.memberObject(t, 1, deployments, "shop", "drift").GetLabels()["owner"]; got != "member-team" {
			t.Fatalf("member-added label owner=%q after drift correction, want member-team", got)
		}
	})

	t.Run("a status the controller did not write is corrected", func(t *testing.T) {
		// The member-apiserver runs no controllers, so drift's Deployment
		// is never ready: an app team patching the status to "ready" is
		// lying, and the controller writes what the member shows again.
		ready := func() string {
			return f.kubectl.MustRun(t, "", "get", "federateddeployments.v1beta2.types.kubefed.io", "-n", "shop", "drift",
				"-o", `jsonpath={.status.ready} {.status.conditions[?(@.type=="Ready")].status}`)
		}
		eventually(t, "drift reported not ready", func() (bool, string) { s := ready(); return s == "0/1 False", s })
		f.kubectl.MustRun(t, "", "patch", "federateddeployments.v1beta2.types.kubefed.io", "-n", "shop", "drift",
			"--subresource=status", "--type=merge", "-p", `{"status":{"ready":"1/1","conditions":[{"type":"Ready","status":"True","reason":"Lie"}]}}`)
		eventually(t, "the lie replaced by what the member shows", func() (bool, string) { s := ready(); return s == "0/1 False", s })
	})

	t.Run("a member's refusal is in the status", func(t *testing.T) {
		// Negative replicas from an override: member-0 refuses the create
		// and says why, where the app team reads the status.
		f.kubectl.MustRun(t, deployment("shop", "negative", "nginx:1.27", []string{"rz00a"}, `  overrides:
  - topologyName: rz00a
    clusterOverrides: [{path: /spec/replicas, value: -1}]
`), "apply", "-f", "-")
		eventually(t, "rz00a CreationFailed with the member's message", func() (bool, string) {
			_, _, tops, _ := f.fedStatus(t, fedDeployV2, "shop", "negative")
			a := tops["rz00a"]
			return a.Status == "CreationFailed" && strings.Contains(a.Message, "spec.replicas") && strings.Contains(a.Message, "Invalid value"), fmt.Sprintf("%+v", a)
		})
		f.kubectl.MustRun(t, "", "delete", "federateddeployments.v1beta2.types.kubefed.io", "-n", "shop", "negative", "--wait=true", "--timeout=60s")
	})

	t.Run("orphan keeps member objects and releases them", func(t *testing.T) {
		f.kubectl.MustRun(t, configMap("shop", "keep", "a: b", []string{"rz10a"}, `  annotations: {kubefed.io/orphan: "true"}`), "apply", "-f", "-")
		eventually(t, "keep in member-1", func() (bool, string) { return f.memberObject(t, 1, configmaps, "shop", "keep") != nil, "" })
		f.kubectl.MustRun(t, "", "delete", "federatedconfigmaps.v1beta2.types.kubefed.io", "-n", "shop", "keep", "--wait=true", "--timeout=60s")
		obj := f.memberObject(t, 1, configmaps, "shop", "keep")
		if obj == nil {
			t.Fatal("orphaned config map was deleted from member-1")
		}
		if v, ok := obj.GetLabels()["kubefed.io/managed"]; ok {
			t.Fatalf("orphaned config map still has kubefed.io/managed=%s", v)
		}
	})

	t.Run("existing unmanaged objects are adopted", func(t *testing.T) {
		mk := framework.Kubectl{Kubeconfig: f.members[2].Kubeconfig}
		mk.MustRun(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n", "apply", "-f", "-")
		mk.MustRun(t, "", "create", "configmap", "-n", "shop", "adopted", "--from-literal=old=1")
		f.kubectl.MustRun(t, configMap("shop", "adopted", "new: \"2\"", []string{"rz20a"}, ""), "apply", "-f", "-")
		eventually(t, "adopted in member-2", func() (bool, string) {
			obj := f.memberObject(t, 2, configmaps, "shop", "adopted")
			v, _, _ := unstructured.NestedString(obj.Object, "data", "new")
			return obj.GetLabels()["kubefed.io/managed"] == "true" && v == "2", fmt.Sprint(obj.Object["data"], obj.GetLabels())
		})
		f.waitStatus(t, fedCMV2, "shop", "adopted", "rz20a=OK", "True")
	})

	t.Run("a member down blocks nothing else and catches up", func(t *testing.T) {
		f.kubectl.MustRun(t, deployment("shop", "api", "api:1", []string{"rz00a", "rz10a"}, ""), "apply", "-f", "-")
		f.kubectl.MustRun(t, configMap("shop", "both", "a: b", []string{"rz00a", "rz10a"}, ""), "apply", "-f", "-")
		f.waitReplicas(t, "shop", "api", map[int]int64{0: 2, 1: 2})
		eventually(t, "both in member-1", func() (bool, string) { return f.memberObject(t, 1, configmaps, "shop", "both") != nil, "" })
		f.members[1].Signal(syscall.SIGKILL)
		_ = f.members[1].Wait(ctx)
		f.kubectl.MustRun(t, deployment("shop", "api", "api:2", []string{"rz00a", "rz10a"}, ""), "apply", "-f", "-")
		eventually(t, "member-0 updated while member-1 is down", func() (bool, string) {
			return image(f.memberObject(t, 0, deployments, "shop", "api")) == "api:2", ""
		})
		f.waitStatus(t, fedDeployV2, "shop", "api", "rz00a=OK,rz10a=ClusterNotReady", "False")
		// Deleting an object placed on the down member finishes on the
		// reachable member and waits, visibly, for the down one.
		f.kubectl.MustRun(t, "", "delete", "federatedconfigmaps.v1beta2.types.kubefed.io", "-n", "shop", "both", "--wait=false")
		eventually(t, "both removed from member-0", func() (bool, string) {
			return f.memberObject(t, 0, configmaps, "shop", "both") == nil, ""
		})
		f.waitStatus(t, fedCMV2, "shop", "both", "rz10a=WaitingForRemoval", "False")
		f.members[1].RestartAndWait(t)
		eventually(t, "member-1 caught up", func() (bool, string) {
			return image(f.memberObject(t, 1, deployments, "shop", "api")) == "api:2", ""
		})
		f.waitStatus(t, fedDeployV2, "shop", "api", "rz00a=OK,rz10a=OK", "True")
		eventually(t, "both deleted everywhere", func() (bool, string) {
			_, err := f.dyn.Resource(fedCMV2).Namespace("shop").Get(ctx, "both", metav1.GetOptions{})
			return apierrors.IsNotFound(err) && f.memberObject(t, 1, configmaps, "shop", "both") == nil, fmt.Sprint(err)
		})
	})

	t.Run("a member gone silent holds no other cell's status", func(t *testing.T) {
		// SIGSTOP keeps member-1's sockets open and unanswered: a link
		// gone silent (no RST, no FIN), as a NAT that lost its state.
		// The write to it outlives the reconcile; the status shows
		// rz00a's progress at once, and rz10a as not updated.
		f.waitStatus(t, fedDeployV2, "shop", "api", "rz00a=OK,rz10a=OK", "True")
		f.members[1].Signal(syscall.SIGSTOP)
		resumed := false
		resume := func() {
			if !resumed {
				resumed = true
				f.members[1].Signal(syscall.SIGCONT)
			}
		}
		defer resume()
		f.kubectl.MustRun(t, deployment("shop", "api", "api:3", []string{"rz00a", "rz10a"}, ""), "apply", "-f", "-")
		applied := time.Now()
		var gen int64
		var tops map[string]topology
		eventually(t, "rz00a updated and rz10a not, in the status", func() (bool, string) {
			gen, _, tops, _ = f.fedStatus(t, fedDeployV2, "shop", "api")
			a, b := tops["rz00a"], tops["rz10a"]
			return a.Status == "OK" && a.Generation == gen && b.Status != "OK" && b.Generation < gen, fmt.Sprintf("generation %d: %+v", gen, tops)
		})
		// Without the write going on in the background, the status
		// waits for the member's write to time out (10 s here).
		if d := time.Since(applied); d > 8*time.Second {
			t.Errorf("the status showed rz00a's update %s after the apply, want ≤ 8s (member-1's write held it)", d.Round(100*time.Millisecond))
		}
		t.Logf("status with rz00a at generation %d and rz10a %s %s after the apply", gen, tops["rz10a"].Status, time.Since(applied).Round(100*time.Millisecond))
		resume()
		f.waitReplicas(t, "shop", "api", map[int]int64{0: 2, 1: 2})
		eventually(t, "member-1 caught up", func() (bool, string) {
			return image(f.memberObject(t, 1, deployments, "shop", "api")) == "api:3", ""
		})
		f.waitStatus(t, fedDeployV2, "shop", "api", "rz00a=OK,rz10a=OK", "True")
	})

	t.Run("a placement mask releases to the masked cells only", func(t *testing.T) { testPlacementMask(t, f) })
	t.Run("disaster-recovery release with a member down", func(t *testing.T) { testDisasterRecoveryRelease(t, f) })
	t.Run("member status reflows for every type", func(t *testing.T) { testStatusReflow(t, f) })
	t.Run("a native object's status is aggregated over its cells", func(t *testing.T) { testNativeStatus(t, f) })
	t.Run("annotation and label rules", func(t *testing.T) { testAnnotationRules(t, f, outer) })
	t.Run("tenants never touch each other", func(t *testing.T) { testTenantIsolation(t, f) })

	t.Run("restarted controller rewrites nothing that is right", func(t *testing.T) {
		for i := range 20 {
			f.kubectl.MustRun(t, configMap("shop", fmt.Sprintf("bulk-%d", i), "i: \""+fmt.Sprint(i)+"\"", []string{"rz00a", "rz10a", "rz20a"}, ""), "apply", "-f", "-")
		}
		// Kill the controller mid-propagation, start another.
		f.controller.Signal(syscall.SIGKILL)
		_ = f.controller.Wait(ctx)
		before := make([]framework.Writes, 3)
		for i := range 3 {
			before[i] = countWrites(t, f.memberKube[i])
		}
		f.controller = framework.StartController(outer, f.plane)
		eventually(t, "bulk config maps everywhere", func() (bool, string) {
			for i := range 3 {
				list, err := f.memberKube[i].CoreV1().ConfigMaps("shop").List(ctx, metav1.ListOptions{LabelSelector: "kubefed.io/managed=true"})
				if err != nil {
					return false, err.Error()
				}
				n := 0
				for _, cm := range list.Items {
					if strings.HasPrefix(cm.Name, "bulk-") {
						n++
					}
				}
				if n != 20 {
					return false, fmt.Sprintf("member-%d has %d", i, n)
				}
			}
			return true, ""
		})
		waitAllPropagated(t, f, "shop", 20)
		for i := range 3 {
			w := countWrites(t, f.memberKube[i])
			created := w.Creates - before[i].Creates
			if w.Updates != before[i].Updates || created > 20 {
				t.Fatalf("member-%d: after restart %d creates (≤ 20 expected, one per missing object) and %d updates (0 expected)",
					i, created, w.Updates-before[i].Updates)
			}
		}
		// And a second restart with everything in place writes nothing.
		f.controller.Stop(10 * time.Second)
		for i := range 3 {
			before[i] = countWrites(t, f.memberKube[i])
		}
		f.controller = framework.StartController(outer, f.plane)
		waitAllPropagated(t, f, "shop", 20)
		for i := range 3 {
			if w := countWrites(t, f.memberKube[i]); w != before[i] {
				t.Fatalf("member-%d: a restart over converged objects wrote %+v (before %+v)", i, w, before[i])
			}
		}
	})

	t.Run("a killed replica restarted under its name leads at once", func(t *testing.T) {
		// With a random identity a restarted process waits for its own
		// dead Lease to expire (30 s here); under a stable name (the pod's,
		// in manifests/deploy) it takes the Lease back at once.
		args := []string{"--leader-elect-identity=controller-0", "--leader-elect-lease-duration=30s", "--leader-elect-renew-deadline=20s"}
		f.controller.Stop(10 * time.Second)
		f.controller = framework.StartController(outer, f.plane, args...)
		f.controller.Signal(syscall.SIGKILL)
		_ = f.controller.Wait(ctx)
		start := time.Now()
		f.controller = framework.StartStandbyController(outer, f.plane, args...)
		if err := f.controller.WaitReady(ctx, 28*time.Second); err != nil {
			t.Fatalf("restarted under its own name, the controller was not ready within 28 s (its Lease lasts 30 s: it did not take its own Lease back): %v", err)
		}
		t.Logf("ready %s after a kill -9 and restart, with 3 members", time.Since(start).Round(10*time.Millisecond))
		waitAllPropagated(t, f, "shop", 20)
	})

	t.Run("a second replica waits for the Lease", func(t *testing.T) {
		standby := framework.StartStandbyController(outer, f.plane)
		ok := false
		_ = framework.Poll(ctx, 200*time.Millisecond, 3*time.Second, func(ctx context.Context) (bool, error) {
			ok = standby.Ready(ctx)
			return ok, nil
		})
		if ok {
			t.Fatal("a second controller became ready while the first holds the Lease")
		}
		f.controller.Stop(10 * time.Second)
		if err := standby.WaitReady(ctx, 30*time.Second); err != nil {
			t.Fatalf("standby did not take over after the leader stopped: %v", err)
		}
		f.controller = standby
	})

	t.Run("with adoption off an existing object is reported, not touched", func(t *testing.T) {
		f.controller.Stop(10 * time.Second)
		f.controller = framework.StartController(outer, f.plane, "--adopt-existing=false")
		mk := framework.Kubectl{Kubeconfig: f.members[2].Kubeconfig}
		mk.MustRun(t, "", "create", "configmap", "-n", "shop", "theirs", "--from-literal=owner=member")
		f.kubectl.MustRun(t, configMap("shop", "theirs", "owner: federation", []string{"rz20a"}, ""), "apply", "-f", "-")
		f.waitStatus(t, fedCMV2, "shop", "theirs", "rz20a=AlreadyExists", "False")
		obj := f.memberObject(t, 2, configmaps, "shop", "theirs")
		if v, _, _ := unstructured.NestedString(obj.Object, "data", "owner"); v != "member" || obj.GetLabels()["kubefed.io/managed"] != "" {
			t.Fatalf("unadopted object changed: data.owner=%q labels=%v", v, obj.GetLabels())
		}
		// Deleting the federated object leaves the member's own object.
		f.kubectl.MustRun(t, "", "delete", "federatedconfigmaps.v1beta2.types.kubefed.io", "-n", "shop", "theirs", "--wait=true", "--timeout=60s")
		if f.memberObject(t, 2, configmaps, "shop", "theirs") == nil {
			t.Fatal("deleting the federated object deleted the member's unadopted object")
		}
	})
}

func countWrites(t *testing.T, c kubernetes.Interface) framework.Writes {
	t.Helper()
	w, err := framework.CountWrites(context.Background(), c, "configmaps")
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// waitAllPropagated waits until every bulk-* FederatedConfigMap reports
// Propagation True for the current generation.
func waitAllPropagated(t *testing.T, f *federation, ns string, n int) {
	t.Helper()
	eventually(t, "bulk objects propagated", func() (bool, string) {
		list, err := f.dyn.Resource(fedCMV2).Namespace(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		done, stuck := 0, ""
		for _, o := range list.Items {
			if !strings.HasPrefix(o.GetName(), "bulk-") {
				continue
			}
			og, _, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration")
			conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
			ok := false
			for _, c := range conds {
				if m := c.(map[string]any); m["type"] == "Propagation" && m["status"] == "True" && og == o.GetGeneration() {
					ok = true
				}
			}
			if ok {
				done++
			} else if stuck == "" {
				// The first one not done, with its status, says why.
				st, _, _ := unstructured.NestedFieldNoCopy(o.Object, "status")
				stuck = fmt.Sprintf("; %s (generation %d, resourceVersion %s) has status %v", o.GetName(), o.GetGeneration(), o.GetResourceVersion(), st)
			}
		}
		return done == n, fmt.Sprintf("%d of %d%s", done, n, stuck)
	})
}
