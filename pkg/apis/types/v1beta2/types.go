// Package v1beta2 is the multi-topology shape of a federated type in
// types.kubefed.io/v1beta2: placement by topology (cell by default, or
// cluster), a placement mask for staged releases, overrides and status
// named by topology. It is the same CRD as v1beta1; cellfed converts
// between the two (pkg/conversion).
package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Version is the version name of this shape.
const Version = "v1beta2"

// TopologyType says what placement names refer to.
type TopologyType string

const (
	// TopologyCell places by Cell (deployment unit) in the object's
	// namespace. The default.
	TopologyCell TopologyType = "cell"
	// TopologyCluster places by physical KubeFedCluster, as KubeFed does.
	TopologyCluster TopologyType = "cluster"
)

// TopologyTypes are the supported topology types.
var TopologyTypes = []TopologyType{TopologyCell, TopologyCluster}

// FederatedObject is any federated type in its v1beta2 shape.
type FederatedObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              Spec    `json:"spec,omitempty"`
	Status            *Status `json:"status,omitempty"`
}

// Spec is what to propagate and where.
type Spec struct {
	Template      runtime.RawExtension `json:"template,omitempty"`
	Placement     Placement            `json:"placement,omitempty"`
	PlacementMask *PlacementMask       `json:"placementMask,omitempty"`
	Overrides     []Override           `json:"overrides,omitempty"`
	// RetainReplicas keeps the member's spec.replicas.
	RetainReplicas *bool `json:"retainReplicas,omitempty"`
}

// Placement selects topologies of one type: by name, or by a selector over
// the labels of Cells (type cell) or KubeFedClusters (type cluster). An
// explicit empty Topologies list means nowhere.
type Placement struct {
	TopologyType     TopologyType          `json:"topologyType,omitempty"`
	Topologies       []Topology            `json:"topologies,omitempty"`
	TopologySelector *metav1.LabelSelector `json:"topologySelector,omitempty"`
}

// Topology names a cell or a cluster, per the placement's topology type.
type Topology struct {
	Name string `json:"name"`
}

// PlacementMask limits a release to some of the placed topologies
// (grayscale and disaster-recovery releases).
type PlacementMask struct {
	Topologies []Topology `json:"topologies"`
}

// Override changes the template for one topology.
type Override struct {
	TopologyName     string            `json:"topologyName"`
	ClusterOverrides []ClusterOverride `json:"clusterOverrides,omitempty"`
}

// ClusterOverride is one JSON-patch operation (add, remove, replace).
type ClusterOverride struct {
	Op    string                `json:"op,omitempty"`
	Path  string                `json:"path"`
	Value *runtime.RawExtension `json:"value,omitempty"`
}

// Status is the propagation status.
type Status struct {
	ObservedGeneration int64            `json:"observedGeneration,omitempty"`
	Conditions         []Condition      `json:"conditions,omitempty"`
	Topologies         []TopologyStatus `json:"topologies,omitempty"`
	// Propagated is "n/m": of the m placed topologies, n run the current
	// generation.
	Propagated string `json:"propagated,omitempty"`
	// Ready is "n/m": of the m placed topologies, n are ready.
	Ready string `json:"ready,omitempty"`
}

// Condition is KubeFed's generic condition.
type Condition struct {
	Type               string      `json:"type"`
	Status             string      `json:"status"`
	LastUpdateTime     metav1.Time `json:"lastUpdateTime,omitempty"`
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	Reason             string      `json:"reason,omitempty"`
	Message            string      `json:"message,omitempty"`
}

// TopologyStatus is the propagation status in one topology. Cluster is the
// KubeFedCluster the status was reported for.
type TopologyStatus struct {
	Name    string `json:"name"`
	Cluster string `json:"cluster,omitempty"`
	Status  string `json:"status,omitempty"`
	// Generation is the federated object's generation the member object
	// was last brought in line with there (0: never). A cluster held
	// back by the placement mask keeps the generation it runs.
	Generation int64 `json:"generation,omitempty"`
	// Ready says whether the member object is ready: Deployments,
	// StatefulSets, DaemonSets and Jobs by their own readiness, other
	// kinds once they are there. Absent while unknown.
	Ready *bool `json:"ready,omitempty"`
	// RemoteStatus is the member object's status (status reflow).
	RemoteStatus *runtime.RawExtension `json:"remoteStatus,omitempty"`
}
