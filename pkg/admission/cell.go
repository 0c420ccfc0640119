package admission

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

// validateCell: Cells live in tenant workspaces, are named by DNS labels
// (their per-cell cluster name must split back) and name an existing
// physical cluster.
func (a *Admitter) validateCell(r Request) (field.ErrorList, error) {
	var cell cellv1alpha1.Cell
	if err := decodeContent(r.Object.Object, &cell); err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("spec"), "", err.Error())}, nil
	}
	var errs field.ErrorList
	if !cellv1alpha1.IsDNSLabel(cell.Name) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), cell.Name, "cell names are DNS labels: lowercase letters, digits and '-', at most 63 characters, no dots"))
	}
	ns, err := a.Lookup.Namespace(r.Namespace)
	if err != nil {
		return nil, fmt.Errorf("reading namespace %s: %w", r.Namespace, err)
	}
	if ns != nil && (ns.Labels[cellv1alpha1.LabelTenant] == "" || ns.Labels[cellv1alpha1.LabelWorkspace] == "") {
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "namespace"), fmt.Sprintf("cells live in tenant workspaces; make %s one with: kubectl label namespace %s %s=<tenant> %s=<workspace>", r.Namespace, r.Namespace, cellv1alpha1.LabelTenant, cellv1alpha1.LabelWorkspace)))
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
		exists, err := a.Lookup.ClusterExists(cell.Spec.Cluster)
		if err != nil {
			return nil, fmt.Errorf("reading KubeFedCluster %s: %w", cell.Spec.Cluster, err)
		}
		if !exists {
			errs = append(errs, field.Invalid(path, cell.Spec.Cluster, fmt.Sprintf("KubeFedCluster %q does not exist in namespace %s; register the cluster first (kubectl -n %s get kubefedclusters lists the registered ones)", cell.Spec.Cluster, a.FederationNamespace, a.FederationNamespace)))
		}
	}
	return errs, nil
}
