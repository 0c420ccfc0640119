package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	policyv1alpha1 "github.com/cellfed/cellfed/pkg/apis/policy/v1alpha1"
	policycontroller "github.com/cellfed/cellfed/pkg/controller/policy"
	"github.com/cellfed/cellfed/test/framework"
)

var policyConfigMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// events returns "reason: message" of the Events on a shop ConfigMap.
func policyEvents(t *testing.T, k kubernetes.Interface, name string) string {
	t.Helper()
	list, err := k.CoreV1().Events("shop").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",involvedObject.kind=ConfigMap"})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Reason+": "+e.Message)
	}
	return strings.Join(out, "\n")
}

// policyStatus returns a policy's status.placed, status.shadowed and its
// Matched and Shadowed conditions' statuses.
func policyStatus(t *testing.T, f *federation, name string) (placed, shadowed int64, matched, shadowedCond string) {
	t.Helper()
	obj, err := f.dyn.Resource(policyv1alpha1.PropagationPoliciesResource).Namespace("shop").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return -1, -1, err.Error(), ""
	}
	placed, _, _ = unstructured.NestedInt64(obj.Object, "status", "placed")
	shadowed, _, _ = unstructured.NestedInt64(obj.Object, "status", "shadowed")
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m := c.(map[string]any)
		switch m["type"] {
		case policyv1alpha1.ConditionMatched:
			matched, _ = m["status"].(string)
		case policyv1alpha1.ConditionShadowed:
			shadowedCond, _ = m["status"].(string)
		}
	}
	return placed, shadowed, matched, shadowedCond
}

// TestPropagationPolicy places native ConfigMaps of a workspace with
// PropagationPolicies on a real federation (cellfed-controller runs the
// policy controller by default): an unplaced object says so,
// the winning policy makes a FederatedConfigMap the members get, the
// shadowed one says so, a placement change moves the object, and
// deleting policies orphans (the default) or deletes the member objects,
// as each policy's deletionPolicy says.
func TestPropagationPolicy(t *testing.T) {
	t.Parallel()
	f := startFederation(t, 2)
	kube := f.plane.Client(t)

	f.kubectl.MustRun(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: shop, labels: {app: web}}
data: {color: blue}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: scratch, namespace: shop}
data: {a: b}
`, "apply", "-f", "-")

	t.Run("an object no policy places says so", func(t *testing.T) {
		eventually(t, "the NoPropagationPolicy event", func() (bool, string) {
			ev := policyEvents(t, kube, "settings")
			return strings.Contains(ev, policycontroller.ReasonNoPolicy+": no PropagationPolicy"), ev
		})
	})

	f.kubectl.MustRun(t, `
apiVersion: policy.cellfed.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: shop}
spec:
  resourceSelectors:
  - apiVersion: v1
    kind: ConfigMap
    labelSelector: {matchLabels: {app: web}}
  placement: {topologies: [{name: rz00a}]}
---
apiVersion: policy.cellfed.io/v1alpha1
kind: PropagationPolicy
metadata: {name: fallback, namespace: shop}
spec:
  priority: -1
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: settings}]
  placement: {topologies: [{name: rz10a}]}
---
apiVersion: policy.cellfed.io/v1alpha1
kind: PropagationPolicy
metadata: {name: scratch, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: scratch}]
  placement: {topologies: [{name: rz10a}]}
  deletionPolicy: Delete
---
apiVersion: policy.cellfed.io/v1alpha1
kind: PropagationPolicy
metadata: {name: nothing, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: absent}]
  placement: {topologies: [{name: rz00a}]}
`, "apply", "-f", "-")

	t.Run("the winner places the object on its cells", func(t *testing.T) {
		eventually(t, "settings on member-0", func() (bool, string) {
			cm := f.memberObject(t, 0, policyConfigMaps, "shop", "settings")
			if cm == nil {
				return false, "absent"
			}
			v, _, _ := unstructured.NestedString(cm.Object, "data", "color")
			return v == "blue", "color=" + v
		})
		fed, err := f.dyn.Resource(fedCMV2).Namespace("shop").Get(context.Background(), "settings", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if fed.GetLabels()[policyv1alpha1.LabelPropagationPolicy] != "web" || len(fed.GetOwnerReferences()) != 1 || fed.GetOwnerReferences()[0].Kind != "ConfigMap" {
			t.Errorf("FederatedConfigMap settings: labels %v owners %v", fed.GetLabels(), fed.GetOwnerReferences())
		}
		native, err := f.dyn.Resource(policyConfigMaps).Namespace("shop").Get(context.Background(), "settings", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := native.GetAnnotations()[policyv1alpha1.AnnotationPlacedByPolicy]; got != "PropagationPolicy/shop/web" {
			t.Errorf("native %s = %q", policyv1alpha1.AnnotationPlacedByPolicy, got)
		}
		if f.memberObject(t, 1, policyConfigMaps, "shop", "settings") != nil {
			t.Error("member-1 holds settings: the shadowed policy placed it")
		}
	})

	t.Run("the policies' status", func(t *testing.T) {
		eventually(t, "status of web, fallback and nothing", func() (bool, string) {
			p1, s1, m1, c1 := policyStatus(t, f, "web")
			p2, s2, m2, c2 := policyStatus(t, f, "fallback")
			p3, s3, m3, c3 := policyStatus(t, f, "nothing")
			ok := p1 == 1 && s1 == 0 && m1 == "True" && c1 == "False" &&
				p2 == 0 && s2 == 1 && m2 == "True" && c2 == "True" &&
				p3 == 0 && s3 == 0 && m3 == "False" && c3 == "False"
			return ok, strings.Join([]string{
				"web", strconv.FormatInt(p1, 10), strconv.FormatInt(s1, 10), m1, c1, "fallback", strconv.FormatInt(p2, 10), strconv.FormatInt(s2, 10), m2, c2, "nothing", strconv.FormatInt(p3, 10), strconv.FormatInt(s3, 10), m3, c3}, " ")
		})
		out := f.kubectl.MustRun(t, "", "-n", "shop", "get", "propagationpolicy", "fallback", "-o", "jsonpath={.status.shadowedObjects[0].placedBy} {.status.shadowedObjects[0].reason}")
		if out != "PropagationPolicy/shop/web priority 0 > -1" {
			t.Errorf("fallback's shadowedObjects[0]: %q", out)
		}
	})

	t.Run("a placement change moves the object", func(t *testing.T) {
		f.kubectl.MustRun(t, "", "-n", "shop", "patch", "propagationpolicy", "web", "--type=merge", "-p", `{"spec":{"placement":{"topologies":[{"name":"rz10a"}]}}}`)
		eventually(t, "settings on member-1 only", func() (bool, string) {
			on0, on1 := f.memberObject(t, 0, policyConfigMaps, "shop", "settings") != nil, f.memberObject(t, 1, policyConfigMaps, "shop", "settings") != nil
			return !on0 && on1, "member-0 " + policyHas(on0) + ", member-1 " + policyHas(on1)
		})
	})

	t.Run("a change of the native object reaches the members", func(t *testing.T) {
		f.kubectl.MustRun(t, "", "-n", "shop", "patch", "configmap", "settings", "--type=merge", "-p", `{"data":{"color":"green"}}`)
		eventually(t, "green on member-1", func() (bool, string) {
			cm := f.memberObject(t, 1, policyConfigMaps, "shop", "settings")
			if cm == nil {
				return false, "absent"
			}
			v, _, _ := unstructured.NestedString(cm.Object, "data", "color")
			return v == "green", "color=" + v
		})
	})

	t.Run("the federated object refuses hand edits of the policy's fields", func(t *testing.T) {
		ctx := context.Background()
		want := "edit PropagationPolicy shop/web or ConfigMap shop/settings instead"
		for _, p := range []struct{ field, patch string }{
			{"spec.placement", `{"spec":{"placement":{"topologies":[{"name":"rz00a"}]}}}`},
			{"spec.template", `{"spec":{"template":{"data":{"color":"red"}}}}`},
		} {
			_, err := f.kubectl.Run(ctx, "", "-n", "shop", "patch", "federatedconfigmap", "settings", "--type=merge", "-p", p.patch)
			if msg := policyErr(err); err == nil || !strings.Contains(msg, "Forbidden") || !strings.Contains(msg, p.field) || !strings.Contains(msg, want) {
				t.Errorf("kubectl patch of %s: %s; want it refused with %q", p.field, msg, want)
			}
		}
		editor := framework.Kubectl{Kubeconfig: f.plane.Kubeconfig, Env: []string{"KUBE_EDITOR=sed -i s/green/red/", "EDITOR=sed -i s/green/red/"}}
		_, err := editor.Run(ctx, "", "-n", "shop", "edit", "federatedconfigmap", "settings")
		if msg := policyErr(err); err == nil || !strings.Contains(msg, "spec.template") || !strings.Contains(msg, want) {
			t.Errorf("kubectl edit of the template: %s; want it refused with %q", msg, want)
		}
		// What is not the policy's stays open: labels, and the mask a
		// rollout writes.
		f.kubectl.MustRun(t, "", "-n", "shop", "label", "federatedconfigmap", "settings", "team=web")
		f.kubectl.MustRun(t, "", "-n", "shop", "patch", "federatedconfigmap", "settings", "--type=merge", "-p", `{"spec":{"placementMask":{"topologies":[{"name":"rz10a"}]}}}`)
		fed, err := f.dyn.Resource(fedCMV2).Namespace("shop").Get(ctx, "settings", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v, _, _ := unstructured.NestedString(fed.Object, "spec", "template", "data", "color"); v != "green" {
			t.Errorf("template color = %q after the refused edits, want green", v)
		}
	})

	t.Run("cellfedctl names the native object", func(t *testing.T) {
		out := f.ctl.ok(t, "status", "configmap/settings", "-n", "shop")
		if !strings.Contains(out, "rz10a") {
			t.Errorf("cellfedctl status configmap/settings: no row for rz10a:\n%s", out)
		}
		f.ctl.fails(t, "roll back ConfigMap shop/settings instead", "rollout", "undo", "configmap/settings", "-n", "shop")
		f.kubectl.MustRun(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"loose","namespace":"shop"},"data":{"a":"b"}}`, "apply", "-f", "-")
		f.ctl.fails(t, "ConfigMap shop/loose is placed by no propagation policy", "rollout", "status", "configmap/loose", "-n", "shop")
	})

	t.Run("deleting the winner hands the object to the shadowed policy", func(t *testing.T) {
		// web and fallback both place settings on rz10a now: deleting web
		// hands it to fallback, and member-1's copy is never removed (the
		// same object, by its UID, from before to after).
		ctx := context.Background()
		before := f.memberObject(t, 1, policyConfigMaps, "shop", "settings")
		if before == nil {
			t.Fatal("member-1 holds no settings before the handover")
		}
		f.kubectl.MustRun(t, "", "-n", "shop", "delete", "propagationpolicy", "web", "--wait=false")
		eventually(t, "settings placed by fallback", func() (bool, string) {
			if cm := f.memberObject(t, 1, policyConfigMaps, "shop", "settings"); cm == nil || cm.GetUID() != before.GetUID() {
				return false, "member-1's settings was removed or recreated during the handover"
			}
			native, err := f.dyn.Resource(policyConfigMaps).Namespace("shop").Get(ctx, "settings", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			fed, err := f.dyn.Resource(fedCMV2).Namespace("shop").Get(ctx, "settings", metav1.GetOptions{})
			if err != nil {
				return false, "FederatedConfigMap settings: " + err.Error()
			}
			by := native.GetAnnotations()[policyv1alpha1.AnnotationPlacedByPolicy]
			label := fed.GetLabels()[policyv1alpha1.LabelPropagationPolicy]
			return by == "PropagationPolicy/shop/fallback" && label == "fallback", "placed by " + by + ", federated object's policy label " + label
		})
		after := f.memberObject(t, 1, policyConfigMaps, "shop", "settings")
		if after == nil || after.GetUID() != before.GetUID() {
			t.Fatalf("member-1's settings was replaced by the handover (uid %s before)", before.GetUID())
		}
		if v, _, _ := unstructured.NestedString(after.Object, "data", "color"); v != "green" {
			t.Errorf("member-1's settings color = %q after the handover, want green", v)
		}
	})

	t.Run("deleting policies orphans or deletes as each says", func(t *testing.T) {
		eventually(t, "scratch on member-1", func() (bool, string) {
			return f.memberObject(t, 1, policyConfigMaps, "shop", "scratch") != nil, "absent"
		})
		// web is gone already: deleting fallback leaves settings to no
		// policy.
		f.kubectl.MustRun(t, "", "-n", "shop", "delete", "propagationpolicy", "fallback", "scratch", "--wait=false")
		for _, name := range []string{"settings", "scratch"} {
			eventually(t, "FederatedConfigMap "+name+" gone", func() (bool, string) {
				_, err := f.dyn.Resource(fedCMV2).Namespace("shop").Get(context.Background(), name, metav1.GetOptions{})
				return apierrors.IsNotFound(err), "err=" + policyErr(err)
			})
		}
		eventually(t, "the three policies gone (finalizers removed)", func() (bool, string) {
			out, _ := f.kubectl.Run(context.Background(), "", "-n", "shop", "get", "propagationpolicies", "-o", "name")
			return !strings.Contains(out, "/web") && !strings.Contains(out, "/fallback") && !strings.Contains(out, "/scratch"), out
		})
		eventually(t, "scratch (deletionPolicy Delete) removed from member-1", func() (bool, string) {
			return f.memberObject(t, 1, policyConfigMaps, "shop", "scratch") == nil, "still there"
		})
		// settings (deletionPolicy Orphan, the default) stays, unmanaged.
		if cm := f.memberObject(t, 1, policyConfigMaps, "shop", "settings"); cm == nil {
			t.Error("member-1 lost settings: the default deletionPolicy Orphan must leave it")
		}
		native, err := f.dyn.Resource(policyConfigMaps).Namespace("shop").Get(context.Background(), "settings", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := native.GetAnnotations()[policyv1alpha1.AnnotationPlacedByPolicy]; ok {
			t.Errorf("native settings still says placed by %q", got)
		}
	})
}

func policyHas(b bool) string {
	if b {
		return "has it"
	}
	return "has not"
}

func policyErr(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestPropagationPolicyValidation: the plane's CRDs refuse what a policy
// cannot mean, with messages that say why, and default what a reader
// must see (deletionPolicy Orphan, dependencies on, topology cell; an
// absent release is Immediate).
func TestPropagationPolicyValidation(t *testing.T) {
	t.Parallel()
	_, k := startFederationPlane(t, "configmaps")
	policy := func(name, selector string) string {
		return `
apiVersion: policy.cellfed.io/v1alpha1
kind: PropagationPolicy
metadata: {name: ` + name + `, namespace: shop}
spec:
  resourceSelectors: [` + selector + `]
  placement: {topologies: [{name: rz00a}]}
`
	}
	tests := []struct {
		name, yaml, refusal string
	}{
		{name: "name and labelSelector", yaml: policy("both", "{apiVersion: v1, kind: ConfigMap, name: a, labelSelector: {matchLabels: {a: b}}}"), refusal: "name and labelSelector exclude each other"},
		{name: "no kind", yaml: policy("nokind", "{apiVersion: v1}"), refusal: "kind"},
		{name: "name too long", yaml: policy(strings.Repeat("p", 64), "{apiVersion: v1, kind: ConfigMap}"), refusal: "at most 63 characters"},
		{name: "unknown deletion policy", yaml: policy("delpol", "{apiVersion: v1, kind: ConfigMap}") + "  deletionPolicy: Purge\n", refusal: "deletionPolicy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := k.Run(context.Background(), tt.yaml, "apply", "-f", "-")
			if err == nil || !strings.Contains(out+err.Error(), tt.refusal) {
				t.Errorf("apply: err %v, output %q; want a refusal saying %q", err, out, tt.refusal)
			}
		})
	}

	k.MustRun(t, policy("ok", "{apiVersion: v1, kind: ConfigMap}"), "apply", "-f", "-")
	got := k.MustRun(t, "", "-n", "shop", "get", "pp", "ok", "-o", "jsonpath={.spec.deletionPolicy} {.spec.propagateDependencies} {.spec.placement.topologyType}")
	if got != "Orphan true cell" {
		t.Errorf("defaults = %q, want %q", got, "Orphan true cell")
	}
}

// TestPropagationPolicyDependencies: a policy that places a Deployment
// places the ConfigMap its pod template reads where the Deployment goes,
// though no policy selects the ConfigMap.
func TestPropagationPolicyDependencies(t *testing.T) {
	t.Parallel()
	f := startFederation(t, 2)
	f.kubectl.MustRun(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: web-env, namespace: shop}
data: {MODE: prod}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: "nginx:1.27"
        envFrom: [{configMapRef: {name: web-env}}]
---
apiVersion: policy.cellfed.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
  placement: {topologies: [{name: rz10a}]}
`, "apply", "-f", "-")
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	eventually(t, "the Deployment and its ConfigMap on member-1", func() (bool, string) {
		d := f.memberObject(t, 1, deployments, "shop", "web") != nil
		cm := f.memberObject(t, 1, policyConfigMaps, "shop", "web-env") != nil
		return d && cm, "deployment " + policyHas(d) + ", configmap " + policyHas(cm)
	})
	if f.memberObject(t, 0, policyConfigMaps, "shop", "web-env") != nil {
		t.Error("member-0 holds web-env: the dependency went beyond the workload's placement")
	}
	native, err := f.dyn.Resource(policyConfigMaps).Namespace("shop").Get(context.Background(), "web-env", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := native.GetAnnotations()[policyv1alpha1.AnnotationPlacedByPolicy]; got != "PropagationPolicy/shop/web" {
		t.Errorf("web-env %s = %q", policyv1alpha1.AnnotationPlacedByPolicy, got)
	}
}
