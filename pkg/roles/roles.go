// Package roles defines the RBAC roles the cellfed plane ships: platform
// admin, app team and viewer (ClusterRoles, bound per workspace namespace
// by `cellfedctl tenant grant`), plus the read access to
// FederatedTypeConfigs every authenticated user gets. cellfed-apiserver
// creates them on start and puts them back when they are edited or
// deleted; cellfedctl binds them.
package roles

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterRole names.
const (
	PlatformAdmin = "cellfed:platform-admin"
	AppTeam       = "cellfed:app-team"
	Viewer        = "cellfed:viewer"
	// TypeReader may read FederatedTypeConfigs (and nothing else) in the
	// federation namespace; bound there to every authenticated user.
	TypeReader = "cellfed:federated-type-reader"
	// RegistrationBootstrapper may create ClusterRegistrations and nothing
	// else; bound cluster-wide to the group of cellfed's bootstrap tokens
	// (BootstrapperGroup). Admission restricts what such a user may write.
	RegistrationBootstrapper = "cellfed:registration-bootstrapper"
	// TunnelHub may read ClusterRegistrations and nothing else: the
	// identity a standalone cellfed-proxy watches them with, to admit
	// only the agents of approved registrations.
	TunnelHub = "cellfed:tunnel-hub"
)

// BootstrapperGroup is the extra group of the bootstrap tokens `cellfedctl
// token create` makes (pkg/registration.BootstrapGroup).
const BootstrapperGroup = "system:bootstrappers:cellfed"

// LabelManaged marks the RBAC objects the plane owns and reconciles; its
// value is "true".
const LabelManaged = "cellfed.io/bootstrapping"

// Kubernetes' aggregation labels: a ClusterRole carrying one has its rules
// added to the default role of that name.
const (
	aggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	aggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	aggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

// API groups the roles name.
const (
	groupTypes      = "types.kubefed.io"      // every federated type, enabled now or later
	groupCellfed    = "core.cellfed.io"       // Cells, TemplateRevisions
	groupKubeFed    = "core.kubefed.io"       // PropagatedVersions, FederatedTypeConfigs, KubeFedClusters
	groupScheduling = "scheduling.kubefed.io" // ReplicaSchedulingPreferences
	groupPolicy     = "policy.cellfed.io"     // PropagationPolicies (ClusterPropagationPolicies: platform admins only)
)

var (
	readVerbs  = []string{"get", "list", "watch"}
	writeVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
)

// cellProxyRule lets app teams use the API proxy of their workspace's
// cells with every verb (the member's RBAC, for the impersonated caller,
// decides what a request may do there); viewerProxyRule only reads
// through it (no exec, attach, port-forward or writes).
var (
	cellProxyRule   = rbacv1.PolicyRule{APIGroups: []string{"proxy.cellfed.io"}, Resources: []string{"cells/proxy"}, Verbs: []string{"*"}}
	viewerProxyRule = rbacv1.PolicyRule{APIGroups: []string{"proxy.cellfed.io"}, Resources: []string{"cells/proxy"}, Verbs: readVerbs}
)

// nativeRules name the native kinds the plane stores for app teams to
// place on members (docs/native-objects.md): app teams write them in
// their workspace, viewers read them. Their /status is written back by
// the plane's controllers, not by app teams (reading the object reads
// it); /scale is Kubernetes' edit role's. Secrets are in the app team's
// rules only (Kubernetes' view role reads no Secrets either); they also
// hold the data of its FederatedSecrets' TemplateRevisions (pkg/rollout:
// a revision itself holds digests only, as viewers read it).
var nativeRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"configmaps", "services", "serviceaccounts", "persistentvolumeclaims"}},
	{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets", "daemonsets", "replicasets"}},
	{APIGroups: []string{"batch"}, Resources: []string{"jobs", "cronjobs"}},
	{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses", "networkpolicies"}},
	{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}},
	{APIGroups: []string{"autoscaling"}, Resources: []string{"horizontalpodautoscalers"}},
}

var (
	secretsRule = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: writeVerbs}
	scaleRule   = rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments/scale", "statefulsets/scale", "replicasets/scale"},
		Verbs: []string{"get", "update", "patch"}}
)

// withVerbs is rules, each with verbs.
func withVerbs(rules []rbacv1.PolicyRule, verbs []string) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, len(rules))
	for i, r := range rules {
		r.Verbs = verbs
		out[i] = r
	}
	return out
}

// ClusterRoles are the plane's ClusterRoles, in a fixed order.
//
// app team: every federated type (resources "*" of types.kubefed.io, so
// types enabled later are covered, their /status included), rollout's
// TemplateRevisions, KubeFed's ReplicaSchedulingPreferences,
// PropagationPolicies (not ClusterPropagationPolicies), the native
// kinds of nativeRules and Secrets, read of Cells and PropagatedVersions.
// Bound with a
// RoleBinding it applies to that namespace only: nothing in the
// federation namespace (no Secrets, no KubeFedClusters), no Cells or
// KubeFedClusters created. It aggregates into Kubernetes' edit and admin.
//
// viewer: read of the same but Secrets; aggregates into view (and so
// into edit and admin).
//
// platform admin: everything, bound with a ClusterRoleBinding.
func ClusterRoles() []*rbacv1.ClusterRole {
	return []*rbacv1.ClusterRole{
		{
			ObjectMeta: meta(PlatformAdmin, nil),
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}},
				{NonResourceURLs: []string{"*"}, Verbs: []string{"*"}},
			},
		},
		{
			ObjectMeta: meta(AppTeam, map[string]string{aggregateToEdit: "true", aggregateToAdmin: "true"}),
			Rules: append([]rbacv1.PolicyRule{
				{APIGroups: []string{groupTypes}, Resources: []string{"*"}, Verbs: writeVerbs},
				{APIGroups: []string{groupCellfed}, Resources: []string{"templaterevisions"}, Verbs: writeVerbs},
				{APIGroups: []string{groupCellfed}, Resources: []string{"cells", "cells/status"}, Verbs: readVerbs},
				{APIGroups: []string{groupKubeFed}, Resources: []string{"propagatedversions"}, Verbs: readVerbs},
				{APIGroups: []string{groupScheduling}, Resources: []string{"replicaschedulingpreferences"}, Verbs: writeVerbs},
				{APIGroups: []string{groupPolicy}, Resources: []string{"propagationpolicies"}, Verbs: writeVerbs},
				cellProxyRule,
				secretsRule,
				scaleRule,
			}, withVerbs(nativeRules, writeVerbs)...),
		},
		{
			ObjectMeta: meta(Viewer, map[string]string{aggregateToView: "true"}),
			Rules: append([]rbacv1.PolicyRule{
				{APIGroups: []string{groupTypes}, Resources: []string{"*"}, Verbs: readVerbs},
				{APIGroups: []string{groupCellfed}, Resources: []string{"templaterevisions", "cells", "cells/status"}, Verbs: readVerbs},
				{APIGroups: []string{groupKubeFed}, Resources: []string{"propagatedversions"}, Verbs: readVerbs},
				{APIGroups: []string{groupScheduling}, Resources: []string{"replicaschedulingpreferences"}, Verbs: readVerbs},
				{APIGroups: []string{groupPolicy}, Resources: []string{"propagationpolicies"}, Verbs: readVerbs},
				viewerProxyRule,
			}, withVerbs(nativeRules, readVerbs)...),
		},
		{
			ObjectMeta: meta(TypeReader, nil),
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{groupKubeFed}, Resources: []string{"federatedtypeconfigs"}, Verbs: readVerbs},
			},
		},
		{
			ObjectMeta: meta(RegistrationBootstrapper, nil),
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{groupCellfed}, Resources: []string{"clusterregistrations"}, Verbs: []string{"create"}},
			},
		},
		{
			ObjectMeta: meta(TunnelHub, nil),
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{groupCellfed}, Resources: []string{"clusterregistrations"}, Verbs: readVerbs},
			},
		},
	}
}

// BootstrapperBinding binds RegistrationBootstrapper to BootstrapperGroup.
func BootstrapperBinding() *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: meta(RegistrationBootstrapper, nil),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: RegistrationBootstrapper},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: BootstrapperGroup}},
	}
}

// TypeReaderBinding lets every authenticated user read the
// FederatedTypeConfigs of the federation namespace (which types are
// enabled, and their target types: what `cellfedctl rollout` resolves a
// kind with), and nothing else there.
func TypeReaderBinding(fedNamespace string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: TypeReader, Namespace: fedNamespace, Labels: map[string]string{LabelManaged: "true"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: TypeReader},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:authenticated"}},
	}
}

func meta(name string, labels map[string]string) metav1.ObjectMeta {
	l := map[string]string{LabelManaged: "true"}
	for k, v := range labels {
		l[k] = v
	}
	return metav1.ObjectMeta{Name: name, Labels: l}
}

// Tenant roles `cellfedctl tenant grant --role` accepts, to ClusterRole
// names.
var TenantRoles = map[string]string{
	"app-team": AppTeam,
	"viewer":   Viewer,
}
