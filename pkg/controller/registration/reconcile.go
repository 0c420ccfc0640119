package registration

import (
	"context"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/registration"
)

func (c *Controller) worker(ctx context.Context) {
	for c.next(ctx) {
	}
}

func (c *Controller) next(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if ctx.Err() != nil {
		// This replica stopped leading: the next leader takes the key.
		c.queue.Add(key)
		return false
	}
	if err := c.Reconcile(ctx, key); err != nil {
		klog.ErrorS(err, "Reconciling cluster registration; retrying", "registration", key)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// Reconcile brings one registration's objects and status in line.
func (c *Controller) Reconcile(ctx context.Context, name string) error {
	reg, err := c.get(name)
	if err != nil || reg == nil {
		return err
	}
	if reg.DeletionTimestamp != nil {
		return c.finalize(ctx, reg)
	}
	if reg.Spec.ServiceAccountToken != "" {
		return c.moveToken(ctx, reg)
	}
	if err := c.markTokenUsed(ctx, reg); err != nil {
		return err
	}
	status := reg.Status.DeepCopy()
	if registration.Phase(status.Conditions) == cellv1alpha1.RegistrationPending && c.autoApprove(reg.Spec.Tenant) {
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: cellv1alpha1.RegistrationConditionApproved, Status: metav1.ConditionTrue,
			Reason: registration.ReasonAutoApproved, Message: fmt.Sprintf("tenant %s auto-approves registrations (RegistrationPolicy %s)", reg.Spec.Tenant, reg.Spec.Tenant),
			ObservedGeneration: reg.Generation})
		klog.InfoS("Auto-approved cluster registration", "registration", name, "tenant", reg.Spec.Tenant)
	}
	phase := registration.Phase(status.Conditions)
	if err := c.ensureAccessRBAC(ctx, reg, phase); err != nil {
		return err
	}
	switch phase {
	case cellv1alpha1.RegistrationDenied:
		// Nothing of the registration is left but the record: the member's
		// token goes, no cluster was created.
		if err := c.deleteOwned(ctx, reg); err != nil {
			return err
		}
		status.Certificate, status.CertificateExpiry, status.KubeFedCluster = nil, nil, ""
	case cellv1alpha1.RegistrationRevoked:
		if c.tunnel != nil {
			c.tunnel.Disconnect(name)
		}
	case cellv1alpha1.RegistrationApproved, cellv1alpha1.RegistrationRegistered, cellv1alpha1.RegistrationFailed:
		reason, msg, err := c.register(ctx, reg, status)
		if err != nil {
			return err
		}
		ready := metav1.ConditionFalse
		if reason == registration.ReasonRegistered {
			ready = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: cellv1alpha1.RegistrationConditionReady, Status: ready, Reason: reason, Message: msg, ObservedGeneration: reg.Generation})
	}
	status.Phase = registration.Phase(status.Conditions)
	if len(status.Certificate) > 0 {
		if err := c.ensureFinalizer(ctx, reg); err != nil {
			return err
		}
	}
	return c.writeStatus(ctx, reg, status)
}

// autoApprove says whether tenant's RegistrationPolicy approves its
// registrations automatically; without one, an administrator approves.
func (c *Controller) autoApprove(tenant string) bool {
	if tenant == "" {
		return false
	}
	obj, err := c.policies.Get(tenant)
	if err != nil {
		return false
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return false
	}
	approval, _, _ := unstructured.NestedString(u.Object, "spec", "approval")
	return approval == string(cellv1alpha1.RegistrationApprovalAutomatic)
}

// warnLegacyPolicy says once, at start, that a registration-policy
// ConfigMap of an older plane is not read any more: anyone with ConfigMap
// rights in the federation namespace could edit it.
func (c *Controller) warnLegacyPolicy(ctx context.Context) {
	cm, err := c.kube.CoreV1().ConfigMaps(c.opts.FederationNamespace).Get(ctx, registration.PolicyConfigMap, metav1.GetOptions{})
	if err != nil || len(cm.Data) == 0 {
		return
	}
	klog.InfoS("WARNING: the ConfigMap of an older plane's auto-approve policy is ignored; registrations of its tenants wait for an administrator. Recreate each tenant's policy with `cellfedctl registration auto-approve <tenant>` (a RegistrationPolicy only plane administrators may change), then delete the ConfigMap",
		"configMap", c.opts.FederationNamespace+"/"+registration.PolicyConfigMap, "tenants", len(cm.Data))
}

// register does what an approval asks: the certificate, the
// KubeFedCluster, the bootstrap token's deletion. It returns the Ready
// reason and message; err is for retries.
func (c *Controller) register(ctx context.Context, reg *cellv1alpha1.ClusterRegistration, status *cellv1alpha1.ClusterRegistrationStatus) (string, string, error) {
	// A cluster of this name joined by other means (admission refuses such
	// a registration; this covers one joined after it was created): sign
	// nothing, or the agent would hold an identity for that cluster.
	if reason, msg, err := c.clusterTaken(ctx, reg); err != nil || reason != "" {
		return reason, msg, err
	}
	if reason, msg, err := c.sign(reg, status); err != nil || reason != "" {
		return reason, msg, err
	}
	if err := c.deleteUsedToken(ctx, reg); err != nil {
		return "", "", err
	}

	secretName := registration.CredentialsSecretName(reg.Name)
	secret, err := c.kube.CoreV1().Secrets(c.opts.FederationNamespace).Get(ctx, secretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && secret.Labels[registration.LabelRegistration] != reg.Name) {
		return registration.ReasonSigning, fmt.Sprintf("waiting for the agent to hand over a member service-account token (Secret %s/%s)", c.opts.FederationNamespace, secretName), nil
	}
	if err != nil {
		return "", "", fmt.Errorf("reading Secret %s/%s: %w", c.opts.FederationNamespace, secretName, err)
	}

	if c.access == nil {
		return registration.ReasonError, "this plane runs no tunnel hub, so a tunnelled cluster cannot be reached; start cellfed-apiserver with the tunnel hub enabled", nil
	}
	access, err := c.access(reg)
	if err != nil {
		return registration.ReasonError, err.Error(), nil
	}
	ref, reason, msg, err := c.ensureCluster(ctx, reg, access, secretName)
	if err != nil || reason != "" {
		return reason, msg, err
	}
	status.KubeFedCluster = ref

	return registration.ReasonRegistered, fmt.Sprintf("KubeFedCluster %s reaches the cluster through the tunnel hub", ref), nil
}

func (c *Controller) writeStatus(ctx context.Context, reg *cellv1alpha1.ClusterRegistration, status *cellv1alpha1.ClusterRegistrationStatus) error {
	if reflect.DeepEqual(&reg.Status, status) {
		return nil
	}
	out := reg.DeepCopy()
	out.Status = *status
	out.APIVersion, out.Kind = cellv1alpha1.SchemeGroupVersion.String(), "ClusterRegistration"
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(out)
	if err != nil {
		return fmt.Errorf("encoding ClusterRegistration %s: %w", reg.Name, err)
	}
	if _, err := c.dynamic.Resource(cellv1alpha1.ClusterRegistrationsResource).UpdateStatus(ctx, &unstructured.Unstructured{Object: obj}, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil // a newer version is queued
		}
		return fmt.Errorf("writing the status of ClusterRegistration %s: %w", reg.Name, err)
	}
	return nil
}

func ownerRefs(reg *cellv1alpha1.ClusterRegistration) []metav1.OwnerReference {
	return []metav1.OwnerReference{{
		APIVersion: cellv1alpha1.SchemeGroupVersion.String(), Kind: "ClusterRegistration",
		Name: reg.Name, UID: reg.UID,
	}}
}
