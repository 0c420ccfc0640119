package rollout

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
	"github.com/cellfed/cellfed/pkg/placement"
)

// The names below moved to pkg/placement. They stay only until the
// rollout controller (pkg/controller/rollout, becoming
// pkg/controller/rolloutcontroller) calls pkg/placement; remove them then.

// Candidate is a topology a selector placement may select.
//
// Deprecated: use placement.Topology.
type Candidate = placement.Topology

// Placed is the object's placed topologies in the rollout's stable order.
//
// Deprecated: use placement.Topologies(fed.Spec.Placement, candidates).
func Placed(fed *typesv1beta2.FederatedObject, candidates []Candidate) ([]string, error) {
	return placement.Topologies(fed.Spec.Placement, candidates)
}

// TopologyType is the placement's topology type, cell by default.
//
// Deprecated: use placement.TopologyType(fed.Spec.Placement).
func TopologyType(fed *typesv1beta2.FederatedObject) typesv1beta2.TopologyType {
	return placement.TopologyType(fed.Spec.Placement)
}

// Mask is the names in the object's placement mask; nil when it has none.
//
// Deprecated: use placement.Mask.
func Mask(fed *typesv1beta2.FederatedObject) []string { return placement.Mask(fed) }

// SetMask sets spec.placementMask to the topologies named.
//
// Deprecated: use placement.SetMask.
func SetMask(obj *unstructured.Unstructured, names []string) error {
	return placement.SetMask(obj, names)
}
