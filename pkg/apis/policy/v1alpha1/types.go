package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
)

// PropagationPolicy federates native objects of its namespace (a
// Deployment, a ConfigMap, ...): it selects them by apiVersion/kind and
// name or labels, and cellfed keeps one v1beta2 federated object per
// selected object (Federated<Kind>, same name and namespace, owned by the
// native object) with the policy's placement, overrides, replica division
// and release strategy. When several policies select one object, one
// places it: the highest priority, then the most specific selector (name,
// then labelSelector, then kind only), then a PropagationPolicy before a
// ClusterPropagationPolicy, then the first name in alphabetical order.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=pp,categories=cellfed
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name=Priority,type=integer,JSONPath=`.spec.priority`
// +kubebuilder:printcolumn:name=Topology,type=string,JSONPath=`.spec.placement.topologyType`
// +kubebuilder:printcolumn:name=Placed,type=integer,JSONPath=`.status.placed`
// +kubebuilder:printcolumn:name=Shadowed,type=integer,JSONPath=`.status.shadowed`
// +kubebuilder:printcolumn:name=Age,type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="a policy's name is at most 63 characters: it is a label value on the federated objects it places"
type PropagationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the policy selects and where it places it.
	Spec PropagationPolicySpec `json:"spec"`
	// Status is written by cellfed-controller: how many objects the
	// policy places, and for which selected objects another policy wins.
	Status PropagationPolicyStatus `json:"status,omitempty"`
}

// PropagationPolicyList is a list of PropagationPolicies.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type PropagationPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PropagationPolicy `json:"items"`
}

// ClusterPropagationPolicy is a PropagationPolicy of the platform
// admins: it selects objects in every namespace, and cluster-scoped ones
// (ClusterRoles, CustomResourceDefinitions). At equal priority and
// specificity a namespace's own PropagationPolicy wins over it; a
// ClusterPropagationPolicy that must win takes a higher priority.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=cpp,categories=cellfed
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name=Priority,type=integer,JSONPath=`.spec.priority`
// +kubebuilder:printcolumn:name=Topology,type=string,JSONPath=`.spec.placement.topologyType`
// +kubebuilder:printcolumn:name=Placed,type=integer,JSONPath=`.status.placed`
// +kubebuilder:printcolumn:name=Shadowed,type=integer,JSONPath=`.status.shadowed`
// +kubebuilder:printcolumn:name=Age,type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="a policy's name is at most 63 characters: it is a label value on the federated objects it places"
type ClusterPropagationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the policy selects and where it places it.
	Spec PropagationPolicySpec `json:"spec"`
	// Status is written by cellfed-controller.
	Status PropagationPolicyStatus `json:"status,omitempty"`
}

// ClusterPropagationPolicyList is a list of ClusterPropagationPolicies.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type ClusterPropagationPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterPropagationPolicy `json:"items"`
}

// PropagationPolicySpec selects native objects and carries what a v1beta2
// federated object carries: placement, overrides, replica division,
// retained replicas, and whether a release goes out at once or through a
// rollout.
type PropagationPolicySpec struct {
	// ResourceSelectors select the objects the policy places: an object
	// is selected when any selector matches it.
	// +kubebuilder:validation:MinItems=1
	ResourceSelectors []ResourceSelector `json:"resourceSelectors"`
	// Priority decides between policies that select one object: the
	// highest wins (default 0; may be negative).
	Priority int32 `json:"priority,omitempty"`
	// Placement selects the cells (or clusters) the objects go to, as a
	// v1beta2 federated object's spec.placement: cells are those of each
	// object's namespace.
	Placement Placement `json:"placement"`
	// Overrides change the objects for single cells (or clusters), as a
	// v1beta2 federated object's spec.overrides.
	Overrides []Override `json:"overrides,omitempty"`
	// ReplicaDivision divides a workload's replicas among the placed
	// cells, as a v1beta2 federated object's spec.replicaDivision.
	ReplicaDivision *ReplicaDivision `json:"replicaDivision,omitempty"`
	// RetainReplicas keeps each member's spec.replicas once set (for a
	// member-side autoscaler).
	RetainReplicas *bool `json:"retainReplicas,omitempty"`
	// Release says whether a change goes to every placed cell at once
	// (Immediate, the default) or through an automatic rollout (Rollout).
	Release Release `json:"release,omitempty"`
	// PropagateDependencies places the ConfigMaps, Secrets,
	// ServiceAccount and PersistentVolumeClaims a selected workload's pod
	// template references where the workload is placed (default true).
	// +kubebuilder:default=true
	PropagateDependencies *bool `json:"propagateDependencies,omitempty"`
	// DeletionPolicy says what deleting the policy does to the member
	// objects it placed: Orphan (the default) leaves them in the member
	// clusters, no longer managed; Delete removes them from the members.
	// Either way the federated objects the policy made are deleted and
	// the native objects stay on the plane.
	// +kubebuilder:validation:Enum=Orphan;Delete
	// +kubebuilder:default=Orphan
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
}

// ResourceSelector selects objects by apiVersion and kind, and by name or
// labels. With neither name nor labelSelector it selects every object of
// the kind (in the policy's namespace, for a PropagationPolicy).
//
// +kubebuilder:validation:XValidation:rule="!(has(self.name) && has(self.labelSelector))",message="name and labelSelector exclude each other: a selector picks one object by name or several by labels"
type ResourceSelector struct {
	// APIVersion of the objects, e.g. apps/v1 or v1.
	// +kubebuilder:validation:MinLength=1
	APIVersion string `json:"apiVersion"`
	// Kind of the objects, e.g. Deployment.
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
	// Name selects one object by name.
	// +optional
	Name string `json:"name,omitempty"`
	// LabelSelector selects the objects whose labels it matches.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
}

// Placement selects cells (or clusters) by name or by a selector over
// their labels; it is a v1beta2 federated object's spec.placement.
type Placement struct {
	// TopologyType says what the names and the selector refer to: "cell"
	// (the default), Cells in each placed object's namespace; or
	// "cluster", physical KubeFedClusters.
	// +kubebuilder:validation:Enum=cell;cluster
	// +kubebuilder:default=cell
	TopologyType typesv1beta2.TopologyType `json:"topologyType,omitempty"`
	// Topologies names the placed cells (or clusters). It wins over
	// topologySelector; listed, an empty list places nowhere. Rollout
	// batches follow its order.
	// +optional
	Topologies []typesv1beta2.Topology `json:"topologies,omitempty"`
	// TopologySelector places on every Cell (or KubeFedCluster) whose
	// labels it matches, when topologies is not set. An empty selector
	// matches all.
	// +optional
	TopologySelector *metav1.LabelSelector `json:"topologySelector,omitempty"`
}

// ReplicaDivision divides a workload's replicas among the placed cells;
// it is a v1beta2 federated object's spec.replicaDivision.
type ReplicaDivision struct {
	// Mode is Divide (divide the replicas among the placed cells) or
	// Duplicate (run them all in each; the default).
	// +kubebuilder:validation:Enum=Duplicate;Divide
	// +optional
	Mode typesv1beta2.DivisionMode `json:"mode,omitempty"`
	// Dynamic, when AvailableReplicas, caps a cell that reports fewer
	// available replicas than it was assigned at what it reports.
	// +kubebuilder:validation:Enum=AvailableReplicas
	// +optional
	Dynamic typesv1beta2.DynamicWeight `json:"dynamic,omitempty"`
	// Topologies give placed cells (or clusters) a weight and limits.
	// +optional
	Topologies []DivisionTopology `json:"topologies,omitempty"`
	// Failover moves the share of an offline or unready cell to the
	// others, and back when it recovers.
	// +optional
	Failover bool `json:"failover,omitempty"`
	// FailoverAfterSeconds is how long a cell's replicas may stay unready
	// before failover moves them (default 300).
	// +optional
	FailoverAfterSeconds *int32 `json:"failoverAfterSeconds,omitempty"`
	// MaxSurge is how many replicas above the new total a rebalance may
	// run at once (default 1).
	// +optional
	MaxSurge *int32 `json:"maxSurge,omitempty"`
}

// DivisionTopology is the weight and limits of one cell (or cluster).
type DivisionTopology struct {
	// Name of the placed cell (or cluster).
	Name string `json:"name"`
	// Weight is the relative share (default 1).
	// +optional
	Weight *int32 `json:"weight,omitempty"`
	// MinReplicas are given to the cell first.
	// +optional
	MinReplicas int32 `json:"minReplicas,omitempty"`
	// MaxReplicas caps the cell; unset: no cap.
	// +optional
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
}

// Override changes the objects for one cell (or cluster).
type Override struct {
	// TopologyName is the cell (or cluster) the operations apply to.
	// +kubebuilder:validation:MinLength=1
	TopologyName string `json:"topologyName"`
	// ClusterOverrides are the operations, applied in order.
	ClusterOverrides []ClusterOverride `json:"clusterOverrides,omitempty"`
}

// ClusterOverride is one JSON-patch operation (add, remove, replace).
type ClusterOverride struct {
	// Op is add, remove or replace (the default).
	// +kubebuilder:validation:Enum=add;remove;replace
	// +optional
	Op string `json:"op,omitempty"`
	// Path is a JSON pointer into the object, e.g. /spec/replicas.
	// +kubebuilder:validation:MinLength=1
	Path string `json:"path"`
	// Value is the value to add or replace with (any JSON).
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Value *runtime.RawExtension `json:"value,omitempty"`
}

// ReleaseStrategy says how a change reaches the placed cells.
type ReleaseStrategy string

const (
	// ReleaseImmediate writes every change to every placed cell at once:
	// the federated object has no placement mask. The default.
	ReleaseImmediate ReleaseStrategy = "Immediate"
	// ReleaseRollout releases each change of a placed object through an
	// automatic rollout (`cellfedctl rollout start --auto`): batchSize
	// cells at a time, the next batch once they are updated and ready.
	// The placement mask then belongs to the rollout, not the policy.
	ReleaseRollout ReleaseStrategy = "Rollout"
)

// Release is how changes reach the placed cells.
type Release struct {
	// Strategy is Immediate (the default) or Rollout.
	// +kubebuilder:validation:Enum=Immediate;Rollout
	// +kubebuilder:default=Immediate
	Strategy ReleaseStrategy `json:"strategy,omitempty"`
	// BatchSize is how many cells each step of a rollout releases
	// (strategy Rollout; default 1).
	// +kubebuilder:validation:Minimum=1
	// +optional
	BatchSize *int32 `json:"batchSize,omitempty"`
	// PauseOnFailure pauses a rollout when a released cell fails
	// (strategy Rollout).
	// +optional
	PauseOnFailure bool `json:"pauseOnFailure,omitempty"`
	// ProgressDeadlineSeconds pauses a rollout whose batch is not
	// updated and ready that long after its release (strategy Rollout;
	// unset: no deadline).
	// +kubebuilder:validation:Minimum=1
	// +optional
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`
}

// DeletionPolicy says what deleting a policy does to member objects.
type DeletionPolicy string

const (
	// DeletionOrphan leaves the member objects in place, unmanaged. The
	// default: deleting a policy never deletes workloads by surprise.
	DeletionOrphan DeletionPolicy = "Orphan"
	// DeletionDelete removes the member objects with the federated
	// objects.
	DeletionDelete DeletionPolicy = "Delete"
)

// PropagationPolicyStatus is what the policy places.
type PropagationPolicyStatus struct {
	// ObservedGeneration is the generation this status describes.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Placed is how many objects the policy places.
	Placed int32 `json:"placed"`
	// Shadowed is how many objects the policy selects that another
	// policy places.
	Shadowed int32 `json:"shadowed"`
	// ShadowedObjects are (up to 20 of) those objects, each with the
	// policy that places it and why it wins.
	// +optional
	ShadowedObjects []ShadowedObject `json:"shadowedObjects,omitempty"`
	// Conditions are Matched (False, reason NoMatch, while the policy
	// selects nothing) and Shadowed (True while another policy wins for
	// some selected object).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ObjectReference names a native object.
type ObjectReference struct {
	// APIVersion of the object.
	APIVersion string `json:"apiVersion"`
	// Kind of the object.
	Kind string `json:"kind"`
	// Namespace of the object; empty for a cluster-scoped one.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the object.
	Name string `json:"name"`
}

// ShadowedObject is an object the policy selects that another policy
// places.
type ShadowedObject struct {
	ObjectReference `json:",inline"`
	// PlacedBy is the winning policy: PropagationPolicy/<namespace>/<name>
	// or ClusterPropagationPolicy/<name>.
	PlacedBy string `json:"placedBy"`
	// Reason is why it wins, e.g. "priority 10 > 0".
	Reason string `json:"reason"`
}

// Conditions and reasons of a policy's status.
const (
	ConditionMatched  = "Matched"
	ConditionShadowed = "Shadowed"

	ReasonMatched     = "Matched"
	ReasonNoMatch     = "NoMatch"
	ReasonShadowed    = "Shadowed"
	ReasonNotShadowed = "NotShadowed"
)

// MaxShadowedObjects is how many shadowed objects a status lists.
const MaxShadowedObjects = 20

// Keys cellfed writes on the objects a policy places.
const (
	// AnnotationPlacedByPolicy, on a native object, is the policy that
	// places it (PropagationPolicy/<namespace>/<name> or
	// ClusterPropagationPolicy/<name>); absent while none does.
	AnnotationPlacedByPolicy = "cellfed.io/placed-by-policy"
	// AnnotationPolicy, on a federated object, is the policy that made
	// it, in the same form.
	AnnotationPolicy = GroupName + "/policy"
	// LabelPropagationPolicy and LabelClusterPropagationPolicy, on a
	// federated object, are the name of the policy that made it, for
	// listing by policy.
	LabelPropagationPolicy        = GroupName + "/propagationpolicy"
	LabelClusterPropagationPolicy = GroupName + "/clusterpropagationpolicy"
	// LabelDependencyOf, on the federated object of a dependency (a
	// ConfigMap a placed Deployment mounts, say), marks it as placed
	// because of a workload rather than selected by a policy.
	LabelDependencyOf = GroupName + "/dependency"
)

// FieldManager is the field manager of the propagation-policy
// controller's writes (pkg/controller/policy). The plane's admission lets
// only a write naming it, from a user in system:masters as
// cellfed-controller's is, change the fields a policy owns on a federated
// object it made (pkg/policy/federate.OwnedFields).
const FieldManager = "cellfed-policy"
