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
}

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
}

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
)
