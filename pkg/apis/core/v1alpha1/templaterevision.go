package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TemplateRevision is one template (and overrides) a federated object
// ran, kept for `cellfedctl rollout undo` and `rollout history`, as
// Kubernetes' ControllerRevision keeps a workload's pod templates. It
// lives in the federated object's namespace and is owned by it (the
// plane's garbage collector deletes it with the object). Revisions of
// one object carry the label rollout.cellfed.io/owner-uid; cellfed keeps
// a bounded number of them.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=templaterev
// +kubebuilder:printcolumn:name=Object,type=string,JSONPath=`.spec.federatedObject.name`
// +kubebuilder:printcolumn:name=Kind,type=string,JSONPath=`.spec.federatedObject.kind`
// +kubebuilder:printcolumn:name=Revision,type=integer,JSONPath=`.spec.revision`
// +kubebuilder:printcolumn:name=Age,type=date,JSONPath=`.metadata.creationTimestamp`
type TemplateRevision struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec TemplateRevisionSpec `json:"spec"`
}

// TemplateRevisionSpec is the recorded template.
type TemplateRevisionSpec struct {
	// FederatedObject names the federated object the template belongs to.
	FederatedObject FederatedObjectReference `json:"federatedObject"`
	// Revision orders the revisions of one object: higher is newer. A
	// template that comes back (an undo) takes the next number again.
	// +kubebuilder:validation:Minimum=1
	Revision int64 `json:"revision"`
	// Hash identifies template and overrides (sha256 of their JSON).
	// +kubebuilder:validation:MinLength=1
	Hash string `json:"hash"`
	// Template is the federated object's spec.template.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Template runtime.RawExtension `json:"template,omitempty"`
	// Overrides are the federated object's spec.overrides (v1beta2).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	Overrides runtime.RawExtension `json:"overrides,omitempty"`
	// Generation is the federated object's metadata.generation when the
	// template was recorded.
	// +optional
	Generation int64 `json:"generation,omitempty"`
}

// FederatedObjectReference names a federated object.
type FederatedObjectReference struct {
	// APIVersion of the federated object, e.g. types.kubefed.io/v1beta2.
	APIVersion string `json:"apiVersion"`
	// Kind of the federated object, e.g. FederatedDeployment.
	Kind string `json:"kind"`
	// Name of the federated object (in the revision's namespace).
	Name string `json:"name"`
	// UID of the federated object.
	UID string `json:"uid"`
}

// TemplateRevisionList is a list of TemplateRevisions.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type TemplateRevisionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TemplateRevision `json:"items"`
}
