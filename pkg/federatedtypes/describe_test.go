package federatedtypes

import (
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	typesv1beta1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
)

// undescribed lists the fields of schema (dot paths, [] for array items)
// without a description, skipping below skip.
func undescribed(s *apiextensionsv1.JSONSchemaProps, path, skip string, out *[]string) {
	if path != skip {
		for name, p := range s.Properties {
			sub := path + "." + name
			if p.Description == "" && name != "metadata" {
				*out = append(*out, sub)
			}
			undescribed(&p, sub, skip, out)
		}
		if s.Items != nil && s.Items.Schema != nil {
			undescribed(s.Items.Schema, path+"[]", skip, out)
		}
	}
}

// TestDescriptions checks that every field of both shapes of a federated
// CRD, outside the template's body, has a description from the Go types'
// doc comments (so the hand-built schema and the Go types agree on the
// fields too), for a workload, a non-workload and a template without a
// schema.
func TestDescriptions(t *testing.T) {
	deployments, err := LookupBuiltin("deployments.apps")
	if err != nil {
		t.Fatal(err)
	}
	deploySchema, err := BuiltinSchema(deployments)
	if err != nil {
		t.Fatal(err)
	}
	configmaps, err := LookupBuiltin("configmaps")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		target   Target
		template *apiextensionsv1.JSONSchemaProps
	}{
		{"deployments", deployments, deploySchema},
		{"configmaps without a template schema", configmaps, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crd := CRD(tc.target, tc.template, nil)
			if len(crd.Spec.Versions) != 2 {
				t.Fatalf("%d versions, want 2", len(crd.Spec.Versions))
			}
			for _, v := range crd.Spec.Versions {
				root := v.Schema.OpenAPIV3Schema
				var missing []string
				undescribed(root, "", ".spec.template", &missing)
				slices.Sort(missing)
				if len(missing) > 0 {
					t.Errorf("%s: fields without a description: %s", v.Name, strings.Join(missing, ", "))
				}
				if !strings.HasPrefix(root.Description, "FederatedObject is any federated type") {
					t.Errorf("%s: root description %q", v.Name, root.Description)
				}
				tmpl := root.Properties["spec"].Properties["template"]
				if !strings.HasPrefix(tmpl.Description, "Template is the whole target object") {
					t.Errorf("%s: spec.template description %q", v.Name, tmpl.Description)
				}
				for name, p := range tmpl.Properties {
					if p.Description != "" {
						t.Errorf("%s: the template body is described (spec.template.%s): it costs memory in every type", v.Name, name)
					}
				}
			}
			v2 := crd.Spec.Versions[1].Schema.OpenAPIV3Schema
			if v2 == nil || crd.Spec.Versions[1].Name != typesv1beta2.Version || crd.Spec.Versions[0].Name != typesv1beta1.Version {
				t.Fatalf("versions %s, %s", crd.Spec.Versions[0].Name, crd.Spec.Versions[1].Name)
			}
			mask := v2.Properties["spec"].Properties["placementMask"].Description
			if !strings.Contains(mask, "placement ∩ mask") || !strings.Contains(mask, "HeldBack") {
				t.Errorf("v1beta2 spec.placementMask: %q", mask)
			}
			tt := v2.Properties["spec"].Properties["placement"].Properties["topologyType"].Description
			if !strings.Contains(tt, `"cell"`) || !strings.Contains(tt, `"cluster"`) {
				t.Errorf("v1beta2 spec.placement.topologyType: %q", tt)
			}
			// The CRD stays valid with its descriptions.
			if errs := validateCRD(t, crd); len(errs) != 0 {
				t.Fatalf("invalid CRD: %v", errs)
			}
		})
	}
}

// TestPrinterColumns checks that no column of either shape prints a list
// and that each shows what status holds.
func TestPrinterColumns(t *testing.T) {
	deployments, err := LookupBuiltin("deployments.apps")
	if err != nil {
		t.Fatal(err)
	}
	configmaps, err := LookupBuiltin("configmaps")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		target Target
		want   map[string][]string
	}{
		{deployments, map[string][]string{
			"v1beta1": {"Released", "Ready", "Updated", "Propagation", "Reason", "Age"},
			"v1beta2": {"Topology", "Released", "Ready", "Updated", "Propagation", "Reason", "Age"},
		}},
		{configmaps, map[string][]string{
			"v1beta1": {"Released", "Updated", "Propagation", "Reason", "Age"},
			"v1beta2": {"Topology", "Released", "Updated", "Propagation", "Reason", "Age"},
		}},
	} {
		for _, v := range CRD(tc.target, nil, nil).Spec.Versions {
			var names []string
			for _, c := range v.AdditionalPrinterColumns {
				names = append(names, c.Name)
				if strings.Contains(c.JSONPath, "topologies") || strings.Contains(c.JSONPath, "clusters") {
					t.Errorf("%s %s: column %s prints a list (%s)", tc.target.Kind, v.Name, c.Name, c.JSONPath)
				}
			}
			if !slices.Equal(names, tc.want[v.Name]) {
				t.Errorf("%s %s: columns %v, want %v", tc.target.Kind, v.Name, names, tc.want[v.Name])
			}
		}
	}
}
