// Package tenancy is the workspace rule: a namespace labelled with a
// tenant and a workspace (cellfed.io/tenant, cellfed.io/workspace) is a
// tenant workspace; its Cells and federated objects carry the same labels
// and reach only its own cells and the physical clusters that are shared
// (no tenant label) or dedicated to its tenant. Admission, the
// propagation controller's pre-selection of clusters, the cell controller
// and cellfedctl apply the rule through these pure functions.
package tenancy

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

// Labels are the tenancy labels, tenant first. A workspace namespace
// carries both; its Cells and federated objects get them from it.
var Labels = []string{cellv1alpha1.LabelTenant, cellv1alpha1.LabelWorkspace}

// Of reads the tenancy labels of a namespace (or of anything labelled
// like one). Missing labels read as "".
func Of(labels map[string]string) (tenant, workspace string) {
	return labels[cellv1alpha1.LabelTenant], labels[cellv1alpha1.LabelWorkspace]
}

// TenantOf is the tenant a namespace belongs to, or the tenant a
// physical cluster is dedicated to; "" for none (a shared cluster).
func TenantOf(labels map[string]string) string {
	return labels[cellv1alpha1.LabelTenant]
}

// IsWorkspace reports whether a namespace with these labels is a tenant
// workspace: it carries both tenancy labels.
func IsWorkspace(labels map[string]string) bool {
	t, w := Of(labels)
	return t != "" && w != ""
}

// IsTenancyLabel reports whether key is one of the tenancy labels.
func IsTenancyLabel(key string) bool {
	return key == cellv1alpha1.LabelTenant || key == cellv1alpha1.LabelWorkspace
}

// Changed reports whether going from labels old to cur changes or
// removes a tenancy label.
func Changed(old, cur map[string]string) bool {
	for _, k := range Labels {
		if old[k] != cur[k] {
			return true
		}
	}
	return false
}

// MayUse reports whether a physical cluster labelled clusterLabels may
// host the cells and objects of tenant: it is shared (no tenant label)
// or dedicated to tenant.
func MayUse(tenant string, clusterLabels map[string]string) bool {
	return mayUseOwned(tenant, TenantOf(clusterLabels))
}

func mayUseOwned(tenant, owner string) bool {
	return owner == "" || owner == tenant
}

// MayReach reports whether an object in namespace (of tenant) may reach
// the KubeFedCluster named cluster: a per-cell or move cluster (named
// <namespace>.<cell>[.move]) of its own namespace whose physical cluster
// it may use (LabelClusterTenant), or a physical cluster it may use.
// Cluster-scoped objects (namespace "") reach every cluster.
func MayReach(namespace, tenant, cluster string, clusterLabels map[string]string) bool {
	if namespace == "" {
		return true
	}
	// Names with a dot are per-cell clusters (<namespace>.<cell>);
	// physical cluster names have none. Split without validating: the
	// propagation controller asks for every cluster of every reconcile.
	if ns, _, isCell := strings.Cut(cluster, "."); isCell {
		// A cell's cluster, or the cluster its move goes to, may be
		// dedicated to another tenant (a dedication that raced the
		// move's admission): its own namespace does not make it reachable.
		return ns == namespace && mayUseOwned(tenant, clusterLabels[cellv1alpha1.LabelClusterTenant])
	}
	return MayUse(tenant, clusterLabels)
}

// PhysicalTenantLabels are the labels a per-cell or move cluster gets
// from the physical cluster it reaches, labelled physicalLabels:
// LabelClusterTenant when that cluster is dedicated to a tenant.
func PhysicalTenantLabels(physicalLabels map[string]string) map[string]string {
	if owner := TenantOf(physicalLabels); owner != "" {
		return map[string]string{cellv1alpha1.LabelClusterTenant: owner}
	}
	return nil
}

// ObjectLabels are the tenancy labels a Cell or federated object in a
// namespace labelled nsLabels gets: the namespace's non-empty ones.
func ObjectLabels(nsLabels map[string]string) map[string]string {
	out := map[string]string{}
	for _, k := range Labels {
		if v := nsLabels[k]; v != "" {
			out[k] = v
		}
	}
	return out
}

// TenantNameError says why tenant is not a tenant name, or is nil. A
// tenant is required: a self-registered cluster is dedicated to one.
func TenantNameError(tenant string) error {
	if tenant == "" {
		return fmt.Errorf("a tenant is required (a self-registered cluster is dedicated to one tenant); name one, or add a shared cluster with `cellfedctl join`")
	}
	if len(validation.IsValidLabelValue(tenant)) > 0 {
		return fmt.Errorf("%q is not a tenant name; tenants are label values: letters, digits, '-', '_' and '.', at most 63 characters", tenant)
	}
	return nil
}

// WorkspaceNameError says why workspace is not a workspace name, or is
// nil. An empty workspace is no workspace and is accepted.
func WorkspaceNameError(workspace string) error {
	if workspace != "" && !cellv1alpha1.IsDNSLabel(workspace) {
		return fmt.Errorf("%q is not a workspace name; workspaces are DNS labels (lowercase letters, digits and '-')", workspace)
	}
	return nil
}

// ReservedNamespaceError says why namespace cannot be a tenant workspace
// (the plane's own namespaces: default, kube-*, among them the
// federation namespace), or is nil.
func ReservedNamespaceError(namespace string) error {
	if strings.HasPrefix(namespace, "kube-") || namespace == "default" {
		return fmt.Errorf("namespace %s is reserved for the plane; choose another name for a tenant workspace", namespace)
	}
	return nil
}

// ClaimError says why namespace, labelled nsLabels, cannot become (or
// stay) workspace of tenant, or is nil: a namespace of another tenant,
// or of the same tenant in another workspace, is refused, since a
// workspace's cells and objects would change hands.
func ClaimError(namespace string, nsLabels map[string]string, tenant, workspace string) error {
	haveTenant, haveWorkspace := Of(nsLabels)
	switch {
	case haveTenant == tenant && haveWorkspace == workspace:
		return nil
	case haveTenant != "" && haveTenant != tenant:
		return fmt.Errorf("namespace %s belongs to tenant %q, not %q; choose another namespace name (a workspace never changes tenant)", namespace, haveTenant, tenant)
	case haveWorkspace != "" && haveWorkspace != workspace:
		return fmt.Errorf("namespace %s is workspace %q of tenant %q, not %q; choose another namespace name, or pass --workspace=%s", namespace, haveWorkspace, haveTenant, workspace, haveWorkspace)
	}
	return nil
}

// NotWorkspaceReason is why a Cell cannot live in namespace: it is no
// tenant workspace, and how to make it one.
func NotWorkspaceReason(namespace string) string {
	return fmt.Sprintf("cells live in tenant workspaces; make %s one with: kubectl label namespace %s %s=<tenant> %s=<workspace>", namespace, namespace, cellv1alpha1.LabelTenant, cellv1alpha1.LabelWorkspace)
}

// DedicatedReason is why a cell of namespace (of tenant nsTenant) cannot
// be placed on cluster, dedicated to tenant owner.
func DedicatedReason(cluster, owner, namespace, nsTenant string) string {
	return fmt.Sprintf("cluster %q is dedicated to tenant %q (its label %s=%s), and namespace %s belongs to tenant %q; place the cell on a shared cluster or one dedicated to %q",
		cluster, owner, cellv1alpha1.LabelTenant, owner, namespace, nsTenant, nsTenant)
}

// MoveDedicatedReason is why the move of cell (in namespace, of tenant
// nsTenant) to cluster, dedicated to tenant owner, cannot go on, and how
// to unblock it.
func MoveDedicatedReason(cell, namespace, nsTenant, cluster, owner string) string {
	return fmt.Sprintf("cluster %s is dedicated to tenant %q (its label %s=%s), and cell %s/%s belongs to tenant %q: its objects are not written there; undo the move (cellfedctl cell move %s -n %s --undo), or remove the dedication (kubectl -n <federation namespace> label kubefedcluster %s %s-)",
		cluster, owner, cellv1alpha1.LabelTenant, owner, namespace, cell, nsTenant, cell, namespace, cluster, cellv1alpha1.LabelTenant)
}

// LabelReason is why an object in namespace cannot carry tenancy label
// key with value have, when the namespace says want ("" when the
// namespace has no such label), or "" when it may.
func LabelReason(namespace, key, want, have string) string {
	switch {
	case want == "":
		return fmt.Sprintf("namespace %s is not a tenant workspace (it has no %s label); remove this label, or label the namespace", namespace, key)
	case have != want:
		return fmt.Sprintf("objects in namespace %s belong to %s %q, not %q; remove this label, it is set from the namespace", namespace, key, want, have)
	}
	return ""
}
