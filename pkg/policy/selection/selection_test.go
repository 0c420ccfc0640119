package selection

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/cellfed/cellfed/pkg/apis/policy/v1alpha1"
)

const (
	pp  = policyv1alpha1.KindPropagationPolicy
	cpp = policyv1alpha1.KindClusterPropagationPolicy
)

func sel(apiVersion, kind string) policyv1alpha1.ResourceSelector {
	return policyv1alpha1.ResourceSelector{APIVersion: apiVersion, Kind: kind}
}

func named(apiVersion, kind, name string) policyv1alpha1.ResourceSelector {
	s := sel(apiVersion, kind)
	s.Name = name
	return s
}

func labelled(apiVersion, kind string, match map[string]string) policyv1alpha1.ResourceSelector {
	s := sel(apiVersion, kind)
	s.LabelSelector = &metav1.LabelSelector{MatchLabels: match}
	return s
}

func policy(kind, ns, name string, prio int32, sels ...policyv1alpha1.ResourceSelector) Policy {
	return Policy{Kind: kind, Namespace: ns, Name: name, Priority: prio, Selectors: sels}
}

var web = Object{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web", Labels: map[string]string{"app": "web", "tier": "front"}}

func TestSelect(t *testing.T) {
	tests := []struct {
		name     string
		obj      Object
		policies []Policy
		winner   string // Ref, "" for none
		shadowed []string
		reason   string // substring of the first shadowed policy's reason
	}{
		{
			name: "no policy",
			obj:  web,
		},
		{
			name:     "other kind, other group, other namespace match nothing",
			obj:      web,
			policies: []Policy{policy(pp, "shop", "svc", 0, sel("v1", "Service")), policy(pp, "shop", "ext", 0, sel("extensions/v1beta1", "Deployment")), policy(pp, "other", "all", 0, sel("apps/v1", "Deployment"))},
		},
		{
			name:     "version is ignored, group and kind count",
			obj:      web,
			policies: []Policy{policy(pp, "shop", "old", 0, sel("apps/v1beta2", "Deployment"))},
			winner:   "PropagationPolicy/shop/old",
		},
		{
			name:     "name selector for another object",
			obj:      web,
			policies: []Policy{policy(pp, "shop", "api", 0, named("apps/v1", "Deployment", "api"))},
		},
		{
			name:     "label selector that does not match",
			obj:      web,
			policies: []Policy{policy(pp, "shop", "back", 0, labelled("apps/v1", "Deployment", map[string]string{"tier": "back"}))},
		},
		{
			name:     "priority wins over specificity",
			obj:      web,
			policies: []Policy{policy(pp, "shop", "by-name", 0, named("apps/v1", "Deployment", "web")), policy(pp, "shop", "all", 5, sel("apps/v1", "Deployment"))},
			winner:   "PropagationPolicy/shop/all",
			shadowed: []string{"PropagationPolicy/shop/by-name"},
			reason:   "priority 5 > 0",
		},
		{
			name: "name beats labels beats kind at equal priority",
			obj:  web,
			policies: []Policy{
				policy(pp, "shop", "a-kind", 0, sel("apps/v1", "Deployment")),
				policy(pp, "shop", "b-labels", 0, labelled("apps/v1", "Deployment", map[string]string{"app": "web"})),
				policy(pp, "shop", "c-name", 0, named("apps/v1", "Deployment", "web")),
			},
			winner:   "PropagationPolicy/shop/c-name",
			shadowed: []string{"PropagationPolicy/shop/b-labels", "PropagationPolicy/shop/a-kind"},
			reason:   "selects by name, more specific than labelSelector",
		},
		{
			name: "a policy's most specific matching selector counts",
			obj:  web,
			policies: []Policy{
				policy(pp, "shop", "a-labels", 0, labelled("apps/v1", "Deployment", map[string]string{"app": "web"})),
				policy(pp, "shop", "z-mixed", 0, sel("apps/v1", "Deployment"), named("apps/v1", "Deployment", "web")),
			},
			winner:   "PropagationPolicy/shop/z-mixed",
			shadowed: []string{"PropagationPolicy/shop/a-labels"},
		},
		{
			name: "PropagationPolicy before ClusterPropagationPolicy at a tie",
			obj:  web,
			policies: []Policy{
				policy(cpp, "", "a-platform", 0, sel("apps/v1", "Deployment")),
				policy(pp, "shop", "z-team", 0, sel("apps/v1", "Deployment")),
			},
			winner:   "PropagationPolicy/shop/z-team",
			shadowed: []string{"ClusterPropagationPolicy/a-platform"},
			reason:   "a PropagationPolicy wins over a ClusterPropagationPolicy",
		},
		{
			name: "a ClusterPropagationPolicy of higher priority wins",
			obj:  web,
			policies: []Policy{
				policy(pp, "shop", "team", 0, named("apps/v1", "Deployment", "web")),
				policy(cpp, "", "platform", 1, sel("apps/v1", "Deployment")),
			},
			winner:   "ClusterPropagationPolicy/platform",
			shadowed: []string{"PropagationPolicy/shop/team"},
		},
		{
			name: "name decides the last tie",
			obj:  web,
			policies: []Policy{
				policy(pp, "shop", "b", 0, sel("apps/v1", "Deployment")),
				policy(pp, "shop", "a", 0, sel("apps/v1", "Deployment")),
				policy(pp, "shop", "c", 0, sel("apps/v1", "Deployment")),
			},
			winner:   "PropagationPolicy/shop/a",
			shadowed: []string{"PropagationPolicy/shop/b", "PropagationPolicy/shop/c"},
			reason:   `name "a" sorts before "b"`,
		},
		{
			name:     "negative priority loses to the default",
			obj:      web,
			policies: []Policy{policy(pp, "shop", "low", -1, named("apps/v1", "Deployment", "web")), policy(pp, "shop", "zero", 0, sel("apps/v1", "Deployment"))},
			winner:   "PropagationPolicy/shop/zero",
			shadowed: []string{"PropagationPolicy/shop/low"},
		},
		{
			name:     "cluster-scoped object: only ClusterPropagationPolicies",
			obj:      Object{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "reader"},
			policies: []Policy{policy(pp, "shop", "team", 9, sel("rbac.authorization.k8s.io/v1", "ClusterRole")), policy(cpp, "", "rbac", 0, named("rbac.authorization.k8s.io/v1", "ClusterRole", "reader"))},
			winner:   "ClusterPropagationPolicy/rbac",
		},
		{
			name:     "core group",
			obj:      Object{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "cfg"},
			policies: []Policy{policy(pp, "shop", "cfg", 0, sel("v1", "ConfigMap"))},
			winner:   "PropagationPolicy/shop/cfg",
		},
		{
			name: "an invalid selector takes no part",
			obj:  web,
			policies: []Policy{
				policy(pp, "shop", "a-bad", 10, policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}}),
				policy(pp, "shop", "b-good", 0, sel("apps/v1", "Deployment")),
			},
			winner: "PropagationPolicy/shop/b-good",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Select(tt.obj, tt.policies)
			got := ""
			if res.Winner != nil {
				got = res.Winner.Policy.Ref()
			}
			if got != tt.winner {
				t.Fatalf("winner = %q, want %q", got, tt.winner)
			}
			var shadowed []string
			for _, s := range res.Shadowed {
				shadowed = append(shadowed, s.Policy.Ref())
			}
			if strings.Join(shadowed, ",") != strings.Join(tt.shadowed, ",") {
				t.Errorf("shadowed = %v, want %v", shadowed, tt.shadowed)
			}
			if tt.reason != "" && !strings.Contains(res.Shadowed[0].Reason, tt.reason) {
				t.Errorf("reason = %q, want it to contain %q", res.Shadowed[0].Reason, tt.reason)
			}
		})
	}
}

// TestSelectOrderIndependent: the winner does not depend on the order the
// policies are listed in (informer caches list in no fixed order).
func TestSelectOrderIndependent(t *testing.T) {
	ps := []Policy{
		policy(pp, "shop", "b", 0, sel("apps/v1", "Deployment")),
		policy(cpp, "", "a", 0, sel("apps/v1", "Deployment")),
		policy(pp, "shop", "c", 0, sel("apps/v1", "Deployment")),
		policy(pp, "shop", "a", 0, sel("apps/v1", "Deployment")),
	}
	want := Select(web, ps).Winner.Policy.Ref()
	for i := range ps {
		rot := append(append([]Policy{}, ps[i:]...), ps[:i]...)
		if got := Select(web, rot).Winner.Policy.Ref(); got != want {
			t.Errorf("rotation %d: winner %s, want %s", i, got, want)
		}
	}
	if want != "PropagationPolicy/shop/a" {
		t.Errorf("winner %s, want PropagationPolicy/shop/a", want)
	}
}

func TestInvalidSelectorReported(t *testing.T) {
	res := Select(web, []Policy{policy(pp, "shop", "bad", 0, policyv1alpha1.ResourceSelector{APIVersion: "a/b/c", Kind: "Deployment"})})
	if res.Winner != nil || len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Error(), "PropagationPolicy/shop/bad") {
		t.Fatalf("result = %+v, want one error naming the policy", res)
	}
}

func TestStatus(t *testing.T) {
	team := policy(pp, "shop", "team", 0, sel("apps/v1", "Deployment"))
	platform := policy(cpp, "", "platform", 5, labelled("apps/v1", "Deployment", map[string]string{"tier": "front"}))
	unused := policy(pp, "shop", "unused", 0, sel("v1", "Service"))
	api := Object{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "api", Labels: map[string]string{"tier": "back"}}
	ps := []Policy{team, platform, unused}
	var ds []Decision
	for _, o := range []Object{web, api} {
		ds = append(ds, Decision{Object: o, Result: Select(o, ps)})
	}

	tests := []struct {
		name               string
		policy             Policy
		placed, shadowed   int32
		matched, shadowCnd metav1.ConditionStatus
		msg                string
	}{
		{name: "placed one, shadowed for one", policy: team, placed: 1, shadowed: 1, matched: metav1.ConditionTrue, shadowCnd: metav1.ConditionTrue, msg: "Deployment shop/web placed by ClusterPropagationPolicy/platform (priority 5 > 0)"},
		{name: "wins where it matches", policy: platform, placed: 1, matched: metav1.ConditionTrue, shadowCnd: metav1.ConditionFalse},
		{name: "matches nothing", policy: unused, matched: metav1.ConditionFalse, shadowCnd: metav1.ConditionFalse, msg: "selects no object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := Status(tt.policy, 3, ds)
			if st.Placed != tt.placed || st.Shadowed != tt.shadowed || int(st.Shadowed) != len(st.ShadowedObjects) {
				t.Errorf("placed %d shadowed %d (%d listed), want %d and %d", st.Placed, st.Shadowed, len(st.ShadowedObjects), tt.placed, tt.shadowed)
			}
			if st.ObservedGeneration != 3 {
				t.Errorf("observedGeneration = %d", st.ObservedGeneration)
			}
			conds := map[string]metav1.Condition{}
			for _, c := range st.Conditions {
				conds[c.Type] = c
			}
			if c := conds[policyv1alpha1.ConditionMatched]; c.Status != tt.matched {
				t.Errorf("Matched = %s (%s), want %s", c.Status, c.Message, tt.matched)
			}
			if c := conds[policyv1alpha1.ConditionShadowed]; c.Status != tt.shadowCnd {
				t.Errorf("Shadowed = %s (%s), want %s", c.Status, c.Message, tt.shadowCnd)
			}
			if tt.msg != "" && !strings.Contains(conds[policyv1alpha1.ConditionMatched].Message+conds[policyv1alpha1.ConditionShadowed].Message, tt.msg) {
				t.Errorf("messages %q / %q do not say %q", conds[policyv1alpha1.ConditionMatched].Message, conds[policyv1alpha1.ConditionShadowed].Message, tt.msg)
			}
		})
	}
}

func TestStatusCapsShadowedList(t *testing.T) {
	low := policy(pp, "shop", "low", 0, sel("v1", "ConfigMap"))
	high := policy(pp, "shop", "high", 1, sel("v1", "ConfigMap"))
	var ds []Decision
	for i := range 25 {
		o := Object{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: string(rune('a'+i)) + "-cfg"}
		ds = append(ds, Decision{Object: o, Result: Select(o, []Policy{low, high})})
	}
	st := Status(low, 1, ds)
	if st.Shadowed != 25 || len(st.ShadowedObjects) != policyv1alpha1.MaxShadowedObjects || st.ShadowedObjects[0].Name != "a-cfg" {
		t.Fatalf("shadowed %d, listed %d (first %q), want 25, %d, a-cfg", st.Shadowed, len(st.ShadowedObjects), st.ShadowedObjects[0].Name, policyv1alpha1.MaxShadowedObjects)
	}
	if !strings.Contains(st.Conditions[1].Message, "and 22 more") {
		t.Errorf("Shadowed message %q does not count the rest", st.Conditions[1].Message)
	}
}

func TestIneligible(t *testing.T) {
	tests := []struct {
		name       string
		obj        Object
		secretType string
		controlled bool
		want       bool
	}{
		{name: "workspace configmap", obj: Object{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "cfg"}},
		{name: "CA bundle", obj: Object{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "kube-root-ca.crt"}, want: true},
		{name: "default service account", obj: Object{APIVersion: "v1", Kind: "ServiceAccount", Namespace: "shop", Name: "default"}, want: true},
		{name: "other service account", obj: Object{APIVersion: "v1", Kind: "ServiceAccount", Namespace: "shop", Name: "web"}},
		{name: "token secret", obj: Object{APIVersion: "v1", Kind: "Secret", Namespace: "shop", Name: "t"}, secretType: "kubernetes.io/service-account-token", want: true},
		{name: "opaque secret", obj: Object{APIVersion: "v1", Kind: "Secret", Namespace: "shop", Name: "db"}, secretType: "Opaque"},
		{name: "system namespace", obj: Object{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "kube-system", Name: "dns"}, want: true},
		{name: "controlled", obj: Object{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "shop", Name: "web-1"}, controlled: true, want: true},
		{name: "cluster-scoped", obj: Object{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "reader"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Ineligible(tt.obj, tt.secretType, tt.controlled); (got != "") != tt.want {
				t.Errorf("Ineligible = %q, want ineligible %v", got, tt.want)
			}
		})
	}
}
