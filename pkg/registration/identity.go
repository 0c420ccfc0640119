package registration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/cellfed/cellfed/pkg/pki"
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
func (o *AgentOptions) loadIdentity(ctx context.Context) (*Identity, error) {
	st, err := o.state.Load(ctx)
	if err != nil {
		return nil, err
	}
	if st.Cert == nil {
		return nil, nil
	}
	if st.Key == nil {
		return nil, fmt.Errorf("%s holds a certificate without its key; delete the state to register again", o.state)
	}
	since := st.Since
	if since.IsZero() {
		since = time.Now()
	}
	id := &Identity{}
	if err := id.set(st.Cert, st.Key, since); err != nil {
		return nil, fmt.Errorf("%s: %w; delete the state to register again", o.state, err)
	}
	cluster, err := pki.ClusterFromAgentCert(id.Leaf())
	if err != nil {
		return nil, fmt.Errorf("the certificate in %s: %w; delete the state to register again", o.state, err)
	}
	if cluster != o.ClusterName {
		return nil, fmt.Errorf("the certificate in %s is for cluster %s, not --cluster=%s; use another state, or the same name", o.state, cluster, o.ClusterName)
	}
	if time.Now().After(id.Leaf().NotAfter) {
		klog.InfoS("The stored agent certificate has expired; registering again", "cluster", o.ClusterName, "notAfter", id.Leaf().NotAfter.UTC().Format(time.RFC3339))
		return nil, nil
	}
	return id, nil
}

// pendingKey returns the key and request for the next certificate: kept
// in the state so a restart while waiting reuses them.
func (o *AgentOptions) pendingKey(ctx context.Context) (keyPEM, csrPEM []byte, err error) {
	st, err := o.state.Load(ctx)
	if err != nil {
		return nil, nil, err
	}
	if st.PendingKey != nil {
		csrPEM, err = pki.AgentCSRForKey(st.PendingKey, o.ClusterName)
		if err == nil {
			return st.PendingKey, csrPEM, nil
		}
		klog.InfoS("Replacing an unusable pending key", "state", o.state.String(), "err", err)
	}
	if st.PendingKey, _, err = pki.NewAgentKeyAndCSR(o.ClusterName); err != nil {
		return nil, nil, err
	}
	// Another agent of this cluster may have stored its pending key
	// meanwhile: use the one kept.
	kept, err := o.state.Save(ctx, st)
	if err != nil {
		return nil, nil, err
	}
	if csrPEM, err = pki.AgentCSRForKey(kept.PendingKey, o.ClusterName); err != nil {
		return nil, nil, fmt.Errorf("the pending key in %s: %w", o.state, err)
	}
	return kept.PendingKey, csrPEM, nil
}

// store keeps the new pair and drops the pending key; it returns the
// pair kept, another agent's when it stored a newer one meanwhile.
func (o *AgentOptions) store(ctx context.Context, certPEM, keyPEM []byte, since time.Time) (State, error) {
	return o.state.Save(ctx, State{Cert: certPEM, Key: keyPEM, Since: since})
}
