package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
)

// PEM block types of the certificates, requests and keys cellfed writes.
const (
	BlockCertificate        = "CERTIFICATE"
	BlockCertificateRequest = "CERTIFICATE REQUEST"
	BlockECPrivateKey       = "EC PRIVATE KEY"
)

// decodeBlock returns the first PEM block of data, which must be of type
// blockType; what names data in the error.
func decodeBlock(data []byte, blockType, what string) (*pem.Block, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != blockType {
		return nil, fmt.Errorf("%s is not a PEM %q block", what, blockType)
	}
	return block, nil
}

// ParseCSRPEM parses the first PEM block of data as a certificate request.
// It does not check the request's signature (CheckSignature does).
func ParseCSRPEM(data []byte) (*x509.CertificateRequest, error) {
	block, err := decodeBlock(data, BlockCertificateRequest, "the certificate request")
	if err != nil {
		return nil, err
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing the certificate request: %w", err)
	}
	return csr, nil
}

// ParseCertificatePEM parses the first PEM block of data as a certificate.
func ParseCertificatePEM(data []byte) (*x509.Certificate, error) {
	block, err := decodeBlock(data, BlockCertificate, "the certificate")
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing the certificate: %w", err)
	}
	return cert, nil
}

// ParseECPrivateKeyPEM parses the first PEM block of data as an EC
// private key (SEC 1, as NewAgentKeyAndCSR writes it).
func ParseECPrivateKeyPEM(data []byte) (*ecdsa.PrivateKey, error) {
	block, err := decodeBlock(data, BlockECPrivateKey, "the key")
	if err != nil {
		return nil, err
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing the key: %w", err)
	}
	return key, nil
}

// SamePublicKey reports whether a and b are the same public key, e.g. a
// certificate's and the request it was signed for. Keys that cannot be
// encoded are never the same.
func SamePublicKey(a, b crypto.PublicKey) bool {
	da, err := x509.MarshalPKIXPublicKey(a)
	if err != nil {
		return false
	}
	db, err := x509.MarshalPKIXPublicKey(b)
	return err == nil && bytes.Equal(da, db)
}
