package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterRegistration is a member cluster's request, made by its tunnel
// agent, to join the plane through the tunnel. Its name is the cluster's
// name (a DNS label). The agent creates it once with a bootstrap token;
// an administrator (or the tenant's auto-approve policy) approves it; the
// plane then signs the agent's certificate, stores the member's token in a
// Secret and creates a tunnelled KubeFedCluster of the same name.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=creg
// +kubebuilder:printcolumn:name=Tenant,type=string,JSONPath=`.spec.tenant`
// +kubebuilder:printcolumn:name=Phase,type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name=Cert-Expiry,type=date,JSONPath=`.status.certificateExpiry`
// +kubebuilder:printcolumn:name=Age,type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterRegistration struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterRegistrationSpec   `json:"spec"`
	Status ClusterRegistrationStatus `json:"status,omitempty"`
}

// ClusterRegistrationSpec is what the agent reports about its cluster.
type ClusterRegistrationSpec struct {
	// APIEndpoint is the member's API server URL as the agent reaches it
	// (the agent forwards tunnelled connections there).
	// +kubebuilder:validation:MinLength=1
	APIEndpoint string `json:"apiEndpoint"`
	// CABundle is the PEM CA bundle that verifies the member API server's
	// serving certificate. It stays pinned in the KubeFedCluster.
	CABundle []byte `json:"caBundle"`
	// TLSServerName is a name the member's serving certificate holds, used
	// to verify it through the tunnel (default: the host of APIEndpoint).
	// +optional
	TLSServerName string `json:"tlsServerName,omitempty"`
	// ServiceAccountToken is a member service-account token with the rights
	// federation needs. The plane moves it into a Secret in the federation
	// namespace as soon as it sees it and clears this field; the agent sets
	// it again to hand over a fresh token.
	// +optional
	ServiceAccountToken string `json:"serviceAccountToken,omitempty"`
	// MemberServiceAccount is <namespace>/<name> of that ServiceAccount in
	// the member (for information and clean-up).
	// +optional
	MemberServiceAccount string `json:"memberServiceAccount,omitempty"`
	// Tenant is the tenant the cluster is dedicated to, taken from the
	// bootstrap token by admission (never from the agent); empty means a
	// shared cluster.
	// +optional
	Tenant string `json:"tenant,omitempty"`
	// Workspace is the tenant workspace named by the bootstrap token, set by
	// admission; it is recorded on the KubeFedCluster as an annotation.
	// +optional
	Workspace string `json:"workspace,omitempty"`
	// CSR is a PEM certificate request for the agent's tunnel identity.
	// Only its public key is used: the certificate always names this
	// cluster. The agent replaces it to renew its certificate.
	CSR []byte `json:"csr"`
	// ProxyCredentialGeneration is the generation of the cluster's
	// credential on the tunnel hub's CONNECT frontend (the password in the
	// KubeFedCluster's spec.proxyURL). Raising it (`cellfedctl
	// registration rotate-proxy-credential`) makes the hubs refuse the
	// cluster's previous credential at once and the plane rewrite the
	// proxyURL; other clusters' credentials are untouched. It never
	// decreases, and only administrators change it (agents may not).
	// +optional
	// +kubebuilder:validation:Minimum=0
	ProxyCredentialGeneration int64 `json:"proxyCredentialGeneration,omitempty"`
}

// ClusterRegistrationStatus is the plane's answer.
type ClusterRegistrationStatus struct {
	// Phase summarises the conditions: Pending, Approved, Registered,
	// Denied, Revoked or Failed.
	// +optional
	Phase RegistrationPhase `json:"phase,omitempty"`
	// Certificate is the PEM agent certificate signed for spec.csr.
	// +optional
	Certificate []byte `json:"certificate,omitempty"`
	// CertificateExpiry is the certificate's notAfter.
	// +optional
	CertificateExpiry *metav1.Time `json:"certificateExpiry,omitempty"`
	// KubeFedCluster is <namespace>/<name> of the cluster the plane created.
	// +optional
	KubeFedCluster string `json:"kubeFedCluster,omitempty"`
	// Conditions: Approved, Denied and Revoked are decisions (set by an
	// administrator or the tenant's auto-approve policy); Ready says the
	// plane did everything an approval asks for, or why not.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RegistrationPhase summarises a ClusterRegistration's conditions.
type RegistrationPhase string

// Registration phases.
const (
	RegistrationPending    RegistrationPhase = "Pending"
	RegistrationApproved   RegistrationPhase = "Approved"
	RegistrationRegistered RegistrationPhase = "Registered"
	RegistrationDenied     RegistrationPhase = "Denied"
	RegistrationRevoked    RegistrationPhase = "Revoked"
	RegistrationFailed     RegistrationPhase = "Failed"
)

// ClusterRegistration condition types.
const (
	RegistrationConditionApproved = "Approved"
	RegistrationConditionDenied   = "Denied"
	RegistrationConditionRevoked  = "Revoked"
	RegistrationConditionReady    = "Ready"
)

// ClusterRegistrationList is a list of ClusterRegistrations.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type ClusterRegistrationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterRegistration `json:"items"`
}
