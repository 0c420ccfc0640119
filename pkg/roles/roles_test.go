package roles

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// TestTenantRolesScope: the tenant roles cover every federated type (a
// wildcard, so types enabled later too) and never name Secrets,
// KubeFedClusters or a write to Cells.
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
			if slices.Contains(rule.APIGroups, "*") || slices.Contains(rule.APIGroups, "") {
				t.Errorf("%s: rule %v reaches core or every group", name, rule)
			}
			for _, res := range rule.Resources {
				if res == "secrets" || res == "kubefedclusters" || res == "federatedtypeconfigs" {
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
