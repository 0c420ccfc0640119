package federatedtypes

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/utils/ptr"
)

func TestPlanCRD(t *testing.T) {
	release := utilversion.MustParseSemantic("v0.2.0")
	deployments := Target{Group: "apps", Version: "v1", Kind: "Deployment", Plural: "deployments", Namespaced: true}
	webhook := &apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://conversion.cellfed.internal/convert"), CABundle: []byte("ca")}
	tmpl := &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
	wanted := CRD(deployments, tmpl, webhook)
	// stored is wanted as the API server keeps it, written by release at.
	stored := func(at string, edit func(*apiextensionsv1.CustomResourceDefinition)) *apiextensionsv1.CustomResourceDefinition {
		c := wanted.DeepCopy()
		c.ResourceVersion = "42"
		c.Spec.Names.Singular = "federateddeployment"
		if at != "" {
			c.Annotations = map[string]string{AnnotationSchemaRelease: at}
		}
		if edit != nil {
			edit(c)
		}
		return c
	}
	// older is the shape of an older release: no spec.replicaDivision.
	older := func(c *apiextensionsv1.CustomResourceDefinition) {
		for i := range c.Spec.Versions {
			if c.Spec.Versions[i].Name == StorageVersion {
				delete(c.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"].Properties, "replicaDivision")
			}
		}
	}
	admin := func(c *apiextensionsv1.CustomResourceDefinition) {
		c.Labels["team"] = "platform"
		c.Annotations["owner"] = "sre"
		c.Spec.Names.ShortNames = []string{"fdeploy"}
	}
	cases := []struct {
		name   string
		stored *apiextensionsv1.CustomResourceDefinition
		want   CRDAction
		// check the written object, when there is one.
		check func(t *testing.T, out *apiextensionsv1.CustomResourceDefinition)
	}{
		{"no CRD: create, stamped", nil, CRDCreate, func(t *testing.T, out *apiextensionsv1.CustomResourceDefinition) {
			if !equality.Semantic.DeepEqual(out.Spec, wanted.Spec) {
				t.Error("the created spec is not the wanted one")
			}
		}},
		{"this release's CRD: up to date", stored("v0.2.0", nil), CRDUpToDate, nil},
		{"this release's CRD, admin's additions: up to date", stored("v0.2.0", admin), CRDUpToDate, nil},
		{"an older release's schema: update", stored("v0.1.3", older), CRDUpdate, nil},
		{"no stamp (before releases stamped CRDs): update", stored("", older), CRDUpdate, nil},
		{"an unreadable stamp counts as older", stored("yesterday", nil), CRDUpdate, nil},
		{"an older schema with an admin's label, annotation and short name: kept", stored("v0.1.0", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Annotations = map[string]string{AnnotationSchemaRelease: "v0.1.0"}
			older(c)
			admin(c)
		}), CRDUpdate, func(t *testing.T, out *apiextensionsv1.CustomResourceDefinition) {
			if out.Labels["team"] != "platform" || out.Annotations["owner"] != "sre" || len(out.Spec.Names.ShortNames) != 1 {
				t.Errorf("the admin's label, annotation or short name was lost: %v %v %v", out.Labels, out.Annotations, out.Spec.Names.ShortNames)
			}
		}},
		{"the release's label taken off: put back", stored("v0.2.0", func(c *apiextensionsv1.CustomResourceDefinition) { delete(c.Labels, LabelFederatedType) }), CRDUpdate, nil},
		{"a newer patch release's CRD: left alone", stored("v0.2.1", older), CRDNewer, nil},
		{"a newer line's CRD: left alone", stored("v0.3.0", older), CRDNewer, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, action := PlanCRD(c.stored, wanted, release)
			if action != c.want {
				t.Fatalf("PlanCRD = %s, want %s", action, c.want)
			}
			if (out == nil) != (action == CRDUpToDate || action == CRDNewer) {
				t.Fatalf("PlanCRD %s returned object %v", action, out != nil)
			}
			if out == nil {
				return
			}
			if got := out.Annotations[AnnotationSchemaRelease]; got != "v0.2.0" {
				t.Errorf("stamp %q, want v0.2.0", got)
			}
			if c.stored != nil && out.ResourceVersion != c.stored.ResourceVersion {
				t.Errorf("resourceVersion %q, want the stored %q (an update, not a blind write)", out.ResourceVersion, c.stored.ResourceVersion)
			}
			if _, found := out.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"].Properties["replicaDivision"]; !found {
				t.Error("the written schema has no spec.replicaDivision")
			}
			if c.check != nil {
				c.check(t, out)
			}
			// Written, it is up to date: a second replica of the release
			// does not write again.
			if _, again := PlanCRD(out, wanted, release); again != CRDUpToDate {
				t.Errorf("planning over the written CRD = %s, want up-to-date", again)
			}
			// An older release leaves it alone.
			if _, back := PlanCRD(out, wanted, utilversion.MustParseSemantic("v0.1.9")); back != CRDNewer {
				t.Errorf("an older release planning over it = %s, want newer", back)
			}
		})
	}
}

// TestTemplateOf checks that the plane rebuilds a federated CRD from its
// own template without change: CRD(t, TemplateOf(CRD(t, x))) = CRD(t, x).
func TestTemplateOf(t *testing.T) {
	for _, resource := range []string{"deployments.apps", "configmaps", "namespaces"} {
		t.Run(resource, func(t *testing.T) {
			target, err := LookupBuiltin(resource)
			if err != nil {
				t.Fatal(err)
			}
			schema, err := BuiltinSchema(target)
			if err != nil {
				t.Fatal(err)
			}
			for name, tmpl := range map[string]*apiextensionsv1.JSONSchemaProps{"builtin schema": schema, "no schema": nil} {
				built := CRD(target, tmpl, nil)
				got, ok := TemplateOf(built)
				if !ok {
					t.Fatalf("%s: TemplateOf found no %s version", name, StorageVersion)
				}
				if again := CRD(target, got, nil); !equality.Semantic.DeepEqual(again, built) {
					t.Errorf("%s: the CRD rebuilt from its template differs", name)
				}
			}
		})
	}
	kubefedShape := CRD(Target{Kind: "Widget", Plural: "widgets", Namespaced: true}, nil, nil)
	kubefedShape.Spec.Versions = kubefedShape.Spec.Versions[:1] // v1beta1 only
	if _, ok := TemplateOf(kubefedShape); ok {
		t.Error("TemplateOf accepted a CRD without v1beta2 (KubeFed's shape)")
	}
}
