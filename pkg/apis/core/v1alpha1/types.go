package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Cell is a deployment unit: a named slice of one physical member cluster,
// living in a tenant workspace namespace. One physical cluster can host
// several cells (cluster:cell = 1:n). The Cell's labels are its topology
// labels (zone, region, ...); placement selectors match them.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cell
// +kubebuilder:printcolumn:name=Cluster,type=string,JSONPath=`.spec.cluster`
// +kubebuilder:printcolumn:name=KubeFedCluster,type=string,JSONPath=`.status.kubeFedCluster`
// +kubebuilder:printcolumn:name=Ready,type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name=Objects,type=integer,JSONPath=`.status.objects`
// +kubebuilder:printcolumn:name=Age,type=date,JSONPath=`.metadata.creationTimestamp`
type Cell struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CellSpec   `json:"spec"`
	Status CellStatus `json:"status,omitempty"`
}

// CellSpec says where the cell runs.
type CellSpec struct {
	// Cluster is the name of the physical KubeFedCluster that hosts this cell.
	// +kubebuilder:validation:MinLength=1
	Cluster string `json:"cluster"`
	// Move, when set, moves the cell to another physical cluster:
	// cellfed-controller copies every object the cell holds there (same
	// templates and overrides), and removes each from the old cluster
	// once its copy is ready, Batch objects at a time. When all are moved
	// it sets Cluster to Move.To and clears Move. cellfedctl cell move
	// writes it.
	// +optional
	Move *CellMove `json:"move,omitempty"`
}

// CellMove asks for a cell to move to another physical cluster.
type CellMove struct {
	// To is the physical KubeFedCluster the cell moves to.
	// +kubebuilder:validation:MinLength=1
	To string `json:"to"`
	// Batch is how many objects are moving at once (copied to the new
	// cluster but not yet removed from the old one). Default 10.
	// +optional
	// +kubebuilder:validation:Minimum=1
	Batch int32 `json:"batch,omitempty"`
	// Paused starts no further object; those under way finish.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// Undo moves the objects already copied back: each is ensured on the
	// old cluster, and its copy on the new cluster removed once the old
	// one is ready. When none is left there, Move is cleared and the
	// cell stays where it was.
	// +optional
	Undo bool `json:"undo,omitempty"`
}

// DefaultMoveBatch is CellMove.Batch when unset.
const DefaultMoveBatch = 10

// CellStatus reports the cell's cluster and what it holds.
type CellStatus struct {
	// KubeFedCluster is the name of this cell's own KubeFedCluster, given by
	// the naming rule (CellClusterName).
	// +optional
	KubeFedCluster string `json:"kubeFedCluster,omitempty"`
	// Conditions: ClusterFound (the physical cluster exists) and Ready (it
	// is reachable and healthy).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Objects is how many namespaced federated objects the cell holds or
	// is to hold: those whose propagation record (PropagatedVersion)
	// lists the cell's KubeFedCluster. Held-back objects count; unset
	// until cellfed-controller has counted.
	// +optional
	Objects *int32 `json:"objects,omitempty"`
	// Move reports the cell's move to another cluster: the one under
	// way, or the last one done.
	// +optional
	Move *CellMoveStatus `json:"move,omitempty"`
}

// CellMoveStatus is the progress of a cell's move.
type CellMoveStatus struct {
	// From is the physical cluster the cell moves from.
	From string `json:"from"`
	// To is the physical cluster the cell moves to.
	To string `json:"to"`
	// Phase is Moving, Paused, Finishing (every object is on the new
	// cluster; the cell switches to it), Completed, RollingBack or
	// RolledBack.
	Phase string `json:"phase"`
	// Objects is how many objects the cell holds on either cluster.
	Objects int32 `json:"objects"`
	// Copied is how many of them are on the new cluster.
	Copied int32 `json:"copied"`
	// Moved is how many are on the new cluster only: their copy there
	// was ready, and the old one is removed.
	Moved int32 `json:"moved"`
	// Message says what the move waits for, if anything.
	// +optional
	Message string `json:"message,omitempty"`
	// StartTime is when the move started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when the move ended (completed or rolled back).
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// Phases of a move (CellMoveStatus.Phase).
const (
	MovePhaseMoving      = "Moving"
	MovePhasePaused      = "Paused"
	MovePhaseFinishing   = "Finishing"
	MovePhaseCompleted   = "Completed"
	MovePhaseRollingBack = "RollingBack"
	MovePhaseRolledBack  = "RolledBack"
)

// CellList is a list of Cells.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type CellList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Cell `json:"items"`
}

// Cell condition types.
const (
	// CellClusterFound is True when the physical KubeFedCluster named in
	// spec.cluster exists.
	CellClusterFound = "ClusterFound"
	// CellReady is True when that cluster is Ready.
	CellReady = "Ready"
	// CellMoveBlocked is True while the cell's move cannot go on: the
	// cluster it moves to does not exist any more, or is dedicated to
	// another tenant. Its message says how to unblock it. It is absent
	// otherwise.
	CellMoveBlocked = "MoveBlocked"
)
