package admission

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/registration"
	"github.com/cellfed/cellfed/pkg/tenancy"
)

// ValidateRegistrationPolicy checks a tenant's RegistrationPolicy: named
// after a valid tenant, approval Manual or Automatic.
func ValidateRegistrationPolicy(p *cellv1alpha1.RegistrationPolicy) error {
	var errs field.ErrorList
	if err := tenancy.TenantNameError(p.Name); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), p.Name, "a RegistrationPolicy is named after the tenant it applies to: "+err.Error()))
	}
	switch p.Spec.Approval {
	case cellv1alpha1.RegistrationApprovalManual, cellv1alpha1.RegistrationApprovalAutomatic:
	case "":
		errs = append(errs, field.Required(field.NewPath("spec", "approval"), "Manual (an administrator approves each registration) or Automatic"))
	default:
		errs = append(errs, field.NotSupported(field.NewPath("spec", "approval"), p.Spec.Approval,
			[]string{string(cellv1alpha1.RegistrationApprovalManual), string(cellv1alpha1.RegistrationApprovalAutomatic)}))
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(cellv1alpha1.SchemeGroupVersion.WithKind("RegistrationPolicy").GroupKind(), p.Name, errs)
	}
	return nil
}

// validatePolicyWrite validates RegistrationPolicies and refuses writes of
// the ConfigMap that held the auto-approve policy before, saying what
// replaced it. handled is false for any other object.
func validatePolicyWrite(a admission.Attributes, federationNamespace string) (handled bool, err error) {
	gr := a.GetResource().GroupResource()
	switch {
	case gr == cellv1alpha1.RegistrationPoliciesResource.GroupResource() && a.GetSubresource() == "":
		u, ok := a.GetObject().(*unstructured.Unstructured)
		if !ok {
			return true, nil
		}
		var p cellv1alpha1.RegistrationPolicy
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err != nil {
			return true, apierrors.NewBadRequest(fmt.Sprintf("RegistrationPolicy %s: %v", u.GetName(), err))
		}
		return true, ValidateRegistrationPolicy(&p)
	case gr.Group == "" && gr.Resource == "configmaps" && a.GetNamespace() == federationNamespace && a.GetName() == registration.PolicyConfigMap:
		return true, apierrors.NewForbidden(gr, a.GetName(), fmt.Errorf(
			"the auto-approve policy is no longer a ConfigMap (anyone with ConfigMap rights in %s could edit it): it is the cluster-scoped RegistrationPolicy named after the tenant, which only plane administrators may change; use `cellfedctl registration auto-approve <tenant>`",
			federationNamespace))
	}
	return false, nil
}
