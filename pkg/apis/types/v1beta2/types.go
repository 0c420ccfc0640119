// Package v1beta2 is the multi-topology shape of a federated type in
// types.kubefed.io/v1beta2: placement by topology (cell by default, or
// cluster), a placement mask for staged releases, overrides and status
// named by topology. It is the same CRD as v1beta1; cellfed converts
// between the two (pkg/conversion).
//
// The doc comments of these types are the descriptions `kubectl explain`
// shows for every federated type: hack/manifests.sh generates them into
// manifests/federated with controller-gen, and pkg/federatedtypes copies
// them into each federated CRD it builds.
//
// +groupName=types.kubefed.io
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

// FederatedObject is any federated type (FederatedDeployment,
// FederatedService, ...) in its multi-topology shape: a template of the
// target object, the cells (or clusters) it is placed on, an optional mask
// that limits a release to some of them, overrides per cell, and the
// propagation status per cell. The same object reads as KubeFed's v1beta1,
// with cells as per-cell clusters named <namespace>.<cell>.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
type FederatedObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec is what to propagate and where.
	Spec Spec `json:"spec,omitempty"`
	// Status is written by cellfed-controller: how the object was
	// propagated, per placed cell or cluster.
	Status *Status `json:"status,omitempty"`
}

// Spec is what to propagate and where.
type Spec struct {
	// Template is the whole target object (its kind's schema) written to
	// every placed cell, changed there by the overrides. Its metadata.name
	// and metadata.namespace are the federated object's.
	Template runtime.RawExtension `json:"template,omitempty"`
	// Placement selects the cells (or clusters) the template is written
	// to: by name or by a label selector. Members outside it do not get
	// the object, and lose it when they leave the placement.
	Placement Placement `json:"placement,omitempty"`
	// PlacementMask limits a release to some of the placed topologies
	// (grayscale and disaster-recovery releases): cellfed-controller acts
	// only on placement ∩ mask. A placed cell outside the mask keeps
	// exactly what it has (status HeldBack): no create, update, delete or
	// drift correction. Unset: every placed cell; an empty list: none.
	// `cellfedctl rollout` moves it.
	PlacementMask *PlacementMask `json:"placementMask,omitempty"`
	// Overrides change the template for single topologies: JSON-patch
	// operations applied to the template before it is written there.
	Overrides []Override `json:"overrides,omitempty"`
	// RetainReplicas keeps the member's spec.replicas: set on create, then
	// left to the member (e.g. its autoscaler).
	RetainReplicas *bool `json:"retainReplicas,omitempty"`
	// ReplicaDivision divides the template's replicas among the placed
	// cells (mode Divide) instead of running all of them in each (mode
	// Duplicate, the default). Only v1beta2 has it: v1beta1 carries it in
	// the conversion annotation, and KubeFed's ReplicaSchedulingPreference
	// is its community counterpart.
	ReplicaDivision *ReplicaDivision `json:"replicaDivision,omitempty"`
}

// DivisionMode says whether replicas are divided among the placed
// topologies or run in full in each.
type DivisionMode string

const (
	// DivisionDuplicate runs the template's replicas in every placed
	// topology. The default.
	DivisionDuplicate DivisionMode = "Duplicate"
	// DivisionDivide divides the template's replicas among the placed
	// topologies by weight.
	DivisionDivide DivisionMode = "Divide"
)

// DivisionModes are the supported division modes.
var DivisionModes = []DivisionMode{DivisionDuplicate, DivisionDivide}

// DynamicWeight says what a division's weights follow besides the
// static ones.
type DynamicWeight string

// DynamicAvailableReplicas caps a topology that runs fewer available
// replicas (reflowed status) than it was assigned at what it runs.
const DynamicAvailableReplicas DynamicWeight = "AvailableReplicas"

// DynamicWeights are the supported dynamic weights.
var DynamicWeights = []DynamicWeight{DynamicAvailableReplicas}

// ReplicaDivision divides the replicas of a workload (the path its type's
// config names, spec.replicas by default) among the placed topologies.
type ReplicaDivision struct {
	// Mode is Divide (divide the template's replicas among the placed
	// topologies) or Duplicate (run them all in each; the default).
	Mode DivisionMode `json:"mode,omitempty"`
	// Dynamic, when AvailableReplicas, caps a topology that reports fewer
	// available replicas than it was assigned at what it reports, and
	// gives the rest to the others.
	Dynamic DynamicWeight `json:"dynamic,omitempty"`
	// Topologies give placed cells (or clusters) a weight and limits. A
	// placed topology not listed has weight 1 and no limits; a listed one
	// that is not placed is ignored.
	Topologies []DivisionTopology `json:"topologies,omitempty"`
	// Failover moves the share of a topology whose cluster is offline, or
	// whose replicas do not become ready within failoverAfterSeconds, to
	// the others, and back when it recovers.
	Failover bool `json:"failover,omitempty"`
	// FailoverAfterSeconds is how long a topology's replicas may stay
	// unready before failover moves them (default 300).
	FailoverAfterSeconds *int32 `json:"failoverAfterSeconds,omitempty"`
	// MaxSurge is how many replicas above the new total a rebalance may
	// run at once while it moves replicas between topologies (default 1;
	// at least 1).
	MaxSurge *int32 `json:"maxSurge,omitempty"`
}

// DivisionTopology is the weight and limits of one topology in a
// division.
type DivisionTopology struct {
	// Name of the placed cell (or cluster), per the placement's
	// topologyType.
	Name string `json:"name"`
	// Weight is the topology's relative share (default 1; 0 gives it only
	// minReplicas).
	Weight *int32 `json:"weight,omitempty"`
	// MinReplicas are given to the topology first, while replicas last.
	MinReplicas int32 `json:"minReplicas,omitempty"`
	// MaxReplicas caps the topology; unset: no cap.
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
}

// Placement selects topologies of one type: by name, or by a selector over
// the labels of Cells (type cell) or KubeFedClusters (type cluster). An
// explicit empty Topologies list means nowhere.
type Placement struct {
	// TopologyType says what the names and the selector refer to: "cell"
	// (the default), Cells in the object's namespace; or "cluster",
	// physical KubeFedClusters, as KubeFed places.
	TopologyType TopologyType `json:"topologyType,omitempty"`
	// Topologies names the placed cells (or clusters). It wins over
	// topologySelector; listed, an empty list places nowhere. Two cells of
	// one physical cluster are refused. Rollout batches follow its order.
	Topologies []Topology `json:"topologies,omitempty"`
	// TopologySelector places on every Cell (or KubeFedCluster) whose
	// labels it matches, when topologies is not set. An empty selector
	// matches all.
	TopologySelector *metav1.LabelSelector `json:"topologySelector,omitempty"`
}

// Topology names a cell or a cluster, per the placement's topology type.
type Topology struct {
	// Name of the cell (a Cell in the object's namespace) or of the
	// physical KubeFedCluster, per the placement's topologyType.
	Name string `json:"name"`
}

// PlacementMask limits a release to some of the placed topologies
// (grayscale and disaster-recovery releases).
type PlacementMask struct {
	// Topologies are the placed cells (or clusters) the release reaches;
	// every one must be placed. The others are held back.
	Topologies []Topology `json:"topologies"`
}

// Override changes the template for one topology.
type Override struct {
	// TopologyName is the cell (or cluster) the operations apply to.
	TopologyName string `json:"topologyName"`
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
	// Conditions are Propagation (written as asked to every placed cell in
	// the mask; reason PlacementMask while cells are held back) and Ready
	// (every placed cell's member object is ready).
	Conditions []Condition `json:"conditions,omitempty"`
	// Topologies is the status in each placed cell (or cluster), with the
	// member object's own status (status reflow).
	Topologies []TopologyStatus `json:"topologies,omitempty"`
	// Released is "n/m": of the m placed topologies, n are in the
	// placement mask (all of them without a mask).
	Released string `json:"released,omitempty"`
	// Propagated is "n/m": of the m placed topologies, n run the current
	// generation (are updated).
	Propagated string `json:"propagated,omitempty"`
	// Ready is "n/m": of the m placed topologies, n are ready.
	Ready string `json:"ready,omitempty"`
	// Record is the propagation record cellfed-controller keeps with the
	// status it writes, in one write: what it wrote to each cluster. The
	// plane serves it as the object's PropagatedVersion (or
	// ClusterPropagatedVersion) <kind>-<name>, in KubeFed's format. Only
	// v1beta2 has it: a status written in v1beta1 (KubeFed's controller)
	// drops it, and KubeFed's own stored PropagatedVersion then speaks.
	Record *PropagationRecord `json:"record,omitempty"`
}

// PropagationRecord is KubeFed's PropagatedVersion status: the versions
// of the template and overrides last propagated and, per cluster, the
// member object's version right after the write.
type PropagationRecord struct {
	// TemplateVersion is the md5 hash of spec.template, as KubeFed
	// computes it.
	TemplateVersion string `json:"templateVersion"`
	// OverridesVersion is the md5 hash of spec.overrides, as KubeFed
	// computes it.
	OverridesVersion string `json:"overridesVersion"`
	// ClusterVersions are the member objects' versions, one per cluster
	// that may hold the object, in cluster name order.
	ClusterVersions []ClusterObjectVersion `json:"clusterVersions,omitempty"`
}

// ClusterObjectVersion is the version of the member object in one cluster.
type ClusterObjectVersion struct {
	// ClusterName is the KubeFedCluster.
	ClusterName string `json:"clusterName"`
	// Version is gen:<generation> (or rv:<resourceVersion> for kinds
	// without a generation) right after the write; empty while the
	// outcome of the write is not known.
	Version string `json:"version"`
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
	// Message says what is wrong, naming the cells.
	Message string `json:"message,omitempty"`
}

// TopologyStatus is the propagation status in one topology. Cluster is the
// KubeFedCluster the status was reported for.
type TopologyStatus struct {
	// Name of the placed cell (or cluster).
	Name string `json:"name"`
	// Cluster is the KubeFedCluster the status was reported for: the
	// cell's per-cell cluster <namespace>.<cell>, or the cluster itself.
	Cluster string `json:"cluster,omitempty"`
	// Status is OK, HeldBack (outside the placement mask) or why the
	// object is not propagated there (e.g. ClusterNotReady,
	// UpdateFailed).
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
	// Replicas is what the replica division assigns this topology (set
	// only with spec.replicaDivision mode Divide).
	Replicas *int32 `json:"replicas,omitempty"`
	// Message is what the member answered when it refused or failed the
	// last write (e.g. a validation error), so app teams see it without
	// reading Events.
	Message string `json:"message,omitempty"`
}
