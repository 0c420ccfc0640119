package registration

import (
	"bytes"
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/registration"
)

// moveToken stores the member's token in the credentials Secret and
// clears it from the registration, which more users can read.
func (c *Controller) moveToken(ctx context.Context, reg *cellv1alpha1.ClusterRegistration) error {
	secrets := c.kube.CoreV1().Secrets(c.opts.FederationNamespace)
	name := registration.CredentialsSecretName(reg.Name)
	want := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.opts.FederationNamespace,
			Labels: map[string]string{registration.LabelRegistration: reg.Name}, OwnerReferences: ownerRefs(reg)},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"token": []byte(reg.Spec.ServiceAccountToken)},
	}
	have, err := secrets.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := secrets.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating Secret %s/%s: %w", c.opts.FederationNamespace, name, err)
		}
	case err != nil:
		return fmt.Errorf("reading Secret %s/%s: %w", c.opts.FederationNamespace, name, err)
	case have.Labels[registration.LabelRegistration] != reg.Name:
		// Someone else's Secret (a cluster joined with `cellfedctl join`):
		// the token stays out of it; the Ready condition will say why.
		return c.failMove(ctx, reg, fmt.Sprintf("Secret %s/%s exists and does not belong to this registration (a cluster joined with `cellfedctl join`?); unjoin that cluster or register under another name", c.opts.FederationNamespace, name))
	case !bytes.Equal(have.Data["token"], want.Data["token"]):
		have = have.DeepCopy()
		have.Data = want.Data
		if _, err := secrets.Update(ctx, have, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating Secret %s/%s: %w", c.opts.FederationNamespace, name, err)
		}
	}
	return c.clearToken(ctx, reg)
}

// failMove drops the token from the registration without storing it.
func (c *Controller) failMove(ctx context.Context, reg *cellv1alpha1.ClusterRegistration, msg string) error {
	status := reg.Status.DeepCopy()
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: cellv1alpha1.RegistrationConditionReady, Status: metav1.ConditionFalse,
		Reason: registration.ReasonClusterExists, Message: msg, ObservedGeneration: reg.Generation})
	status.Phase = registration.Phase(status.Conditions)
	if err := c.writeStatus(ctx, reg, status); err != nil {
		return err
	}
	return c.clearToken(ctx, reg)
}

func (c *Controller) clearToken(ctx context.Context, reg *cellv1alpha1.ClusterRegistration) error {
	patch := []byte(fmt.Sprintf(`[{"op":"test","path":"/metadata/resourceVersion","value":%q},{"op":"remove","path":"/spec/serviceAccountToken"}]`, reg.ResourceVersion))
	_, err := c.dynamic.Resource(cellv1alpha1.ClusterRegistrationsResource).Patch(ctx, reg.Name, "application/json-patch+json", patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("clearing the member token from ClusterRegistration %s: %w", reg.Name, err)
	}
	klog.InfoS("Moved the member token of a cluster registration into its Secret", "registration", reg.Name,
		"secret", c.opts.FederationNamespace+"/"+registration.CredentialsSecretName(reg.Name))
	return nil
}

// markTokenUsed annotates the bootstrap token's Secret with the
// registration that used it (admission refuses a second use).
func (c *Controller) markTokenUsed(ctx context.Context, reg *cellv1alpha1.ClusterRegistration) error {
	id := reg.Labels[registration.LabelBootstrapTokenID]
	if id == "" {
		return nil
	}
	secrets := c.kube.CoreV1().Secrets(registration.BootstrapTokenNamespace)
	s, err := secrets.Get(ctx, registration.TokenSecretName(id), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading bootstrap token %s: %w", id, err)
	}
	if s.Annotations[registration.AnnotationTokenUsedBy] != "" {
		return nil
	}
	s = s.DeepCopy()
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[registration.AnnotationTokenUsedBy] = reg.Name
	s.Annotations[registration.AnnotationTokenUsedAt] = reg.CreationTimestamp.UTC().Format(time.RFC3339)
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("marking bootstrap token %s used: %w", id, err)
	}
	return nil
}

// deleteUsedToken deletes the registration's bootstrap token once the
// agent showed, authenticated with its certificate, that it has it (until
// then the token is the only way the agent can read the certificate; it
// cannot register anything else: admission refuses a used token).
func (c *Controller) deleteUsedToken(ctx context.Context, reg *cellv1alpha1.ClusterRegistration) error {
	id := reg.Labels[registration.LabelBootstrapTokenID]
	if id == "" || reg.Annotations[registration.AnnotationAgentCertificate] == "" {
		return nil
	}
	err := c.kube.CoreV1().Secrets(registration.BootstrapTokenNamespace).Delete(ctx, registration.TokenSecretName(id), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting bootstrap token %s: %w", id, err)
	}
	if err == nil {
		klog.InfoS("Deleted the bootstrap token of an approved registration", "registration", reg.Name, "tokenID", id)
	}
	return nil
}
