package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cellfed/cellfed/test/framework"
)

// canI asks the plane `kubectl auth can-i verb resource -n ns` as
// impersonated (e.g. --as=alice); "yes" or "no".
func canI(t *testing.T, k framework.Kubectl, as []string, verb, resource, ns string) string {
	t.Helper()
	args := append([]string{"auth", "can-i", verb, resource}, as...)
	if ns != "" {
		args = append(args, "-n", ns)
	}
	out, err := k.Run(context.Background(), "", args...)
	answer := strings.TrimSpace(out)
	if answer != "yes" && answer != "no" {
		t.Fatalf("kubectl %s: %q, %v", strings.Join(args, " "), out, err)
	}
	return answer
}

// canIUnserved is canI for a resource the plane does not serve (yet):
// kubectl auth can-i sends an unknown a.b.c without its group, so this
// creates the SelfSubjectAccessReview itself, as the impersonated user.
func canIUnserved(t *testing.T, k framework.Kubectl, as []string, verb, group, resource, ns string) string {
	t.Helper()
	review := fmt.Sprintf(`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"namespace":%q,"verb":%q,"group":%q,"resource":%q}}}`,
		ns, verb, group, resource)
	out := k.MustRun(t, review, append(as, "create", "--validate=false", "-f", "-", "-o", "jsonpath={.status.allowed}")...)
	if out == "true" {
		return "yes"
	}
	return "no"
}

// tenantConfigMap is a FederatedConfigMap in ns with a data value.
func tenantConfigMap(ns, name, value string) string {
	return `apiVersion: types.kubefed.io/v1beta2
kind: FederatedConfigMap
metadata: {name: ` + name + `, namespace: ` + ns + `}
spec:
  template: {data: {k: "` + value + `"}}
`
}

// TestTenantRoles starts a plane (no members, no controller) and checks
// the roles it ships with `kubectl --as` and `kubectl auth can-i`: an app
// team granted with `cellfedctl tenant grant` works with federated objects
// of its workspace and nothing else, a viewer reads, an ordinary
// RoleBinding to edit/view covers federated types through aggregation, a
// type enabled after the grant is covered, and an edited role is put back.
func TestTenantRoles(t *testing.T) {
	t.Parallel()
	plane := framework.StartPlane(t, framework.PlaneOptions{Args: []string{"--default-federated-types=configmaps"}})
	k := framework.Kubectl{Kubeconfig: plane.Kubeconfig}
	ctl := newCellfedctl(t, plane.Kubeconfig)
	alice := []string{"--as=alice"}
	fedNS := framework.KubeFedNamespace
	fedCM := "federatedconfigmaps.types.kubefed.io"
	// TemplateRevisions (written by rollout) are not served by this
	// plane's build yet; FederatedDeployments and FederatedServices are
	// not enabled when first asked about.
	unserved := func(as []string, verb, group, resource, ns string) string {
		return canIUnserved(t, k, as, verb, group, resource, ns)
	}

	t.Run("the plane ships the roles", func(t *testing.T) {
		out := k.MustRun(t, "", "get", "clusterroles", "-l", "cellfed.io/bootstrapping=true", "-o", "name")
		for _, r := range []string{"cellfed:platform-admin", "cellfed:app-team", "cellfed:viewer", "cellfed:federated-type-reader"} {
			if !strings.Contains(out, "clusterrole.rbac.authorization.k8s.io/"+r+"\n") {
				t.Errorf("ClusterRole %s missing: %s", r, out)
			}
		}
		// Kubernetes' default roles exist in the plane and aggregate ours.
		for _, r := range []string{"edit", "admin", "view"} {
			eventually(t, r+" aggregates the cellfed roles", func() (bool, string) {
				rules := k.MustRun(t, "", "get", "clusterrole", r, "-o", "jsonpath={.rules}")
				return strings.Contains(rules, "types.kubefed.io") && strings.Contains(rules, "templaterevisions"), rules
			})
		}
	})

	t.Run("tenant create", func(t *testing.T) {
		if out := ctl.ok(t, "tenant", "create", "shop", "--tenant=acme", "--workspace=prod"); out != "workspace shop (tenant acme, workspace prod) created\n" {
			t.Errorf("create printed %q", out)
		}
		if out := ctl.ok(t, "tenant", "create", "shop", "--tenant=acme", "--workspace=prod"); out != "workspace shop (tenant acme, workspace prod) (unchanged)\n" {
			t.Errorf("second create printed %q", out)
		}
		ctl.ok(t, "tenant", "create", "other", "--tenant=beta", "--workspace=dev")
		k.MustRun(t, "", "create", "namespace", "plain")
		// Names, resource versions and labels: what a write would change
		// (the AGE column of the default output changes by itself).
		namespaces := []string{"get", "namespaces", "-o", `jsonpath={range .items[*]}{.metadata.name} {.metadata.resourceVersion} {.metadata.labels}{"\n"}{end}`}
		before := k.MustRun(t, "", namespaces...)
		ctl.fails(t, `namespace shop belongs to tenant "acme", not "beta"; choose another namespace name`, "tenant", "create", "shop", "--tenant=beta", "--workspace=prod")
		ctl.fails(t, `namespace shop is workspace "prod" of tenant "acme", not "test"`, "tenant", "create", "shop", "--tenant=acme", "--workspace=test")
		ctl.fails(t, "namespace kube-federation-system is reserved for the plane", "tenant", "create", fedNS, "--tenant=acme", "--workspace=prod")
		ctl.fails(t, "--workspace is required", "tenant", "create", "blog", "--tenant=acme")
		// kubectl cannot do what `tenant create` refuses.
		for _, ns := range []string{"kube-system", fedNS, "default"} {
			out, err := k.Run(context.Background(), "", "label", "namespace", ns, "cellfed.io/tenant=acme")
			if err == nil || !strings.Contains(err.Error(), "is reserved for the plane") {
				t.Errorf("kubectl label namespace %s cellfed.io/tenant=acme: err=%v, output:\n%s", ns, err, out)
			}
		}
		if after := k.MustRun(t, "", namespaces...); after != before {
			t.Errorf("failed creates changed namespaces:\n%s\nthen\n%s", before, after)
		}
		// A namespace of no tenant is labelled.
		if out := ctl.ok(t, "tenant", "create", "plain", "--tenant=acme", "--workspace=staging"); !strings.Contains(out, "existing namespace labelled") {
			t.Errorf("labelling plain printed %q", out)
		}
	})

	t.Run("tenant grant", func(t *testing.T) {
		want := "user:alice granted app-team in shop (RoleBinding shop/cellfed:app-team:user:alice)\n"
		if out := ctl.ok(t, "tenant", "grant", "alice", "-n", "shop", "--role=app-team"); out != want {
			t.Errorf("grant printed %q, want %q", out, want)
		}
		if out := ctl.ok(t, "tenant", "grant", "user:alice", "-n", "shop", "--role=app-team"); out != strings.TrimSuffix(want, "\n")+" (unchanged)\n" {
			t.Errorf("second grant printed %q", out)
		}
		ctl.ok(t, "tenant", "grant", "group:auditors", "-n", "shop", "--role=viewer")
		before := k.MustRun(t, "", "get", "rolebindings", "-A", "-o", "name")
		ctl.fails(t, `unknown role "admin"; pass --role=app-team or --role=viewer`, "tenant", "grant", "bob", "-n", "shop", "--role=admin")
		ctl.fails(t, "is not serviceaccount:<namespace>:<name>", "tenant", "grant", "serviceaccount:deployer", "-n", "shop", "--role=viewer")
		ctl.fails(t, "namespace default is not a tenant workspace", "tenant", "grant", "bob", "-n", "default", "--role=viewer")
		ctl.fails(t, "namespace nowhere does not exist; create the workspace first", "tenant", "grant", "bob", "-n", "nowhere", "--role=viewer")
		if after := k.MustRun(t, "", "get", "rolebindings", "-A", "-o", "name"); after != before {
			t.Errorf("failed grants changed bindings:\n%s\nthen\n%s", before, after)
		}
	})

	t.Run("app team can-i", func(t *testing.T) {
		for _, c := range []struct{ verb, resource, ns, want string }{
			{"create", fedCM, "shop", "yes"},
			{"update", fedCM, "shop", "yes"},
			{"patch", fedCM, "shop", "yes"},
			{"delete", fedCM, "shop", "yes"},
			{"get", fedCM + "/status", "shop", "yes"},
			{"list", "cells.core.cellfed.io", "shop", "yes"},
			{"list", "propagatedversions.core.kubefed.io", "shop", "yes"},
			{"list", "federatedtypeconfigs.core.kubefed.io", fedNS, "yes"}, // rollout resolves kinds with them
			{"create", "cells.core.cellfed.io", "shop", "no"},
			{"delete", "cells.core.cellfed.io", "shop", "no"},
			// Secrets are a native kind the app team ships (and hold
			// the data of its FederatedSecrets' revisions): every verb
			// in its workspace, none in the federation namespace.
			{"get", "secrets", "shop", "yes"},
			{"create", "secrets", "shop", "yes"},
			{"list", "secrets", "shop", "yes"},
			{"watch", "secrets", "shop", "yes"},
			{"update", "secrets", "shop", "yes"},
			{"get", "secrets", fedNS, "no"},
			{"list", "secrets", fedNS, "no"},
			{"get", "kubefedclusters.core.kubefed.io", fedNS, "no"},
			{"create", "kubefedclusters.core.kubefed.io", fedNS, "no"},
			{"update", "federatedtypeconfigs.core.kubefed.io", fedNS, "no"},
			{"list", "configmaps", fedNS, "no"},
			{"create", fedCM, fedNS, "no"},
			{"create", fedCM, "other", "no"},
			{"get", fedCM, "other", "no"},
			{"list", "cells.core.cellfed.io", "other", "no"},
			{"create", "rolebindings", "shop", "no"},
		} {
			if got := canI(t, k, alice, c.verb, c.resource, c.ns); got != c.want {
				t.Errorf("alice: can-i %s %s -n %s = %s, want %s", c.verb, c.resource, c.ns, got, c.want)
			}
		}
		for _, c := range []struct{ verb, group, resource, ns, want string }{
			{"create", "types.kubefed.io", "federateddeployments", "shop", "yes"},
			{"create", "core.cellfed.io", "templaterevisions", "shop", "yes"},
			{"patch", "core.cellfed.io", "templaterevisions", "shop", "yes"},
			{"delete", "core.cellfed.io", "templaterevisions", "shop", "yes"},
			{"create", "core.cellfed.io", "templaterevisions", "other", "no"},
		} {
			if got := unserved(alice, c.verb, c.group, c.resource, c.ns); got != c.want {
				t.Errorf("alice: access review %s %s.%s -n %s = %s, want %s", c.verb, c.resource, c.group, c.ns, got, c.want)
			}
		}
		if got := canI(t, k, alice, "list", fedCM, "--all-namespaces"); got != "no" {
			t.Errorf("alice: can-i list %s --all-namespaces = %s, want no", fedCM, got)
		}
		viewer := []string{"--as=bob", "--as-group=auditors"}
		for _, c := range []struct{ verb, resource, want string }{
			{"get", fedCM, "yes"}, {"list", "cells.core.cellfed.io", "yes"},
			{"create", fedCM, "no"}, {"delete", fedCM, "no"}, {"get", "secrets", "no"},
		} {
			if got := canI(t, k, viewer, c.verb, c.resource, "shop"); got != c.want {
				t.Errorf("viewer: can-i %s %s -n shop = %s, want %s", c.verb, c.resource, got, c.want)
			}
		}
		if got := unserved(viewer, "list", "core.cellfed.io", "templaterevisions", "shop"); got != "yes" {
			t.Errorf("viewer: access review list templaterevisions -n shop = %s, want yes", got)
		}
		if got := unserved(viewer, "create", "core.cellfed.io", "templaterevisions", "shop"); got != "no" {
			t.Errorf("viewer: access review create templaterevisions -n shop = %s, want no", got)
		}
	})

	t.Run("app team writes federated objects in its workspace only", func(t *testing.T) {
		k.MustRun(t, tenantConfigMap("shop", "web", "1"), append(alice, "apply", "-f", "-")...)
		// What `cellfedctl rollout` writes on the object: rollout
		// annotations and a placement mask.
		k.MustRun(t, "", append(alice, "-n", "shop", "annotate", fedCM, "web", "rollout.cellfed.io/strategy=manual")...)
		k.MustRun(t, tenantConfigMap("shop", "web", "2"), append(alice, "apply", "-f", "-")...)
		if got := k.MustRun(t, "", append(alice, "-n", "shop", "get", fedCM, "web", "-o", "jsonpath={.spec.template.data.k} {.metadata.annotations.rollout\\.cellfed\\.io/strategy} {.metadata.labels.cellfed\\.io/tenant}")...); got != "2 manual acme" {
			t.Errorf("alice reads web as %q, want \"2 manual acme\"", got)
		}
		k.MustRun(t, "", append(alice, "-n", "shop", "get", "cells.core.cellfed.io")...)
		k.MustRun(t, "", append(alice, "-n", "shop", "delete", fedCM, "web")...)

		for _, c := range []struct {
			stdin string
			args  []string
		}{
			{tenantConfigMap("other", "web", "1"), []string{"apply", "-f", "-"}},
			{"", []string{"-n", "other", "get", fedCM}},
			{"", []string{"-n", fedNS, "get", "secrets"}},
			{"", []string{"-n", fedNS, "get", "kubefedclusters.core.kubefed.io"}},
			{"", []string{"-n", fedNS, "create", "configmap", "x"}},
			{`apiVersion: core.cellfed.io/v1alpha1
kind: Cell
metadata: {name: rz00a, namespace: shop}
spec: {cluster: member-1}
`, []string{"apply", "-f", "-"}},
		} {
			_, err := k.Run(context.Background(), c.stdin, append(alice, c.args...)...)
			if err == nil || !strings.Contains(err.Error(), "Forbidden") && !strings.Contains(err.Error(), "forbidden") {
				t.Errorf("alice: kubectl %s: %v, want Forbidden", strings.Join(c.args, " "), err)
			}
		}
	})

	t.Run("an ordinary RoleBinding to edit or view covers federated types", func(t *testing.T) {
		k.MustRun(t, "", "-n", "other", "create", "rolebinding", "carol-edit", "--clusterrole=edit", "--user=carol")
		k.MustRun(t, "", "-n", "other", "create", "rolebinding", "dave-view", "--clusterrole=view", "--user=dave")
		carol := []string{"--as=carol"}
		k.MustRun(t, tenantConfigMap("other", "api", "1"), append(carol, "apply", "-f", "-")...)
		k.MustRun(t, "", append(carol, "-n", "other", "delete", fedCM, "api")...)
		if got := unserved(carol, "create", "core.cellfed.io", "templaterevisions", "other"); got != "yes" {
			t.Errorf("carol (edit): access review create templaterevisions -n other = %s, want yes", got)
		}
		for _, c := range []struct{ who, verb, resource, want string }{
			{"carol", "create", "cells.core.cellfed.io", "no"},
			{"carol", "create", fedCM, "no"}, // in shop: not bound there
			{"dave", "list", fedCM, "yes"},
			{"dave", "create", fedCM, "no"},
		} {
			ns := "other"
			if c.who == "carol" && c.resource == fedCM {
				ns = "shop"
			}
			if got := canI(t, k, []string{"--as=" + c.who}, c.verb, c.resource, ns); got != c.want {
				t.Errorf("%s: can-i %s %s -n %s = %s, want %s", c.who, c.verb, c.resource, ns, got, c.want)
			}
		}
	})

	t.Run("a type enabled after the grant is covered", func(t *testing.T) {
		if got := unserved(alice, "create", "types.kubefed.io", "federatedservices", "shop"); got != "yes" {
			t.Errorf("alice: can-i create federatedservices before enable = %s", got)
		}
		ctl.ok(t, "enable", "services")
		k.MustRun(t, `apiVersion: types.kubefed.io/v1beta2
kind: FederatedService
metadata: {name: web, namespace: shop}
spec:
  template:
    spec:
      ports: [{port: 80}]
`, append(alice, "apply", "-f", "-")...)
		k.MustRun(t, "", append(alice, "-n", "shop", "delete", "federatedservices.types.kubefed.io", "web")...)
	})

	t.Run("tenant list", func(t *testing.T) {
		k.MustRun(t, `apiVersion: v1
kind: Secret
metadata: {name: member-token, namespace: kube-federation-system}
stringData: {token: unused}
---
apiVersion: core.kubefed.io/v1beta1
kind: KubeFedCluster
metadata: {name: member-1, namespace: kube-federation-system}
spec: {apiEndpoint: "https://127.0.0.1:1", secretRef: {name: member-token}}
---
apiVersion: core.kubefed.io/v1beta1
kind: KubeFedCluster
metadata: {name: member-2, namespace: kube-federation-system}
spec: {apiEndpoint: "https://127.0.0.1:2", secretRef: {name: member-token}}
`, "apply", "-f", "-")
		ctl.ok(t, "cell", "create", "rz10a", "--cluster=member-2", "-n", "shop")
		ctl.ok(t, "cell", "create", "rz00a", "--cluster=member-1", "-n", "shop")
		ctl.ok(t, "cell", "create", "rz01a", "--cluster=member-1", "-n", "shop")
		ctl.ok(t, "cell", "create", "rz00b", "--cluster=member-1", "-n", "other")
		want := `NAMESPACE   TENANT   WORKSPACE   CELLS               CLUSTERS
other       beta     dev         rz00b               member-1
plain       acme     staging     <none>              <none>
shop        acme     prod        rz00a,rz01a,rz10a   member-1,member-2
`
		if out := ctl.ok(t, "tenant", "list"); out != want {
			t.Errorf("tenant list:\n%s\nwant:\n%s", out, want)
		}
		if out := ctl.ok(t, "tenant", "list", "--tenant=beta"); !strings.HasPrefix(out, "NAMESPACE") || strings.Count(out, "\n") != 2 || !strings.Contains(out, "other ") {
			t.Errorf("tenant list --tenant=beta:\n%s", out)
		}
		// alice may read her cells, not list namespaces or other cells.
		if got := k.MustRun(t, "", append(alice, "-n", "shop", "get", "cells.core.cellfed.io", "-o", "name")...); strings.Count(got, "\n") != 3 {
			t.Errorf("alice sees cells %q", got)
		}
		// A release step as `cellfedctl rollout` writes it: alice places
		// an object on her cells, then narrows and widens its mask.
		k.MustRun(t, `apiVersion: types.kubefed.io/v1beta2
kind: FederatedConfigMap
metadata: {name: gray, namespace: shop}
spec:
  template: {data: {k: v}}
  placement: `+framework.CellPlacement("rz00a", "rz10a")+`
`, append(alice, "apply", "-f", "-")...)
		k.MustRun(t, "", append(alice, "-n", "shop", "patch", fedCM, "gray", "--type=merge",
			"-p", `{"metadata":{"annotations":{"rollout.cellfed.io/step":"1"}},"spec":{"placementMask":{"topologies":[{"name":"rz00a"}]}}}`)...)
		if got := k.MustRun(t, "", append(alice, "-n", "shop", "get", fedCM+"/gray", "-o", "jsonpath={.spec.placementMask.topologies[*].name}")...); got != "rz00a" {
			t.Errorf("mask after alice's patch = %q, want rz00a", got)
		}
		k.MustRun(t, "", append(alice, "-n", "shop", "patch", fedCM, "gray", "--type=json", "-p", `[{"op":"remove","path":"/spec/placementMask"}]`)...)
	})

	t.Run("app team runs cellfedctl rollout in its workspace", func(t *testing.T) {
		k.MustRun(t, `apiVersion: types.kubefed.io/v1beta2
kind: FederatedConfigMap
metadata: {name: roll, namespace: shop}
spec:
  placement: {topologies: [{name: rz00a}, {name: rz10a}]}
  template: {data: {k: "1"}}
`, append(alice, "apply", "-f", "-")...)
		ctl.ok(t, "--as=alice", "rollout", "start", "federatedconfigmap/roll", "-n", "shop", "--cells=rz00a")
		if got := k.MustRun(t, "", "-n", "shop", "get", fedCM, "roll", "-o", "jsonpath={.spec.placementMask.topologies[*].name}"); got != "rz00a" {
			t.Errorf("mask after alice's rollout start = %q, want rz00a", got)
		}
		ctl.ok(t, "--as=alice", "rollout", "pause", "federatedconfigmap/roll", "-n", "shop")
		ctl.ok(t, "--as=alice", "rollout", "resume", "federatedconfigmap/roll", "-n", "shop")
		ctl.ok(t, "--as=alice", "rollout", "finish", "federatedconfigmap/roll", "-n", "shop", "--force")
		if got := k.MustRun(t, "", "-n", "shop", "get", fedCM, "roll", "-o", "jsonpath={.spec.placementMask}"); got != "" {
			t.Errorf("mask after alice's rollout finish = %q, want none", got)
		}
		// Not in another workspace.
		k.MustRun(t, tenantConfigMap("other", "roll", "1"), "apply", "-f", "-")
		if _, _, code := ctl.run(t, "--as=alice", "rollout", "start", "federatedconfigmap/roll", "-n", "other", "--cells=rz00b"); code == 0 {
			t.Error("alice started a rollout in another workspace")
		}
	})

	t.Run("an edited or deleted role is put back", func(t *testing.T) {
		k.MustRun(t, "", "patch", "clusterrole", "cellfed:app-team", "--type=json", "-p", `[{"op":"remove","path":"/rules/0"}]`)
		k.MustRun(t, "", "delete", "clusterrole", "cellfed:viewer")
		k.MustRun(t, "", "-n", fedNS, "delete", "rolebinding", "cellfed:federated-type-reader")
		eventually(t, "roles put back", func() (bool, string) {
			a := canI(t, k, alice, "create", fedCM, "shop")
			v := canI(t, k, []string{"--as=bob", "--as-group=auditors"}, "get", fedCM, "shop")
			r := canI(t, k, alice, "list", "federatedtypeconfigs.core.kubefed.io", fedNS)
			return a == "yes" && v == "yes" && r == "yes", fmt.Sprintf("app-team create %s, viewer get %s, type reader %s", a, v, r)
		})
	})
}
