package registration

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/cellfed/cellfed/pkg/pki"
)

// Files in the agent's state dir. The key files are 0600.
const (
	certFile       = "agent.crt"
	keyFile        = "agent.key"
	pendingKeyFile = "pending.key"
)

// Identity is the agent's current key and certificate; the tunnel reads
// it on every new connection, so a renewal takes effect without dropping
// the connections that are open.
type Identity struct {
	mu   sync.RWMutex
	cert *tls.Certificate
	leaf *x509.Certificate
	// since is when the agent got the certificate: its lifetime counts
	// from there (the plane backdates notBefore for clock skew).
	since time.Time
}

// GetClientCertificate is a tls.Config hook.
func (i *Identity) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return i.cert, nil
}

// Leaf is the current certificate.
func (i *Identity) Leaf() *x509.Certificate {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return i.leaf
}

// renewAt is when the current certificate should be renewed: after
// fraction of the time from its receipt (or notBefore, if later) to its
// expiry.
func (i *Identity) renewAt(fraction float64) time.Time {
	i.mu.RLock()
	defer i.mu.RUnlock()
	start := i.since
	if i.leaf.NotBefore.After(start) {
		start = i.leaf.NotBefore
	}
	return start.Add(time.Duration(float64(i.leaf.NotAfter.Sub(start)) * fraction))
}

func (i *Identity) set(certPEM, keyPEM []byte, since time.Time) error {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("the signed certificate does not match the agent's key: %w", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return fmt.Errorf("parsing the agent certificate: %w", err)
	}
	pair.Leaf = leaf
	i.mu.Lock()
	i.cert, i.leaf, i.since = &pair, leaf, since
	i.mu.Unlock()
	return nil
}

// loadIdentity returns the stored pair when it names this cluster and has
// not expired, else nil.
func (o *AgentOptions) loadIdentity() (*Identity, error) {
	certPEM, err := os.ReadFile(o.CertFile())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", o.CertFile(), err)
	}
	keyPEM, err := os.ReadFile(o.KeyFile())
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w; delete %s to register again", o.KeyFile(), err, o.CertFile())
	}
	since := time.Now()
	if st, err := os.Stat(o.CertFile()); err == nil {
		since = st.ModTime()
	}
	id := &Identity{}
	if err := id.set(certPEM, keyPEM, since); err != nil {
		return nil, fmt.Errorf("%s and %s: %w; delete both to register again", o.CertFile(), o.KeyFile(), err)
	}
	cluster, err := pki.ClusterFromAgentCert(id.Leaf())
	if err != nil {
		return nil, fmt.Errorf("%s: %w; delete it and %s to register again", o.CertFile(), err, o.KeyFile())
	}
	if cluster != o.ClusterName {
		return nil, fmt.Errorf("the certificate in --state-dir %s is for cluster %s, not --cluster=%s; use another --state-dir, or the same name", o.StateDir, cluster, o.ClusterName)
	}
	if time.Now().After(id.Leaf().NotAfter) {
		klog.InfoS("The stored agent certificate has expired; registering again", "cluster", o.ClusterName, "notAfter", id.Leaf().NotAfter.UTC().Format(time.RFC3339))
		return nil, nil
	}
	return id, nil
}

// pendingKey returns the key and request for the next certificate: kept
// in the state dir so a restart while waiting reuses them.
func (o *AgentOptions) pendingKey() (keyPEM, csrPEM []byte, err error) {
	path := filepath.Join(o.StateDir, pendingKeyFile)
	if keyPEM, err = os.ReadFile(path); err == nil {
		csrPEM, err = pki.AgentCSRForKey(keyPEM, o.ClusterName)
		if err == nil {
			return keyPEM, csrPEM, nil
		}
		klog.InfoS("Replacing an unusable pending key", "path", path, "err", err)
	}
	keyPEM, csrPEM, err = pki.NewAgentKeyAndCSR(o.ClusterName)
	if err != nil {
		return nil, nil, err
	}
	if err := writeFileAtomic(path, keyPEM); err != nil {
		return nil, nil, err
	}
	return keyPEM, csrPEM, nil
}

// store writes the new pair and drops the pending key.
func (o *AgentOptions) store(certPEM, keyPEM []byte) error {
	if err := writeFileAtomic(o.KeyFile(), keyPEM); err != nil {
		return err
	}
	if err := writeFileAtomic(o.CertFile(), certPEM); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(o.StateDir, pendingKeyFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the pending key: %w", err)
	}
	return nil
}

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	return nil
}
