package roles

import (
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// TestTenantRolesScope: the tenant roles cover every federated type (a
// wildcard, so types enabled later too) and never name KubeFedClusters
// or a write to Cells; core resources only by name (the native kinds),
// Secrets only for the app team, never for viewers; no status of a
// native kind (the plane's controllers write it).
func TestTenantRolesScope(t *testing.T) {
	byName := map[string]*rbacv1.ClusterRole{}
	for _, r := range ClusterRoles() {
		byName[r.Name] = r
	}
	for _, name := range []string{AppTeam, Viewer} {
		r := byName[name]
		if r == nil {
			t.Fatalf("no ClusterRole %s", name)
		}
		var typesWildcard bool
		for _, rule := range r.Rules {
			if slices.Contains(rule.APIGroups, "types.kubefed.io") && slices.Equal(rule.Resources, []string{"*"}) {
				typesWildcard = true
			}
			if slices.Contains(rule.APIGroups, "*") {
				t.Errorf("%s: rule %v reaches every group", name, rule)
			}
			for _, res := range rule.Resources {
				if (res == "secrets" && name != AppTeam) || res == "kubefedclusters" || res == "federatedtypeconfigs" {
					t.Errorf("%s: rule %v names %s", name, rule, res)
				}
				if res == "pods" || res == "nodes" || res == "namespaces" || res == "roles" || res == "rolebindings" ||
					(strings.HasSuffix(res, "/status") && !slices.Contains(rule.APIGroups, "types.kubefed.io") && res != "cells/status") {
					t.Errorf("%s: rule %v names %s", name, rule, res)
				}
				if res == "*" && !slices.Equal(rule.APIGroups, []string{"types.kubefed.io"}) {
					t.Errorf("%s: wildcard outside types.kubefed.io: %v", name, rule)
				}
				if res == "cells" && !slices.Equal(rule.Verbs, readVerbs) {
					t.Errorf("%s: cells verbs %v, want read only", name, rule.Verbs)
				}
			}
			if name == Viewer && !slices.Equal(rule.Verbs, readVerbs) {
				t.Errorf("viewer rule %v is not read-only", rule)
			}
		}
		if !typesWildcard {
			t.Errorf("%s has no types.kubefed.io/* rule", name)
		}
	}
	if byName[AppTeam].Labels[aggregateToEdit] != "true" || byName[AppTeam].Labels[aggregateToAdmin] != "true" || byName[Viewer].Labels[aggregateToView] != "true" {
		t.Errorf("aggregation labels: app-team %v, viewer %v", byName[AppTeam].Labels, byName[Viewer].Labels)
	}
}

// TestPolicyRoles: app teams write PropagationPolicies and viewers read
// them; neither role names ClusterPropagationPolicies (platform admins').
func TestPolicyRoles(t *testing.T) {
	want := map[string][]string{AppTeam: writeVerbs, Viewer: readVerbs}
	for _, r := range ClusterRoles() {
		verbs, ok := want[r.Name]
		if !ok {
			continue
		}
		var found bool
		for _, rule := range r.Rules {
			if !slices.Contains(rule.APIGroups, "policy.cellfed.io") {
				continue
			}
			if slices.Contains(rule.Resources, "clusterpropagationpolicies") {
				t.Errorf("%s names clusterpropagationpolicies: %v", r.Name, rule)
			}
			if slices.Contains(rule.Resources, "propagationpolicies") {
				found = true
				if !slices.Equal(rule.Verbs, verbs) {
					t.Errorf("%s: propagationpolicies verbs %v, want %v", r.Name, rule.Verbs, verbs)
				}
			}
		}
		if !found {
			t.Errorf("%s has no rule for propagationpolicies", r.Name)
		}
	}
}
