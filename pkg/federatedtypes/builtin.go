package federatedtypes

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/version"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
	generatedopenapi "k8s.io/kubernetes/pkg/generated/openapi"
	"k8s.io/utils/ptr"
)

// Target is the type a federated type propagates.
type Target struct {
	Group, Version, Kind, Plural string
	Namespaced                   bool
}

// Resource is "<plural>.<group>", or "<plural>" for the core group. This is
// the rule FederatedTypeConfig names follow.
func (t Target) Resource() string {
	if t.Group == "" {
		return t.Plural
	}
	return t.Plural + "." + t.Group
}

// fromClusterHint tells the user how to federate a type that is not built in.
const fromClusterHint = "for a CRD use --from-cluster=<member kubeconfig>"

// LookupBuiltin resolves a built-in Kubernetes resource, written
// "<plural>.<group>" (e.g. "deployments.apps") or "<plural>" for the core
// group (e.g. "services"), to its Target. The version is the preferred one
// of the group that has the kind: GA before beta before alpha, newest first.
//
// An unknown resource yields an error that says how to fix the name,
// suggesting close matches (e.g. "deployment" → "deployments.apps").
func LookupBuiltin(resource string) (Target, error) {
	idx, err := loadBuiltinIndex()
	if err != nil {
		return Target{}, err
	}
	name := strings.ToLower(strings.TrimSpace(resource))
	if name == "" {
		return Target{}, errors.New(`no resource given; name a built-in type as <plural>.<group> (e.g. "deployments.apps") or <plural> for the core group (e.g. "services")`)
	}
	if bt, ok := idx.types[name]; ok {
		return bt.target, nil
	}
	if _, ok := idx.virtual[name]; ok {
		return Target{}, fmt.Errorf("%q is a built-in Kubernetes subresource or virtual type that is not stored as an object, so it cannot be federated", resource)
	}
	msg := fmt.Sprintf("%q is not a built-in Kubernetes type", resource)
	if matches := idx.closeMatches(name); len(matches) > 0 {
		quoted := make([]string, len(matches))
		for i, m := range matches {
			quoted[i] = fmt.Sprintf("%q", m)
		}
		msg += " (did you mean " + strings.Join(quoted, " or ") + "?)"
	}
	return Target{}, errors.New(msg + "; " + fromClusterHint)
}

// BuiltinSchema returns a structural OpenAPI v3 schema of the whole target
// object (apiVersion, kind, metadata, spec, ...) but without its top-level
// status: federated templates never carry status. The schema is meant to be
// embedded in a CRD (e.g. as spec.template), so it is free of descriptions
// and defaults, and metadata is left unvalidated.
func BuiltinSchema(t Target) (*apiextensionsv1.JSONSchemaProps, error) {
	idx, err := loadBuiltinIndex()
	if err != nil {
		return nil, err
	}
	bt, ok := idx.types[t.Resource()]
	if !ok || bt.target.Version != t.Version || bt.target.Kind != t.Kind {
		return nil, fmt.Errorf("no built-in schema for %s %s: use LookupBuiltin to resolve built-in types", t.Resource(), schema.GroupVersion{Group: t.Group, Version: t.Version}.WithKind(t.Kind))
	}
	conv := schemaConverter{defs: openAPIDefinitions(), visiting: map[string]bool{}}
	out, err := conv.ref(bt.model, field.NewPath(t.Kind))
	if err != nil {
		return nil, fmt.Errorf("converting the OpenAPI schema of %s: %w", t.Resource(), err)
	}
	dropProperty(out, []string{"status"})
	if err := validateNested(out); err != nil {
		return nil, fmt.Errorf("schema of %s is not structural: %w", t.Resource(), err)
	}
	return out, nil
}

// validateNested checks that s is a valid structural schema when it is nested
// in an object, which is where federated types put it. (At the root of a CRD
// metadata could not be specified.)
func validateNested(s *apiextensionsv1.JSONSchemaProps) error {
	wrapper := &apiextensionsv1.JSONSchemaProps{
		Type:       "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{"template": *s},
	}
	internal := &apiextensionsinternal.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(wrapper, internal, nil); err != nil {
		return fmt.Errorf("converting to the internal version: %w", err)
	}
	structural, err := structuralschema.NewStructural(internal)
	if err != nil {
		return err
	}
	if errs := structuralschema.ValidateStructural(nil, structural); len(errs) > 0 {
		return errs.ToAggregate()
	}
	return nil
}

// openAPIDefinitions returns the OpenAPI definitions compiled into
// Kubernetes, keyed by model name (e.g. "io.k8s.api.apps.v1.Deployment").
// References between them are "#/definitions/<model name>".
var openAPIDefinitions = sync.OnceValue(func() map[string]common.OpenAPIDefinition {
	return generatedopenapi.GetOpenAPIDefinitions(func(name string) spec.Ref {
		return spec.MustCreateRef(definitionsPrefix + common.EscapeJsonPointer(name))
	})
})

const definitionsPrefix = "#/definitions/"

// builtinType is a resolvable built-in type.
type builtinType struct {
	target Target
	// model is the name of the type's OpenAPI definition.
	model string
}

// builtinIndex holds the built-in types by resource name.
type builtinIndex struct {
	// types maps Target.Resource() to the type at its preferred version.
	types map[string]builtinType
	// virtual holds the resource names of kinds that exist in the scheme but
	// are not stored objects (subresources, reviews, ...).
	virtual map[string]struct{}
}

// loadBuiltinIndex builds the index of built-in types once.
var loadBuiltinIndex = sync.OnceValues(buildBuiltinIndex)

// buildBuiltinIndex indexes every persisted kind known to client-go's scheme
// (plus CustomResourceDefinition and APIService) that has an OpenAPI
// definition.
func buildBuiltinIndex() (*builtinIndex, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		apiextensionsv1.AddToScheme,
		apiregistrationv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("building the scheme of built-in types: %w", err)
		}
	}
	defs := openAPIDefinitions()
	idx := &builtinIndex{types: map[string]builtinType{}, virtual: map[string]struct{}{}}
	for gvk, typ := range scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal || removedGroups[gvk.Group] || !isObjectKind(gvk.Kind) {
			continue
		}
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		t := Target{
			Group:      gvk.Group,
			Version:    gvk.Version,
			Kind:       gvk.Kind,
			Plural:     plural.Resource,
			Namespaced: !clusterScopedKinds[gvk.GroupKind()],
		}
		if isVirtualKind(gvk.Kind) {
			idx.virtual[t.Resource()] = struct{}{}
			continue
		}
		named, ok := reflect.New(typ).Interface().(interface{ OpenAPIModelName() string })
		if !ok {
			continue
		}
		model := named.OpenAPIModelName()
		if _, ok := defs[model]; !ok {
			continue
		}
		if prev, ok := idx.types[t.Resource()]; ok && version.CompareKubeAwareVersionStrings(prev.target.Version, t.Version) > 0 {
			continue
		}
		idx.types[t.Resource()] = builtinType{target: t, model: model}
	}
	return idx, nil
}

// removedGroups are groups still in client-go's scheme whose every resource
// has been removed from the API server (extensions/v1beta1 went in 1.22).
var removedGroups = map[string]bool{"extensions": true}

// isObjectKind reports whether kind can be a stored object at all: lists,
// option kinds and API machinery kinds are not.
func isObjectKind(kind string) bool {
	switch {
	case strings.HasSuffix(kind, "List"), strings.HasSuffix(kind, "Options"):
		return false
	case kind == "WatchEvent", kind == "Status", kind == "APIGroup", kind == "APIVersions", kind == "APIResourceList":
		return false
	}
	return true
}

// virtualKinds are kinds that are only request or response bodies of
// subresources or virtual resources, never stored objects.
var virtualKinds = map[string]bool{
	"Binding":             true,
	"DeploymentRollback":  true,
	"Eviction":            true,
	"PodStatusResult":     true,
	"RangeAllocation":     true,
	"Scale":               true,
	"SerializedReference": true,
	"TokenRequest":        true,
}

// isVirtualKind reports whether kind is a subresource or virtual kind that
// cannot be federated: the virtualKinds and every review (TokenReview,
// SubjectAccessReview, ConversionReview, ...).
func isVirtualKind(kind string) bool {
	return virtualKinds[kind] || strings.HasSuffix(kind, "Review")
}

// clusterScopedKinds are the built-in kinds that are not namespaced; every
// other built-in kind is. (From the registry strategies of kube-apiserver
// v1.36, plus CustomResourceDefinition and APIService.)
var clusterScopedKinds = map[schema.GroupKind]bool{
	{Group: "", Kind: "ComponentStatus"}:                                              true,
	{Group: "", Kind: "Namespace"}:                                                    true,
	{Group: "", Kind: "Node"}:                                                         true,
	{Group: "", Kind: "PersistentVolume"}:                                             true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"}:          true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicyBinding"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:                 true,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:                             true,
	{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"}:                 true,
	{Group: "certificates.k8s.io", Kind: "ClusterTrustBundle"}:                        true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"}:                       true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"}:       true,
	{Group: "internal.apiserver.k8s.io", Kind: "StorageVersion"}:                      true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                                true,
	{Group: "networking.k8s.io", Kind: "IPAddress"}:                                   true,
	{Group: "networking.k8s.io", Kind: "ServiceCIDR"}:                                 true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                      true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                         true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                  true,
	{Group: "resource.k8s.io", Kind: "DeviceClass"}:                                   true,
	{Group: "resource.k8s.io", Kind: "DeviceTaintRule"}:                               true,
	{Group: "resource.k8s.io", Kind: "ResourcePoolStatusRequest"}:                     true,
	{Group: "resource.k8s.io", Kind: "ResourceSlice"}:                                 true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                               true,
	{Group: "storage.k8s.io", Kind: "CSIDriver"}:                                      true,
	{Group: "storage.k8s.io", Kind: "CSINode"}:                                        true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                   true,
	{Group: "storage.k8s.io", Kind: "VolumeAttachment"}:                               true,
	{Group: "storage.k8s.io", Kind: "VolumeAttributesClass"}:                          true,
	{Group: "storagemigration.k8s.io", Kind: "StorageVersionMigration"}:               true,
}

// maxSuggestions bounds the "did you mean" list.
const maxSuggestions = 3

// closeMatches returns the resource names the user plausibly meant by name:
// those whose plural or singular (the lower-cased kind) is the part of name
// before the first dot, or failing that those within a small edit distance.
func (idx *builtinIndex) closeMatches(name string) []string {
	base, _, _ := strings.Cut(name, ".")
	type scored struct {
		resource string
		score    int
	}
	var found []scored
	for res, bt := range idx.types {
		singular := strings.ToLower(bt.target.Kind)
		switch {
		case bt.target.Plural == base || singular == base:
			found = append(found, scored{res, 0})
		default:
			d := min(editDistance(name, res), editDistance(base, bt.target.Plural), editDistance(base, singular))
			if d <= 2 && d < len(base)/2 {
				found = append(found, scored{res, d})
			}
		}
	}
	sort.Slice(found, func(i, j int) bool {
		if found[i].score != found[j].score {
			return found[i].score < found[j].score
		}
		return found[i].resource < found[j].resource
	})
	var out []string
	for _, f := range found {
		if f.score > found[0].score || len(out) == maxSuggestions {
			break
		}
		out = append(out, f.resource)
	}
	return out
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// schemaConverter turns kube-openapi definitions into structural CRD schemas.
type schemaConverter struct {
	defs map[string]common.OpenAPIDefinition
	// visiting holds the definitions being expanded on the current path, to
	// cut recursive types.
	visiting map[string]bool
}

// specialSchemas replace definitions whose OpenAPI form is not structural or
// that CRDs treat specially.
var specialSchemas = map[string]func() *apiextensionsv1.JSONSchemaProps{
	intstr.IntOrString{}.OpenAPIModelName():   intOrStringSchema,
	resource.Quantity{}.OpenAPIModelName():    quantitySchema,
	metav1.Time{}.OpenAPIModelName():          dateTimeSchema,
	metav1.MicroTime{}.OpenAPIModelName():     dateTimeSchema,
	metav1.ObjectMeta{}.OpenAPIModelName():    preserveObjectSchema,
	runtime.RawExtension{}.OpenAPIModelName(): preserveObjectSchema,
}

// quantityPattern is the pattern CRD generators give resource.Quantity.
const quantityPattern = `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`

func intOrStringSchema() *apiextensionsv1.JSONSchemaProps {
	return &apiextensionsv1.JSONSchemaProps{XIntOrString: true}
}

func quantitySchema() *apiextensionsv1.JSONSchemaProps {
	return &apiextensionsv1.JSONSchemaProps{
		XIntOrString: true,
		AnyOf:        []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}},
		Pattern:      quantityPattern,
	}
}

func dateTimeSchema() *apiextensionsv1.JSONSchemaProps {
	return &apiextensionsv1.JSONSchemaProps{Type: "string", Format: "date-time"}
}

func preserveObjectSchema() *apiextensionsv1.JSONSchemaProps {
	return &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
}

func preserveAnySchema() *apiextensionsv1.JSONSchemaProps {
	return &apiextensionsv1.JSONSchemaProps{XPreserveUnknownFields: ptr.To(true)}
}

// crdFormats are the formats kept in converted schemas: those CRDs validate
// or accept as documentation of a numeric width.
var crdFormats = map[string]bool{
	"byte": true, "date": true, "date-time": true,
	"double": true, "float": true, "int32": true, "int64": true,
}

// ref converts the definition named model.
func (c *schemaConverter) ref(model string, path *field.Path) (*apiextensionsv1.JSONSchemaProps, error) {
	if special, ok := specialSchemas[model]; ok {
		return special(), nil
	}
	if c.visiting[model] {
		return preserveObjectSchema(), nil
	}
	def, ok := c.defs[model]
	if !ok {
		return nil, fmt.Errorf("%s: no OpenAPI definition %q", path, model)
	}
	c.visiting[model] = true
	defer delete(c.visiting, model)
	out, err := c.convert(&def.Schema, path)
	if err != nil {
		return nil, err
	}
	if dropped, ok := droppedProperties[model]; ok {
		dropProperty(out, dropped)
	}
	return out, nil
}

// droppedProperties are property paths removed from converted definitions
// because the API server rejects them there anyway; they are large.
var droppedProperties = map[string][]string{
	// ValidatePodTemplateSpec: "ephemeral containers not allowed in pod template".
	corev1.PodTemplateSpec{}.OpenAPIModelName(): {"spec", "ephemeralContainers"},
}

// dropProperty removes the property at path from s, if it is there.
func dropProperty(s *apiextensionsv1.JSONSchemaProps, path []string) {
	name := path[0]
	if len(path) > 1 {
		child, ok := s.Properties[name]
		if !ok {
			return
		}
		dropProperty(&child, path[1:])
		s.Properties[name] = child
		return
	}
	delete(s.Properties, name)
	s.Required = slices.DeleteFunc(s.Required, func(r string) bool { return r == name })
}

// refName returns the definition name s refers to, if any: either directly or
// through a lone allOf (the OpenAPI v3 way to put siblings next to $ref).
func refName(s *spec.Schema) (string, bool) {
	r := s.Ref.String()
	if r == "" && len(s.AllOf) == 1 && len(s.Properties) == 0 && len(s.Type) == 0 {
		r = s.AllOf[0].Ref.String()
	}
	if r == "" {
		return "", false
	}
	return strings.TrimPrefix(r, definitionsPrefix), true
}

// convert converts one schema, keeping only what structural schemas need.
func (c *schemaConverter) convert(s *spec.Schema, path *field.Path) (*apiextensionsv1.JSONSchemaProps, error) {
	if name, ok := refName(s); ok {
		return c.ref(name, path)
	}
	if len(s.Type) != 1 {
		// No single type (e.g. JSON, or a oneOf of types): accept anything.
		return preserveAnySchema(), nil
	}
	out := &apiextensionsv1.JSONSchemaProps{Type: s.Type[0]}
	switch out.Type {
	case "object":
		if err := c.convertObject(s, out, path); err != nil {
			return nil, err
		}
	case "array":
		if err := c.convertArray(s, out, path); err != nil {
			return nil, err
		}
	case "string", "integer", "number", "boolean":
		if crdFormats[s.Format] {
			out.Format = s.Format
		}
		// Enums are left out on purpose: members may run a newer
		// Kubernetes that accepts more values, and each member's API server
		// validates what it stores.
	default:
		return nil, fmt.Errorf("%s: unsupported type %q", path, out.Type)
	}
	return out, nil
}

// convertObject fills out, an object schema, from s.
func (c *schemaConverter) convertObject(s *spec.Schema, out *apiextensionsv1.JSONSchemaProps, path *field.Path) error {
	if len(s.Properties) > 0 {
		out.Properties = make(map[string]apiextensionsv1.JSONSchemaProps, len(s.Properties))
		for name, prop := range s.Properties {
			p, err := c.convert(&prop, path.Child(name))
			if err != nil {
				return err
			}
			out.Properties[name] = *p
		}
		out.Required = append([]string(nil), s.Required...)
	} else if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		p, err := c.convert(s.AdditionalProperties.Schema, path.Key("*"))
		if err != nil {
			return err
		}
		out.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: p}
	} else {
		// A free-form object: CRDs prune unknown fields unless told not to.
		out.XPreserveUnknownFields = ptr.To(true)
		return nil
	}
	if mapType, ok := s.Extensions.GetString("x-kubernetes-map-type"); ok && (mapType == "atomic" || mapType == "granular") {
		out.XMapType = ptr.To(mapType)
	}
	return nil
}

// convertArray fills out, an array schema, from s. List types are kept only
// where a structural schema allows them without defaults.
func (c *schemaConverter) convertArray(s *spec.Schema, out *apiextensionsv1.JSONSchemaProps, path *field.Path) error {
	if s.Items == nil || s.Items.Schema == nil {
		out.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: preserveAnySchema()}
		return nil
	}
	items, err := c.convert(s.Items.Schema, path.Key("*"))
	if err != nil {
		return err
	}
	out.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: items}
	listType, _ := s.Extensions.GetString("x-kubernetes-list-type")
	switch listType {
	case "atomic":
		out.XListType = ptr.To(listType)
	case "set":
		if isAtomicSetItem(items) {
			out.XListType = ptr.To(listType)
		}
	case "map":
		keys, _ := s.Extensions.GetStringSlice("x-kubernetes-list-map-keys")
		if validMapKeys(items, keys) {
			out.XListType = ptr.To(listType)
			out.XListMapKeys = keys
		}
	}
	return nil
}

// isAtomicSetItem reports whether items may be the items of a set list:
// scalars, atomic objects or atomic lists.
func isAtomicSetItem(items *apiextensionsv1.JSONSchemaProps) bool {
	switch items.Type {
	case "object":
		return items.XMapType != nil && *items.XMapType == "atomic"
	case "array":
		return items.XListType == nil || *items.XListType == "atomic"
	case "":
		return items.XIntOrString
	}
	return true
}

// validMapKeys reports whether keys can be the x-kubernetes-list-map-keys of
// a list of items: each a scalar property that is required (schemas here
// carry no defaults, which would be the other way).
func validMapKeys(items *apiextensionsv1.JSONSchemaProps, keys []string) bool {
	if items.Type != "object" || len(keys) == 0 {
		return false
	}
	seen := map[string]bool{}
	for _, k := range keys {
		p, ok := items.Properties[k]
		if !ok || seen[k] || p.Type == "object" || p.Type == "array" || !slices.Contains(items.Required, k) {
			return false
		}
		seen[k] = true
	}
	return true
}
