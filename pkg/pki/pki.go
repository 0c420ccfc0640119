// Package pki creates, on first start, the plane's certificate authority,
// serving certificate, admin client certificate and service-account
// signing key, and loads and checks them on later starts. It never
// overwrites a file that exists.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// AdminGroup is the group of the admin client certificate; the API server
// grants it every permission (system:masters).
const AdminGroup = "system:masters"

// Validity periods.
const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 365 * 24 * time.Hour
)

// Files names every file of the plane's PKI in one directory.
type Files struct {
	Dir string
}

func (f Files) path(name string) string { return filepath.Join(f.Dir, name) }

// CACert is the CA certificate (PEM). Clients trust it.
func (f Files) CACert() string { return f.path("ca.crt") }

// CAKey is the CA private key (PEM).
func (f Files) CAKey() string { return f.path("ca.key") }

// ServingCert is the API server's serving certificate (PEM).
func (f Files) ServingCert() string { return f.path("serving.crt") }

// ServingKey is the key of ServingCert.
func (f Files) ServingKey() string { return f.path("serving.key") }

// AdminCert is the admin client certificate (PEM).
func (f Files) AdminCert() string { return f.path("admin.crt") }

// AdminKey is the key of AdminCert.
func (f Files) AdminKey() string { return f.path("admin.key") }

// ServiceAccountKey is the key that signs service-account tokens.
func (f Files) ServiceAccountKey() string { return f.path("sa.key") }

// Options says what the certificates must name.
type Options struct {
	// Hosts are DNS names and IPs the serving certificate must carry
	// besides localhost and the loopback addresses.
	Hosts []string
	// AdminUser is the common name of the admin client certificate.
	AdminUser string
}

// Ensure makes sure every file exists and is valid: it creates what is
// missing (signed by the existing CA when there is one) and returns an error,
// changing nothing, when an existing file is unreadable or does not match.
func Ensure(f Files, o Options) error {
	if err := os.MkdirAll(f.Dir, 0o700); err != nil {
		return fmt.Errorf("creating certificate directory %s: %w", f.Dir, err)
	}
	caCert, caKey, err := ensureCA(f)
	if err != nil {
		return err
	}
	hosts := append([]string{"localhost", "127.0.0.1", "::1"}, o.Hosts...)
	if h, err := os.Hostname(); err == nil && h != "" {
		hosts = append(hosts, h)
	}
	serving := leaf{
		certPath: f.ServingCert(), keyPath: f.ServingKey(),
		subject: pkix.Name{CommonName: "cellfed-apiserver"}, usage: x509.ExtKeyUsageServerAuth, hosts: hosts,
	}
	admin := leaf{
		certPath: f.AdminCert(), keyPath: f.AdminKey(),
		subject: pkix.Name{CommonName: o.AdminUser, Organization: []string{AdminGroup}}, usage: x509.ExtKeyUsageClientAuth,
	}
	// Check every existing file before writing any new one.
	for _, l := range []leaf{serving, admin} {
		if err := l.check(caCert); err != nil {
			return err
		}
	}
	if err := checkKey(f.ServiceAccountKey()); err != nil {
		return err
	}
	for _, l := range []leaf{serving, admin} {
		if err := l.create(caCert, caKey); err != nil {
			return err
		}
	}
	return createServiceAccountKey(f.ServiceAccountKey())
}

func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return false, err
}

func corrupt(path string, err error) error {
	return fmt.Errorf("%s is unusable: %v; restore it from a backup, or move the whole certificate directory %s away so that new certificates are generated (clients then need the new admin kubeconfig)", path, err, filepath.Dir(path))
}

func ensureCA(f Files) (*x509.Certificate, crypto.Signer, error) {
	certOK, err := exists(f.CACert())
	if err != nil {
		return nil, nil, corrupt(f.CACert(), err)
	}
	keyOK, err := exists(f.CAKey())
	if err != nil {
		return nil, nil, corrupt(f.CAKey(), err)
	}
	switch {
	case certOK && keyOK:
		cert, key, err := loadPair(f.CACert(), f.CAKey())
		if err != nil {
			return nil, nil, err
		}
		if !cert.IsCA {
			return nil, nil, corrupt(f.CACert(), errors.New("not a CA certificate"))
		}
		return cert, key, nil
	case certOK || keyOK:
		return nil, nil, fmt.Errorf("only one of %s and %s exists; restore the missing file or move the directory %s away to generate a new CA", f.CACert(), f.CAKey(), f.Dir)
	}
	// A CA is only created in an empty directory: leaves signed by a lost CA
	// must not be silently replaced.
	for _, p := range []string{f.ServingCert(), f.AdminCert(), f.ServiceAccountKey()} {
		if ok, _ := exists(p); ok {
			return nil, nil, fmt.Errorf("%s exists but the CA that signed it (%s) is missing; restore the CA or move the directory %s away", p, f.CACert(), f.Dir)
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating CA key: %w", err)
	}
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "cellfed-ca"}, key)
	if err != nil {
		return nil, nil, fmt.Errorf("creating CA certificate: %w", err)
	}
	if err := writePair(f.CACert(), f.CAKey(), cert, key); err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

type leaf struct {
	certPath, keyPath string
	subject           pkix.Name
	usage             x509.ExtKeyUsage
	hosts             []string
}

// check validates an existing pair against the CA; a missing pair is fine.
func (l leaf) check(ca *x509.Certificate) error {
	certOK, _ := exists(l.certPath)
	keyOK, _ := exists(l.keyPath)
	if !certOK && !keyOK {
		return nil
	}
	if certOK != keyOK {
		return fmt.Errorf("only one of %s and %s exists; restore the missing file or delete the other to generate a new pair", l.certPath, l.keyPath)
	}
	cert, _, err := loadPair(l.certPath, l.keyPath)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{l.usage}}); err != nil {
		return corrupt(l.certPath, fmt.Errorf("not valid under the plane's CA: %w", err))
	}
	return nil
}

func (l leaf) create(ca *x509.Certificate, caKey crypto.Signer) error {
	if ok, _ := exists(l.certPath); ok {
		return nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generating key for %s: %w", l.certPath, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return fmt.Errorf("generating serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      l.subject,
		NotBefore:    now.Add(-5 * time.Minute),
		NotAfter:     now.Add(leafValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{l.usage},
	}
	for _, h := range slices.Compact(slices.Sorted(slices.Values(l.hosts))) {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return fmt.Errorf("signing %s: %w", l.certPath, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return fmt.Errorf("parsing new certificate %s: %w", l.certPath, err)
	}
	return writePair(l.certPath, l.keyPath, cert, key)
}

func loadPair(certPath, keyPath string) (*x509.Certificate, crypto.Signer, error) {
	certs, err := certutil.CertsFromFile(certPath)
	if err != nil {
		return nil, nil, corrupt(certPath, err)
	}
	keyAny, err := keyutil.PrivateKeyFromFile(keyPath)
	if err != nil {
		return nil, nil, corrupt(keyPath, err)
	}
	key, ok := keyAny.(crypto.Signer)
	if !ok {
		return nil, nil, corrupt(keyPath, errors.New("not a signing key"))
	}
	pub, ok := certs[0].PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(key.Public()) {
		return nil, nil, corrupt(keyPath, fmt.Errorf("does not match the certificate %s", certPath))
	}
	return certs[0], key, nil
}

func writePair(certPath, keyPath string, cert *x509.Certificate, key crypto.Signer) error {
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return fmt.Errorf("encoding key %s: %w", keyPath, err)
	}
	if err := writeNew(keyPath, keyPEM, 0o600); err != nil {
		return err
	}
	certPEM, err := certutil.EncodeCertificates(cert)
	if err != nil {
		return fmt.Errorf("encoding certificate %s: %w", certPath, err)
	}
	return writeNew(certPath, certPEM, 0o644)
}

// writeNew writes a file that must not exist yet.
func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

func checkKey(path string) error {
	ok, err := exists(path)
	if err != nil || !ok {
		return err
	}
	if _, err := keyutil.PrivateKeyFromFile(path); err != nil {
		return corrupt(path, err)
	}
	return nil
}

func createServiceAccountKey(path string) error {
	if ok, _ := exists(path); ok {
		return nil
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("generating service-account key: %w", err)
	}
	pemBytes, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return fmt.Errorf("encoding service-account key: %w", err)
	}
	return writeNew(path, pemBytes, 0o600)
}
