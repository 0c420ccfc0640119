package federatedtypes

import (
	"context"
	"testing"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// TestDefaultTypesMakeValidCRDs builds the CRD and FederatedTypeConfig of
// every default type and validates the CRD as the API server would.
func TestDefaultTypesMakeValidCRDs(t *testing.T) {
	webhook := &apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://localhost:6443/convert"), CABundle: []byte("ca")}
	for _, resource := range DefaultTypes {
		t.Run(resource, func(t *testing.T) {
			target, err := LookupBuiltin(resource)
			if err != nil {
				t.Fatal(err)
			}
			schema, err := BuiltinSchema(target)
			if err != nil {
				t.Fatal(err)
			}
			crd := CRD(target, schema, webhook)
			if errs := validateCRD(t, crd); len(errs) != 0 {
				t.Fatalf("invalid CRD %s: %v", crd.Name, errs)
			}
			if crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter {
				t.Fatalf("CRD %s has no conversion webhook", crd.Name)
			}
			ftc := TypeConfig(target, DefaultNamespace)
			if ftc.Name != resource {
				t.Errorf("FederatedTypeConfig name = %q, want %q", ftc.Name, resource)
			}
			if got, want := ftc.Spec.FederatedType.PluralName+"."+ftc.Spec.FederatedType.Group, crd.Name; got != want {
				t.Errorf("FederatedTypeConfig names federated type %q, CRD is %q", got, want)
			}
			if string(ftc.Spec.FederatedType.Scope) != string(crd.Spec.Scope) {
				t.Errorf("FederatedTypeConfig scope %s, CRD scope %s", ftc.Spec.FederatedType.Scope, crd.Spec.Scope)
			}
		})
	}
}

// validateCRD validates crd the way the API server does on create.
func validateCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) []string {
	t.Helper()
	crd = crd.DeepCopy()
	crd.Status.StoredVersions = []string{StorageVersion}
	scheme := runtime.NewScheme()
	apiextensionsinstall.Install(scheme)
	internal := &apiextensionsinternal.CustomResourceDefinition{}
	if err := scheme.Convert(crd, internal, nil); err != nil {
		t.Fatalf("converting the CRD to the internal version: %v", err)
	}
	var errs []string
	for _, e := range apiextensionsvalidation.ValidateCustomResourceDefinition(context.Background(), internal) {
		errs = append(errs, e.Error())
	}
	return errs
}
