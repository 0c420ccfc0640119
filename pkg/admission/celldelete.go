package admission

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

// placingListed is how many objects placing a cell a refused deletion
// names.
const placingListed = 10

// validateCellDeletion refuses to delete a Cell that federated objects
// still place: its per-cell KubeFedCluster would go, and with it every
// way to reach what those objects put on its member. A drained cell
// (LabelDraining set, and cellfed-controller counting no object on it)
// may go: what still names it is reported CellNotFound.
func (a *Admitter) validateCellDeletion(r Request) (field.ErrorList, error) {
	if r.OldObject == nil {
		return nil, nil
	}
	// The object's own name and namespace: a DeleteCollection (the
	// namespace controller deleting a terminating namespace's Cells)
	// admits each item with the request's empty name.
	r.Namespace, r.Name = r.OldObject.GetNamespace(), r.OldObject.GetName()
	cluster := cellv1alpha1.CellClusterName(r.Namespace, r.Name)
	clusterLabels, _, err := a.Lookup.ClusterLabels(cluster)
	if err != nil {
		return nil, fmt.Errorf("reading KubeFedCluster %s: %w", cluster, err)
	}
	if clusterLabels == nil {
		// Not made yet (or already gone): selectors match the labels the
		// cell controller gives it.
		clusterLabels = map[string]string{
			cellv1alpha1.LabelTopologyType: cellv1alpha1.TopologyTypeCell,
			cellv1alpha1.LabelNamespace:    r.Namespace,
			cellv1alpha1.LabelCell:         r.Name,
		}
		for k, v := range r.OldObject.GetLabels() {
			clusterLabels[k] = v
		}
	}
	names, count, err := a.Lookup.ObjectsPlacing(r.Namespace, cluster, clusterLabels, placingListed)
	if err != nil {
		return nil, fmt.Errorf("listing the federated objects that place cell %s: %w", r.Name, err)
	}
	held, counted, _ := unstructured.NestedInt64(r.OldObject.Object, "status", "objects")
	return cellDeletionErrors(r.Namespace, r.Name, r.OldObject.GetLabels()[cellv1alpha1.LabelDraining] == "true", names, count, held, counted), nil
}

// cellDeletionErrors decides a Cell deletion: allowed when nothing places
// the cell, or when the cell is drained (draining, and counted holding
// no object). It is a pure function.
func cellDeletionErrors(namespace, cell string, draining bool, placing []string, count int, held int64, counted bool) field.ErrorList {
	if count == 0 || (draining && counted && held == 0) {
		return nil
	}
	listed := strings.Join(placing, ", ")
	if count > len(placing) {
		listed += fmt.Sprintf(" and %d more", count-len(placing))
	}
	path := field.NewPath("metadata", "name")
	if draining {
		holds := "has not been counted yet"
		if counted {
			holds = fmt.Sprintf("still holds %d", held)
		}
		return field.ErrorList{field.Forbidden(path, fmt.Sprintf(
			"cell %s is draining but %s of its member objects; %s place it (%s). Wait for the drain to finish: cellfedctl cell delete %s -n %s --drain waits, then deletes the cell",
			cell, holds, objectsCount(count), listed, cell, namespace))}
	}
	return field.ErrorList{field.Forbidden(path, fmt.Sprintf(
		"cell %s is placed by %s (%s); deleting it would strand what they put on its cluster. Either remove the cell from those objects' spec.placement first, or run cellfedctl cell delete %s -n %s --drain, which removes their member objects from the cell (objects annotated kubefed.io/orphan=true are left in place, unmanaged), waits for them to be gone, then deletes the cell",
		cell, objectsCount(count), listed, cell, namespace))}
}

// objectsCount is "1 federated object" or "n federated objects".
func objectsCount(n int) string {
	if n == 1 {
		return "1 federated object"
	}
	return fmt.Sprintf("%d federated objects", n)
}
