package cellfedctl

import (
	"context"
	"strings"
	"testing"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/cellfed/cellfed/pkg/federatedtypes"
)

// widgetSchema is a typical root schema of a CRD version, as
// controller-gen writes it.
func widgetSchema(sizeField string) *apiextensionsv1.CustomResourceValidation {
	return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type:        "object",
		Description: "Widget is a widget.",
		Required:    []string{"spec", "status"},
		XValidations: apiextensionsv1.ValidationRules{
			{Rule: "self.metadata.name.size() < 20", Message: "short names"},
		},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"apiVersion": {Type: "string", Description: "APIVersion defines ..."},
			"kind":       {Type: "string", Description: "Kind is ..."},
			"metadata":   {Type: "object"},
			"spec": {
				Type:        "object",
				Description: "WidgetSpec is the spec.",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{
					sizeField: {Type: "integer", Description: "how big", Default: &apiextensionsv1.JSON{Raw: []byte("3")}},
					"parts": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "string", Description: "a part",
					}}},
					"color": {
						Type:         "string",
						XValidations: apiextensionsv1.ValidationRules{{Rule: "self != 'mauve'"}},
					},
				},
			},
			"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"ready": {Type: "boolean"}}},
		},
	}}
}

func widgetCRD(scope apiextensionsv1.ResourceScope, versions ...apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group:    "example.com",
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope:    scope,
			Versions: versions,
		},
	}
}

func TestTargetFromCRD(t *testing.T) {
	v1 := apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Served: true, Storage: true, Schema: widgetSchema("size")}
	v2 := apiextensionsv1.CustomResourceDefinitionVersion{Name: "v2", Served: true, Schema: widgetSchema("replicas")}
	unservedStorage := apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Storage: true, Schema: widgetSchema("size")}
	noSchema := apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Served: true, Storage: true}
	misnamed := widgetCRD(apiextensionsv1.NamespaceScoped, v1)
	misnamed.Name = "gadgets.example.com"

	tests := []struct {
		name      string
		crd       *apiextensionsv1.CustomResourceDefinition
		want      federatedtypes.Target
		wantField string // a template field the schema must have under spec
		noSchema  bool
		wantErr   string
	}{
		{
			name:      "storage version",
			crd:       widgetCRD(apiextensionsv1.NamespaceScoped, v2, v1),
			want:      federatedtypes.Target{Group: "example.com", Version: "v1", Kind: "Widget", Plural: "widgets", Namespaced: true},
			wantField: "size",
		},
		{
			name:      "first served version when the storage version is not served",
			crd:       widgetCRD(apiextensionsv1.NamespaceScoped, unservedStorage, v2),
			want:      federatedtypes.Target{Group: "example.com", Version: "v2", Kind: "Widget", Plural: "widgets", Namespaced: true},
			wantField: "replicas",
		},
		{
			name:      "cluster scoped",
			crd:       widgetCRD(apiextensionsv1.ClusterScoped, v1),
			want:      federatedtypes.Target{Group: "example.com", Version: "v1", Kind: "Widget", Plural: "widgets"},
			wantField: "size",
		},
		{
			name:     "no schema: the template preserves every field",
			crd:      widgetCRD(apiextensionsv1.NamespaceScoped, noSchema),
			want:     federatedtypes.Target{Group: "example.com", Version: "v1", Kind: "Widget", Plural: "widgets", Namespaced: true},
			noSchema: true,
		},
		{
			name:    "no served version",
			crd:     widgetCRD(apiextensionsv1.NamespaceScoped, unservedStorage),
			wantErr: "serves no version",
		},
		{
			name:    "name is not plural.group",
			crd:     misnamed,
			wantErr: "not named <plural>.<group>",
		},
	}
	webhook := &apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:6443/convert"), CABundle: []byte("ca")}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.crd.DeepCopy()
			target, schema, err := TargetFromCRD(tc.crd)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if target != tc.want {
				t.Errorf("target = %+v, want %+v", target, tc.want)
			}
			if !equality.Semantic.DeepEqual(before, tc.crd) {
				t.Error("TargetFromCRD modified the member's CRD")
			}
			if tc.noSchema {
				if schema != nil {
					t.Errorf("schema = %+v, want nil", schema)
				}
			} else {
				checkTemplateSchema(t, schema, tc.wantField)
			}
			validateFederatedCRD(t, federatedtypes.CRD(target, schema, webhook))
		})
	}
}

// checkTemplateSchema checks how TemplateSchema shaped a widget schema.
func checkTemplateSchema(t *testing.T, s *apiextensionsv1.JSONSchemaProps, field string) {
	t.Helper()
	if s == nil {
		t.Fatal("schema is nil")
	}
	if _, ok := s.Properties["status"]; ok {
		t.Error("template schema has status")
	}
	for _, r := range s.Required {
		if r == "status" {
			t.Error("template schema still requires status")
		}
	}
	if len(s.XValidations) != 0 {
		t.Errorf("root validation rules kept: %v", s.XValidations)
	}
	if md := s.Properties["metadata"]; md.XPreserveUnknownFields == nil || !*md.XPreserveUnknownFields {
		t.Errorf("metadata = %+v, want an object that preserves its fields (labels must survive pruning)", md)
	}
	spec := s.Properties["spec"]
	f, ok := spec.Properties[field]
	if !ok {
		t.Fatalf("spec has no %s: %+v", field, spec.Properties)
	}
	if f.Default != nil || f.Description != "" || spec.Description != "" || s.Description != "" {
		t.Error("descriptions or defaults kept")
	}
	if spec.Properties["parts"].Items.Schema.Description != "" {
		t.Error("description of array items kept")
	}
	if len(spec.Properties["color"].XValidations) != 1 {
		t.Error("validation rules below the root dropped")
	}
}

// validateFederatedCRD validates crd as the API server would.
func validateFederatedCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	scheme := runtime.NewScheme()
	apiextensionsinstall.Install(scheme)
	crd.Status.StoredVersions = []string{federatedtypes.StorageVersion}
	internal := &apiextensionsinternal.CustomResourceDefinition{}
	if err := scheme.Convert(crd, internal, nil); err != nil {
		t.Fatal(err)
	}
	if errs := apiextensionsvalidation.ValidateCustomResourceDefinition(context.Background(), internal); len(errs) != 0 {
		t.Fatalf("invalid federated CRD %s: %v", crd.Name, errs.ToAggregate())
	}
}
