package registration

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
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
	cert, err := parseCert(certPEM)
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
	block, _ := pem.Decode(csrPEM)
	if block == nil {
		return false, errors.New("spec.csr is not PEM; the agent must send a new certificate request")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return false, fmt.Errorf("spec.csr: %v; the agent must send a new certificate request", err)
	}
	if len(certPEM) == 0 {
		return true, nil
	}
	cert, err := parseCert(certPEM)
	if err != nil {
		return true, nil
	}
	a, err1 := x509.MarshalPKIXPublicKey(csr.PublicKey)
	b, err2 := x509.MarshalPKIXPublicKey(cert.PublicKey)
	return err1 != nil || err2 != nil || !bytes.Equal(a, b), nil
}

func parseCert(certPEM []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}
