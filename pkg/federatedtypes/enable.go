package federatedtypes

import (
	"context"
	"errors"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
	fedv1beta1 "sigs.k8s.io/kubefed/pkg/apis/core/v1beta1"

	"github.com/cellfed/cellfed/pkg/annotationrules"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/pkg/placement/division"
	"github.com/cellfed/cellfed/pkg/version"
)

// kubefed.FederatedTypeConfigsResource is the FederatedTypeConfig resource.

// Clients reach the plane.
type Clients struct {
	CRDs    apiextensionsclient.Interface
	Dynamic dynamic.Interface
}

// Enable creates or updates the federated CRD of t and its
// FederatedTypeConfig in namespace, and waits until the CRD is served.
// annotations, when not nil, sets the type's annotation propagation
// patterns (spec.propagatingAnnotations; an empty list removes them);
// nil keeps what the FederatedTypeConfig has.
func Enable(ctx context.Context, c Clients, t Target, template *apiextensionsv1.JSONSchemaProps, conversion *apiextensionsv1.WebhookClientConfig, namespace string, annotations []string) error {
	crd := CRD(t, template, conversion)
	if err := ApplyCRD(ctx, c.CRDs, crd); err != nil {
		return err
	}
	if err := WaitEstablished(ctx, c.CRDs, crd.Name); err != nil {
		return err
	}
	return applyTypeConfig(ctx, c.Dynamic, TypeConfig(t, namespace), annotations)
}

// Disable stops propagation of resource by deleting its
// FederatedTypeConfig. The federated CRD and its objects stay unless
// deleteCRD is set; then the CRD is only deleted when no federated object
// of the type exists, or force is set.
func Disable(ctx context.Context, c Clients, resource, namespace string, deleteCRD, force bool) error {
	ftc, err := c.Dynamic.Resource(kubefed.FederatedTypeConfigsResource).Namespace(namespace).Get(ctx, resource, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if !deleteCRD {
			return fmt.Errorf("type %q is not enabled: no FederatedTypeConfig %s/%s", resource, namespace, resource)
		}
	case err != nil:
		return fmt.Errorf("reading FederatedTypeConfig %s/%s: %w", namespace, resource, err)
	}
	crdName := ""
	if ftc != nil {
		plural, _, _ := unstructured.NestedString(ftc.Object, "spec", "federatedType", "pluralName")
		group, _, _ := unstructured.NestedString(ftc.Object, "spec", "federatedType", "group")
		crdName = plural + "." + group
	} else if t, err := LookupBuiltin(resource); err == nil {
		crdName = t.CRDName()
	}
	if deleteCRD && crdName != "" && !force {
		crd, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crdName, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading CRD %s: %w", crdName, err)
		}
		if err == nil {
			gvr := crdGVR(crd)
			list, err := c.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
			if err != nil {
				return fmt.Errorf("listing %s: %w", gvr.Resource, err)
			}
			if len(list.Items) > 0 {
				o := list.Items[0]
				return fmt.Errorf("refusing to delete CRD %s: federated objects of this type exist (e.g. %s/%s) and would be deleted with it; delete them first or pass --force", crdName, o.GetNamespace(), o.GetName())
			}
		}
	}
	if ftc != nil {
		if err := c.Dynamic.Resource(kubefed.FederatedTypeConfigsResource).Namespace(namespace).Delete(ctx, resource, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting FederatedTypeConfig %s/%s: %w", namespace, resource, err)
		}
	}
	if deleteCRD && crdName != "" {
		if err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, crdName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting CRD %s: %w", crdName, err)
		}
	}
	return nil
}

// crdGVR is the storage version resource of a CRD.
func crdGVR(crd *apiextensionsv1.CustomResourceDefinition) schema.GroupVersionResource {
	version := crd.Spec.Versions[0].Name
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			version = v.Name
		}
	}
	return schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Spec.Names.Plural}
}

// ApplyCRD creates crd, or brings the existing CRD up to it as PlanCRD
// decides for this binary's release: never over a CRD a newer release
// wrote, keeping what an admin added that the release does not own.
func ApplyCRD(ctx context.Context, c apiextensionsclient.Interface, crd *apiextensionsv1.CustomResourceDefinition) error {
	_, err := applyCRD(ctx, c, crd, version.Own())
	return err
}

func applyCRD(ctx context.Context, c apiextensionsclient.Interface, crd *apiextensionsv1.CustomResourceDefinition, release *utilversion.Version) (CRDAction, error) {
	crds := c.ApiextensionsV1().CustomResourceDefinitions()
	existing, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		existing, err = nil, nil
	}
	if err != nil {
		return "", fmt.Errorf("reading CRD %s: %w", crd.Name, err)
	}
	out, action := PlanCRD(existing, crd, release)
	switch action {
	case CRDCreate:
		if _, err := crds.Create(ctx, out, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("creating CRD %s: %w", crd.Name, err)
		}
	case CRDUpdate:
		if _, err := crds.Update(ctx, out, metav1.UpdateOptions{}); err != nil {
			return "", fmt.Errorf("updating CRD %s: %w", crd.Name, err)
		}
		klog.InfoS("Brought a CRD up to this release's schema", "crd", crd.Name, "release", out.Annotations[AnnotationSchemaRelease],
			"was", existing.Annotations[AnnotationSchemaRelease])
	case CRDNewer:
		klog.InfoS("Leaving a CRD written by a newer release alone", "crd", crd.Name, "release", "v"+release.String(),
			"crdRelease", existing.Annotations[AnnotationSchemaRelease])
	}
	return action, nil
}

// WaitEstablished waits until the CRD's names are accepted and it is
// served.
func WaitEstablished(ctx context.Context, c apiextensionsclient.Interface, name string) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		crd, err := c.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err
			return false, nil
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.NamesAccepted && cond.Status == apiextensionsv1.ConditionFalse {
				return false, fmt.Errorf("CRD %s: names not accepted: %s", name, cond.Message)
			}
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		last = errors.New("not established yet")
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for CRD %s: %w (last: %v)", name, err, last)
	}
	return nil
}

func applyTypeConfig(ctx context.Context, c dynamic.Interface, ftc *fedv1beta1.FederatedTypeConfig, annotations []string) error {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ftc)
	if err != nil {
		return fmt.Errorf("encoding FederatedTypeConfig: %w", err)
	}
	obj := &unstructured.Unstructured{Object: content}
	unstructured.RemoveNestedField(obj.Object, "status")
	unstructured.RemoveNestedField(obj.Object, "metadata", "creationTimestamp")
	if len(annotations) > 0 {
		list := make([]any, len(annotations))
		for i, a := range annotations {
			list[i] = a
		}
		_ = unstructured.SetNestedSlice(obj.Object, list, "spec", annotationrules.Field)
	}
	res := c.Resource(kubefed.FederatedTypeConfigsResource).Namespace(ftc.Namespace)
	existing, err := res.Get(ctx, ftc.Name, metav1.GetOptions{})
	if err == nil && annotations == nil {
		if v, ok, _ := unstructured.NestedFieldCopy(existing.Object, "spec", annotationrules.Field); ok {
			_ = unstructured.SetNestedField(obj.Object, v, "spec", annotationrules.Field)
		}
	}
	if err == nil {
		// Enabling again keeps the type's replicas path.
		if v, ok, _ := unstructured.NestedFieldCopy(existing.Object, "spec", division.ReplicasPathField); ok {
			_ = unstructured.SetNestedField(obj.Object, v, "spec", division.ReplicasPathField)
		}
	}
	if apierrors.IsNotFound(err) {
		if _, err := res.Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating FederatedTypeConfig %s/%s: %w", ftc.Namespace, ftc.Name, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading FederatedTypeConfig %s/%s: %w", ftc.Namespace, ftc.Name, err)
	}
	if equality.Semantic.DeepEqual(existing.Object["spec"], obj.Object["spec"]) {
		return nil
	}
	existing.Object["spec"] = obj.Object["spec"]
	if _, err := res.Update(ctx, existing, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating FederatedTypeConfig %s/%s: %w", ftc.Namespace, ftc.Name, err)
	}
	return nil
}
