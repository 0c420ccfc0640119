// Package v1beta1 is the community shape of a federated type in
// types.kubefed.io/v1beta1, wire-compatible with KubeFed v0.10.0: placement
// by cluster name or cluster selector, overrides per cluster, status per
// cluster. Every enabled type (FederatedDeployment, ...) has this shape
// around its own template.
//
// The doc comments of these types are the descriptions `kubectl explain`
// shows (see package v1beta2).
//
// +groupName=types.kubefed.io
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Version is the version name of this shape.
const Version = "v1beta1"

// FederatedObject is any federated type (FederatedDeployment,
// FederatedService, ...) in KubeFed's shape: a template of the target
// object, the clusters it is placed on, overrides per cluster and the
// propagation status per cluster. A cell is the per-cell cluster
// <namespace>.<cell>; the v1beta2 shape places by cell directly.
//
// +kubebuilder:object:root=true
type FederatedObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec is what to propagate and where.
	Spec Spec `json:"spec,omitempty"`
	// Status is written by the sync controller: how the object was
	// propagated, per placed cluster.
	Status *Status `json:"status,omitempty"`
}

// Spec is what to propagate and where.
type Spec struct {
	// Template is the whole target object (its kind's schema) written to
	// every placed cluster, changed there by the overrides. Its
	// metadata.name and metadata.namespace are the federated object's.
	Template runtime.RawExtension `json:"template,omitempty"`
	// Placement selects the KubeFedClusters the template is written to.
	Placement Placement `json:"placement,omitempty"`
	// Overrides change the template for single clusters: JSON-patch
	// operations applied to the template before it is written there.
	Overrides []Override `json:"overrides,omitempty"`
	// RetainReplicas keeps the member's spec.replicas: set on create, then
	// left to the member (e.g. its autoscaler).
	RetainReplicas *bool `json:"retainReplicas,omitempty"`
}

// Placement is clusters by name, or by selector over KubeFedCluster labels.
// An explicit empty Clusters list means no clusters.
type Placement struct {
	// Clusters names the placed KubeFedClusters (a cell as
	// <namespace>.<cell>). It wins over clusterSelector; listed, an empty
	// list places nowhere.
	Clusters []ClusterReference `json:"clusters,omitempty"`
	// ClusterSelector places on every KubeFedCluster whose labels it
	// matches, when clusters is not set. One that names no cellfed.io/
	// label selects physical clusters only.
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`
}

// ClusterReference names a KubeFedCluster.
type ClusterReference struct {
	// Name of the KubeFedCluster in the federation namespace.
	Name string `json:"name"`
}

// Override changes the template for one cluster.
type Override struct {
	// ClusterName is the KubeFedCluster the operations apply to.
	ClusterName string `json:"clusterName"`
	// ClusterOverrides are the operations, applied in order.
	ClusterOverrides []ClusterOverride `json:"clusterOverrides,omitempty"`
}

// ClusterOverride is one JSON-patch operation (add, remove, replace).
type ClusterOverride struct {
	// Op is the JSON-patch operation: add, remove or replace (the
	// default).
	Op string `json:"op,omitempty"`
	// Path is a JSON pointer into the template, e.g. /spec/replicas. It
	// may not touch metadata.name, metadata.namespace, kind or apiVersion.
	Path string `json:"path"`
	// Value is the value to add or replace with (any JSON).
	Value *runtime.RawExtension `json:"value,omitempty"`
}

// Status is the propagation status.
type Status struct {
	// ObservedGeneration is the generation of the spec this status
	// describes.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are Propagation (written as asked to every placed
	// cluster) and Ready (every placed cluster's member object is ready).
	Conditions []Condition `json:"conditions,omitempty"`
	// Clusters is the status in each placed cluster, with the member
	// object's own status (status reflow).
	Clusters []ClusterStatus `json:"clusters,omitempty"`
	// Released is "n/m": of the m placed clusters, n are in the placement
	// mask (all of them without a mask).
	Released string `json:"released,omitempty"`
	// Propagated is "n/m": of the m placed topologies, n run the current
	// generation (are updated).
	Propagated string `json:"propagated,omitempty"`
	// Ready is "n/m": of the m placed topologies, n are ready.
	Ready string `json:"ready,omitempty"`
}

// Condition is KubeFed's generic condition.
type Condition struct {
	// Type of the condition: Propagation or Ready.
	Type string `json:"type"`
	// Status of the condition: True, False or Unknown.
	Status string `json:"status"`
	// LastUpdateTime is when the condition was last written.
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitempty"`
	// LastTransitionTime is when the status last changed.
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason is a one-word CamelCase reason for the status.
	Reason string `json:"reason,omitempty"`
	// Message says what is wrong, naming the clusters.
	Message string `json:"message,omitempty"`
}

// ClusterStatus is the propagation status in one cluster.
type ClusterStatus struct {
	// Name of the placed KubeFedCluster.
	Name string `json:"name"`
	// Status is empty when the object is propagated (KubeFed's OK),
	// HeldBack outside the placement mask, or why the object is not
	// propagated there (e.g. ClusterNotReady, UpdateFailed).
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
	// Replicas is what cellfed's replica division (the v1beta2
	// spec.replicaDivision) assigns this cluster; absent without one.
	Replicas *int32 `json:"replicas,omitempty"`
	// Message is what the member answered when it refused or failed the
	// last write (e.g. a validation error), so app teams see it without
	// reading Events.
	Message string `json:"message,omitempty"`
}
