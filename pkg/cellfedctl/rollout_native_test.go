package cellfedctl

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/cellfed/cellfed/pkg/apis/policy/v1alpha1"
)

func TestCheckNative(t *testing.T) {
	typ := fedType{Kind: "FederatedDeployment", Plural: "federateddeployments", Group: "types.kubefed.io",
		TargetKind: "Deployment", TargetPlural: "deployments", TargetGroup: "apps", TargetVersion: "v1", Namespaced: true, Enabled: true}
	native := func(placedBy string) *unstructured.Unstructured {
		n := &unstructured.Unstructured{}
		n.SetAPIVersion("apps/v1")
		n.SetKind("Deployment")
		n.SetNamespace("shop")
		n.SetName("web")
		n.SetUID("n1")
		if placedBy != "" {
			n.SetAnnotations(map[string]string{policyv1alpha1.AnnotationPlacedByPolicy: placedBy})
		}
		return n
	}
	fed := func(policy string, owner types.UID) *unstructured.Unstructured {
		f := &unstructured.Unstructured{}
		f.SetAPIVersion("types.kubefed.io/v1beta2")
		f.SetKind("FederatedDeployment")
		f.SetNamespace("shop")
		f.SetName("web")
		if policy != "" {
			f.SetAnnotations(map[string]string{policyv1alpha1.AnnotationPolicy: policy})
		}
		if owner != "" {
			f.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: owner, Controller: ptr.To(true)}})
		}
		return f
	}
	const pp = "PropagationPolicy/shop/web"
	for _, tc := range []struct {
		name   string
		native *unstructured.Unstructured
		fed    *unstructured.Unstructured
		err    []string // substrings; none: the command acts on fed
	}{
		{name: "placed by a policy", native: native(pp), fed: fed(pp, "n1")},
		{name: "made, annotation not written yet", native: native(""), fed: fed(pp, "n1")},
		{name: "no native object: a wrapper as before", fed: fed("", "")},
		{name: "no native object and no federated one (read says not found)"},
		{name: "a wrapper of the same name, no policy", native: native(""), fed: fed("", "")},
		{name: "placed by no policy", native: native(""),
			err: []string{"Deployment shop/web is placed by no propagation policy", "select it with a PropagationPolicy", "kubectl describe deployment web -n shop"}},
		{name: "placed, federated object not made yet", native: native(pp),
			err: []string{"Deployment shop/web is placed by PropagationPolicy shop/web", "federateddeployment shop/web does not exist yet"}},
		{name: "placed, but a wrapper holds the name", native: native(pp), fed: fed("", ""),
			err: []string{"federateddeployment shop/web exists but no propagation policy made it for Deployment shop/web", "federateddeployment/web"}},
		{name: "made for an earlier object of that name", native: native(pp), fed: fed(pp, "old"),
			err: []string{"no propagation policy made it for Deployment shop/web"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkNative(typ, tc.native, tc.fed)
			if len(tc.err) == 0 {
				if err != nil {
					t.Fatalf("want the federated object, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want an error with %q, got none", tc.err)
			}
			for _, w := range tc.err {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
		})
	}
}

func TestNamesTarget(t *testing.T) {
	typ := fedType{Kind: "FederatedDeployment", Plural: "federateddeployments", Group: "types.kubefed.io", TargetKind: "Deployment", TargetPlural: "deployments", TargetGroup: "apps"}
	for kind, want := range map[string]bool{"deployment": true, "Deployments": true, "deployments.apps": true, "deployment.apps": true,
		"federateddeployment": false, "federateddeployments.types.kubefed.io": false} {
		if got := typ.namesTarget(kind); got != want {
			t.Errorf("namesTarget(%q) = %v, want %v", kind, got, want)
		}
	}
}

func TestPolicyUndo(t *testing.T) {
	obj := &unstructured.Unstructured{}
	obj.SetNamespace("shop")
	obj.SetName("web")
	tg := &target{typ: fedType{Kind: "FederatedDeployment"}, ns: "shop", name: "web", obj: obj}
	if err := policyUndo(tg); err != nil {
		t.Fatalf("a wrapper: %v", err)
	}
	obj.SetAnnotations(map[string]string{policyv1alpha1.AnnotationPolicy: "PropagationPolicy/shop/web"})
	obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "n1", Controller: ptr.To(true)}})
	err := policyUndo(tg)
	for _, w := range []string{"federateddeployment shop/web is made from Deployment shop/web by PropagationPolicy shop/web", "roll back Deployment shop/web instead"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q: %v", w, err)
		}
	}
}
