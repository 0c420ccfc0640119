package admission

import (
	"strings"
	"testing"
)

// TestValidatePodSecurity: a FederatedNamespace cannot set Pod Security
// (nor the platform's level label) on members, in its template or
// overrides; a plane namespace's level label must be a level.
func TestValidatePodSecurity(t *testing.T) {
	fedNS := func(version, spec string) string {
		return strings.Replace(federated(version, "FederatedNamespace", "shop", "", spec), "name: web", "name: shop", 1)
	}
	const place1 = "placement: {clusters: [{name: c1}]}\n"
	const place2 = "placement: {topologies: [{name: rz00a}]}\n"
	runValidate(t, []validateCase{
		{
			name: "a FederatedNamespace with its own labels",
			obj:  fedNS("v1beta1", place1+"template: {metadata: {labels: {team: a}}}\n"),
		},
		{
			name: "enforce privileged in the template",
			obj:  fedNS("v1beta1", place1+"template: {metadata: {labels: {pod-security.kubernetes.io/enforce: privileged}}}\n"),
			want: forbidden,
			msgs: []string{"spec.template.metadata.labels[pod-security.kubernetes.io/enforce]", "is the platform's", "kubectl label namespace shop cellfed.io/pod-security="},
		},
		{
			name: "the platform's level label in a v1beta2 template",
			obj:  fedNS("v1beta2", place2+"template: {metadata: {labels: {cellfed.io/pod-security: privileged}}}\n"),
			want: forbidden,
			msgs: []string{"spec.template.metadata.labels[cellfed.io/pod-security]"},
		},
		{
			name: "enforce privileged by an override of one label",
			obj:  fedNS("v1beta1", place1+"template: {}\noverrides: [{clusterName: c1, clusterOverrides: [{path: /metadata/labels/pod-security.kubernetes.io~1enforce, value: privileged}]}]\n"),
			want: forbidden,
			msgs: []string{"spec.overrides[0].clusterOverrides[0]", "label pod-security.kubernetes.io/enforce is the platform's"},
		},
		{
			name: "enforce privileged by an override of all labels",
			obj:  fedNS("v1beta1", place1+"template: {}\noverrides: [{clusterName: c1, clusterOverrides: [{path: /metadata/labels, value: {pod-security.kubernetes.io/warn: privileged}}]}]\n"),
			want: forbidden,
			msgs: []string{"label pod-security.kubernetes.io/warn is the platform's"},
		},
		{
			name: "enforce privileged by an override of the metadata",
			obj:  fedNS("v1beta1", place1+"template: {}\noverrides: [{clusterName: c1, clusterOverrides: [{path: /metadata, value: {labels: {pod-security.kubernetes.io/audit: privileged}}}]}]\n"),
			want: forbidden,
			msgs: []string{"cannot be overridden", "label pod-security.kubernetes.io/audit is the platform's"},
		},
		{
			name: "an override of another label",
			obj:  fedNS("v1beta1", place1+"template: {}\noverrides: [{clusterName: c1, clusterOverrides: [{path: /metadata/labels/team, value: b}]}]\n"),
		},
		{
			name: "a FederatedDeployment's pod labels are not checked",
			obj:  v1(place1 + "template: {metadata: {labels: {pod-security.kubernetes.io/enforce: privileged}}}\n"),
		},
		{
			name: "a platform admin sets a workspace's level",
			op:   Update,
			obj:  namespaceManifest("shop", "cellfed.io/tenant: acme, cellfed.io/workspace: prod, cellfed.io/pod-security: restricted"),
			old:  namespaceManifest("shop", "cellfed.io/tenant: acme, cellfed.io/workspace: prod"),
		},
		{
			name: "a level that is none",
			op:   Update,
			obj:  namespaceManifest("shop", "cellfed.io/tenant: acme, cellfed.io/workspace: prod, cellfed.io/pod-security: none"),
			old:  namespaceManifest("shop", "cellfed.io/tenant: acme, cellfed.io/workspace: prod"),
			want: invalid,
			msgs: []string{"metadata.labels[cellfed.io/pod-security]", `"none" is not a Pod Security level; use one of privileged, baseline, restricted`},
		},
	})
}
