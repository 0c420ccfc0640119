package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RegistrationPolicy is a tenant's policy for the ClusterRegistrations made
// with its bootstrap tokens. Its name is the tenant's name. It is
// cluster-scoped: rights on objects in a namespace (the federation
// namespace's ConfigMaps, say) never grant it; only plane administrators
// (cluster-admin, the platform-admin role) may create, change or delete
// one, unless an administrator grants the resource explicitly.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=regpolicy
// +kubebuilder:printcolumn:name=Approval,type=string,JSONPath=`.spec.approval`
// +kubebuilder:printcolumn:name=Age,type=date,JSONPath=`.metadata.creationTimestamp`
type RegistrationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec RegistrationPolicySpec `json:"spec"`
}

// RegistrationPolicySpec says how the tenant's registrations are approved.
type RegistrationPolicySpec struct {
	// Approval is Manual (an administrator approves each registration,
	// the default without a policy) or Automatic (the plane approves a
	// registration as soon as it arrives).
	// +kubebuilder:validation:Enum=Manual;Automatic
	Approval RegistrationApproval `json:"approval"`
}

// RegistrationApproval is how a tenant's registrations are approved.
type RegistrationApproval string

// Approval modes.
const (
	RegistrationApprovalManual    RegistrationApproval = "Manual"
	RegistrationApprovalAutomatic RegistrationApproval = "Automatic"
)

// RegistrationPolicyList is a list of RegistrationPolicies.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type RegistrationPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RegistrationPolicy `json:"items"`
}
