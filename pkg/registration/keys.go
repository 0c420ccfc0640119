package registration

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/cellfed/cellfed/pkg/pki"
)

// csrForKey makes a certificate request for an existing PEM EC key.
func csrForKey(keyPEM []byte, cluster string) ([]byte, error) {
	block, _ := pem.Decode(keyPEM)
	if block == nil || block.Type != "EC PRIVATE KEY" {
		return nil, errors.New("not a PEM \"EC PRIVATE KEY\"")
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing the key: %w", err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: pki.AgentUser(cluster), Organization: []string{pki.AgentGroup}},
	}, key)
	if err != nil {
		return nil, fmt.Errorf("creating certificate request: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), nil
}

// csrPublicKey is the DER public key of a PEM certificate request.
func csrPublicKey(csrPEM []byte) ([]byte, error) {
	block, _ := pem.Decode(csrPEM)
	if block == nil {
		return nil, errors.New("the certificate request is not PEM")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing the certificate request: %w", err)
	}
	return x509.MarshalPKIXPublicKey(csr.PublicKey)
}

// certPublicKey is the DER public key of a PEM certificate.
func certPublicKey(certPEM []byte) ([]byte, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return nil, errors.New("the certificate is not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing the certificate: %w", err)
	}
	return x509.MarshalPKIXPublicKey(cert.PublicKey)
}
