package admission

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

// Warnings are what an allowed request should be told (kubectl prints
// them as "Warning: ..."): a Cell that makes a federated object's cell
// selector pick two cells of one physical cluster. Only one of them can be
// written there — the controller writes the first by name and reports the
// other PlacementConflict — so the Cell is allowed, with a warning naming
// the object, both cells and the cluster.
func (a *Admitter) Warnings(r Request) ([]string, error) {
	if !r.isCell() || r.Object == nil || r.SubResource != "" || (r.Operation != Create && r.Operation != Update) {
		return nil, nil
	}
	var cell cellv1alpha1.Cell
	if err := decodeContent(r.Object.Object, &cell); err != nil || cell.Spec.Cluster == "" {
		return nil, nil // validation reports a broken Cell
	}
	uses, err := a.Lookup.CellSelectors(r.Namespace)
	if err != nil {
		return nil, fmt.Errorf("listing federated objects of %s: %w", r.Namespace, err)
	}
	var out []string
	for _, u := range uses {
		sel, err := metav1.LabelSelectorAsSelector(u.Selector)
		if err != nil || !sel.Matches(labels.Set(cell.Labels)) {
			continue
		}
		others, err := a.Lookup.Cells(r.Namespace, sel)
		if err != nil {
			return nil, fmt.Errorf("listing cells of %s: %w", r.Namespace, err)
		}
		var same []string
		for _, o := range others {
			if o.Name != cell.Name && o.Spec.Cluster == cell.Spec.Cluster {
				same = append(same, o.Name)
			}
		}
		if len(same) == 0 {
			continue
		}
		sort.Strings(same)
		written := same[0]
		if cell.Name < written {
			written = cell.Name
		}
		out = append(out, fmt.Sprintf("%s %s/%s selects cells by %s, which now picks cells %q and %q on cluster %q: only %q will be written there, the other reports PlacementConflict; change this cell's labels or the object's topologySelector",
			u.Kind, r.Namespace, u.Name, sel.String(), same[0], cell.Name, cell.Spec.Cluster, written))
	}
	sort.Strings(out)
	return out, nil
}
