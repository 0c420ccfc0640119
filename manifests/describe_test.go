package manifests

import (
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// missingDescriptions lists the fields below s (dot paths, [] for array
// items) without a description; metadata is described by the API server.
func missingDescriptions(s *apiextensionsv1.JSONSchemaProps, path string, out *[]string) {
	for name, p := range s.Properties {
		sub := path + "." + name
		if p.Description == "" && sub != ".metadata" {
			*out = append(*out, sub)
		}
		missingDescriptions(&p, sub, out)
	}
	if s.Items != nil && s.Items.Schema != nil {
		missingDescriptions(s.Items.Schema, path+"[]", out)
	}
}

// TestEveryFieldDescribed checks that `kubectl explain` has a description
// for every field of every CRD the plane installs (cellfed's from its doc
// comments, KubeFed's from KubeFed's and, where KubeFed has none, from
// extend), and of both generated federated shapes.
func TestEveryFieldDescribed(t *testing.T) {
	crds, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			var missing []string
			missingDescriptions(v.Schema.OpenAPIV3Schema, "", &missing)
			slices.Sort(missing)
			if len(missing) > 0 {
				t.Errorf("%s %s: fields without a description: %s", crd.Name, v.Name, strings.Join(missing, ", "))
			}
		}
	}
	shapes, err := FederatedSchemas()
	if err != nil {
		t.Fatal(err)
	}
	if len(shapes) != 2 || shapes["v1beta1"] == nil || shapes["v1beta2"] == nil {
		t.Fatalf("federated shapes: %v, want v1beta1 and v1beta2", shapes)
	}
	for version, s := range shapes {
		var missing []string
		missingDescriptions(s, "", &missing)
		if len(missing) > 0 {
			t.Errorf("federated shape %s: fields without a description: %s", version, strings.Join(missing, ", "))
		}
	}
}
