package federatedtypes

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// kubefedCRD is a federated CRD as kubefedctl enable v0.10.0 writes it.
func kubefedCRD(kind, plural string, scope apiextensionsv1.ResourceScope) *apiextensionsv1.CustomResourceDefinition {
	tmpl := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"data": {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
	}}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + ".types.kubefed.io", ResourceVersion: "7", Annotations: map[string]string{"a": "b"}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "types.kubefed.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, Plural: plural, ListKind: kind + "List", Singular: "x"},
			Scope: scope,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1beta1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"template": tmpl}},
				}}},
			}},
		},
	}
}

func TestFromKubeFed(t *testing.T) {
	hook := &apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:6443/cellfed/convert")}
	t.Run("a kubefedctl CRD gets both versions, conversion and the label", func(t *testing.T) {
		in := kubefedCRD("FederatedWidget", "federatedwidgets", apiextensionsv1.NamespaceScoped)
		out, ok := FromKubeFed(in, hook)
		if !ok {
			t.Fatal("not converted")
		}
		if len(out.Spec.Versions) != 2 || out.Spec.Versions[1].Name != "v1beta2" || !out.Spec.Versions[1].Storage || out.Spec.Versions[0].Storage {
			t.Fatalf("versions = %+v, want v1beta1 and v1beta2 (stored)", out.Spec.Versions)
		}
		if out.Spec.Conversion == nil || out.Spec.Conversion.Webhook == nil || *out.Spec.Conversion.Webhook.ClientConfig.URL != *hook.URL {
			t.Errorf("conversion = %+v", out.Spec.Conversion)
		}
		for _, v := range out.Spec.Versions {
			tmpl := v.Schema.OpenAPIV3Schema.Properties["spec"].Properties["template"]
			if _, ok := tmpl.Properties["data"]; !ok {
				t.Errorf("%s lost the template schema: %+v", v.Name, tmpl)
			}
		}
		if out.Labels[LabelFederatedType] != "true" || out.Annotations["a"] != "b" || out.ResourceVersion != "7" || out.Name != in.Name {
			t.Errorf("metadata = %+v", out.ObjectMeta)
		}
		if out.Spec.Names.Kind != "FederatedWidget" || out.Spec.Scope != apiextensionsv1.NamespaceScoped {
			t.Errorf("names/scope changed: %+v %s", out.Spec.Names, out.Spec.Scope)
		}
		if len(in.Spec.Versions) != 1 {
			t.Error("the input was modified")
		}
	})
	t.Run("a cluster-scoped type stays cluster-scoped", func(t *testing.T) {
		out, ok := FromKubeFed(kubefedCRD("FederatedClusterRole", "federatedclusterroles", apiextensionsv1.ClusterScoped), hook)
		if !ok || out.Spec.Scope != apiextensionsv1.ClusterScoped {
			t.Fatalf("ok=%v scope=%v", ok, out)
		}
	})
	for _, tc := range []struct {
		name string
		crd  *apiextensionsv1.CustomResourceDefinition
	}{
		{"another group", func() *apiextensionsv1.CustomResourceDefinition {
			c := kubefedCRD("FederatedWidget", "federatedwidgets", apiextensionsv1.NamespaceScoped)
			c.Spec.Group = "example.com"
			return c
		}()},
		{"not a Federated kind", kubefedCRD("Widget", "widgets", apiextensionsv1.NamespaceScoped)},
		{"the plane's own CRD", CRD(Target{Kind: "Widget", Plural: "widgets", Namespaced: true}, nil, hook)},
	} {
		t.Run("left alone: "+tc.name, func(t *testing.T) {
			if _, ok := FromKubeFed(tc.crd, hook); ok {
				t.Error("converted")
			}
		})
	}
}
