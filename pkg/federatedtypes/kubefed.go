package federatedtypes

import (
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/cellfed/cellfed/pkg/apis/types"
	typesv1beta1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
)

// FromKubeFed turns a federated CRD written in KubeFed's shape — v1beta1
// only, no conversion, as `kubefedctl enable` writes it — into the
// plane's: both versions with v1beta2 stored, the conversion webhook and
// cellfed's label, keeping the template schema and the metadata it was
// written with. ok is false when crd is not a federated CRD (group
// types.kubefed.io, kind Federated<Kind>) or already serves v1beta2.
func FromKubeFed(crd *apiextensionsv1.CustomResourceDefinition, conversion *apiextensionsv1.WebhookClientConfig) (out *apiextensionsv1.CustomResourceDefinition, ok bool) {
	names := crd.Spec.Names
	kind, isFederated := strings.CutPrefix(names.Kind, "Federated")
	plural, pluralOK := strings.CutPrefix(names.Plural, "federated")
	if crd.Spec.Group != types.GroupName || !isFederated || kind == "" || !pluralOK || plural == "" {
		return nil, false
	}
	var tmpl *apiextensionsv1.JSONSchemaProps
	for _, v := range crd.Spec.Versions {
		if v.Name == typesv1beta2.Version {
			return nil, false // the plane's shape already
		}
		if v.Name == typesv1beta1.Version && v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			if spec, found := v.Schema.OpenAPIV3Schema.Properties["spec"]; found {
				if t, found := spec.Properties["template"]; found {
					tmpl = t.DeepCopy()
				}
			}
		}
	}
	t := Target{Kind: kind, Plural: plural, Namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped}
	built := CRD(t, tmpl, conversion)
	out = crd.DeepCopy()
	out.Spec = built.Spec
	if names.ShortNames != nil {
		out.Spec.Names.ShortNames = names.ShortNames
	}
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	out.Labels[LabelFederatedType] = "true"
	return out, true
}
