package admission

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
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
	moveErrs, err := a.validateCellMove(r, &cell, ns)
	if err != nil {
		return nil, err
	}
	errs = append(errs, moveErrs...)
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
// (label cellfed.io/tenant) while other tenants' Cells use it: are on it
// (spec.cluster) or moving to it (spec.move.to).
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
	moving := false
	for _, c := range cells {
		ns, err := a.Lookup.Namespace(c.Namespace)
		if err != nil {
			return nil, fmt.Errorf("reading namespace %s: %w", c.Namespace, err)
		}
		t := ""
		if ns != nil {
			t = tenancy.TenantOf(ns.Labels)
		}
		switch {
		case t == owner:
		case c.Spec.Cluster == r.Name:
			others = append(others, fmt.Sprintf("%s/%s (tenant %q)", c.Namespace, c.Name, t))
		default:
			moving = true
			others = append(others, fmt.Sprintf("%s/%s (tenant %q, moving to it)", c.Namespace, c.Name, t))
		}
	}
	if len(others) == 0 {
		return nil, nil
	}
	sort.Strings(others)
	fix := "move or delete those cells first"
	if moving {
		fix += ", and undo the moves to it (cellfedctl cell move <cell> -n <namespace> --undo)"
	}
	return field.ErrorList{field.Forbidden(field.NewPath("metadata", "labels").Key(cellv1alpha1.LabelTenant),
		fmt.Sprintf("cluster %s cannot be dedicated to tenant %q: other tenants' cells use it: %s; %s", r.Name, owner, strings.Join(others, ", "), fix))}, nil
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

// validateCellMove: spec.move names an existing physical cluster the
// namespace may use, other than the cell's; a move under way keeps its
// target (undo it first), and the cell's cluster changes during a move
// only as the move's end does (to the move's target, clearing it).
func (a *Admitter) validateCellMove(r Request, cell *cellv1alpha1.Cell, ns *corev1.Namespace) (field.ErrorList, error) {
	var errs field.ErrorList
	path := field.NewPath("spec", "move")
	var old *cellv1alpha1.Cell
	if r.Operation == Update && r.OldObject != nil {
		old = &cellv1alpha1.Cell{}
		if err := decodeContent(r.OldObject.Object, old); err != nil {
			old = nil // a malformed stored cell has no move to keep
		}
	}
	if old != nil && old.Spec.Move != nil {
		switch mv := cell.Spec.Move; {
		case mv == nil:
			if cell.Spec.Cluster != old.Spec.Cluster && cell.Spec.Cluster != old.Spec.Move.To {
				errs = append(errs, field.Forbidden(field.NewPath("spec", "cluster"), fmt.Sprintf("cell %s is moving to cluster %s; it can only end there or stay on %s", cell.Name, old.Spec.Move.To, old.Spec.Cluster)))
			}
			return errs, nil
		case mv.To != old.Spec.Move.To:
			errs = append(errs, field.Forbidden(path.Child("to"), fmt.Sprintf("cell %s is moving to cluster %s; undo that move first (cellfedctl cell move %s -n %s --undo), then move it to %s", cell.Name, old.Spec.Move.To, cell.Name, cell.Namespace, mv.To)))
		case cell.Spec.Cluster != old.Spec.Cluster:
			errs = append(errs, field.Forbidden(field.NewPath("spec", "cluster"), fmt.Sprintf("cell %s is moving to cluster %s; its cluster changes when the move ends", cell.Name, old.Spec.Move.To)))
		case old.Spec.Move.Undo && !mv.Undo:
			errs = append(errs, field.Forbidden(path.Child("undo"), "a move being undone cannot be resumed; once the undo ends, start a new move"))
		}
		return errs, nil
	}
	mv := cell.Spec.Move
	if mv == nil {
		return nil, nil
	}
	to := path.Child("to")
	switch {
	case mv.To == "":
		errs = append(errs, field.Required(to, "name the physical KubeFedCluster the cell moves to"))
	case !cellv1alpha1.IsDNSLabel(mv.To):
		errs = append(errs, field.Invalid(to, mv.To, "must name a physical cluster (a DNS label); names with a dot are per-cell clusters"))
	case mv.To == cell.Spec.Cluster:
		errs = append(errs, field.Invalid(to, mv.To, fmt.Sprintf("cell %s is on cluster %s already", cell.Name, mv.To)))
	case mv.Undo:
		errs = append(errs, field.Forbidden(path.Child("undo"), "there is no move to undo"))
	case old != nil && old.Spec.Cluster != cell.Spec.Cluster:
		errs = append(errs, field.Forbidden(field.NewPath("spec", "cluster"), "change the cluster or start a move, not both: a move changes the cluster when it ends"))
	default:
		clusterLabels, exists, err := a.Lookup.ClusterLabels(mv.To)
		if err != nil {
			return nil, fmt.Errorf("reading KubeFedCluster %s: %w", mv.To, err)
		}
		if !exists {
			errs = append(errs, field.Invalid(to, mv.To, fmt.Sprintf("KubeFedCluster %q does not exist in namespace %s; register the cluster first (kubectl -n %s get kubefedclusters lists the registered ones)", mv.To, a.FederationNamespace, a.FederationNamespace)))
			break
		}
		if ns != nil && !tenancy.MayUse(tenancy.TenantOf(ns.Labels), clusterLabels) {
			errs = append(errs, field.Forbidden(to, tenancy.DedicatedReason(mv.To, tenancy.TenantOf(clusterLabels), cell.Namespace, tenancy.TenantOf(ns.Labels))))
		}
	}
	if mv.Batch < 0 {
		errs = append(errs, field.Invalid(path.Child("batch"), mv.Batch, "must be at least 1 (0 or unset: 10)"))
	}
	return errs, nil
}
