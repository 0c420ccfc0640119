package registration

import (
	"context"
	"encoding/base64"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	fedv1beta1 "sigs.k8s.io/kubefed/pkg/apis/core/v1beta1"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/pkg/registration"
)

// Access says how the plane reaches a tunnelled cluster.
type Access func(reg *cellv1alpha1.ClusterRegistration) (ClusterAccess, error)

// ClusterAccess is what a tunnelled KubeFedCluster holds besides the
// registration's own data.
type ClusterAccess struct {
	// APIEndpoint is the KubeFedCluster's apiEndpoint.
	APIEndpoint string
	// ProxyURL is the hub's CONNECT frontend with the cluster's credential
	// of the registration's spec.proxyCredentialGeneration.
	ProxyURL string
	// ProxyCA, when set, verifies the CONNECT frontend (https proxy): it
	// is appended to the member's CA in caBundle, the one CA pool Go's
	// HTTP client (and so KubeFed) verifies both the proxy and the member
	// with.
	ProxyCA []byte
}

// caBundle is the KubeFedCluster's caBundle: the member's CA, then the
// proxy's.
func caBundle(member, proxyCA []byte) []byte {
	if len(proxyCA) == 0 {
		return member
	}
	out := append([]byte{}, member...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	return append(out, proxyCA...)
}

// ensureCluster creates or updates the tunnelled KubeFedCluster. A
// KubeFedCluster of the same name that this registration does not own is
// left alone and reported.
func (c *Controller) ensureCluster(ctx context.Context, reg *cellv1alpha1.ClusterRegistration, access ClusterAccess, secretName string) (string, string, string, error) {
	ns := c.opts.FederationNamespace
	ref := ns + "/" + reg.Name
	clusters := c.dynamic.Resource(kubefed.KubeFedClustersResource).Namespace(ns)
	labels := map[string]string{registration.LabelRegistration: reg.Name, registration.LabelTunnelled: "true"}
	if reg.Spec.Tenant != "" {
		labels[cellv1alpha1.LabelTenant] = reg.Spec.Tenant
	}
	annotations := map[string]string{}
	if reg.Spec.Workspace != "" {
		annotations[cellv1alpha1.LabelWorkspace] = reg.Spec.Workspace
	}
	spec := map[string]any{"apiEndpoint": access.APIEndpoint, "proxyURL": access.ProxyURL, "secretRef": map[string]any{"name": secretName}}
	if ca := caBundle(reg.Spec.CABundle, access.ProxyCA); len(ca) > 0 {
		spec["caBundle"] = encodeBase64(ca)
	}
	have, err := clusters.Get(ctx, reg.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": fedv1beta1.SchemeGroupVersion.String(), "kind": "KubeFedCluster",
			"metadata": map[string]any{"name": reg.Name, "namespace": ns}, "spec": spec,
		}}
		obj.SetLabels(labels)
		if len(annotations) > 0 {
			obj.SetAnnotations(annotations)
		}
		obj.SetOwnerReferences(ownerRefs(reg))
		if _, err := clusters.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
				return "", registration.ReasonError, fmt.Sprintf("the plane refused KubeFedCluster %s: %v", ref, err), nil
			}
			return "", "", "", fmt.Errorf("creating KubeFedCluster %s: %w", ref, err)
		}
		klog.InfoS("Created tunnelled KubeFedCluster", "cluster", ref, "tenant", reg.Spec.Tenant)
		return ref, "", "", nil
	}
	if err != nil {
		return "", "", "", fmt.Errorf("reading KubeFedCluster %s: %w", ref, err)
	}
	if have.GetLabels()[registration.LabelRegistration] != reg.Name {
		return "", registration.ReasonClusterExists, fmt.Sprintf("KubeFedCluster %s exists and was not created by this registration (a cluster joined with `cellfedctl join`?); unjoin it, or delete this registration and register under another name", ref), nil
	}
	obj := have.DeepCopy()
	oldSpec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	merged := map[string]any{}
	for k, v := range oldSpec {
		merged[k] = v
	}
	for k, v := range spec {
		merged[k] = v
	}
	l := obj.GetLabels()
	changed := !reflect.DeepEqual(oldSpec, merged)
	for k, v := range labels {
		if l[k] != v {
			l[k], changed = v, true
		}
	}
	if !changed {
		return ref, "", "", nil
	}
	obj.SetLabels(l)
	obj.Object["spec"] = merged
	if _, err := clusters.Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
		return "", "", "", fmt.Errorf("updating KubeFedCluster %s: %w", ref, err)
	}
	return ref, "", "", nil
}

// clusterTaken reports (as a Ready reason and message) a KubeFedCluster of
// the registration's name that the registration does not own.
func (c *Controller) clusterTaken(ctx context.Context, reg *cellv1alpha1.ClusterRegistration) (string, string, error) {
	ns := c.opts.FederationNamespace
	have, err := c.dynamic.Resource(kubefed.KubeFedClustersResource).Namespace(ns).Get(ctx, reg.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", "", nil
	case err != nil:
		return "", "", fmt.Errorf("reading KubeFedCluster %s/%s: %w", ns, reg.Name, err)
	case have.GetLabels()[registration.LabelRegistration] == reg.Name:
		return "", "", nil
	}
	return registration.ReasonClusterExists, fmt.Sprintf("KubeFedCluster %s/%s exists and was not created by this registration (a cluster joined with `cellfedctl join`?); nothing is signed for it: delete this registration and register under another name, or unjoin the existing cluster", ns, reg.Name), nil
}

func encodeBase64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
