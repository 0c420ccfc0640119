package federatedtypes

import (
	"fmt"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/cellfed/cellfed/manifests"
	"github.com/cellfed/cellfed/pkg/apis/types"
	typesv1beta1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
)

// LabelFederatedType marks the CRDs cellfed manages in types.kubefed.io, so
// the plane can keep their conversion webhook pointed at itself.
const LabelFederatedType = "cellfed.io/federated-type"

// Category is the kubectl category of every federated type:
// `kubectl get federated` lists them all.
const Category = "federated"

// StorageVersion is the version federated objects are stored in.
const StorageVersion = typesv1beta2.Version

// FederatedKind is the federated kind of a target, e.g. FederatedDeployment.
func (t Target) FederatedKind() string { return "Federated" + t.Kind }

// FederatedPlural is the plural of the federated kind, e.g.
// federateddeployments.
func (t Target) FederatedPlural() string { return "federated" + strings.ToLower(t.Plural) }

// CRDName is the name of the federated CRD, e.g.
// federateddeployments.types.kubefed.io.
func (t Target) CRDName() string { return t.FederatedPlural() + "." + types.GroupName }

// FederatedNamespaced says whether the federated type is namespaced: it is
// when the target is, and for namespaces (a FederatedNamespace lives in the
// namespace it federates, as in KubeFed).
func (t Target) FederatedNamespaced() bool {
	return t.Namespaced || (t.Group == "" && t.Kind == "Namespace")
}

// CRD builds the federated CRD for target t. template is the schema of the
// target object; conversion is where the API server reaches the conversion
// webhook (nil builds a CRD without it, which only a test would want).
func CRD(t Target, template *apiextensionsv1.JSONSchemaProps, conversion *apiextensionsv1.WebhookClientConfig) *apiextensionsv1.CustomResourceDefinition {
	scope := apiextensionsv1.ClusterScoped
	if t.FederatedNamespaced() {
		scope = apiextensionsv1.NamespaceScoped
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta: metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   t.CRDName(),
			Labels: map[string]string{LabelFederatedType: "true"},
		},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: types.GroupName,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural:     t.FederatedPlural(),
				Singular:   strings.ToLower(t.FederatedKind()),
				Kind:       t.FederatedKind(),
				ListKind:   t.FederatedKind() + "List",
				Categories: []string{Category},
			},
			Scope: scope,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{
					Name:                     typesv1beta1.Version,
					Served:                   true,
					Storage:                  StorageVersion == typesv1beta1.Version,
					Schema:                   &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: describe(v1beta1Schema(template), typesv1beta1.Version)},
					Subresources:             &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
					AdditionalPrinterColumns: printerColumns(t),
				},
				{
					Name:         typesv1beta2.Version,
					Served:       true,
					Storage:      StorageVersion == typesv1beta2.Version,
					Schema:       &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: describe(v1beta2Schema(template), typesv1beta2.Version)},
					Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
					AdditionalPrinterColumns: append([]apiextensionsv1.CustomResourceColumnDefinition{
						{Name: "Topology", Type: "string", JSONPath: ".spec.placement.topologyType",
							Description: "What placement names: cell or cluster."},
					}, printerColumns(t)...),
				},
			},
		},
	}
	if conversion != nil {
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig:             conversion.DeepCopy(),
				ConversionReviewVersions: []string{"v1"},
			},
		}
	}
	return crd
}

// printerColumns are what kubectl get shows at a glance, all from the
// status cellfed-controller writes: how many placed topologies the release
// reaches (placement ∩ mask, of the placed), for workloads how many are
// ready, how many run the current generation, and the Propagation
// condition. No column prints a list: a cell's name is in status.
func printerColumns(t Target) []apiextensionsv1.CustomResourceColumnDefinition {
	cols := []apiextensionsv1.CustomResourceColumnDefinition{
		{Name: "Released", Type: "string", JSONPath: ".status.released",
			Description: "n/m: of the m placed cells (or clusters), n are in the placement mask (all without a mask)."},
	}
	if t.Workload() {
		cols = append(cols, apiextensionsv1.CustomResourceColumnDefinition{Name: "Ready", Type: "string", JSONPath: ".status.ready",
			Description: "n/m: of the m placed cells, n report the member object ready."})
	}
	return append(cols,
		apiextensionsv1.CustomResourceColumnDefinition{Name: "Updated", Type: "string", JSONPath: ".status.propagated",
			Description: "n/m: of the m placed cells, n run the current generation."},
		apiextensionsv1.CustomResourceColumnDefinition{Name: "Propagation", Type: "string", JSONPath: `.status.conditions[?(@.type=="Propagation")].status`,
			Description: "The Propagation condition."},
		apiextensionsv1.CustomResourceColumnDefinition{Name: "Reason", Type: "string", JSONPath: `.status.conditions[?(@.type=="Propagation")].reason`, Priority: 1,
			Description: "The Propagation condition's reason."},
		apiextensionsv1.CustomResourceColumnDefinition{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
	)
}

// shapeSchemas are the generated schemas of the two federated shapes,
// whose descriptions are the Go types' doc comments (manifests/federated).
var shapeSchemas = sync.OnceValue(func() map[string]*apiextensionsv1.JSONSchemaProps {
	s, err := manifests.FederatedSchemas()
	if err != nil {
		// Generated and embedded at build time; TestDescriptions covers it.
		panic(fmt.Sprintf("federatedtypes: %v", err))
	}
	return s
})

// describe copies the descriptions of the generated schema of version
// into schema, field by field, and returns schema. The template's own
// fields stay as the target's schema has them (without descriptions:
// every enabled type would carry its target's whole documentation twice);
// spec.template itself is described.
func describe(schema *apiextensionsv1.JSONSchemaProps, version string) *apiextensionsv1.JSONSchemaProps {
	if gen := shapeSchemas()[version]; gen != nil {
		copyDescriptions(schema, gen, "")
	}
	return schema
}

func copyDescriptions(dst, src *apiextensionsv1.JSONSchemaProps, path string) {
	if dst.Description == "" {
		dst.Description = src.Description
	}
	if path == ".spec.template" {
		return
	}
	for name, p := range dst.Properties {
		if sp, ok := src.Properties[name]; ok {
			copyDescriptions(&p, &sp, path+"."+name)
			dst.Properties[name] = p
		}
	}
	if dst.Items != nil && dst.Items.Schema != nil && src.Items != nil && src.Items.Schema != nil {
		copyDescriptions(dst.Items.Schema, src.Items.Schema, path+"[]")
	}
}

// Workload reports whether the target has a well-known readiness
// (Deployment, StatefulSet, DaemonSet, Job).
func (t Target) Workload() bool {
	switch t.Group + "/" + t.Kind {
	case "apps/Deployment", "apps/StatefulSet", "apps/DaemonSet", "batch/Job":
		return true
	}
	return false
}

// Schemas. Both versions share the template, the override operations and
// the conditions; they differ in how placement, overrides and status name
// where things go.

func object(props map[string]apiextensionsv1.JSONSchemaProps, required ...string) apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props, Required: required}
}

func array(items apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &items}}
}

func str() apiextensionsv1.JSONSchemaProps { return apiextensionsv1.JSONSchemaProps{Type: "string"} }

func anyJSON() apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{XPreserveUnknownFields: ptr.To(true)}
}

func named(key string) apiextensionsv1.JSONSchemaProps {
	return array(object(map[string]apiextensionsv1.JSONSchemaProps{key: str()}, key))
}

func labelSelector() apiextensionsv1.JSONSchemaProps {
	return object(map[string]apiextensionsv1.JSONSchemaProps{
		"matchLabels": {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: ptr.To(str())}},
		"matchExpressions": array(object(map[string]apiextensionsv1.JSONSchemaProps{
			"key":      str(),
			"operator": str(),
			"values":   array(str()),
		}, "key", "operator")),
	})
}

func overrides(nameKey string) apiextensionsv1.JSONSchemaProps {
	op := str()
	op.Enum = []apiextensionsv1.JSON{{Raw: []byte(`"add"`)}, {Raw: []byte(`"remove"`)}, {Raw: []byte(`"replace"`)}}
	return array(object(map[string]apiextensionsv1.JSONSchemaProps{
		nameKey: str(),
		"clusterOverrides": array(object(map[string]apiextensionsv1.JSONSchemaProps{
			"op":    op,
			"path":  str(),
			"value": anyJSON(),
		}, "path")),
	}, nameKey))
}

// replicaDivision is v1beta2's spec.replicaDivision. Enums and bounds
// are admission's to explain (pkg/admission); the schema only types the
// fields and defaults the mode.
func replicaDivision() apiextensionsv1.JSONSchemaProps {
	mode := str()
	mode.Default = &apiextensionsv1.JSON{Raw: []byte(`"` + typesv1beta2.DivisionDuplicate + `"`)}
	i32 := apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int32"}
	return object(map[string]apiextensionsv1.JSONSchemaProps{
		"mode":    mode,
		"dynamic": str(),
		"topologies": array(object(map[string]apiextensionsv1.JSONSchemaProps{
			"name":        str(),
			"weight":      i32,
			"minReplicas": i32,
			"maxReplicas": i32,
		}, "name")),
		"failover":             {Type: "boolean"},
		"failoverAfterSeconds": i32,
		"maxSurge":             i32,
	})
}

func conditions() apiextensionsv1.JSONSchemaProps {
	return array(object(map[string]apiextensionsv1.JSONSchemaProps{
		"type":               str(),
		"status":             str(),
		"lastUpdateTime":     {Type: "string", Format: "date-time"},
		"lastTransitionTime": {Type: "string", Format: "date-time"},
		"reason":             str(),
		"message":            str(),
	}, "type", "status"))
}

func statusEntries(props map[string]apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	props["name"] = str()
	props["status"] = str()
	props["generation"] = apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int64"}
	props["ready"] = apiextensionsv1.JSONSchemaProps{Type: "boolean"}
	props["message"] = str()
	props["remoteStatus"] = apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
	props["replicas"] = apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int32"}
	return array(object(props, "name"))
}

func root(spec, status apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	return &apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"apiVersion": str(),
			"kind":       str(),
			"metadata":   {Type: "object"},
			"spec":       spec,
			"status":     status,
		},
	}
}

func template(t *apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	if t == nil {
		return apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
	}
	return *t.DeepCopy()
}

func v1beta1Schema(tmpl *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	return root(
		object(map[string]apiextensionsv1.JSONSchemaProps{
			"template": template(tmpl),
			"placement": object(map[string]apiextensionsv1.JSONSchemaProps{
				"clusters":        named("name"),
				"clusterSelector": labelSelector(),
			}),
			"overrides":      overrides("clusterName"),
			"retainReplicas": {Type: "boolean"},
		}),
		object(map[string]apiextensionsv1.JSONSchemaProps{
			"observedGeneration": {Type: "integer", Format: "int64"},
			"conditions":         conditions(),
			"clusters":           statusEntries(map[string]apiextensionsv1.JSONSchemaProps{}),
			"released":           str(),
			"propagated":         str(),
			"ready":              str(),
		}),
	)
}

func v1beta2Schema(tmpl *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	topologyType := str()
	topologyType.Default = &apiextensionsv1.JSON{Raw: []byte(`"` + typesv1beta2.TopologyCell + `"`)}
	for _, tt := range typesv1beta2.TopologyTypes {
		topologyType.Enum = append(topologyType.Enum, apiextensionsv1.JSON{Raw: []byte(`"` + tt + `"`)})
	}
	return root(
		object(map[string]apiextensionsv1.JSONSchemaProps{
			"template": template(tmpl),
			"placement": object(map[string]apiextensionsv1.JSONSchemaProps{
				"topologyType":     topologyType,
				"topologies":       named("name"),
				"topologySelector": labelSelector(),
			}),
			"placementMask": object(map[string]apiextensionsv1.JSONSchemaProps{
				"topologies": named("name"),
			}),
			"overrides":       overrides("topologyName"),
			"retainReplicas":  {Type: "boolean"},
			"replicaDivision": replicaDivision(),
		}),
		object(map[string]apiextensionsv1.JSONSchemaProps{
			"observedGeneration": {Type: "integer", Format: "int64"},
			"conditions":         conditions(),
			"topologies":         statusEntries(map[string]apiextensionsv1.JSONSchemaProps{"cluster": str()}),
			"released":           str(),
			"propagated":         str(),
			"ready":              str(),
			"record": object(map[string]apiextensionsv1.JSONSchemaProps{
				"templateVersion":  str(),
				"overridesVersion": str(),
				"clusterVersions": array(object(map[string]apiextensionsv1.JSONSchemaProps{
					"clusterName": str(),
					"version":     str(),
				}, "clusterName", "version")),
			}, "templateVersion", "overridesVersion"),
		}),
	)
}
