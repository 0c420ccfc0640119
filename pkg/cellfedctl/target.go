package cellfedctl

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"

	"github.com/cellfed/cellfed/pkg/federatedtypes"
)

// crdVersion is the version of crd whose schema a federated type
// templates: the storage version when it is served, else the first served
// version.
func crdVersion(crd *apiextensionsv1.CustomResourceDefinition) (*apiextensionsv1.CustomResourceDefinitionVersion, error) {
	for i := range crd.Spec.Versions {
		if v := &crd.Spec.Versions[i]; v.Storage && v.Served {
			return v, nil
		}
	}
	for i := range crd.Spec.Versions {
		if v := &crd.Spec.Versions[i]; v.Served {
			return v, nil
		}
	}
	return nil, fmt.Errorf("CRD %s serves no version", crd.Name)
}

// TargetFromCRD is the federation target of a member cluster's CRD and the
// template schema of its federated type: the chosen version's (see
// crdVersion) openAPIV3Schema prepared by TemplateSchema.
func TargetFromCRD(crd *apiextensionsv1.CustomResourceDefinition) (federatedtypes.Target, *apiextensionsv1.JSONSchemaProps, error) {
	names := crd.Spec.Names
	if crd.Spec.Group == "" || names.Kind == "" || names.Plural == "" {
		return federatedtypes.Target{}, nil, fmt.Errorf("CRD %s has no group, kind or plural", crd.Name)
	}
	if want := names.Plural + "." + crd.Spec.Group; crd.Name != want {
		return federatedtypes.Target{}, nil, fmt.Errorf("CRD %s is not named <plural>.<group> (%s)", crd.Name, want)
	}
	v, err := crdVersion(crd)
	if err != nil {
		return federatedtypes.Target{}, nil, err
	}
	t := federatedtypes.Target{
		Group:      crd.Spec.Group,
		Version:    v.Name,
		Kind:       names.Kind,
		Plural:     names.Plural,
		Namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
	}
	var schema *apiextensionsv1.JSONSchemaProps
	if v.Schema != nil {
		schema = TemplateSchema(v.Schema.OpenAPIV3Schema)
	}
	return t, schema, nil
}

// TemplateSchema turns the root schema of a CRD version into the schema of
// a federated template, the way federatedtypes.BuiltinSchema shapes
// built-in types: without the top-level status, free of descriptions and
// defaults, with apiVersion and kind as strings and metadata kept
// unvalidated (nested in the template, metadata is an ordinary field, so
// the root's `metadata: {type: object}` would prune labels and
// annotations). Validation rules of the root object are dropped: they may
// use metadata, which only the root of a CRD can see. nil stays nil (a
// template that preserves every field).
func TemplateSchema(root *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	if root == nil {
		return nil
	}
	s := root.DeepCopy()
	stripDocs(s)
	if s.Type == "" {
		s.Type = "object"
	}
	if s.Properties == nil {
		s.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
	}
	delete(s.Properties, "status")
	s.Required = removeString(s.Required, "status")
	s.XValidations = nil
	s.Properties["apiVersion"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	s.Properties["kind"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	s.Properties["metadata"] = apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
	s.XEmbeddedResource = false
	return s
}

func removeString(list []string, s string) []string {
	var out []string
	for _, v := range list {
		if v != s {
			out = append(out, v)
		}
	}
	return out
}

// stripDocs removes descriptions, defaults and examples everywhere in s.
func stripDocs(s *apiextensionsv1.JSONSchemaProps) {
	if s == nil {
		return
	}
	s.Description, s.Default, s.Example = "", nil, nil
	each := func(m map[string]apiextensionsv1.JSONSchemaProps) {
		for k, v := range m {
			stripDocs(&v)
			m[k] = v
		}
	}
	each(s.Properties)
	each(s.PatternProperties)
	each(s.Definitions)
	for _, list := range [][]apiextensionsv1.JSONSchemaProps{s.AllOf, s.OneOf, s.AnyOf} {
		for i := range list {
			stripDocs(&list[i])
		}
	}
	stripDocs(s.Not)
	if s.Items != nil {
		stripDocs(s.Items.Schema)
		for i := range s.Items.JSONSchemas {
			stripDocs(&s.Items.JSONSchemas[i])
		}
	}
	if s.AdditionalProperties != nil {
		stripDocs(s.AdditionalProperties.Schema)
	}
	if s.AdditionalItems != nil {
		stripDocs(s.AdditionalItems.Schema)
	}
	for k, d := range s.Dependencies {
		stripDocs(d.Schema)
		s.Dependencies[k] = d
	}
}

// typeName checks the <type> argument of enable and disable: a resource
// name, "<plural>.<group>" or "<plural>", in lower case.
func typeName(arg string) (string, error) {
	name := strings.ToLower(strings.TrimSpace(arg))
	if name == "" {
		return "", fmt.Errorf(`no type given; name it as <plural>.<group> (e.g. "deployments.apps", "widgets.example.com") or <plural> for the core group (e.g. "services")`)
	}
	if strings.ContainsAny(name, "/ \t:") || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") {
		return "", fmt.Errorf(`%q is not a resource name; name the type as <plural>.<group> (e.g. "deployments.apps", "widgets.example.com") or <plural> for the core group (e.g. "services")`, arg)
	}
	return name, nil
}
