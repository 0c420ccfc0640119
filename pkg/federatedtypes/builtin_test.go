package federatedtypes

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/utils/ptr"
)

// defaultTypes are the plane's default federated types.
var defaultTypes = []string{
	"deployments.apps",
	"services",
	"configmaps",
	"secrets",
	"namespaces",
	"serviceaccounts",
	"statefulsets.apps",
	"daemonsets.apps",
	"jobs.batch",
	"ingresses.networking.k8s.io",
}

func TestTargetResource(t *testing.T) {
	tests := []struct {
		name   string
		target Target
		want   string
	}{
		{"core", Target{Version: "v1", Kind: "Service", Plural: "services"}, "services"},
		{"grouped", Target{Group: "apps", Version: "v1", Kind: "Deployment", Plural: "deployments"}, "deployments.apps"},
		{"dotted group", Target{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress", Plural: "ingresses"}, "ingresses.networking.k8s.io"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.target.Resource(); got != tt.want {
				t.Errorf("Resource() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLookupBuiltin(t *testing.T) {
	tests := []struct {
		resource string
		want     Target
	}{
		{"deployments.apps", Target{Group: "apps", Version: "v1", Kind: "Deployment", Plural: "deployments", Namespaced: true}},
		{"services", Target{Version: "v1", Kind: "Service", Plural: "services", Namespaced: true}},
		{"configmaps", Target{Version: "v1", Kind: "ConfigMap", Plural: "configmaps", Namespaced: true}},
		{"secrets", Target{Version: "v1", Kind: "Secret", Plural: "secrets", Namespaced: true}},
		{"namespaces", Target{Version: "v1", Kind: "Namespace", Plural: "namespaces"}},
		{"serviceaccounts", Target{Version: "v1", Kind: "ServiceAccount", Plural: "serviceaccounts", Namespaced: true}},
		{"endpoints", Target{Version: "v1", Kind: "Endpoints", Plural: "endpoints", Namespaced: true}},
		{"statefulsets.apps", Target{Group: "apps", Version: "v1", Kind: "StatefulSet", Plural: "statefulsets", Namespaced: true}},
		{"daemonsets.apps", Target{Group: "apps", Version: "v1", Kind: "DaemonSet", Plural: "daemonsets", Namespaced: true}},
		{"jobs.batch", Target{Group: "batch", Version: "v1", Kind: "Job", Plural: "jobs", Namespaced: true}},
		{"cronjobs.batch", Target{Group: "batch", Version: "v1", Kind: "CronJob", Plural: "cronjobs", Namespaced: true}},
		{"ingresses.networking.k8s.io", Target{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress", Plural: "ingresses", Namespaced: true}},
		{"ingressclasses.networking.k8s.io", Target{Group: "networking.k8s.io", Version: "v1", Kind: "IngressClass", Plural: "ingressclasses"}},
		{"poddisruptionbudgets.policy", Target{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget", Plural: "poddisruptionbudgets", Namespaced: true}},
		{"clusterroles.rbac.authorization.k8s.io", Target{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Plural: "clusterroles"}},
		{"roles.rbac.authorization.k8s.io", Target{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role", Plural: "roles", Namespaced: true}},
		{"horizontalpodautoscalers.autoscaling", Target{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler", Plural: "horizontalpodautoscalers", Namespaced: true}},
		// The scheme registers coordination v1alpha2 and v1beta1 before v1.
		{"leases.coordination.k8s.io", Target{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease", Plural: "leases", Namespaced: true}},
		{"storageclasses.storage.k8s.io", Target{Group: "storage.k8s.io", Version: "v1", Kind: "StorageClass", Plural: "storageclasses"}},
		{"customresourcedefinitions.apiextensions.k8s.io", Target{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Plural: "customresourcedefinitions"}},
		{"apiservices.apiregistration.k8s.io", Target{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService", Plural: "apiservices"}},
		{" Deployments.Apps ", Target{Group: "apps", Version: "v1", Kind: "Deployment", Plural: "deployments", Namespaced: true}},
	}
	for _, tt := range tests {
		t.Run(tt.resource, func(t *testing.T) {
			got, err := LookupBuiltin(tt.resource)
			if err != nil {
				t.Fatalf("LookupBuiltin(%q): %v", tt.resource, err)
			}
			if got != tt.want {
				t.Errorf("LookupBuiltin(%q) = %+v, want %+v", tt.resource, got, tt.want)
			}
		})
	}
}

func TestLookupBuiltinErrors(t *testing.T) {
	tests := []struct {
		name     string
		resource string
		// wantInErr are substrings the error message must contain.
		wantInErr []string
		// notInErr are substrings it must not contain.
		notInErr []string
	}{
		{"CRD", "widgets.example.com", []string{`"widgets.example.com" is not a built-in Kubernetes type`, "--from-cluster=<member kubeconfig>"}, []string{"did you mean"}},
		{"singular", "deployment", []string{`did you mean "deployments.apps"?`, "--from-cluster"}, nil},
		{"core group for a grouped type", "deployments", []string{`did you mean "deployments.apps"?`}, nil},
		{"singular with group", "deployment.apps", []string{`did you mean "deployments.apps"?`}, nil},
		{"removed group", "ingresses.extensions", []string{`did you mean "ingresses.networking.k8s.io"?`}, nil},
		{"core singular", "configmap", []string{`did you mean "configmaps"?`}, nil},
		{"typo", "secert", []string{`did you mean "secrets"?`}, nil},
		{"subresource kind", "scales.autoscaling", []string{"cannot be federated"}, []string{"--from-cluster"}},
		{"virtual kind", "tokenreviews.authentication.k8s.io", []string{"cannot be federated"}, nil},
		{"list kind", "deploymentlists.apps", []string{"is not a built-in Kubernetes type"}, nil},
		{"empty", "  ", []string{"no resource given", `"deployments.apps"`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LookupBuiltin(tt.resource)
			if err == nil {
				t.Fatalf("LookupBuiltin(%q) = %+v, want an error", tt.resource, got)
			}
			for _, want := range tt.wantInErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			for _, unwanted := range tt.notInErr {
				if strings.Contains(err.Error(), unwanted) {
					t.Errorf("error %q contains %q", err, unwanted)
				}
			}
		})
	}
}

// TestBuiltinSchemaDefaultTypes checks that the schema of every default type
// makes a valid CRD, both as a plain object and as an embedded resource.
func TestBuiltinSchemaDefaultTypes(t *testing.T) {
	for _, resource := range defaultTypes {
		t.Run(resource, func(t *testing.T) {
			target, err := LookupBuiltin(resource)
			if err != nil {
				t.Fatal(err)
			}
			s, err := BuiltinSchema(target)
			if err != nil {
				t.Fatalf("BuiltinSchema: %v", err)
			}
			if err := validateNested(s); err != nil {
				t.Errorf("not structural: %v", err)
			}
			for _, embedded := range []bool{false, true} {
				if errs := validateFederatedCRD(t, target, s, embedded); len(errs) > 0 {
					t.Errorf("CRD (embedded resource %v) invalid: %v", embedded, errs)
				}
			}
			if _, ok := s.Properties["status"]; ok {
				t.Error("top-level status is not dropped")
			}
			for _, p := range []string{"apiVersion", "kind"} {
				if got := s.Properties[p].Type; got != "string" {
					t.Errorf("%s type = %q, want string", p, got)
				}
			}
			if !isPreserveObject(ptr.To(s.Properties["metadata"])) {
				t.Errorf("metadata = %s, want a preserved object", mustJSON(t, s.Properties["metadata"]))
			}
			raw := mustJSON(t, s)
			if strings.Contains(raw, `"description"`) || strings.Contains(raw, `"default"`) {
				t.Error("schema has descriptions or defaults")
			}
			t.Logf("schema size: %d bytes", len(raw))
		})
	}
}

// TestBuiltinSchemaAllTypes checks that every built-in type converts to a
// valid CRD schema, to catch constructs the default types do not have.
func TestBuiltinSchemaAllTypes(t *testing.T) {
	idx, err := loadBuiltinIndex()
	if err != nil {
		t.Fatal(err)
	}
	var resources []string
	for r := range idx.types {
		resources = append(resources, r)
	}
	sort.Strings(resources)
	for _, r := range resources {
		t.Run(r, func(t *testing.T) {
			target := idx.types[r].target
			s, err := BuiltinSchema(target)
			if err != nil {
				t.Fatalf("BuiltinSchema: %v", err)
			}
			if errs := validateFederatedCRD(t, target, s, false); len(errs) > 0 {
				t.Errorf("CRD invalid: %v", errs)
			}
		})
	}
}

func TestBuiltinSchemaDeployment(t *testing.T) {
	s := schemaFor(t, "deployments.apps")
	tests := []struct {
		name  string
		path  string
		check func(*apiextensionsv1.JSONSchemaProps) bool
		want  string
	}{
		{"replicas is an integer", "spec.replicas", func(p *apiextensionsv1.JSONSchemaProps) bool {
			return p.Type == "integer" && p.Format == "int32"
		}, "integer int32"},
		{"spec requires selector and template", "spec", func(p *apiextensionsv1.JSONSchemaProps) bool {
			return slices.Equal(p.Required, []string{"selector", "template"})
		}, "required [selector template]"},
		{"containers is a list map by name", "spec.template.spec.containers", func(p *apiextensionsv1.JSONSchemaProps) bool {
			return p.Type == "array" && p.Items != nil && p.Items.Schema != nil &&
				slices.Contains(p.Items.Schema.Required, "name") &&
				ptr.Deref(p.XListType, "") == "map" && slices.Equal(p.XListMapKeys, []string{"name"})
		}, "array of objects requiring name, list-type map keyed by name"},
		{"container image is a string", "spec.template.spec.containers[].image", func(p *apiextensionsv1.JSONSchemaProps) bool {
			return p.Type == "string"
		}, "string"},
		{"pod template metadata is preserved", "spec.template.metadata", isPreserveObject, "preserved object"},
		{"resource limits are quantities", "spec.template.spec.containers[].resources.limits", func(p *apiextensionsv1.JSONSchemaProps) bool {
			return p.Type == "object" && p.AdditionalProperties != nil && p.AdditionalProperties.Schema != nil &&
				p.AdditionalProperties.Schema.XIntOrString
		}, "map of int-or-string"},
		{"maxSurge is int-or-string", "spec.strategy.rollingUpdate.maxSurge", func(p *apiextensionsv1.JSONSchemaProps) bool {
			return p.XIntOrString && p.Type == ""
		}, "int-or-string"},
		{"strategy type is a string without an enum (members may be newer)", "spec.strategy.type", func(p *apiextensionsv1.JSONSchemaProps) bool {
			return p.Type == "string" && len(p.Enum) == 0
		}, "string without enum"},
		{"label selector values are strings", "spec.selector.matchLabels", func(p *apiextensionsv1.JSONSchemaProps) bool {
			return p.AdditionalProperties != nil && p.AdditionalProperties.Schema.Type == "string"
		}, "map of strings"},
		// containerPort's list-map key protocol is neither required nor
		// defaulted here, so the list-map annotation must be gone.
		{"container ports lose their list-map type", "spec.template.spec.containers[].ports", func(p *apiextensionsv1.JSONSchemaProps) bool {
			return p.XListType == nil && len(p.XListMapKeys) == 0
		}, "no list type"},
		{"probe port is int-or-string", "spec.template.spec.containers[].livenessProbe.httpGet.port", func(p *apiextensionsv1.JSONSchemaProps) bool {
			return p.XIntOrString
		}, "int-or-string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := schemaAt(t, s, tt.path)
			if !tt.check(p) {
				t.Errorf("%s = %s, want %s", tt.path, mustJSON(t, p), tt.want)
			}
		})
	}
	t.Run("ephemeral containers are not in the pod template", func(t *testing.T) {
		if _, ok := schemaAt(t, s, "spec.template.spec").Properties["ephemeralContainers"]; ok {
			t.Error("spec.template.spec.ephemeralContainers is present")
		}
	})
	t.Run("no status", func(t *testing.T) {
		if _, ok := s.Properties["status"]; ok {
			t.Error("status is present")
		}
	})
}

func TestBuiltinSchemaSpecialTypes(t *testing.T) {
	tests := []struct {
		name     string
		resource string
		path     string
		check    func(*apiextensionsv1.JSONSchemaProps) bool
		want     string
	}{
		{"service targetPort is int-or-string", "services", "spec.ports[].targetPort", func(p *apiextensionsv1.JSONSchemaProps) bool {
			return p.XIntOrString && p.Type == "" && p.XPreserveUnknownFields == nil
		}, "x-kubernetes-int-or-string"},
		{"service port is int32", "services", "spec.ports[].port", func(p *apiextensionsv1.JSONSchemaProps) bool {
			return p.Type == "integer" && p.Format == "int32"
		}, "integer int32"},
		{"ingress backend port number", "ingresses.networking.k8s.io", "spec.rules[].http.paths[].backend.service.port.number", func(p *apiextensionsv1.JSONSchemaProps) bool {
			return p.Type == "integer"
		}, "integer"},
		{"secret data is base64", "secrets", "data", func(p *apiextensionsv1.JSONSchemaProps) bool {
			return p.Type == "object" && p.AdditionalProperties.Schema.Type == "string" && p.AdditionalProperties.Schema.Format == "byte"
		}, "map of byte strings"},
		{"config map data is strings", "configmaps", "data", func(p *apiextensionsv1.JSONSchemaProps) bool {
			return p.AdditionalProperties.Schema.Type == "string" && p.AdditionalProperties.Schema.Format == ""
		}, "map of strings"},
		{"job activeDeadlineSeconds is int64", "jobs.batch", "spec.activeDeadlineSeconds", func(p *apiextensionsv1.JSONSchemaProps) bool {
			return p.Type == "integer" && p.Format == "int64"
		}, "integer int64"},
		{"quantity is int-or-string with a pattern", "statefulsets.apps", "spec.volumeClaimTemplates[].spec.resources.requests", func(p *apiextensionsv1.JSONSchemaProps) bool {
			q := p.AdditionalProperties.Schema
			return q.XIntOrString && q.Pattern != "" && len(q.AnyOf) == 2
		}, "map of quantities"},
		{"raw extension is a preserved object", "controllerrevisions.apps", "data", isPreserveObject, "preserved object"},
		{"time is a date-time string", "events.events.k8s.io", "eventTime", func(p *apiextensionsv1.JSONSchemaProps) bool {
			return p.Type == "string" && p.Format == "date-time"
		}, "date-time string"},
		{"free-form object is preserved", "customresourcedefinitions.apiextensions.k8s.io", "spec.versions[].schema.openAPIV3Schema.default", func(p *apiextensionsv1.JSONSchemaProps) bool {
			return ptr.Deref(p.XPreserveUnknownFields, false)
		}, "x-kubernetes-preserve-unknown-fields"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := schemaAt(t, schemaFor(t, tt.resource), tt.path)
			if !tt.check(p) {
				t.Errorf("%s %s = %s, want %s", tt.resource, tt.path, mustJSON(t, p), tt.want)
			}
		})
	}
}

func TestBuiltinSchemaStatusDropped(t *testing.T) {
	for _, resource := range []string{"deployments.apps", "services", "namespaces", "jobs.batch", "ingresses.networking.k8s.io", "persistentvolumeclaims"} {
		t.Run(resource, func(t *testing.T) {
			s := schemaFor(t, resource)
			if _, ok := s.Properties["status"]; ok {
				t.Error("top-level status is present")
			}
			if slices.Contains(s.Required, "status") {
				t.Error("status is still required")
			}
			if _, ok := s.Properties["spec"]; !ok {
				t.Error("spec is missing")
			}
		})
	}
}

func TestBuiltinSchemaDeterministic(t *testing.T) {
	for _, resource := range []string{"deployments.apps", "services"} {
		t.Run(resource, func(t *testing.T) {
			first := mustJSON(t, schemaFor(t, resource))
			second := mustJSON(t, schemaFor(t, resource))
			if first != second {
				t.Error("two conversions differ")
			}
		})
	}
}

func TestBuiltinSchemaUnknownTarget(t *testing.T) {
	tests := []struct {
		name   string
		target Target
	}{
		{"CRD", Target{Group: "example.com", Version: "v1", Kind: "Widget", Plural: "widgets", Namespaced: true}},
		{"wrong version", Target{Group: "apps", Version: "v1beta1", Kind: "Deployment", Plural: "deployments", Namespaced: true}},
		{"wrong kind", Target{Group: "apps", Version: "v1", Kind: "Widget", Plural: "deployments", Namespaced: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if s, err := BuiltinSchema(tt.target); err == nil {
				t.Errorf("BuiltinSchema(%+v) = %s, want an error", tt.target, mustJSON(t, s))
			} else if !strings.Contains(err.Error(), "LookupBuiltin") {
				t.Errorf("error %q does not say how to fix it", err)
			}
		})
	}
}

func TestSchemaConverterRecursion(t *testing.T) {
	t.Run("synthetic", func(t *testing.T) {
		ref := func(name string) spec.Schema {
			return spec.Schema{SchemaProps: spec.SchemaProps{Ref: spec.MustCreateRef(definitionsPrefix + name)}}
		}
		object := func(props map[string]spec.Schema) common.OpenAPIDefinition {
			return common.OpenAPIDefinition{Schema: spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}, Properties: props}}}
		}
		conv := schemaConverter{
			defs: map[string]common.OpenAPIDefinition{
				"a": object(map[string]spec.Schema{"b": ref("b"), "name": *spec.StringProperty()}),
				"b": object(map[string]spec.Schema{"a": ref("a"), "self": ref("b"), "list": *spec.ArrayProperty(ptr.To(ref("a")))}),
			},
			visiting: map[string]bool{},
		}
		got, err := conv.ref("a", field.NewPath("a"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"b.a", "b.self", "b.list[]"} {
			if p := schemaAt(t, got, path); !isPreserveObject(p) {
				t.Errorf("%s = %s, want a preserved object", path, mustJSON(t, p))
			}
		}
		if p := schemaAt(t, got, "name"); p.Type != "string" {
			t.Errorf("name = %s, want a string", mustJSON(t, p))
		}
		if len(conv.visiting) != 0 {
			t.Errorf("visiting = %v after conversion, want empty", conv.visiting)
		}
		// A sibling that is not on the current path is expanded again.
		if p := schemaAt(t, got, "b"); len(p.Properties) != 3 {
			t.Errorf("b = %s, want its three properties", mustJSON(t, p))
		}
	})
	t.Run("JSONSchemaProps", func(t *testing.T) {
		if _, ok := openAPIDefinitions()[apiextensionsv1.JSONSchemaProps{}.OpenAPIModelName()]; !ok {
			t.Skip("JSONSchemaProps has no OpenAPI definition")
		}
		s := schemaFor(t, "customresourcedefinitions.apiextensions.k8s.io")
		root := schemaAt(t, s, "spec.versions[].schema.openAPIV3Schema")
		if root.Type != "object" || len(root.Properties) == 0 {
			t.Fatalf("openAPIV3Schema = %s, want an expanded object", mustJSON(t, root))
		}
		nested := schemaAt(t, s, "spec.versions[].schema.openAPIV3Schema.properties")
		if nested.AdditionalProperties == nil || !isPreserveObject(nested.AdditionalProperties.Schema) {
			t.Errorf("openAPIV3Schema.properties = %s, want a map of preserved objects", mustJSON(t, nested))
		}
	})
}

// TestValidationCatchesListMapKeys is a control for the CRD checks above: the
// list-map annotation that Service ports have in Kubernetes is invalid in a
// CRD without defaults, which is why the converter drops it.
func TestValidationCatchesListMapKeys(t *testing.T) {
	target, err := LookupBuiltin("services")
	if err != nil {
		t.Fatal(err)
	}
	s := schemaFor(t, "services")
	svcSpec := s.Properties["spec"]
	ports := svcSpec.Properties["ports"]
	ports.XListType = ptr.To("map")
	ports.XListMapKeys = []string{"port", "protocol"}
	svcSpec.Properties["ports"] = ports
	s.Properties["spec"] = svcSpec

	errs := validateFederatedCRD(t, target, s, false)
	if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, "must have a default or be a required property") }) {
		t.Errorf("CRD errors = %q, want one about the list-map key protocol", errs)
	}
	if err := validateNested(&apiextensionsv1.JSONSchemaProps{Type: "array"}); err == nil {
		t.Error("validateNested accepted an array without items")
	}
}

// schemaFor looks resource up and returns its schema.
func schemaFor(t *testing.T, resource string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	target, err := LookupBuiltin(resource)
	if err != nil {
		t.Fatal(err)
	}
	s, err := BuiltinSchema(target)
	if err != nil {
		t.Fatalf("BuiltinSchema(%s): %v", resource, err)
	}
	return s
}

// schemaAt returns the schema at a dotted path of property names, where a
// "[]" suffix steps into the items of an array.
func schemaAt(t *testing.T, s *apiextensionsv1.JSONSchemaProps, path string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	for _, part := range strings.Split(path, ".") {
		name, items := strings.CutSuffix(part, "[]")
		p, ok := s.Properties[name]
		if !ok {
			t.Fatalf("%s: no property %q in %s", path, name, mustJSON(t, s))
		}
		s = &p
		if items {
			if s.Items == nil || s.Items.Schema == nil {
				t.Fatalf("%s: %q has no items", path, name)
			}
			s = s.Items.Schema
		}
	}
	return s
}

func isPreserveObject(s *apiextensionsv1.JSONSchemaProps) bool {
	return s.Type == "object" && ptr.Deref(s.XPreserveUnknownFields, false) &&
		len(s.Properties) == 0 && s.AdditionalProperties == nil
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(buf.String())
}

// validateFederatedCRD puts s as spec.template of the federated CRD for
// target, built as the plane builds it, and validates that CRD the way the
// API server does.
func validateFederatedCRD(t *testing.T, target Target, s *apiextensionsv1.JSONSchemaProps, embedded bool) []string {
	t.Helper()
	template := s.DeepCopy()
	template.XEmbeddedResource = embedded
	return validateCRD(t, CRD(target, template, nil))
}
