package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/cellfed/cellfed/pkg/federatedtypes"
	"github.com/cellfed/cellfed/test/framework"
)

// TestPlaneUpgradesFederatedCRDs makes the federated CRD of an enabled
// type look as an older release left it (no spec.replicaDivision in its
// schema, an older schema-release stamp) with an admin's label and
// annotation, and restarts the plane: the plane must bring the schema up
// to its release and keep the admin's changes and the stored federated
// object as they were (no rewrite). A further restart writes nothing.
// Then the CRD is made to look as a newer release left it: the plane,
// older than that, must leave it alone.
func TestPlaneUpgradesFederatedCRDs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	own := release(t)
	var major, minor int
	if _, err := fmt.Sscanf(own, "v%d.%d.", &major, &minor); err != nil {
		t.Fatalf("VERSION %q: %v", own, err)
	}
	older, newer := fmt.Sprintf("v%d.%d.0-old", major, minor), fmt.Sprintf("v%d.%d.0", major, minor+1)
	if minor > 0 {
		older = fmt.Sprintf("v%d.%d.0", major, minor-1)
	}

	plane := framework.StartPlane(t, framework.PlaneOptions{Args: []string{"--default-federated-types=deployments.apps"}})
	cfg := plane.RESTConfig(t)
	crds := apiextensionsclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions()
	dyn := dynamic.NewForConfigOrDie(cfg)
	const name = "federateddeployments.types.kubefed.io"
	get := func() *apiextensionsv1.CustomResourceDefinition {
		t.Helper()
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("reading CRD %s: %v", name, err)
		}
		return crd
	}
	hasDivision := func(crd *apiextensionsv1.CustomResourceDefinition) bool {
		for _, v := range crd.Spec.Versions {
			if v.Name == federatedtypes.StorageVersion {
				_, found := v.Schema.OpenAPIV3Schema.Properties["spec"].Properties["replicaDivision"]
				return found
			}
		}
		return false
	}
	// edit makes the CRD look as release at left it: without
	// spec.replicaDivision, stamped at.
	edit := func(at string, extra func(*apiextensionsv1.CustomResourceDefinition)) *apiextensionsv1.CustomResourceDefinition {
		t.Helper()
		crd := get()
		for i := range crd.Spec.Versions {
			if crd.Spec.Versions[i].Name == federatedtypes.StorageVersion {
				delete(crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"].Properties, "replicaDivision")
			}
		}
		crd.Annotations[federatedtypes.AnnotationSchemaRelease] = at
		if extra != nil {
			extra(crd)
		}
		crd, err := crds.Update(ctx, crd, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("editing CRD %s to look as %s left it: %v", name, at, err)
		}
		if hasDivision(crd) {
			t.Fatal("the edited CRD still has spec.replicaDivision")
		}
		return crd
	}

	restart := func() {
		t.Helper()
		plane.Stop(30 * time.Second)
		plane.RestartAndWait(t)
	}

	crd := get()
	if got := crd.Annotations[federatedtypes.AnnotationSchemaRelease]; got != own || !hasDivision(crd) {
		t.Fatalf("a new plane's CRD is stamped %q (want %s), replicaDivision in its schema: %v", got, own, hasDivision(crd))
	}

	k := framework.Kubectl{Kubeconfig: plane.Kubeconfig}
	k.MustRun(t, "", "create", "namespace", "upgrade")
	k.MustRun(t, deployment("upgrade", "web", "nginx:1.27", nil, ""), "apply", "-f", "-")
	fd := fedResource("federateddeployments", "v1beta2")
	obj, err := dyn.Resource(fd).Namespace("upgrade").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// 1. An older release's CRD, with an admin's label and annotation.
	edit(older, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Labels["example.com/team"] = "platform"
		crd.Annotations["example.com/owner"] = "sre"
	})
	restart()
	crd = get()
	if got := crd.Annotations[federatedtypes.AnnotationSchemaRelease]; got != own || !hasDivision(crd) {
		t.Errorf("after a restart over an older release's CRD: stamped %q (want %s), replicaDivision in its schema: %v (want true)", got, own, hasDivision(crd))
	}
	if crd.Labels["example.com/team"] != "platform" || crd.Annotations["example.com/owner"] != "sre" {
		t.Errorf("the admin's label or annotation was lost: labels %v, annotations %v", crd.Labels, crd.Annotations)
	}
	after, err := dyn.Resource(fd).Namespace("upgrade").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.GetResourceVersion() != obj.GetResourceVersion() {
		t.Errorf("the federated object was rewritten by the upgrade: resourceVersion %s, was %s", after.GetResourceVersion(), obj.GetResourceVersion())
	}
	// The new field is kept on the upgraded type (not pruned).
	k.MustRun(t, deployment("upgrade", "web", "nginx:1.27", nil, "  replicaDivision: {mode: Divide}\n"), "apply", "-f", "-")
	after, err = dyn.Resource(fd).Namespace("upgrade").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mode, _, _ := unstructured.NestedString(after.Object, "spec", "replicaDivision", "mode"); mode != "Divide" {
		t.Errorf("spec.replicaDivision.mode on the upgraded type is %q, want Divide (pruned?)", mode)
	}

	// 2. A restart of the same release writes nothing.
	generation := crd.Generation
	restart()
	if crd = get(); crd.Generation != generation {
		t.Errorf("a restart of the same release changed the CRD's spec: generation %d, was %d", crd.Generation, generation)
	}

	// 3. A newer release's CRD: this plane is older and leaves it alone.
	generation = edit(newer, nil).Generation
	restart()
	crd = get()
	if got := crd.Annotations[federatedtypes.AnnotationSchemaRelease]; got != newer || hasDivision(crd) || crd.Generation != generation {
		t.Errorf("the plane of %s changed a CRD %s wrote: stamped %q, replicaDivision in its schema: %v, generation %d (was %d)",
			own, newer, got, hasDivision(crd), crd.Generation, generation)
	}
}
