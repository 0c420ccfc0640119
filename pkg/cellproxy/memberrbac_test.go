package cellproxy

import (
	"errors"
	"slices"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

func TestDesiredBindings(t *testing.T) {
	cell := func(ns, name, cluster string) *cellv1alpha1.Cell {
		return &cellv1alpha1.Cell{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: cellv1alpha1.CellSpec{Cluster: cluster}}
	}
	alice := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}}
	rb := func(ns, name, role string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}, Subjects: alice}
	}
	cells := []*cellv1alpha1.Cell{cell("shop", "rz00a", "m1"), cell("shop", "rz01a", "m2"), cell("billing", "bz00a", "m2")}
	bindings := []*rbacv1.RoleBinding{
		rb("shop", "cellfed:app-team:user:alice", "cellfed:app-team"),
		rb("shop", "cellfed:viewer:user:bob", "cellfed:viewer"),
		rb("shop", "other", "edit"),
		rb("billing", "cellfed:viewer:user:carol", "cellfed:viewer"),
		rb("blog", "cellfed:app-team:user:dan", "cellfed:app-team"),
	}
	for _, tc := range []struct {
		cluster string
		want    []string
	}{
		{"m1", []string{"shop/cellfed:app-team:user:alice=" + MemberAppTeam, "shop/cellfed:viewer:user:bob=" + MemberViewer}},
		{"m2", []string{"billing/cellfed:viewer:user:carol=" + MemberViewer, "shop/cellfed:app-team:user:alice=" + MemberAppTeam, "shop/cellfed:viewer:user:bob=" + MemberViewer}},
		{"m3", nil},
	} {
		t.Run(tc.cluster, func(t *testing.T) {
			got := DesiredBindings(tc.cluster, cells, bindings)
			var names []string
			for _, b := range got {
				names = append(names, b.Namespace+"/"+b.Name+"="+b.RoleRef.Name)
				if b.Labels[LabelMemberRBAC] != "true" || len(b.Subjects) != 1 {
					t.Errorf("binding %s/%s: labels %v subjects %v", b.Namespace, b.Name, b.Labels, b.Subjects)
				}
			}
			if len(names) != len(tc.want) {
				t.Fatalf("got %v, want %v", names, tc.want)
			}
			for i := range names {
				if names[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", names, tc.want)
				}
			}
		})
	}
}

func TestRBACSyncSchedule(t *testing.T) {
	const resync = time.Minute
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		name    string
		steps   func(s *rbacSync)
		at      time.Duration // after t0
		due     bool
		nextMax time.Duration
	}{
		{name: "never synced", steps: func(*rbacSync) {}, due: true},
		{name: "synced, nothing changed", steps: func(s *rbacSync) { s.started = t0; s.finish(t0, false, nil, resync) }, at: time.Second, due: false, nextMax: resync - time.Second},
		{name: "synced, resync passed", steps: func(s *rbacSync) { s.started = t0; s.finish(t0, false, nil, resync) }, at: resync, due: true},
		{name: "synced, then a change", steps: func(s *rbacSync) { s.started = t0; s.finish(t0, false, nil, resync); s.dirty = true }, at: time.Second, due: true},
		{name: "running", steps: func(s *rbacSync) { s.started, s.running, s.dirty = t0, true, true }, at: resync * 2, due: false},
		{name: "namespace missing: again after 2s", steps: func(s *rbacSync) { s.started = t0; s.finish(t0, true, nil, resync) }, at: time.Second, due: false, nextMax: time.Second},
		{name: "namespace missing, 2s later", steps: func(s *rbacSync) { s.started = t0; s.finish(t0, true, nil, resync) }, at: 2 * time.Second, due: true},
		{name: "failed once: back off 2s", steps: func(s *rbacSync) { s.started = t0; s.finish(t0, false, errors.New("x"), resync) }, at: time.Second, due: false, nextMax: time.Second},
		{name: "failed three times: back off 8s", steps: func(s *rbacSync) {
			for range 3 {
				s.started = t0
				s.finish(t0, false, errors.New("x"), resync)
			}
		}, at: 7 * time.Second, due: false, nextMax: time.Second},
		{name: "failing long: back off at most resync", steps: func(s *rbacSync) {
			for range 20 {
				s.started = t0
				s.finish(t0, false, errors.New("x"), resync)
			}
		}, at: resync, due: true},
		{name: "a change waits out the backoff", steps: func(s *rbacSync) {
			s.started = t0
			s.finish(t0, false, errors.New("x"), resync)
			s.dirty = true
		}, at: time.Second, due: false, nextMax: time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &rbacSync{}
			tc.steps(s)
			now := t0.Add(tc.at)
			if got := s.due(now, resync); got != tc.due {
				t.Errorf("due = %v, want %v", got, tc.due)
			}
			if !tc.due && !s.running {
				if got := s.next(now, resync); got > tc.nextMax {
					t.Errorf("next = %v, want at most %v", got, tc.nextMax)
				}
			}
		})
	}
}

// allows reports whether rules grant verb on group/resource, wildcards
// included (as RBAC matches them).
func allows(rules []rbacv1.PolicyRule, verb, group, resource string) bool {
	has := func(list []string, v string) bool { return slices.Contains(list, v) || slices.Contains(list, "*") }
	for _, r := range rules {
		if len(r.ResourceNames) == 0 && has(r.Verbs, verb) && has(r.APIGroups, group) && has(r.Resources, resource) {
			return true
		}
	}
	return false
}

// TestMemberRoles: an app team gets what Kubernetes' edit gives in its
// namespace on a member, and not what edit leaves out (CVE-2021-25740's
// endpoints, bindings, ephemeral containers, /status, the namespace's
// quotas and limits); a viewer only reads.
func TestMemberRoles(t *testing.T) {
	roles := map[string][]rbacv1.PolicyRule{}
	for _, r := range MemberRoles() {
		roles[r.Name] = r.Rules
	}
	for _, tc := range []struct {
		name                   string
		role, verb, group, res string
		want                   bool
	}{
		{"app team creates pods", MemberAppTeam, "create", "", "pods", true},
		{"app team execs", MemberAppTeam, "create", "", "pods/exec", true},
		{"app team reads secrets", MemberAppTeam, "get", "", "secrets", true},
		{"app team patches deployments", MemberAppTeam, "patch", "apps", "deployments", true},
		{"app team writes leases", MemberAppTeam, "update", "coordination.k8s.io", "leases", true},
		{"app team mints service account tokens", MemberAppTeam, "create", "", "serviceaccounts/token", true},
		{"app team reads quotas", MemberAppTeam, "list", "", "resourcequotas", true},
		{"no pods/binding", MemberAppTeam, "create", "", "pods/binding", false},
		{"no bindings", MemberAppTeam, "create", "", "bindings", false},
		{"no ephemeral containers", MemberAppTeam, "patch", "", "pods/ephemeralcontainers", false},
		{"no endpoints writes", MemberAppTeam, "create", "", "endpoints", false},
		{"no endpointslice writes", MemberAppTeam, "create", "discovery.k8s.io", "endpointslices", false},
		{"no pods/status writes", MemberAppTeam, "update", "", "pods/status", false},
		{"no deployment status writes", MemberAppTeam, "patch", "apps", "deployments/status", false},
		{"no quota deletes", MemberAppTeam, "delete", "", "resourcequotas", false},
		{"no limitrange deletes", MemberAppTeam, "delete", "", "limitranges", false},
		{"no namespace writes", MemberAppTeam, "update", "", "namespaces", false},
		{"no RBAC", MemberAppTeam, "create", "rbac.authorization.k8s.io", "rolebindings", false},
		{"no policies of other groups", MemberAppTeam, "create", "admissionregistration.k8s.io", "validatingadmissionpolicies", false},
		{"viewer lists pods", MemberViewer, "list", "", "pods", true},
		{"viewer reads no secrets", MemberViewer, "get", "", "secrets", false},
		{"viewer creates nothing", MemberViewer, "create", "", "configmaps", false},
		{"viewer execs not", MemberViewer, "create", "", "pods/exec", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := allows(roles[tc.role], tc.verb, tc.group, tc.res); got != tc.want {
				t.Errorf("%s: %s %s/%s allowed = %v, want %v", tc.role, tc.verb, tc.group, tc.res, got, tc.want)
			}
		})
	}
}
