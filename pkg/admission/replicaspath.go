package admission

import (
	"context"
	"fmt"
	"strconv"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	fedv1beta1 "sigs.k8s.io/kubefed/pkg/apis/core/v1beta1"

	typesv1beta1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
	"github.com/cellfed/cellfed/pkg/federatedtypes"
	"github.com/cellfed/cellfed/pkg/placement/division"
)

// TemplateSchemas is what a Lookup may also offer: the schema of a
// federated type's template as the plane's CRD of that type holds it
// (nil when the CRD gives none or does not exist).
type TemplateSchemas interface {
	TemplateSchema(federated schema.GroupResource) (*apiextensionsv1.JSONSchemaProps, error)
}

// validateReplicasPathSchema checks that a FederatedTypeConfig's
// replicasPath names an integer field of the target type, where the
// plane knows the type's schema: a built-in type's from Kubernetes'
// OpenAPI definitions, another type's from the template schema of its
// federated CRD on the plane. A path into a part the schema leaves open
// (x-kubernetes-preserve-unknown-fields) is accepted: the controller
// then refuses a non-integer value there, object by object.
func (a *Admitter) validateReplicasPathSchema(r Request) (field.ErrorList, error) {
	p, _, _ := unstructured.NestedString(r.Object.Object, "spec", division.ReplicasPathField)
	if p == "" {
		return nil, nil
	}
	var c fedv1beta1.FederatedTypeConfig
	if err := decodeContent(r.Object.Object, &c); err != nil {
		return nil, nil // validateTypeConfig says so
	}
	tt := c.Spec.TargetType
	target := federatedtypes.Target{Group: tt.Group, Version: tt.Version, Kind: tt.Kind, Plural: tt.PluralName}
	s, err := federatedtypes.BuiltinSchema(target)
	if err != nil {
		s = nil // not built in
		if ts, ok := a.Lookup.(TemplateSchemas); ok {
			ft := c.Spec.FederatedType
			if s, err = ts.TemplateSchema(schema.GroupResource{Group: ft.Group, Resource: ft.PluralName}); err != nil {
				return nil, err
			}
		}
	}
	if s == nil {
		return nil, nil
	}
	segs, err := division.ReplicasPathSegments(p)
	if err != nil {
		return nil, nil // validateTypeConfig says so
	}
	if msg := integerAt(s, segs); msg != "" {
		kind := schema.GroupVersion{Group: tt.Group, Version: tt.Version}.WithKind(tt.Kind)
		return field.ErrorList{field.Invalid(field.NewPath("spec", division.ReplicasPathField), p,
			fmt.Sprintf("%s in the schema of %s %s: the replicas path must name an integer field; name the field that holds the replicas, e.g. %s", msg, kind.GroupVersion(), kind.Kind, division.DefaultReplicasPath))}, nil
	}
	return nil, nil
}

// integerAt follows segs through a schema and says what is wrong when
// they do not end at an integer ("" when they do, or when the schema
// leaves that part open).
func integerAt(s *apiextensionsv1.JSONSchemaProps, segs []string) string {
	at := ""
	for _, seg := range segs {
		switch {
		case s.Type == "array":
			if _, err := strconv.ParseUint(seg, 10, 31); err != nil || s.Items == nil || s.Items.Schema == nil {
				return fmt.Sprintf("%s is a list, and %q is not an index", at, seg)
			}
			s = s.Items.Schema
		case s.Type == "object" || s.Type == "" && len(s.Properties) > 0:
			if p, ok := s.Properties[seg]; ok {
				s = &p
				break
			}
			if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
				s = s.AdditionalProperties.Schema
				break
			}
			if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields {
				return "" // open: the schema does not say
			}
			return fmt.Sprintf("%s has no field %q", orRoot(at), seg)
		case s.Type == "" && s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields:
			return ""
		default:
			return fmt.Sprintf("%s is %s, with no field %q", at, typeName(s), seg)
		}
		at += "/" + seg
	}
	if s.Type == "integer" && !s.XIntOrString {
		return ""
	}
	if s.Type == "" && s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields {
		return ""
	}
	return fmt.Sprintf("%s is %s, not an integer", at, typeName(s))
}

func orRoot(at string) string {
	if at == "" {
		return "the object"
	}
	return at
}

func typeName(s *apiextensionsv1.JSONSchemaProps) string {
	switch {
	case s.XIntOrString:
		return "an integer or a string"
	case s.Type == "string":
		return "a string"
	case s.Type == "object":
		return "an object"
	case s.Type == "array":
		return "a list"
	case s.Type == "":
		return "of any type"
	}
	return "a " + s.Type
}

var crdsResource = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")

// TemplateSchema reads the schema of spec.template of a federated type
// from its CRD on the plane, in the version v1beta1 (both versions share
// it). A FederatedTypeConfig is written rarely, so it is a live read.
func (i *Informers) TemplateSchema(federated schema.GroupResource) (*apiextensionsv1.JSONSchemaProps, error) {
	ctx, cancel := context.WithTimeout(context.Background(), liveReadTimeout)
	defer cancel()
	u, err := i.client.Resource(crdsResource).Get(ctx, federated.String(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the CRD %s: %w", federated, err)
	}
	return templateSchemaOf(u)
}

func templateSchemaOf(u *unstructured.Unstructured) (*apiextensionsv1.JSONSchemaProps, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := decodeContent(u.Object, &crd); err != nil {
		return nil, fmt.Errorf("decoding the CRD %s: %w", u.GetName(), err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != typesv1beta1.Version || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		spec, ok := v.Schema.OpenAPIV3Schema.Properties["spec"]
		if !ok {
			return nil, nil
		}
		tmpl, ok := spec.Properties["template"]
		if !ok {
			return nil, nil
		}
		return &tmpl, nil
	}
	return nil, nil
}
