package registration

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/pkg/registration"
)

// FinalizerCertificates keeps a registration that issued agent
// certificates until the last of them expires: the hub refuses the
// cluster's agents while the registration is being deleted, and a new
// registration of the same name cannot bring old certificates back.
const FinalizerCertificates = "cellfed.io/agent-certificates"

func (c *Controller) ensureFinalizer(ctx context.Context, reg *cellv1alpha1.ClusterRegistration) error {
	for _, f := range reg.Finalizers {
		if f == FinalizerCertificates {
			return nil
		}
	}
	patch := fmt.Sprintf(`{"metadata":{"finalizers":%s}}`, mustJSON(append(append([]string(nil), reg.Finalizers...), FinalizerCertificates)))
	if _, err := c.dynamic.Resource(cellv1alpha1.ClusterRegistrationsResource).Patch(ctx, reg.Name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("adding finalizer to ClusterRegistration %s: %w", reg.Name, err)
	}
	return nil
}

// finalize a registration being deleted: disconnect its agent, delete the
// KubeFedCluster and credentials, and release the finalizer once its last
// certificate expired (requeued until then).
func (c *Controller) finalize(ctx context.Context, reg *cellv1alpha1.ClusterRegistration) error {
	if c.tunnel != nil {
		c.tunnel.Disconnect(reg.Name)
	}
	if err := c.deleteOwned(ctx, reg); err != nil {
		return err
	}
	has := false
	var rest []string
	for _, f := range reg.Finalizers {
		if f == FinalizerCertificates {
			has = true
			continue
		}
		rest = append(rest, f)
	}
	if !has {
		return nil
	}
	if exp := reg.Status.CertificateExpiry; exp != nil {
		if wait := exp.Sub(c.now()); wait > 0 {
			klog.V(2).InfoS("Keeping a deleted registration until its agent certificates expire", "registration", reg.Name, "expiry", exp.UTC().Format(time.RFC3339))
			c.queue.AddAfter(reg.Name, wait+time.Second)
			return nil
		}
	}
	if rest == nil {
		rest = []string{}
	}
	patch := fmt.Sprintf(`{"metadata":{"finalizers":%s,"resourceVersion":%q}}`, mustJSON(rest), reg.ResourceVersion)
	if _, err := c.dynamic.Resource(cellv1alpha1.ClusterRegistrationsResource).Patch(ctx, reg.Name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("releasing the finalizer of ClusterRegistration %s: %w", reg.Name, err)
	}
	return nil
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// deleteOwned removes the credentials Secret and KubeFedCluster of a
// denied registration.
func (c *Controller) deleteOwned(ctx context.Context, reg *cellv1alpha1.ClusterRegistration) error {
	ns := c.opts.FederationNamespace
	secrets := c.kube.CoreV1().Secrets(ns)
	if s, err := secrets.Get(ctx, registration.CredentialsSecretName(reg.Name), metav1.GetOptions{}); err == nil && s.Labels[registration.LabelRegistration] == reg.Name {
		if err := secrets.Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.UID}}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting Secret %s/%s: %w", ns, s.Name, err)
		}
	} else if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading Secret %s/%s: %w", ns, registration.CredentialsSecretName(reg.Name), err)
	}
	clusters := c.dynamic.Resource(kubefed.KubeFedClustersResource).Namespace(ns)
	if kc, err := clusters.Get(ctx, reg.Name, metav1.GetOptions{}); err == nil && kc.GetLabels()[registration.LabelRegistration] == reg.Name {
		uid := kc.GetUID()
		if err := clusters.Delete(ctx, reg.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting KubeFedCluster %s/%s: %w", ns, reg.Name, err)
		}
	} else if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading KubeFedCluster %s/%s: %w", ns, reg.Name, err)
	}
	return nil
}
