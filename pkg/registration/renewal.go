package registration

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

// Renew keeps id fresh until ctx is done: at RenewAfter of the
// certificate's lifetime it sends a new certificate request (and a fresh
// member token) on its registration, authenticated with the current
// certificate, waits for the plane to sign it, stores the new pair and
// switches id to it. Failures are retried every RetryInterval; a revoked
// registration ends it with an error.
func Renew(ctx context.Context, o *AgentOptions, id *Identity) error {
	base, err := o.planeBase()
	if err != nil {
		return err
	}
	for {
		leaf := id.Leaf()
		at := id.renewAt(o.RenewAfter)
		klog.V(2).InfoS("Next certificate renewal", "cluster", o.ClusterName, "at", at.UTC().Format(time.RFC3339))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Until(at)):
		}
		for {
			err := o.renewOnce(ctx, base, id)
			if err == nil {
				break
			}
			if errors.Is(err, errRevoked) {
				return err
			}
			klog.ErrorS(err, "Renewing the agent certificate; retrying", "cluster", o.ClusterName, "after", o.RetryInterval, "notAfter", leaf.NotAfter.UTC().Format(time.RFC3339))
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(o.RetryInterval):
			}
		}
	}
}

// expiredOut reports whether the plane refused to authenticate the agent
// (401) after its certificate's notAfter: the agent has no credential
// left to renew with.
func expiredOut(err error, notAfter, now time.Time) bool {
	return apierrors.IsUnauthorized(err) && now.After(notAfter)
}

// errRevoked ends Renew: the registration was revoked or deleted.
var errRevoked = errors.New("registration revoked")

func (o *AgentOptions) renewOnce(ctx context.Context, base *rest.Config, id *Identity) error {
	regs, err := o.agentClient(base, id)
	if err != nil {
		return err
	}
	u, err := regs.Get(ctx, o.ClusterName, metav1.GetOptions{})
	if expiredOut(err, id.Leaf().NotAfter, time.Now()) {
		// Revoked while the plane was out of reach, or out of reach for
		// longer than the certificate lives: no retry can renew it.
		return fmt.Errorf("%w: the certificate of the agent of cluster %s expired at %s before it was renewed, and the plane no longer lets the agent of cluster %s read its registration with it; the agent stops. Register again with a new bootstrap token once the old registration is deleted",
			errRevoked, o.ClusterName, id.Leaf().NotAfter.UTC().Format(time.RFC3339), o.ClusterName)
	}
	if apierrors.IsForbidden(err) {
		// The plane removes an agent's access to its registration when it
		// is revoked, denied or deleted.
		return fmt.Errorf("%w: the plane no longer lets the agent of cluster %s read its registration (revoked or deleted by an administrator); the agent stops. Register again with a new bootstrap token once the old registration is deleted", errRevoked, o.ClusterName)
	}
	if err != nil {
		return fmt.Errorf("reading ClusterRegistration %s as the agent: %w", o.ClusterName, err)
	}
	reg := &cellv1alpha1.ClusterRegistration{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, reg); err != nil {
		return fmt.Errorf("decoding ClusterRegistration %s: %w", o.ClusterName, err)
	}
	if Phase(reg.Status.Conditions) == cellv1alpha1.RegistrationRevoked {
		return fmt.Errorf("%w: the registration of cluster %s was revoked (%s); the agent stops renewing", errRevoked, o.ClusterName, decisionMessage(reg))
	}
	keyPEM, csrPEM, err := o.pendingKey(ctx)
	if err != nil {
		return err
	}
	reg.Spec.CSR = csrPEM
	if o.Member != nil {
		// A fresh member token with every renewal; failure to mint one
		// does not block the certificate.
		if member, err := kubernetes.NewForConfig(o.Member); err == nil {
			ca := reg.Spec.CABundle
			if tok, err := o.memberToken(ctx, member, o.memberAccessName(), ca); err == nil {
				reg.Spec.ServiceAccountToken = tok
			} else {
				klog.ErrorS(err, "Could not refresh the plane's member token; keeping the old one", "cluster", o.ClusterName)
			}
		}
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(reg)
	if err != nil {
		return err
	}
	if _, err := regs.Update(ctx, &unstructured.Unstructured{Object: obj}, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("sending the renewal request on ClusterRegistration %s: %w", o.ClusterName, err)
	}
	waitCtx, cancel := context.WithDeadline(ctx, id.Leaf().NotAfter)
	defer cancel()
	certPEM, err := o.waitCertificate(waitCtx, regs, csrPEM, func(err error) error { return err })
	if err != nil {
		return err
	}
	if err := o.keep(ctx, id, certPEM, keyPEM); err != nil {
		return err
	}
	if err := o.acknowledge(ctx, base, id); err != nil {
		klog.ErrorS(err, "Could not acknowledge the renewed certificate", "cluster", o.ClusterName)
	}
	klog.InfoS("Renewed the agent certificate", "cluster", o.ClusterName, "notAfter", id.Leaf().NotAfter.UTC().Format(time.RFC3339))
	return nil
}
