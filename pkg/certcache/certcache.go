// Package certcache keeps the plane from verifying the same client
// certificate chain on every request.
//
// kube-apiserver's x509 authenticator verifies the caller's chain against
// the client CA on each request (signature checks: a quarter of the
// plane's CPU under a stream of small GETs through the API proxy). A TLS
// connection presents one chain for its whole life, and a client
// certificate is only ever invalidated by its expiry or by a new client
// CA: Kubernetes has no client-certificate revocation list. So the
// result of a verification can be reused, as long as
//
//   - the chain is byte for byte the same (the entry is found by the
//     leaf's DER bytes and holds every other certificate the client sent,
//     compared in order),
//   - the client CA is the same (the entry remembers the CA pool it was
//     verified against; a reloaded --client-ca-file is a new pool, and
//     every entry of the old one misses),
//   - no certificate of the verified chain has expired (the entry expires
//     at the earliest NotAfter), and
//   - the entry is younger than a short TTL.
//
// Only what the x509 authenticator itself decided is cached: a request
// that carries a front proxy's identity headers (request-header
// authentication: the identity comes from the headers, per request) is
// never served from the cache, and a result is stored only when the chain
// verifies against the client CA and names the user the plane's
// authenticator returned. Failures are never cached.
package certcache

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/authentication/user"
)

// Options tune the cache.
type Options struct {
	// TTL is the longest an entry is used; 0 turns the cache off.
	TTL time.Duration
	// MaxEntries bounds the number of chains held.
	MaxEntries int
}

// NewOptions returns the defaults: 10 s, 4096 chains.
func NewOptions() Options {
	return Options{TTL: 10 * time.Second, MaxEntries: 4096}
}

// Validate checks the options.
func (o Options) Validate() error {
	if o.TTL < 0 {
		return fmt.Errorf("client certificate cache TTL %v is negative; use 0 to turn the cache off", o.TTL)
	}
	if o.TTL > 0 && o.MaxEntries < 1 {
		return fmt.Errorf("client certificate cache size %d: it must hold at least one chain", o.MaxEntries)
	}
	return nil
}

// Authenticator is the plane's authenticator with verified client
// certificate chains cached.
type Authenticator struct {
	inner authenticator.Request
	// verify gives the client CA's verify options (as the x509
	// authenticator gets them).
	verify x509request.VerifyOptionFunc
	// frontProxyHeaders are request-header authentication's username
	// headers; nil without request-header authentication.
	frontProxyHeaders headerrequest.StringSliceProvider
	opts              Options
	now               func() time.Time

	mu sync.RWMutex
	// entries are keyed by the leaf certificate's DER bytes.
	entries map[string]*entry
}

type entry struct {
	// rest are the DER bytes of the chain's other certificates.
	rest    [][]byte
	roots   *x509.CertPool
	expires time.Time
	resp    *authenticator.Response
}

// holds reports whether e is for exactly chain (whose leaf found it).
func (e *entry) holds(chain []*x509.Certificate) bool {
	if len(e.rest) != len(chain)-1 {
		return false
	}
	for i, c := range chain[1:] {
		if !bytes.Equal(e.rest[i], c.Raw) {
			return false
		}
	}
	return true
}

// New wraps inner, the plane's whole request authenticator. verify is
// the client CA's VerifyOptions (the same provider the x509
// authenticator uses, so both see a new CA at once); frontProxyHeaders
// the request-header username headers, or nil. With a zero TTL it returns
// inner.
func New(inner authenticator.Request, verify x509request.VerifyOptionFunc, frontProxyHeaders headerrequest.StringSliceProvider, opts Options) authenticator.Request {
	if opts.TTL <= 0 || verify == nil {
		return inner
	}
	return &Authenticator{inner: inner, verify: verify, frontProxyHeaders: frontProxyHeaders, opts: opts, now: time.Now,
		entries: map[string]*entry{}}
}

// AuthenticateRequest implements authenticator.Request.
func (a *Authenticator) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	if req.TLS == nil || len(req.TLS.PeerCertificates) == 0 || a.fromFrontProxy(req) {
		return a.inner.AuthenticateRequest(req)
	}
	opts, ok := a.verify()
	if !ok || opts.Roots == nil {
		return a.inner.AuthenticateRequest(req)
	}
	chain := req.TLS.PeerCertificates
	now := a.now()
	a.mu.RLock()
	e := a.entries[string(chain[0].Raw)]
	a.mu.RUnlock()
	if e != nil && e.roots == opts.Roots && now.Before(e.expires) && e.holds(chain) {
		return copyResponse(e.resp), true, nil
	}
	resp, ok, err := a.inner.AuthenticateRequest(req)
	if err != nil || !ok || resp == nil || resp.User == nil {
		return resp, ok, err
	}
	if expires, ok := Verified(chain, opts, resp.User.GetName(), now); ok {
		if ttl := now.Add(a.opts.TTL); ttl.Before(expires) {
			expires = ttl
		}
		rest := make([][]byte, 0, len(chain)-1)
		for _, c := range chain[1:] {
			rest = append(rest, c.Raw)
		}
		a.store(string(chain[0].Raw), &entry{rest: rest, roots: opts.Roots, expires: expires, resp: copyResponse(resp)}, now)
	}
	return resp, ok, err
}

// fromFrontProxy reports whether req carries a request-header identity.
func (a *Authenticator) fromFrontProxy(req *http.Request) bool {
	if a.frontProxyHeaders == nil {
		return false
	}
	for _, h := range a.frontProxyHeaders.Value() {
		if len(req.Header.Values(h)) > 0 {
			return true
		}
	}
	return false
}

func (a *Authenticator) store(key string, e *entry, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.entries[key]; !ok && len(a.entries) >= a.opts.MaxEntries {
		for k, old := range a.entries {
			if !now.Before(old.expires) {
				delete(a.entries, k)
			}
		}
		for k := range a.entries {
			if len(a.entries) < a.opts.MaxEntries {
				break
			}
			delete(a.entries, k) // full of live entries: drop any
		}
	}
	a.entries[key] = e
}

// Len is the number of cached chains.
func (a *Authenticator) Len() int {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return len(a.entries)
}

// Verified says whether chain (the client's certificates, leaf first)
// verifies against opts at now, as the x509 authenticator verifies it,
// and names the user name: then the plane's answer for it is the x509
// authenticator's. It returns the earliest NotAfter of the verified
// chain, past which the answer no longer holds.
func Verified(chain []*x509.Certificate, opts x509.VerifyOptions, name string, now time.Time) (time.Time, bool) {
	if opts.Intermediates == nil && len(chain) > 1 {
		opts.Intermediates = x509.NewCertPool()
		for _, c := range chain[1:] {
			opts.Intermediates.AddCert(c)
		}
	}
	opts.CurrentTime = now
	chains, err := chain[0].Verify(opts)
	if err != nil {
		return time.Time{}, false
	}
	for _, c := range chains {
		resp, ok, err := x509request.CommonNameUserConversion.User(c)
		if err != nil || !ok || resp.User.GetName() != name {
			continue
		}
		expires := c[0].NotAfter
		for _, cert := range c[1:] {
			if cert.NotAfter.Before(expires) {
				expires = cert.NotAfter
			}
		}
		return expires, true
	}
	return time.Time{}, false
}

// copyResponse copies a response, so no caller shares the cached user's
// groups or extras.
func copyResponse(r *authenticator.Response) *authenticator.Response {
	u := &user.DefaultInfo{
		Name:   r.User.GetName(),
		UID:    r.User.GetUID(),
		Groups: slices.Clone(r.User.GetGroups()),
	}
	if extra := r.User.GetExtra(); extra != nil {
		u.Extra = make(map[string][]string, len(extra))
		for k, v := range maps.All(extra) {
			u.Extra[k] = slices.Clone(v)
		}
	}
	return &authenticator.Response{User: u, Audiences: slices.Clone(r.Audiences)}
}
