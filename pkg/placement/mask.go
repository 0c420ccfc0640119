package placement

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/types"
	typesv1beta1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
	"github.com/cellfed/cellfed/pkg/conversion"
)

// Mask is the topology names in a v1beta2 object's placement mask; nil
// when it has none (every placed topology is released).
func Mask(fed *typesv1beta2.FederatedObject) []string {
	if fed.Spec.PlacementMask == nil {
		return nil
	}
	names := make([]string, 0, len(fed.Spec.PlacementMask.Topologies))
	for _, t := range fed.Spec.PlacementMask.Topologies {
		names = append(names, t.Name)
	}
	return names
}

// SetMask sets a v1beta2 object's spec.placementMask to the topologies
// named.
func SetMask(obj *unstructured.Unstructured, names []string) error {
	tops := make([]any, len(names))
	for i, n := range names {
		tops[i] = map[string]any{"name": n}
	}
	return unstructured.SetNestedField(obj.Object, map[string]any{"topologies": tops}, "spec", "placementMask")
}

// RemoveMask removes a v1beta2 object's placement mask: every placed
// topology is released.
func RemoveMask(obj *unstructured.Unstructured) {
	unstructured.RemoveNestedField(obj.Object, "spec", "placementMask")
}

var (
	apiVersionV1beta1 = types.GroupName + "/" + typesv1beta1.Version
	apiVersionV1beta2 = types.GroupName + "/" + typesv1beta2.Version
)

// MaskClusters returns the placement mask of a federated object in
// either version as KubeFedCluster names: read from spec.placementMask
// in v1beta2, and in v1beta1 from the conversion stash, exactly when the
// object's v1beta2 view would show it (a stash the placement no longer
// matches is ignored, as conversion ignores it). ok is false when there
// is no mask; a mask with no topologies is a mask that holds everything
// back.
func MaskClusters(obj map[string]any) (clusters []string, ok bool) {
	md, _ := obj["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	var v2 map[string]any
	switch apiVersion, _ := obj["apiVersion"].(string); apiVersion {
	case apiVersionV1beta2:
		v2, _ = obj["spec"].(map[string]any)
	case apiVersionV1beta1:
		if v2, ok = conversion.StashedV1beta2Spec(obj); !ok {
			return nil, false
		}
	default:
		return nil, false
	}
	mask, found := v2["placementMask"].(map[string]any)
	if !found {
		return nil, false
	}
	typ := typesv1beta2.TopologyCell
	if p, ok := v2["placement"].(map[string]any); ok {
		if t, _ := p["topologyType"].(string); t != "" {
			typ = typesv1beta2.TopologyType(t)
		}
	}
	clusters = []string{}
	list, _ := mask["topologies"].([]any)
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		name, _ := m["name"].(string)
		if typ == typesv1beta2.TopologyCell && ns != "" {
			name = cellv1alpha1.CellClusterName(ns, name)
		}
		clusters = append(clusters, name)
	}
	return clusters, true
}
