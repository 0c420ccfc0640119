package cellproxy

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	fedv1b1 "sigs.k8s.io/kubefed/pkg/apis/core/v1beta1"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

// Member roles: what a tenant's app team and viewers may do in the
// namespaces placed on a member, bound there in step with the plane's
// grants (`cellfedctl tenant grant`), so a person has the same rights
// through a cell's proxy as on the plane.
const (
	MemberAppTeam = "cellfed:member:app-team"
	MemberViewer  = "cellfed:member:viewer"
	// LabelMemberRBAC marks the member RoleBindings cellfed manages.
	LabelMemberRBAC = "cellfed.io/member-rbac"
)

// MemberRoles are the member ClusterRoles, bound per namespace: the app
// team's is exactly Kubernetes' aggregated `edit` role of v1.36 (its own
// rules and those of `view`, with DynamicResourceAllocation on, as it is
// by default), the viewer's exactly `view`. Written out here rather than
// bound to the member's own `edit`, whose aggregation may have been
// widened by anything installed on the member; TestMemberEditRole
// (test/e2e) compares them with a real member's bootstrap roles.
func MemberRoles() []*rbacv1.ClusterRole {
	labels := map[string]string{LabelMemberRBAC: "true"}
	return []*rbacv1.ClusterRole{
		{ObjectMeta: metav1.ObjectMeta{Name: MemberAppTeam, Labels: labels}, Rules: EditRules()},
		{ObjectMeta: metav1.ObjectMeta{Name: MemberViewer, Labels: labels}, Rules: ViewRules()},
	}
}

// API groups of the member roles.
const (
	groupCore         = ""
	groupApps         = "apps"
	groupAutoscaling  = "autoscaling"
	groupBatch        = "batch"
	groupExtensions   = "extensions"
	groupPolicy       = "policy"
	groupNetworking   = "networking.k8s.io"
	groupDiscovery    = "discovery.k8s.io"
	groupEvents       = "events.k8s.io"
	groupCoordination = "coordination.k8s.io"
	groupResource     = "resource.k8s.io"
)

var (
	readVerbs  = []string{"get", "list", "watch"}
	writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection"}
)

func rule(verbs []string, groups []string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources}
}

func in(groups ...string) []string { return groups }

// ViewRules are what Kubernetes' `view` grants in a namespace: reading
// what is not a secret nor a way into a container. Among what it reads
// and `edit` does not write are the namespace's ResourceQuotas and
// LimitRanges, pods/status and bindings.
func ViewRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule(readVerbs, in(groupCore), "pods", "pods/log", "pods/status", "bindings",
			"replicationcontrollers", "replicationcontrollers/scale", "replicationcontrollers/status",
			"serviceaccounts", "services", "services/status", "endpoints",
			"persistentvolumeclaims", "persistentvolumeclaims/status", "configmaps",
			"limitranges", "resourcequotas", "resourcequotas/status", "namespaces", "namespaces/status"),
		rule(readVerbs, in(groupCore, groupEvents), "events"),
		rule(readVerbs, in(groupDiscovery), "endpointslices"),
		rule(readVerbs, in(groupApps), "controllerrevisions",
			"deployments", "deployments/scale", "deployments/status",
			"replicasets", "replicasets/scale", "replicasets/status",
			"statefulsets", "statefulsets/scale", "statefulsets/status",
			"daemonsets", "daemonsets/status"),
		rule(readVerbs, in(groupAutoscaling), "horizontalpodautoscalers", "horizontalpodautoscalers/status"),
		rule(readVerbs, in(groupBatch), "jobs", "jobs/status", "cronjobs", "cronjobs/status"),
		rule(readVerbs, in(groupExtensions), "daemonsets", "daemonsets/status",
			"deployments", "deployments/scale", "deployments/status",
			"replicasets", "replicasets/scale", "replicasets/status", "replicationcontrollers/scale",
			"ingresses", "ingresses/status", "networkpolicies"),
		rule(readVerbs, in(groupPolicy), "poddisruptionbudgets", "poddisruptionbudgets/status"),
		rule(readVerbs, in(groupNetworking), "ingresses", "ingresses/status", "networkpolicies"),
		rule(readVerbs, in(groupResource), "resourceclaims", "resourceclaims/status", "resourceclaimtemplates"),
	}
}

// EditRules are what Kubernetes' aggregated `edit` grants in a
// namespace: `view`, reading secrets and the ways into containers, and
// writing workloads, their configuration and services. Not granted, as
// in `edit` (CVE-2021-25740 and the platform's own objects): writing
// endpoints, endpointslices, bindings or pods/binding,
// pods/ephemeralcontainers, any /status, ResourceQuotas, LimitRanges,
// the namespace, and RBAC.
func EditRules() []rbacv1.PolicyRule {
	return append(ViewRules(),
		rule(readVerbs, in(groupCore), "secrets", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "services/proxy"),
		rule([]string{"impersonate"}, in(groupCore), "serviceaccounts"),
		rule(writeVerbs, in(groupCore), "pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"),
		rule([]string{"create"}, in(groupCore), "pods/eviction", "serviceaccounts/token"),
		rule(writeVerbs, in(groupCore), "configmaps", "secrets", "serviceaccounts", "services", "services/proxy",
			"persistentvolumeclaims", "replicationcontrollers", "replicationcontrollers/scale"),
		rule(writeVerbs, in(groupCore, groupEvents), "events"),
		rule(writeVerbs, in(groupApps), "deployments", "deployments/scale", "deployments/rollback",
			"replicasets", "replicasets/scale", "statefulsets", "statefulsets/scale", "daemonsets"),
		rule(writeVerbs, in(groupAutoscaling), "horizontalpodautoscalers"),
		rule(writeVerbs, in(groupBatch), "jobs", "cronjobs"),
		rule(writeVerbs, in(groupExtensions), "daemonsets", "deployments", "deployments/scale", "deployments/rollback",
			"replicasets", "replicasets/scale", "replicationcontrollers/scale", "ingresses", "networkpolicies"),
		rule(writeVerbs, in(groupPolicy), "poddisruptionbudgets"),
		rule(writeVerbs, in(groupNetworking), "ingresses", "networkpolicies"),
		rule(append(slices.Clone(readVerbs), writeVerbs...), in(groupCoordination), "leases"),
		rule(writeVerbs, in(groupResource), "resourceclaims", "resourceclaimtemplates"),
	)
}

// Grants lists what rules allow, one "verb group/resource" (core group
// written as "core") per pair, sorted: a form two rule sets can be
// compared in however their rules are cut. Rules with a wildcard or
// resource names give "verb group/resource" with the "*" or a
// "[names]" suffix, so they never equal a plain grant.
func Grants(rules []rbacv1.PolicyRule) []string {
	seen := map[string]bool{}
	for _, r := range rules {
		suffix := ""
		if len(r.ResourceNames) > 0 {
			suffix = " [" + strings.Join(r.ResourceNames, ",") + "]"
		}
		for _, url := range r.NonResourceURLs {
			for _, v := range r.Verbs {
				seen[v+" "+url] = true
			}
		}
		for _, g := range r.APIGroups {
			if g == "" {
				g = "core"
			}
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					seen[v+" "+g+"/"+res+suffix] = true
				}
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// planeToMember maps the plane's tenant roles to member roles.
var planeToMember = map[string]string{"cellfed:app-team": MemberAppTeam, "cellfed:viewer": MemberViewer}

// DesiredBindings are the member RoleBindings of one cluster: for every
// namespace with a Cell on cluster, each plane RoleBinding there to a
// tenant role becomes a RoleBinding of the same name and subjects to the
// member role. Sorted by namespace and name.
func DesiredBindings(cluster string, cells []*cellv1alpha1.Cell, bindings []*rbacv1.RoleBinding) []*rbacv1.RoleBinding {
	placed := map[string]bool{}
	for _, c := range cells {
		if c.Spec.Cluster == cluster && c.DeletionTimestamp == nil {
			placed[c.Namespace] = true
		}
	}
	var out []*rbacv1.RoleBinding
	for _, b := range bindings {
		role, ok := planeToMember[b.RoleRef.Name]
		if !ok || b.RoleRef.Kind != "ClusterRole" || !placed[b.Namespace] || b.DeletionTimestamp != nil {
			continue
		}
		out = append(out, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: b.Name, Namespace: b.Namespace, Labels: map[string]string{LabelMemberRBAC: "true"}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   b.Subjects,
		})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Namespace+"/"+out[i].Name < out[j].Namespace+"/"+out[j].Name
	})
	return out
}

// SyncMemberRBAC makes the member's managed RoleBindings (and the member
// roles) what DesiredBindings says, with the cluster's own access.
// Namespaces missing on the member are skipped until they exist
// (pending reports them).
func (ms *Members) SyncMemberRBAC(ctx context.Context, c *fedv1b1.KubeFedCluster, want []*rbacv1.RoleBinding) (pending bool, err error) {
	m, err := ms.get(c)
	if err != nil {
		return false, err
	}
	member, err := ms.adminClient(ctx, m)
	if err != nil {
		return false, err
	}
	roles := MemberRoles()
	if len(want) == 0 {
		roles = nil // a member no tenant uses gets no roles; stale bindings still go
	}
	for _, r := range roles {
		got, err := member.RbacV1().ClusterRoles().Get(ctx, r.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = member.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{})
		case err == nil && !reflect.DeepEqual(got.Rules, r.Rules):
			got.Rules = r.Rules
			_, err = member.RbacV1().ClusterRoles().Update(ctx, got, metav1.UpdateOptions{})
		}
		if err != nil {
			return false, fmt.Errorf("cluster %s: ClusterRole %s: %w", c.Name, r.Name, err)
		}
	}
	have, err := member.RbacV1().RoleBindings("").List(ctx, metav1.ListOptions{LabelSelector: LabelMemberRBAC + "=true"})
	if err != nil {
		return false, fmt.Errorf("cluster %s: listing managed RoleBindings: %w", c.Name, err)
	}
	wanted := map[string]*rbacv1.RoleBinding{}
	for _, b := range want {
		wanted[b.Namespace+"/"+b.Name] = b
	}
	for i := range have.Items {
		h := &have.Items[i]
		w, ok := wanted[h.Namespace+"/"+h.Name]
		switch {
		case !ok || w.RoleRef != h.RoleRef:
			if err := member.RbacV1().RoleBindings(h.Namespace).Delete(ctx, h.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return false, fmt.Errorf("cluster %s: removing RoleBinding %s/%s: %w", c.Name, h.Namespace, h.Name, err)
			}
			klog.InfoS("Member RoleBinding removed", "cluster", c.Name, "roleBinding", h.Namespace+"/"+h.Name)
		case !reflect.DeepEqual(w.Subjects, h.Subjects):
			h.Subjects = w.Subjects
			if _, err := member.RbacV1().RoleBindings(h.Namespace).Update(ctx, h, metav1.UpdateOptions{}); err != nil {
				return false, fmt.Errorf("cluster %s: updating RoleBinding %s/%s: %w", c.Name, h.Namespace, h.Name, err)
			}
			delete(wanted, h.Namespace+"/"+h.Name)
		default:
			delete(wanted, h.Namespace+"/"+h.Name)
		}
	}
	for _, b := range want {
		if _, ok := wanted[b.Namespace+"/"+b.Name]; !ok {
			continue
		}
		_, err := member.RbacV1().RoleBindings(b.Namespace).Create(ctx, b, metav1.CreateOptions{})
		switch {
		case apierrors.IsNotFound(err):
			pending = true // the namespace is not on the member yet
			continue
		case err != nil && !apierrors.IsAlreadyExists(err):
			return false, fmt.Errorf("cluster %s: creating RoleBinding %s/%s: %w", c.Name, b.Namespace, b.Name, err)
		}
		klog.InfoS("Member RoleBinding created", "cluster", c.Name, "roleBinding", b.Namespace+"/"+b.Name, "role", b.RoleRef.Name)
	}
	return pending, nil
}

// adminClient is a client with the cluster's own access (its
// KubeFedCluster Secret), for setting up identities and RBAC. It is kept
// while the Secret's token stays the same: every member RBAC sync would
// otherwise open (and leave idle) a new TLS connection to the member.
func (ms *Members) adminClient(ctx context.Context, m *member) (kubernetes.Interface, error) {
	data, err := ms.secrets(ctx, m.secret)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: reading its access secret %s: %w", m.cluster, m.secret, err)
	}
	token := strings.TrimSpace(string(data["token"]))
	if token == "" {
		return nil, fmt.Errorf("cluster %s: secret %s has no key \"token\"", m.cluster, m.secret)
	}
	m.adminMu.Lock()
	defer m.adminMu.Unlock()
	if m.admin != nil && m.adminToken == token {
		return m.admin, nil
	}
	cfg := rest.CopyConfig(m.restCfg)
	cfg.BearerToken = token
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", m.cluster, err)
	}
	c, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", m.cluster, err)
	}
	if m.adminHTTP != nil {
		m.adminHTTP.CloseIdleConnections()
	}
	m.admin, m.adminToken, m.adminHTTP = c, token, hc
	return c, nil
}

// RunMemberRBAC keeps every physical member's RBAC in step with the
// plane's grants: on every change of Cells and RoleBindings (trigger) and
// every resync. Members are synced concurrently, each at most once at a
// time, so a slow or unreachable member delays no other; a member that
// lacks a namespace is tried again after retryAfter, one that fails
// after a backoff doubling from retryAfter up to resync.
func RunMemberRBAC(ctx context.Context, ms *Members, inf *Informers, bindings func() []*rbacv1.RoleBinding, trigger <-chan struct{}, resync time.Duration) {
	type result struct {
		cluster string
		pending bool
		err     error
	}
	results := make(chan result)
	state := map[string]*rbacSync{}
	dirty := true
	for {
		now := time.Now()
		wait := resync
		cells, rbs := inf.Cells(), bindings()
		for _, c := range inf.Clusters() {
			if strings.Contains(c.Name, ".") {
				continue // per-cell clusters share their physical cluster's member
			}
			st := state[c.Name]
			if st == nil {
				st = &rbacSync{}
				state[c.Name] = st
			}
			if dirty {
				st.dirty = true
			}
			if !st.due(now, resync) {
				if d := st.next(now, resync); d < wait {
					wait = d
				}
				continue
			}
			st.running, st.dirty, st.started = true, false, now
			go func(c *fedv1b1.KubeFedCluster, want []*rbacv1.RoleBinding) {
				sctx, cancel := context.WithTimeout(ctx, rbacSyncTimeout)
				defer cancel()
				pending, err := ms.SyncMemberRBAC(sctx, c, want)
				select {
				case results <- result{c.Name, pending, err}:
				case <-ctx.Done():
				}
			}(c, DesiredBindings(c.Name, cells, rbs))
		}
		dirty = false
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-trigger:
			dirty = true
		case r := <-results:
			if st := state[r.cluster]; st != nil {
				st.finish(time.Now(), r.pending, r.err, resync)
			}
			if r.err != nil {
				klog.ErrorS(r.err, "Keeping member RBAC in step with tenancy", "cluster", r.cluster)
			}
		}
		t.Stop()
	}
}

const (
	// rbacRetryAfter is how soon a member is synced again while it lacks
	// a namespace, and the first backoff after a failure.
	rbacRetryAfter = 2 * time.Second
	// rbacSyncTimeout bounds one member's sync.
	rbacSyncTimeout = 30 * time.Second
)

// rbacSync is one member's sync state in RunMemberRBAC.
type rbacSync struct {
	running bool
	dirty   bool // a Cell or RoleBinding changed since the last sync started
	started time.Time
	// notBefore holds the member back after a failure or a missing
	// namespace.
	notBefore time.Time
	failures  int
}

// due reports whether the member is to be synced now.
func (s *rbacSync) due(now time.Time, resync time.Duration) bool {
	if s.running || now.Before(s.notBefore) {
		return false
	}
	return s.dirty || s.started.IsZero() || !now.Before(s.started.Add(resync)) || s.failures > 0
}

// next is how long until the member may be due.
func (s *rbacSync) next(now time.Time, resync time.Duration) time.Duration {
	if s.running {
		return resync // its result wakes the loop
	}
	at := s.started.Add(resync)
	if s.notBefore.After(now) && (s.dirty || s.failures > 0 || s.notBefore.Before(at)) {
		at = s.notBefore
	}
	return max(at.Sub(now), 0)
}

// finish records a sync's outcome.
func (s *rbacSync) finish(now time.Time, pending bool, err error, resync time.Duration) {
	s.running = false
	switch {
	case err != nil:
		s.failures++
		backoff := rbacRetryAfter << min(s.failures-1, 10)
		s.notBefore = now.Add(min(backoff, resync))
	case pending:
		s.failures = 0
		s.notBefore = now.Add(rbacRetryAfter)
		s.dirty = true
	default:
		s.failures = 0
		s.notBefore = time.Time{}
	}
}
