package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	certutil "k8s.io/client-go/util/cert"
)

// Tunnel agents have their own CA, separate from the plane's CA: the
// tunnel hub's agent listener trusts only the agent CA, and the hub's
// client frontends trust only the plane's CA, so an agent certificate never
// opens a tunnel to another cluster and a user certificate never serves one.
//
// An agent certificate names exactly one cluster: its common name is
// AgentUserPrefix+<cluster> and its organization is AgentGroup.
const (
	AgentUserPrefix = "cellfed:agent:"
	AgentGroup      = "cellfed:agents"
)

// AgentCACert is the CA certificate that signs tunnel agents' certificates.
func (f Files) AgentCACert() string { return f.path("agent-ca.crt") }

// AgentCAKey is the key of AgentCACert.
func (f Files) AgentCAKey() string { return f.path("agent-ca.key") }

// AgentUser is the user name (certificate common name) of cluster's agent.
func AgentUser(cluster string) string { return AgentUserPrefix + cluster }

// ClusterFromAgentCert returns the cluster a verified agent certificate
// names, or an error when the certificate is not an agent certificate.
// The caller must have verified the chain against the agent CA.
func ClusterFromAgentCert(cert *x509.Certificate) (string, error) {
	cn := cert.Subject.CommonName
	cluster, ok := strings.CutPrefix(cn, AgentUserPrefix)
	if !ok || cluster == "" {
		return "", fmt.Errorf("certificate common name %q is not %s<cluster>", cn, AgentUserPrefix)
	}
	if errs := validation.IsDNS1123Subdomain(cluster); len(errs) > 0 {
		return "", fmt.Errorf("certificate names cluster %q, which is not a valid cluster name: %s", cluster, strings.Join(errs, "; "))
	}
	if len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != AgentGroup {
		return "", fmt.Errorf("certificate for %q is not in group %s", cn, AgentGroup)
	}
	return cluster, nil
}

// EnsureAgentCA creates the agent CA in f.Dir when it is missing and
// returns it; an existing pair is loaded and checked.
func EnsureAgentCA(f Files) (*x509.Certificate, crypto.Signer, error) {
	certOK, err := exists(f.AgentCACert())
	if err != nil {
		return nil, nil, corrupt(f.AgentCACert(), err)
	}
	keyOK, err := exists(f.AgentCAKey())
	if err != nil {
		return nil, nil, corrupt(f.AgentCAKey(), err)
	}
	switch {
	case certOK && keyOK:
		cert, key, err := loadPair(f.AgentCACert(), f.AgentCAKey())
		if err != nil {
			return nil, nil, err
		}
		if !cert.IsCA {
			return nil, nil, corrupt(f.AgentCACert(), errors.New("not a CA certificate"))
		}
		return cert, key, nil
	case certOK || keyOK:
		return nil, nil, fmt.Errorf("only one of %s and %s exists; restore the missing file, or delete both to create a new agent CA (every agent must then register again)", f.AgentCACert(), f.AgentCAKey())
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating agent CA key: %w", err)
	}
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "cellfed-agent-ca"}, key)
	if err != nil {
		return nil, nil, fmt.Errorf("creating agent CA certificate: %w", err)
	}
	if err := writePair(f.AgentCACert(), f.AgentCAKey(), cert, key); err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

// SignAgentCSR signs a PEM certificate request for cluster's agent with the
// agent CA. Only the request's public key is used: the subject is always
// AgentUser(cluster) in AgentGroup, with client-auth usage only, so a
// request cannot ask for another cluster or another use.
func SignAgentCSR(f Files, csrPEM []byte, cluster string, validity time.Duration) ([]byte, error) {
	if errs := validation.IsDNS1123Subdomain(cluster); len(errs) > 0 {
		return nil, fmt.Errorf("cluster name %q: %s", cluster, strings.Join(errs, "; "))
	}
	csr, err := ParseCSRPEM(csrPEM)
	if err != nil {
		return nil, err
	}
	if err := CheckCSR(csr); err != nil {
		return nil, fmt.Errorf("the certificate request %w", err)
	}
	caCert, caKey, err := loadPair(f.AgentCACert(), f.AgentCAKey())
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, fmt.Errorf("generating serial: %w", err)
	}
	now := time.Now()
	notAfter := now.Add(validity)
	if notAfter.After(caCert.NotAfter) {
		notAfter = caCert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: AgentUser(cluster), Organization: []string{AgentGroup}},
		NotBefore:    now.Add(-5 * time.Minute),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, csr.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("signing the agent certificate for %s: %w", cluster, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: BlockCertificate, Bytes: der}), nil
}

// NewAgentKeyAndCSR makes a new ECDSA key and a certificate request for
// cluster's agent, both PEM.
func NewAgentKeyAndCSR(cluster string) (keyPEM, csrPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating agent key: %w", err)
	}
	csrPEM, err = agentCSR(key, cluster)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding agent key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: BlockECPrivateKey, Bytes: keyDER}), csrPEM, nil
}

// AgentCSRForKey makes a certificate request for cluster's agent with an
// existing PEM EC key (as NewAgentKeyAndCSR makes it).
func AgentCSRForKey(keyPEM []byte, cluster string) ([]byte, error) {
	key, err := ParseECPrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, err
	}
	return agentCSR(key, cluster)
}

// agentCSR is the PEM certificate request of cluster's agent for key.
func agentCSR(key *ecdsa.PrivateKey, cluster string) ([]byte, error) {
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: AgentUser(cluster), Organization: []string{AgentGroup}},
	}, key)
	if err != nil {
		return nil, fmt.Errorf("creating certificate request: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: BlockCertificateRequest, Bytes: der}), nil
}

// CheckCSR checks what the signer relies on in a certificate request: a
// valid signature and a key strong enough for a long-lived identity (RSA
// of at least 2048 bits, ECDSA on P-256 or P-384, or Ed25519). Its
// errors read after "the certificate request".
func CheckCSR(csr *x509.CertificateRequest) error {
	if err := csr.CheckSignature(); err != nil {
		return fmt.Errorf("has an invalid signature: %w", err)
	}
	switch k := csr.PublicKey.(type) {
	case *rsa.PublicKey:
		if n := k.N.BitLen(); n < 2048 {
			return fmt.Errorf("has a %d-bit RSA key; use at least 2048 bits, or ECDSA P-256 (cellfed-agent makes P-256 keys)", n)
		}
	case *ecdsa.PublicKey:
		if name := k.Curve.Params().Name; name != "P-256" && name != "P-384" {
			return fmt.Errorf("has an ECDSA key on curve %s; use P-256 or P-384", name)
		}
	case ed25519.PublicKey:
	default:
		return fmt.Errorf("has a %T key; use ECDSA P-256, RSA of at least 2048 bits or Ed25519", k)
	}
	return nil
}
