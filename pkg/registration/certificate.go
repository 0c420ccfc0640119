package registration

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/pki"
)

// AnnotationAgentCertificate is set by the agent, authenticated with its
// new certificate, to the serial number of the certificate it now uses:
// proof that it received it. The plane then deletes the bootstrap token.
const AnnotationAgentCertificate = "cellfed.io/agent-certificate-serial"

// waitCertificate polls the registration until its certificate is for
// csrPEM's key, or it was denied, revoked or failed.
func (o *AgentOptions) waitCertificate(ctx context.Context, regs dynamic.ResourceInterface, csrPEM []byte, translate func(error) error) ([]byte, error) {
	csr, err := pki.ParseCSRPEM(csrPEM)
	if err != nil {
		return nil, err
	}
	var lastPhase cellv1alpha1.RegistrationPhase
	ticker := time.NewTicker(o.PollInterval)
	defer ticker.Stop()
	for {
		u, err := regs.Get(ctx, o.ClusterName, metav1.GetOptions{})
		switch {
		case err == nil:
			reg := &cellv1alpha1.ClusterRegistration{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, reg); err != nil {
				return nil, fmt.Errorf("decoding ClusterRegistration %s: %w", o.ClusterName, err)
			}
			phase := Phase(reg.Status.Conditions)
			if phase != lastPhase {
				klog.InfoS("Registration phase", "cluster", o.ClusterName, "phase", phase)
				lastPhase = phase
			}
			switch phase {
			case cellv1alpha1.RegistrationDenied, cellv1alpha1.RegistrationRevoked:
				return nil, fmt.Errorf("%w: the plane's administrator %s the registration of cluster %s (%s); nothing was set up in the plane. Ask them why; registering again needs a new bootstrap token after they delete ClusterRegistration %s", errDenied,
					map[cellv1alpha1.RegistrationPhase]string{cellv1alpha1.RegistrationDenied: "denied", cellv1alpha1.RegistrationRevoked: "revoked"}[phase], o.ClusterName, decisionMessage(reg), o.ClusterName)
			}
			if len(reg.Status.Certificate) > 0 {
				if cert, err := pki.ParseCertificatePEM(reg.Status.Certificate); err == nil && pki.SamePublicKey(cert.PublicKey, csr.PublicKey) {
					return reg.Status.Certificate, nil
				}
			}
		case apierrors.IsForbidden(err), apierrors.IsNotFound(err):
			// The plane grants read access to the registration a moment
			// after it was created.
		case apierrors.IsUnauthorized(err):
			return nil, translate(err)
		default:
			klog.ErrorS(err, "Reading the registration; retrying", "cluster", o.ClusterName)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("stopped waiting for the plane to sign the certificate of cluster %s (phase %s): %w", o.ClusterName, lastPhase, ctx.Err())
		case <-ticker.C:
		}
	}
}

func decisionMessage(reg *cellv1alpha1.ClusterRegistration) string {
	for _, c := range reg.Status.Conditions {
		if (c.Type == cellv1alpha1.RegistrationConditionDenied || c.Type == cellv1alpha1.RegistrationConditionRevoked) && c.Status == metav1.ConditionTrue {
			return c.Message
		}
	}
	return "no reason given"
}

// agentClient reaches the plane as the agent identity id.
func (o *AgentOptions) agentClient(base *rest.Config, id *Identity) (dynamic.ResourceInterface, error) {
	cfg := rest.CopyConfig(base)
	leafPEM := pem.EncodeToMemory(&pem.Block{Type: pki.BlockCertificate, Bytes: id.Leaf().Raw})
	cur, _ := id.GetClientCertificate(nil)
	keyDER, err := x509.MarshalPKCS8PrivateKey(cur.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("encoding the agent key: %w", err)
	}
	cfg.CertData = leafPEM
	cfg.KeyData = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for the plane: %w", err)
	}
	return c.Resource(cellv1alpha1.ClusterRegistrationsResource), nil
}

// acknowledge records, authenticated with the new certificate, that the
// agent uses it.
func (o *AgentOptions) acknowledge(ctx context.Context, base *rest.Config, id *Identity) error {
	regs, err := o.agentClient(base, id)
	if err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, AnnotationAgentCertificate, id.Leaf().SerialNumber.Text(16))
	if _, err := regs.Patch(ctx, o.ClusterName, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("acknowledging the certificate on ClusterRegistration %s: %w", o.ClusterName, err)
	}
	return nil
}

// errDenied marks a denied or revoked registration while waiting.
var errDenied = errors.New("registration refused")
