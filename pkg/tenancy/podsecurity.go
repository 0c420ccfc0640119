package tenancy

import (
	"fmt"
	"maps"
	"strings"
)

// Pod Security on members: every member namespace the federation creates
// or federates (outside the reserved default and kube-*) carries
// Kubernetes' Pod Security enforcement at one level, the platform's
// default (cellfed-controller --pod-security-level, "baseline") unless a
// platform admin labels the workspace namespace on the plane with
// LabelPodSecurity. Tenants never set it: the plane's RBAC gives app
// teams no write on namespaces, admission refuses the labels in
// FederatedNamespaces, and the controller writes them over whatever a
// template holds.
const (
	// LabelPodSecurity on a plane namespace is the Pod Security level its
	// member namespaces enforce: privileged, baseline or restricted.
	LabelPodSecurity = "cellfed.io/pod-security"
	// PodSecurityPrefix begins Kubernetes' Pod Security admission labels.
	PodSecurityPrefix = "pod-security.kubernetes.io/"
	// DefaultPodSecurityLevel is the platform's default level.
	DefaultPodSecurityLevel = "baseline"
)

// PodSecurityLevels are the levels, least strict first.
var PodSecurityLevels = []string{"privileged", "baseline", "restricted"}

// PodSecurityLevelError says why level is not a Pod Security level, or
// is nil.
func PodSecurityLevelError(level string) error {
	for _, l := range PodSecurityLevels {
		if level == l {
			return nil
		}
	}
	return fmt.Errorf("%q is not a Pod Security level; use one of %s", level, strings.Join(PodSecurityLevels, ", "))
}

// IsPlatformLabel reports whether a label key on a member namespace is
// the platform's to set: Pod Security's labels and the platform's level
// setting.
func IsPlatformLabel(key string) bool {
	return strings.HasPrefix(key, PodSecurityPrefix) || key == LabelPodSecurity
}

// PodSecurityLevel is the level the member namespaces of the plane
// namespace named namespace, labelled nsLabels, enforce: "" for the
// reserved namespaces (left as the member has them), the namespace's
// LabelPodSecurity when valid, otherwise def. An invalid label (which
// admission refuses) reads as the stricter of def and baseline.
func PodSecurityLevel(namespace string, nsLabels map[string]string, def string) string {
	if ReservedNamespaceError(namespace) != nil {
		return ""
	}
	if l, ok := nsLabels[LabelPodSecurity]; ok {
		if PodSecurityLevelError(l) == nil {
			return l
		}
		if def == "restricted" {
			return def
		}
		return "baseline"
	}
	return def
}

// WithPodSecurity returns labels with the platform labels replaced by
// Pod Security's enforce and warn labels at level (the latest policy
// version); labels itself is not changed. Level "" only removes them.
func WithPodSecurity(labels map[string]string, level string) map[string]string {
	out := maps.Clone(labels)
	if out == nil {
		out = map[string]string{}
	}
	for k := range out {
		if IsPlatformLabel(k) {
			delete(out, k)
		}
	}
	if level == "" {
		return out
	}
	out[PodSecurityPrefix+"enforce"] = level
	out[PodSecurityPrefix+"enforce-version"] = "latest"
	out[PodSecurityPrefix+"warn"] = level
	out[PodSecurityPrefix+"warn-version"] = "latest"
	return out
}
