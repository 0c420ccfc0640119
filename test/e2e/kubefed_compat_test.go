package e2e

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/pkg/propagatedversion"
	"github.com/cellfed/cellfed/test/framework"
)

// kubefedHash is the form of KubeFed's template and override versions.
var kubefedHash = regexp.MustCompile(`^[0-9a-f]{32}$`)

// compatClusterStatus reads status.clusters of a v1beta1 object as
// "name=status" strings (sorted) and its Propagation condition.
func compatClusterStatus(dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, name string) ([]string, map[string]any, error) {
	var ri dynamic.ResourceInterface = dyn.Resource(gvr)
	if ns != "" {
		ri = dyn.Resource(gvr).Namespace(ns)
	}
	obj, err := ri.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	list, _, _ := unstructured.NestedSlice(obj.Object, "status", "clusters")
	var out []string
	for _, e := range list {
		m := e.(map[string]any)
		st, set := m["status"]
		switch {
		case !set:
			st = "OK" // KubeFed's OK: no status
		case st == "OK":
			st = "OK-spelled-out-unlike-KubeFed"
		}
		out = append(out, fmt.Sprintf("%v=%v", m["name"], st))
	}
	slices.Sort(out)
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m := c.(map[string]any); m["type"] == "Propagation" {
			if og, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration"); og != obj.GetGeneration() {
				return out, nil, nil // not yet for this generation
			}
			return out, m, nil
		}
	}
	return out, nil, nil
}

// waitClusterStatus waits until a v1beta1 object's status lists exactly
// want and its Propagation condition has the given status and reason
// (reason "" matches any).
func waitClusterStatus(t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, name string, want []string, cond, reason string) map[string]any {
	t.Helper()
	slices.Sort(want)
	var got map[string]any
	eventually(t, fmt.Sprintf("status of %s %s/%s", gvr.Resource, ns, name), func() (bool, string) {
		clusters, c, err := compatClusterStatus(dyn, gvr, ns, name)
		if err != nil {
			return false, err.Error()
		}
		got = c
		ok := slices.Equal(clusters, want) && c != nil && c["status"] == cond && (reason == "" || c["reason"] == reason)
		return ok, fmt.Sprintf("clusters %v, condition %v", clusters, c)
	})
	return got
}

// memberHas waits until member c holds the config map ns/name with data
// key=value (value "" waits for its absence).
func waitMemberConfigMap(t *testing.T, c kubernetes.Interface, who, ns, name, key, value string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("config map %s/%s in %s with %s=%q", ns, name, who, key, value), func(ctx context.Context) (bool, error) {
		cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if value == "" {
			return apierrors.IsNotFound(err), nil
		}
		if err != nil {
			return false, err
		}
		return cm.Data[key] == value, fmt.Errorf("has %v", cm.Data)
	})
}

// checkPropagatedVersion checks the PropagatedVersion of a federated
// config map is in KubeFed's format: md5 template and override versions
// and, per cluster, the member object's rv:<resourceVersion>.
func checkPropagatedVersion(t *testing.T, dyn dynamic.Interface, ns, name string, members map[string]kubernetes.Interface) {
	t.Helper()
	eventually(t, "PropagatedVersion configmap-"+name+" in KubeFed's format", func() (bool, string) {
		pv, err := dyn.Resource(kubefed.PropagatedVersionsResource).Namespace(ns).Get(context.Background(), "configmap-"+name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		tv, _, _ := unstructured.NestedString(pv.Object, "status", "templateVersion")
		ov, _, _ := unstructured.NestedString(pv.Object, "status", "overridesVersion")
		if !kubefedHash.MatchString(tv) || !kubefedHash.MatchString(ov) {
			return false, fmt.Sprintf("templateVersion %q overrideVersion %q are not KubeFed's md5 hashes", tv, ov)
		}
		cvs, _, _ := unstructured.NestedSlice(pv.Object, "status", "clusterVersions")
		got := map[string]string{}
		for _, cv := range cvs {
			m := cv.(map[string]any)
			got[fmt.Sprint(m["clusterName"])] = fmt.Sprint(m["version"])
		}
		want := map[string]string{}
		for cluster, c := range members {
			cm, err := c.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			want[cluster] = "rv:" + cm.ResourceVersion
		}
		return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprintf("clusterVersions %v, members hold %v", got, want)
	})
}

// TestKubeFedCompatibility shows cellfed-controller behaving as KubeFed
// defines it where KubeFed users notice: the "all clusters" selector,
// PropagatedVersion records, FederatedNamespace placement, and a cell
// selector that comes to pick two cells of one member.
func TestKubeFedCompatibility(t *testing.T) {
	t.Parallel()
	f := startFederation(t, 2)
	m0, m1 := f.memberKube[0], f.memberKube[1]

	t.Run("the all-clusters selector reaches every member once, never through cells", func(t *testing.T) {
		f.kubectl.MustRun(t, `
apiVersion: v1
kind: Namespace
metadata: {name: plain}
---
apiVersion: types.kubefed.io/v1beta1
kind: FederatedNamespace
metadata: {name: plain, namespace: plain}
spec:
  placement: {clusterSelector: {}}
---
apiVersion: types.kubefed.io/v1beta1
kind: FederatedConfigMap
metadata: {name: everywhere, namespace: plain}
spec:
  template: {data: {color: blue}}
  placement: {clusterSelector: {}}
`, "apply", "-f", "-")
		waitMemberConfigMap(t, m0, "member-0", "plain", "everywhere", "color", "blue")
		waitMemberConfigMap(t, m1, "member-1", "plain", "everywhere", "color", "blue")
		// member-0 hosts three cells; none of their clusters is selected.
		waitClusterStatus(t, f.dyn, fedCMV1, "plain", "everywhere", []string{"member-0=OK", "member-1=OK"}, "True", "")
		checkPropagatedVersion(t, f.dyn, "plain", "everywhere", map[string]kubernetes.Interface{"member-0": m0, "member-1": m1})
	})

	t.Run("a cluster-scoped type with the all-clusters selector", func(t *testing.T) {
		f.ctl.ok(t, "enable", "clusterroles.rbac.authorization.k8s.io")
		eventually(t, "FederatedClusterRole served", func() (bool, string) {
			_, err := f.kubectl.Run(context.Background(), `
apiVersion: types.kubefed.io/v1beta1
kind: FederatedClusterRole
metadata: {name: reader}
spec:
  template:
    rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]
  placement: {clusterSelector: {}}
`, "apply", "-f", "-")
			return err == nil, fmt.Sprint(err)
		})
		for i, c := range []kubernetes.Interface{m0, m1} {
			waitFor(t, fmt.Sprintf("clusterrole reader in member-%d", i), func(ctx context.Context) (bool, error) {
				_, err := c.RbacV1().ClusterRoles().Get(ctx, "reader", metav1.GetOptions{})
				return err == nil, err
			})
		}
		waitClusterStatus(t, f.dyn, fedClusterRoleV1, "", "reader", []string{"member-0=OK", "member-1=OK"}, "True", "")
	})

	t.Run("kubectl shows each record as KubeFed's PropagatedVersion, a view of the federated status", func(t *testing.T) {
		// The table kubectl prints, namespaced and cluster-scoped.
		out := f.kubectl.MustRun(t, "", "get", "propagatedversions", "-n", "plain")
		if !strings.Contains(out, "configmap-everywhere") || !strings.Contains(out, "AGE") {
			t.Errorf("kubectl get propagatedversions -n plain:\n%s\nwant a row configmap-everywhere", out)
		}
		out = f.kubectl.MustRun(t, "", "get", "clusterpropagatedversions", "clusterrole-reader")
		if !strings.Contains(out, "clusterrole-reader") {
			t.Errorf("kubectl get clusterpropagatedversions clusterrole-reader:\n%s", out)
		}
		// The record in KubeFed's format, owned by the federated object
		// as KubeFed's controller owns it, marked as a view.
		var pv unstructured.Unstructured
		if err := pv.UnmarshalJSON([]byte(f.kubectl.MustRun(t, "", "get", "propagatedversions", "-n", "plain", "configmap-everywhere", "-o", "json"))); err != nil {
			t.Fatal(err)
		}
		if got := pv.GetLabels()[propagatedversion.ViewLabel]; got != propagatedversion.ViewFromStatus {
			t.Errorf("label %s = %q, want %q", propagatedversion.ViewLabel, got, propagatedversion.ViewFromStatus)
		}
		owners := pv.GetOwnerReferences()
		if len(owners) != 1 || owners[0].APIVersion != "types.kubefed.io/v1beta1" || owners[0].Kind != "FederatedConfigMap" || owners[0].Name != "everywhere" || owners[0].UID == "" {
			t.Errorf("ownerReferences %+v, want the FederatedConfigMap everywhere in v1beta1", owners)
		}
		// It is the status record of the v1beta2 object, which v1beta1
		// readers (KubeFed) do not see.
		tv, _, _ := unstructured.NestedString(pv.Object, "status", "templateVersion")
		if got := f.kubectl.MustRun(t, "", "get", "federatedconfigmaps.v1beta2.types.kubefed.io", "-n", "plain", "everywhere", "-o", "jsonpath={.status.record.templateVersion}"); got != tv {
			t.Errorf("v1beta2 status.record.templateVersion %q, the PropagatedVersion's %q", got, tv)
		}
		if got := f.kubectl.MustRun(t, "", "get", "federatedconfigmaps.v1beta1.types.kubefed.io", "-n", "plain", "everywhere", "-o", "jsonpath={.status.record}"); got != "" {
			t.Errorf("v1beta1 shows status.record %s, want none", got)
		}
		// Nothing is stored for it: the record cost no write of its own.
		if got := f.kubectl.MustRun(t, "", "get", "propagatedversions", "-A", "-l", propagatedversion.StoredOnly, "-o", "name"); strings.TrimSpace(got) != "" {
			t.Errorf("stored PropagatedVersions: %s, want none", got)
		}
		if got := f.kubectl.MustRun(t, "", "get", "clusterpropagatedversions", "-l", propagatedversion.StoredOnly, "-o", "name"); strings.TrimSpace(got) != "" {
			t.Errorf("stored ClusterPropagatedVersions: %s, want none", got)
		}
	})

	t.Run("an update changes the template version and each member's recorded version", func(t *testing.T) {
		before, err := f.dyn.Resource(kubefed.PropagatedVersionsResource).Namespace("plain").Get(context.Background(), "configmap-everywhere", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		f.kubectl.MustRun(t, "", "-n", "plain", "patch", "federatedconfigmaps.v1beta1.types.kubefed.io", "everywhere", "--type=merge", "-p", `{"spec":{"template":{"data":{"color":"green"}}}}`)
		waitMemberConfigMap(t, m0, "member-0", "plain", "everywhere", "color", "green")
		waitMemberConfigMap(t, m1, "member-1", "plain", "everywhere", "color", "green")
		checkPropagatedVersion(t, f.dyn, "plain", "everywhere", map[string]kubernetes.Interface{"member-0": m0, "member-1": m1})
		after, err := f.dyn.Resource(kubefed.PropagatedVersionsResource).Namespace("plain").Get(context.Background(), "configmap-everywhere", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tvBefore, _, _ := unstructured.NestedString(before.Object, "status", "templateVersion")
		tvAfter, _, _ := unstructured.NestedString(after.Object, "status", "templateVersion")
		if tvBefore == tvAfter {
			t.Errorf("templateVersion %q did not change with the template", tvAfter)
		}
	})

	t.Run("a namespace that is not federated to a placed cluster", func(t *testing.T) {
		// nofed exists in member-0 already (not made by the federation).
		framework.Kubectl{Kubeconfig: f.members[0].Kubeconfig}.MustRun(t, "", "create", "namespace", "nofed")
		f.kubectl.MustRun(t, `
apiVersion: v1
kind: Namespace
metadata: {name: nofed}
---
apiVersion: types.kubefed.io/v1beta1
kind: FederatedConfigMap
metadata: {name: x, namespace: nofed}
spec:
  template: {data: {k: v}}
  placement: {clusters: [{name: member-0}]}
`, "apply", "-f", "-")
		cond := waitClusterStatus(t, f.dyn, fedCMV1, "nofed", "x", nil, "False", "NamespaceNotFederated")
		if !strings.Contains(fmt.Sprint(cond["message"]), "FederatedNamespace") {
			t.Errorf("the condition does not say how to fix it: %v", cond["message"])
		}
		if _, err := m0.CoreV1().ConfigMaps("nofed").Get(context.Background(), "x", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("an object of a namespace not federated to member-0 was written there (err %v)", err)
		}

		f.kubectl.MustRun(t, `
apiVersion: types.kubefed.io/v1beta1
kind: FederatedNamespace
metadata: {name: nofed, namespace: nofed}
spec:
  placement: {clusters: [{name: member-0}]}
`, "apply", "-f", "-")
		waitMemberConfigMap(t, m0, "member-0", "nofed", "x", "k", "v")
		waitClusterStatus(t, f.dyn, fedCMV1, "nofed", "x", []string{"member-0=OK"}, "True", "")

		// The namespace leaves member-0: the object there is released
		// (managed label off), not deleted, and its namespace stays
		// (the federation did not create it).
		f.kubectl.MustRun(t, "", "-n", "nofed", "patch", "federatednamespaces.v1beta1.types.kubefed.io", "nofed", "--type=merge", "-p", `{"spec":{"placement":{"clusters":[{"name":"member-1"}]}}}`)
		waitFor(t, "config map nofed/x in member-0 released", func(ctx context.Context) (bool, error) {
			cm, err := m0.CoreV1().ConfigMaps("nofed").Get(ctx, "x", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return cm.Labels["kubefed.io/managed"] == "", fmt.Errorf("labels %v", cm.Labels)
		})
		waitClusterStatus(t, f.dyn, fedCMV1, "nofed", "x", nil, "True", "")
		if _, err := m1.CoreV1().ConfigMaps("nofed").Get(context.Background(), "x", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("an object placed on member-0 only reached member-1 (err %v)", err)
		}
	})

	t.Run("a cell created later makes a selector pick two cells of one member: one is written, the other reported", func(t *testing.T) {
		f.ctl.ok(t, "cell", "create", "rz02a", "-n", "shop", "--cluster=member-0", "--label=tier=gold")
		f.kubectl.MustRun(t, `
apiVersion: types.kubefed.io/v1beta2
kind: FederatedConfigMap
metadata: {name: gold, namespace: shop}
spec:
  template: {data: {tier: gold}}
  placement: {topologySelector: {matchLabels: {tier: gold}}}
  overrides:
  - topologyName: rz03a
    clusterOverrides: [{path: /data/tier, value: from-rz03a}]
`, "apply", "-f", "-")
		f.waitStatus(t, fedCMV2, "shop", "gold", "rz02a=OK", "True")
		// Creating the cell is allowed, with a warning naming the conflict.
		_, errOut, code := f.ctl.run(t, "cell", "create", "rz03a", "-n", "shop", "--cluster=member-0", "--label=tier=gold")
		if code != 0 || !strings.Contains(errOut, "Warning:") || !strings.Contains(errOut, "FederatedConfigMap shop/gold") ||
			!strings.Contains(errOut, `"rz02a" and "rz03a"`) || !strings.Contains(errOut, "PlacementConflict") {
			t.Errorf("cell create rz03a: exit %d, stderr %q; want a warning naming the object and both cells", code, errOut)
		}
		f.waitStatus(t, fedCMV2, "shop", "gold", "rz02a=OK,rz03a=PlacementConflict", "False")
		_, cond, err := compatClusterStatus(f.dyn, fedCMV1, "shop", "gold")
		if err != nil {
			t.Fatal(err)
		}
		if msg := fmt.Sprint(cond["message"]); !strings.Contains(msg, "shop.rz03a") || !strings.Contains(msg, "shop.rz02a") {
			t.Errorf("the condition does not name the conflict: %q", msg)
		}
		cm, err := m0.CoreV1().ConfigMaps("shop").Get(context.Background(), "gold", metav1.GetOptions{})
		if err != nil || cm.Data["tier"] != "gold" {
			t.Errorf("member-0 should hold what rz02a (the first by name) is given, not rz03a's override: %v %v", cm.Data, err)
		}
	})
}

// TestKubeFedTakeover shows that the records are KubeFed's own: upstream
// KubeFed v0.10.0 taking over the objects cellfed-controller propagated
// writes nothing to the members, and neither does cellfed-controller
// taking them back. Each member is reached through one KubeFedCluster
// (KubeFed deletes through a member's second KubeFedCluster).
func TestKubeFedTakeover(t *testing.T) {
	t.Parallel()
	framework.KubeFedBinary(t)
	plane, members := framework.StartPlaneWithMembers(t, framework.PlaneOptions{}, 2)
	k := framework.Kubectl{Kubeconfig: plane.Kubeconfig}
	dyn := dynamic.NewForConfigOrDie(plane.RESTConfig(t))
	framework.JoinMember(t, plane, members[0], "member-0")
	framework.JoinMember(t, plane, members[1], "member-1")
	kubes := []kubernetes.Interface{members[0].Client(t), members[1].Client(t)}

	objects := `
apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: types.kubefed.io/v1beta1
kind: FederatedNamespace
metadata: {name: app, namespace: app}
spec:
  placement: {clusterSelector: {}}
`
	for i := range 3 {
		objects += fmt.Sprintf(`---
apiVersion: types.kubefed.io/v1beta1
kind: FederatedConfigMap
metadata: {name: cm-%d, namespace: app}
spec:
  template: {data: {k: "%d"}}
  placement: {clusters: [{name: member-0}, {name: member-1}]}
  overrides:
  - clusterName: member-1
    clusterOverrides: [{path: /data/k, value: "override-%d"}]
`, i, i, i)
	}
	objects += `---
apiVersion: types.kubefed.io/v1beta1
kind: FederatedConfigMap
metadata: {name: all, namespace: app}
spec:
  template: {data: {k: all}}
  placement: {clusterSelector: {}}
---
apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata: {name: web, namespace: app}
spec:
  template:
    spec:
      replicas: 2
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {containers: [{name: web, image: nginx:1.27}]}
  placement: {clusters: [{name: member-0}, {name: member-1}]}
`
	k.MustRun(t, objects, "apply", "-f", "-")
	converged := func(t *testing.T) {
		t.Helper()
		for _, name := range []string{"cm-0", "cm-1", "cm-2", "all"} {
			waitClusterStatus(t, dyn, fedCMV1, "app", name, []string{"member-0=OK", "member-1=OK"}, "True", "")
			checkPropagatedVersion(t, dyn, "app", name, map[string]kubernetes.Interface{"member-0": kubes[0], "member-1": kubes[1]})
		}
		waitClusterStatus(t, dyn, fedDeployV1, "app", "web", []string{"member-0=OK", "member-1=OK"}, "True", "")
	}
	writes := func(t *testing.T) [2][2]framework.Writes {
		t.Helper()
		var w [2][2]framework.Writes
		for i, c := range kubes {
			for j, r := range []string{"configmaps", "deployments"} {
				n, err := framework.CountWrites(context.Background(), c, r)
				if err != nil {
					t.Fatal(err)
				}
				w[i][j] = n
			}
		}
		return w
	}
	// barrier creates one more object of each type and waits until it
	// is in both members: a controller has then handled the objects
	// queued before it at start.
	barrier := func(t *testing.T, name string) {
		t.Helper()
		k.MustRun(t, fmt.Sprintf(`
apiVersion: types.kubefed.io/v1beta1
kind: FederatedConfigMap
metadata: {name: %[1]s, namespace: app}
spec:
  template: {data: {k: barrier}}
  placement: {clusters: [{name: member-0}, {name: member-1}]}
---
apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata: {name: %[1]s, namespace: app}
spec:
  template:
    spec:
      selector: {matchLabels: {app: b}}
      template:
        metadata: {labels: {app: b}}
        spec: {containers: [{name: b, image: busybox}]}
  placement: {clusters: [{name: member-0}, {name: member-1}]}
`, name), "apply", "-f", "-")
		for i, c := range kubes {
			waitMemberConfigMap(t, c, fmt.Sprintf("member-%d", i), "app", name, "k", "barrier")
			waitFor(t, "barrier deployment "+name, func(ctx context.Context) (bool, error) {
				_, err := c.AppsV1().Deployments("app").Get(ctx, name, metav1.GetOptions{})
				return err == nil, err
			})
		}
	}
	// After a takeover only the barrier was created: no update.
	sameWrites := func(t *testing.T, before, after [2][2]framework.Writes) {
		t.Helper()
		for i := range 2 {
			for j, r := range []string{"configmaps", "deployments"} {
				b, a := before[i][j], after[i][j]
				if a.Updates != b.Updates || a.Deletes != b.Deletes || a.Creates != b.Creates+1 {
					t.Errorf("member-%d %s: writes went from %+v to %+v; only the barrier's create was expected", i, r, b, a)
				}
			}
		}
	}

	ctrl := framework.StartController(t, plane)
	framework.WaitKubeFedClustersReady(t, plane, "member-0", "member-1")
	converged(t)
	ctrl.Stop(10 * time.Second)

	t.Run("upstream KubeFed takes over without writing to members", func(t *testing.T) {
		before := writes(t)
		kf := framework.StartKubeFed(t, plane, framework.KubeFedOptions{})
		barrier(t, "barrier-1")
		converged(t)
		sameWrites(t, before, writes(t))
		kf.Stop(10 * time.Second)
	})

	t.Run("cellfed-controller takes back over without writing to members", func(t *testing.T) {
		before := writes(t)
		ctrl := framework.StartController(t, plane)
		barrier(t, "barrier-2")
		converged(t)
		sameWrites(t, before, writes(t))
		ctrl.Stop(10 * time.Second)
	})
}
