package registration

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/pki"
	"github.com/cellfed/cellfed/pkg/registration"
)

// sign signs the agent's certificate request into status unless the
// certificate there is already for the request's key. A reason means the
// request cannot be signed (the Ready reason and message); err is for
// retries.
func (c *Controller) sign(reg *cellv1alpha1.ClusterRegistration, status *cellv1alpha1.ClusterRegistrationStatus) (string, string, error) {
	need, err := needsCertificate(reg.Spec.CSR, status.Certificate)
	if err != nil {
		return registration.ReasonInvalid, err.Error(), nil
	}
	if !need {
		return "", "", nil
	}
	certPEM, err := pki.SignAgentCSR(c.pki, reg.Spec.CSR, reg.Name, c.opts.CertValidity)
	if err != nil {
		return registration.ReasonError, fmt.Sprintf("signing the agent certificate: %v", err), nil
	}
	cert, err := pki.ParseCertificatePEM(certPEM)
	if err != nil {
		return "", "", err
	}
	status.Certificate = certPEM
	status.CertificateExpiry = &metav1.Time{Time: cert.NotAfter}
	klog.InfoS("Signed agent certificate", "registration", reg.Name, "notAfter", cert.NotAfter.UTC().Format(time.RFC3339))
	return "", "", nil
}

// needsCertificate: no certificate yet, or the request's key is not the
// certificate's (the agent asked for a renewal).
func needsCertificate(csrPEM, certPEM []byte) (bool, error) {
	csr, err := pki.ParseCSRPEM(csrPEM)
	if err != nil {
		return false, fmt.Errorf("spec.csr: %v; the agent must send a new certificate request", err)
	}
	if len(certPEM) == 0 {
		return true, nil
	}
	cert, err := pki.ParseCertificatePEM(certPEM)
	if err != nil {
		return true, nil
	}
	return !pki.SamePublicKey(csr.PublicKey, cert.PublicKey), nil
}
