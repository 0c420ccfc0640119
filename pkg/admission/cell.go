package admission

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/tenancy"
)

// validateCell: Cells live in tenant workspaces, are named by DNS labels
// (their per-cell cluster name must split back) and name an existing
// physical cluster.
func (a *Admitter) validateCell(r Request) (field.ErrorList, error) {
	var cell cellv1alpha1.Cell
	if err := decodeContent(r.Object.Object, &cell); err != nil {
		return decodeErrors(err), nil
	}
	var errs field.ErrorList
	for _, k := range []string{cellv1alpha1.LabelNamespace, cellv1alpha1.LabelCell, cellv1alpha1.LabelTopologyType} {
		if _, set := cell.Labels[k]; set && (r.OldObject == nil || r.OldObject.GetLabels()[k] != cell.Labels[k]) {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "labels").Key(k), "reserved: the per-cell cluster gets it from the Cell's namespace and name; remove this label"))
		}
	}
	if !cellv1alpha1.IsDNSLabel(cell.Name) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), cell.Name, "cell names are DNS labels: lowercase letters, digits and '-', at most 63 characters, no dots"))
	}
	ns, err := a.Lookup.Namespace(r.Namespace)
	if err != nil {
		return nil, fmt.Errorf("reading namespace %s: %w", r.Namespace, err)
	}
	if ns != nil && !tenancy.IsWorkspace(ns.Labels) {
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "namespace"), tenancy.NotWorkspaceReason(r.Namespace)))
	}
	path := field.NewPath("spec", "cluster")
	switch {
	case cell.Spec.Cluster == "":
		errs = append(errs, field.Required(path, "name the physical KubeFedCluster that hosts this cell"))
	case !cellv1alpha1.IsDNSLabel(cell.Spec.Cluster):
		errs = append(errs, field.Invalid(path, cell.Spec.Cluster, "must name a physical cluster (a DNS label); names with a dot are per-cell clusters"))
	default:
		if r.Operation == Update && r.OldObject != nil {
			if oldCluster, _, _ := unstructured.NestedString(r.OldObject.Object, "spec", "cluster"); oldCluster == cell.Spec.Cluster {
				return errs, nil
			}
		}
		clusterLabels, exists, err := a.Lookup.ClusterLabels(cell.Spec.Cluster)
		if err != nil {
			return nil, fmt.Errorf("reading KubeFedCluster %s: %w", cell.Spec.Cluster, err)
		}
		if !exists {
			errs = append(errs, field.Invalid(path, cell.Spec.Cluster, fmt.Sprintf("KubeFedCluster %q does not exist in namespace %s; register the cluster first (kubectl -n %s get kubefedclusters lists the registered ones)", cell.Spec.Cluster, a.FederationNamespace, a.FederationNamespace)))
			break
		}
		if ns != nil && !tenancy.MayUse(tenancy.TenantOf(ns.Labels), clusterLabels) {
			errs = append(errs, field.Forbidden(path, tenancy.DedicatedReason(cell.Spec.Cluster, tenancy.TenantOf(clusterLabels), r.Namespace, tenancy.TenantOf(ns.Labels))))
		}
	}
	return errs, nil
}

// validateDedication refuses to dedicate a physical cluster to a tenant
// (label cellfed.io/tenant) while other tenants' Cells use it.
func (a *Admitter) validateDedication(r Request) (field.ErrorList, error) {
	owner := tenancy.TenantOf(r.Object.GetLabels())
	if owner == "" || strings.Contains(r.Name, ".") {
		return nil, nil
	}
	if r.Operation == Update && r.OldObject != nil && tenancy.TenantOf(r.OldObject.GetLabels()) == owner {
		return nil, nil
	}
	cells, err := a.Lookup.CellsOnCluster(r.Name)
	if err != nil {
		return nil, fmt.Errorf("listing the cells of cluster %s: %w", r.Name, err)
	}
	var others []string
	for _, c := range cells {
		ns, err := a.Lookup.Namespace(c.Namespace)
		if err != nil {
			return nil, fmt.Errorf("reading namespace %s: %w", c.Namespace, err)
		}
		t := ""
		if ns != nil {
			t = tenancy.TenantOf(ns.Labels)
		}
		if t != owner {
			others = append(others, fmt.Sprintf("%s/%s (tenant %q)", c.Namespace, c.Name, t))
		}
	}
	if len(others) == 0 {
		return nil, nil
	}
	sort.Strings(others)
	return field.ErrorList{field.Forbidden(field.NewPath("metadata", "labels").Key(cellv1alpha1.LabelTenant),
		fmt.Sprintf("cluster %s cannot be dedicated to tenant %q: other tenants' cells use it: %s; move or delete those cells first", r.Name, owner, strings.Join(others, ", ")))}, nil
}

// validateNamespaceTenancy refuses to change or remove a namespace's
// tenancy labels while it holds Cells or federated objects: they belong
// to the workspace, and their per-cell clusters and placements with it.
func (a *Admitter) validateNamespaceTenancy(r Request) (field.ErrorList, error) {
	if r.Object.GetDeletionTimestamp() != nil {
		return nil, nil
	}
	if err := tenancy.ReservedNamespaceError(r.Object.GetName()); err != nil || r.Object.GetName() == a.FederationNamespace {
		var old map[string]string
		if r.OldObject != nil {
			old = r.OldObject.GetLabels()
		}
		for _, k := range []string{cellv1alpha1.LabelTenant, cellv1alpha1.LabelWorkspace} {
			if v, set := r.Object.GetLabels()[k]; set && (old == nil || old[k] != v) {
				reason := fmt.Sprintf("namespace %s is the federation namespace; choose another name for a tenant workspace", r.Object.GetName())
				if err != nil {
					reason = err.Error()
				}
				return field.ErrorList{field.Forbidden(field.NewPath("metadata", "labels").Key(k), reason)}, nil
			}
		}
	}
	if r.Operation != Update || r.OldObject == nil {
		return nil, nil
	}
	if !tenancyChanged(r.OldObject, r.Object) {
		return nil, nil
	}
	changed := cellv1alpha1.LabelTenant
	if r.Object.GetLabels()[changed] == r.OldObject.GetLabels()[changed] {
		changed = cellv1alpha1.LabelWorkspace
	}
	const limit = 5
	var held []string
	cells, err := a.Lookup.Cells(r.Name, labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing the cells of %s: %w", r.Name, err)
	}
	for _, c := range cells {
		held = append(held, "Cell/"+c.Name)
	}
	objs, err := a.Lookup.FederatedObjects(r.Name, limit)
	if err != nil {
		return nil, err
	}
	held = append(held, objs...)
	if len(held) == 0 {
		return nil, nil
	}
	sort.Strings(held)
	more := ""
	if len(held) > limit {
		held, more = held[:limit], ", …"
	}
	return field.ErrorList{field.Forbidden(field.NewPath("metadata", "labels").Key(changed),
		fmt.Sprintf("namespace %s is a tenant workspace holding %s%s: changing or removing its tenancy labels would strand them; delete or move them first", r.Name, strings.Join(held, ", "), more))}, nil
}

// tenancyChanged reports whether an update changes or removes a tenancy
// label.
func tenancyChanged(old, cur *unstructured.Unstructured) bool {
	return tenancy.Changed(old.GetLabels(), cur.GetLabels())
}
