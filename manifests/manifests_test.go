package manifests

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

type column struct{ name, typ, jsonPath string }

// want lists every CRD cellfed-apiserver installs, sorted by name as CRDs
// returns them. The core.kubefed.io ones must match KubeFed v0.10.0's.
var want = []struct {
	name       string
	group      string
	kind       string
	scope      apiextensionsv1.ResourceScope
	versions   []string
	storage    string
	status     bool // has a status subresource
	shortNames []string
	columns    []column // additional printer columns, in order
}{
	{
		name: "cells.core.cellfed.io", group: "core.cellfed.io", kind: "Cell",
		scope: apiextensionsv1.NamespaceScoped, versions: []string{"v1alpha1"}, storage: "v1alpha1",
		status: true, shortNames: []string{"cell"},
		columns: []column{
			{"Cluster", "string", ".spec.cluster"},
			{"KubeFedCluster", "string", ".status.kubeFedCluster"},
			{"Ready", "string", `.status.conditions[?(@.type=="Ready")].status`},
			{"Objects", "integer", ".status.objects"},
			{"Age", "date", ".metadata.creationTimestamp"},
		},
	},
	{
		name: "clusterpropagatedversions.core.kubefed.io", group: "core.kubefed.io", kind: "ClusterPropagatedVersion",
		scope: apiextensionsv1.ClusterScoped, versions: []string{"v1alpha1"}, storage: "v1alpha1",
		status: true,
	},
	{
		name: "clusterpropagationpolicies.policy.cellfed.io", group: "policy.cellfed.io", kind: "ClusterPropagationPolicy",
		scope: apiextensionsv1.ClusterScoped, versions: []string{"v1alpha1"}, storage: "v1alpha1",
		status: true, shortNames: []string{"cpp"},
		columns: []column{
			{"Priority", "integer", ".spec.priority"},
			{"Topology", "string", ".spec.placement.topologyType"},
			{"Placed", "integer", ".status.placed"},
			{"Shadowed", "integer", ".status.shadowed"},
			{"Age", "date", ".metadata.creationTimestamp"},
		},
	},
	{
		name: "clusterregistrations.core.cellfed.io", group: "core.cellfed.io", kind: "ClusterRegistration",
		scope: apiextensionsv1.ClusterScoped, versions: []string{"v1alpha1"}, storage: "v1alpha1",
		status: true, shortNames: []string{"creg"},
		columns: []column{
			{"Tenant", "string", ".spec.tenant"},
			{"Phase", "string", ".status.phase"},
			{"Cert-Expiry", "date", ".status.certificateExpiry"},
			{"Age", "date", ".metadata.creationTimestamp"},
		},
	},
	{
		name: "federatedtypeconfigs.core.kubefed.io", group: "core.kubefed.io", kind: "FederatedTypeConfig",
		scope: apiextensionsv1.NamespaceScoped, versions: []string{"v1beta1"}, storage: "v1beta1",
		status: true, shortNames: []string{"ftc"},
	},
	{
		name: "kubefedclusters.core.kubefed.io", group: "core.kubefed.io", kind: "KubeFedCluster",
		scope: apiextensionsv1.NamespaceScoped, versions: []string{"v1beta1"}, storage: "v1beta1",
		status: true, shortNames: []string{"kfc"},
		columns: []column{
			{"age", "date", ".metadata.creationTimestamp"},
			{"ready", "string", ".status.conditions[?(@.type=='Ready')].status"},
			{"kubernetes-version", "string", ".status.kubernetesVersion"},
		},
	},
	{
		name: "kubefedconfigs.core.kubefed.io", group: "core.kubefed.io", kind: "KubeFedConfig",
		scope: apiextensionsv1.NamespaceScoped, versions: []string{"v1beta1"}, storage: "v1beta1",
	},
	{
		name: "propagatedversions.core.kubefed.io", group: "core.kubefed.io", kind: "PropagatedVersion",
		scope: apiextensionsv1.NamespaceScoped, versions: []string{"v1alpha1"}, storage: "v1alpha1",
		status: true,
	},
	{
		name: "propagationpolicies.policy.cellfed.io", group: "policy.cellfed.io", kind: "PropagationPolicy",
		scope: apiextensionsv1.NamespaceScoped, versions: []string{"v1alpha1"}, storage: "v1alpha1",
		status: true, shortNames: []string{"pp"},
		columns: []column{
			{"Priority", "integer", ".spec.priority"},
			{"Topology", "string", ".spec.placement.topologyType"},
			{"Placed", "integer", ".status.placed"},
			{"Shadowed", "integer", ".status.shadowed"},
			{"Age", "date", ".metadata.creationTimestamp"},
		},
	},
	{
		name: "registrationpolicies.core.cellfed.io", group: "core.cellfed.io", kind: "RegistrationPolicy",
		scope: apiextensionsv1.ClusterScoped, versions: []string{"v1alpha1"}, storage: "v1alpha1",
		shortNames: []string{"regpolicy"},
		columns: []column{
			{"Approval", "string", ".spec.approval"},
			{"Age", "date", ".metadata.creationTimestamp"},
		},
	},
	{
		name: "replicaschedulingpreferences.scheduling.kubefed.io", group: "scheduling.kubefed.io", kind: "ReplicaSchedulingPreference",
		scope: apiextensionsv1.NamespaceScoped, versions: []string{"v1alpha1"}, storage: "v1alpha1",
		shortNames: []string{"rsp"},
	},
	{
		name: "templaterevisions.core.cellfed.io", group: "core.cellfed.io", kind: "TemplateRevision",
		scope: apiextensionsv1.NamespaceScoped, versions: []string{"v1alpha1"}, storage: "v1alpha1",
		shortNames: []string{"templaterev"},
		columns: []column{
			{"Object", "string", ".spec.federatedObject.name"},
			{"Kind", "string", ".spec.federatedObject.kind"},
			{"Revision", "integer", ".spec.revision"},
			{"Age", "date", ".metadata.creationTimestamp"},
		},
	},
}

func TestCRDs(t *testing.T) {
	crds, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, crd := range crds {
		got = append(got, crd.Name)
	}
	var names []string
	for _, w := range want {
		names = append(names, w.name)
	}
	if !slices.Equal(got, names) {
		t.Fatalf("CRDs() = %v, want %v", got, names)
	}

	scheme := runtime.NewScheme()
	install.Install(scheme)

	for i, w := range want {
		crd := crds[i]
		t.Run(w.name, func(t *testing.T) {
			if crd.APIVersion != "apiextensions.k8s.io/v1" || crd.Kind != "CustomResourceDefinition" {
				t.Errorf("type = %s %s", crd.APIVersion, crd.Kind)
			}
			if crd.Spec.Group != w.group {
				t.Errorf("group = %q, want %q", crd.Spec.Group, w.group)
			}
			if crd.Spec.Names.Kind != w.kind || crd.Spec.Names.ListKind != w.kind+"List" {
				t.Errorf("kind = %q, listKind = %q, want %q", crd.Spec.Names.Kind, crd.Spec.Names.ListKind, w.kind)
			}
			if plural := strings.TrimSuffix(w.name, "."+w.group); crd.Spec.Names.Plural != plural || crd.Spec.Names.Singular != strings.ToLower(w.kind) {
				t.Errorf("plural = %q, singular = %q", crd.Spec.Names.Plural, crd.Spec.Names.Singular)
			}
			if crd.Spec.Scope != w.scope {
				t.Errorf("scope = %s, want %s", crd.Spec.Scope, w.scope)
			}
			if !slices.Equal(crd.Spec.Names.ShortNames, w.shortNames) {
				t.Errorf("shortNames = %v, want %v", crd.Spec.Names.ShortNames, w.shortNames)
			}
			var versions, storage []string
			for _, v := range crd.Spec.Versions {
				versions = append(versions, v.Name)
				if v.Storage {
					storage = append(storage, v.Name)
				}
				if !v.Served {
					t.Errorf("version %s is not served", v.Name)
				}
				hasStatus := v.Subresources != nil && v.Subresources.Status != nil
				if hasStatus != w.status {
					t.Errorf("version %s: status subresource = %v, want %v", v.Name, hasStatus, w.status)
				}
				var columns []column
				for _, c := range v.AdditionalPrinterColumns {
					columns = append(columns, column{c.Name, c.Type, c.JSONPath})
				}
				if !slices.Equal(columns, w.columns) {
					t.Errorf("version %s: printer columns = %v, want %v", v.Name, columns, w.columns)
				}
			}
			if !slices.Equal(versions, w.versions) {
				t.Errorf("versions = %v, want %v", versions, w.versions)
			}
			if !slices.Equal(storage, []string{w.storage}) {
				t.Errorf("storage versions = %v, want [%s]", storage, w.storage)
			}

			// Validate as the apiserver does on create: default the v1
			// object, record the storage version (the CRD registry
			// strategy's PrepareForCreate does that) and convert to the
			// internal version.
			v1 := crd.DeepCopy()
			scheme.Default(v1)
			v1.Status.StoredVersions = []string{w.storage}
			var internal apiextensions.CustomResourceDefinition
			if err := scheme.Convert(v1, &internal, nil); err != nil {
				t.Fatal(err)
			}
			for _, e := range validation.ValidateCustomResourceDefinition(context.Background(), &internal) {
				t.Errorf("invalid: %v", e)
			}
			for _, v := range internal.Spec.Versions {
				s, err := apiextensions.GetSchemaForVersion(&internal, v.Name)
				if err != nil {
					t.Fatal(err)
				}
				if s == nil || s.OpenAPIV3Schema == nil {
					t.Errorf("version %s has no schema", v.Name)
					continue
				}
				ss, err := structuralschema.NewStructural(s.OpenAPIV3Schema)
				if err != nil {
					t.Errorf("version %s: %v", v.Name, err)
					continue
				}
				path := field.NewPath("spec", "versions").Key(v.Name).Child("schema", "openAPIV3Schema")
				for _, e := range structuralschema.ValidateStructural(path, ss) {
					t.Errorf("not structural: %v", e)
				}
			}
		})
	}
}

func TestDecodeCRDStrict(t *testing.T) {
	const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
`
	if _, err := decodeCRD([]byte("---\n" + crd)); err != nil {
		t.Fatalf("valid document: %v", err)
	}
	for name, doc := range map[string]string{
		"unknown field":   crd + "  bogus: true\n",
		"duplicate field": crd + "  group: example.org\n",
		"two documents":   crd + "---\n" + crd,
		"no document":     "---\n",
		"other kind":      "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinitionList\nitems: []\n",
	} {
		if _, err := decodeCRD([]byte(doc)); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}
