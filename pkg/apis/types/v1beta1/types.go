// Package v1beta1 is the community shape of a federated type in
// types.kubefed.io/v1beta1, wire-compatible with KubeFed v0.10.0: placement
// by cluster name or cluster selector, overrides per cluster, status per
// cluster. Every enabled type (FederatedDeployment, ...) has this shape
// around its own template.
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Version is the version name of this shape.
const Version = "v1beta1"

// FederatedObject is any federated type in its v1beta1 shape.
type FederatedObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              Spec    `json:"spec,omitempty"`
	Status            *Status `json:"status,omitempty"`
}

// Spec is what to propagate and where.
type Spec struct {
	// Template is the whole target object.
	Template runtime.RawExtension `json:"template,omitempty"`
	// Placement selects clusters.
	Placement Placement `json:"placement,omitempty"`
	// Overrides are JSON-patch-like changes per cluster.
	Overrides []Override `json:"overrides,omitempty"`
	// RetainReplicas keeps the member's spec.replicas.
	RetainReplicas *bool `json:"retainReplicas,omitempty"`
}

// Placement is clusters by name, or by selector over KubeFedCluster labels.
// An explicit empty Clusters list means no clusters.
type Placement struct {
	Clusters        []ClusterReference    `json:"clusters,omitempty"`
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`
}

// ClusterReference names a KubeFedCluster.
type ClusterReference struct {
	Name string `json:"name"`
}

// Override changes the template for one cluster.
type Override struct {
	ClusterName      string            `json:"clusterName"`
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
	ObservedGeneration int64           `json:"observedGeneration,omitempty"`
	Conditions         []Condition     `json:"conditions,omitempty"`
	Clusters           []ClusterStatus `json:"clusters,omitempty"`
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

// ClusterStatus is the propagation status in one cluster.
type ClusterStatus struct {
	Name   string `json:"name"`
	Status string `json:"status,omitempty"`
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
