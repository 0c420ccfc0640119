package clusters

import (
	"maps"
	"slices"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
)

// StatusOnly reports whether an informer update changed nothing a
// controller reconciles from but the status: the same generation (the
// spec bumps it), labels, annotations, finalizers and deletion. A
// controller's own status writes come back this way and need no
// reconcile. Objects without a generation, or that are not objects (a
// tombstone), never count as status-only.
func StatusOnly(old, cur any) bool {
	o, err := apimeta.Accessor(old)
	if err != nil {
		return false
	}
	n, err := apimeta.Accessor(cur)
	if err != nil {
		return false
	}
	return o.GetGeneration() == n.GetGeneration() && n.GetGeneration() != 0 &&
		o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp()) &&
		slices.Equal(o.GetFinalizers(), n.GetFinalizers()) &&
		maps.Equal(o.GetLabels(), n.GetLabels()) &&
		maps.Equal(o.GetAnnotations(), n.GetAnnotations())
}
