package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of cellfed's own types.
const GroupName = "core.cellfed.io"

// SchemeGroupVersion is core.cellfed.io/v1alpha1.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// Resource returns a GroupResource in this group.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

var (
	// SchemeBuilder registers this group's types.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this group's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &Cell{}, &CellList{}, &TemplateRevision{}, &TemplateRevisionList{}, &ClusterRegistration{}, &ClusterRegistrationList{}, &RegistrationPolicy{}, &RegistrationPolicyList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}

// The resources of core.cellfed.io/v1alpha1, declared once for clients.
var (
	CellsResource                = SchemeGroupVersion.WithResource("cells")
	TemplateRevisionsResource    = SchemeGroupVersion.WithResource("templaterevisions")
	ClusterRegistrationsResource = SchemeGroupVersion.WithResource("clusterregistrations")
	RegistrationPoliciesResource = SchemeGroupVersion.WithResource("registrationpolicies")
)
