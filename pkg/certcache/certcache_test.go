package certcache

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net/http"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/authentication/user"
)

type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newCA(t *testing.T, name string) *ca {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &ca{cert: cert, key: key, pool: pool}
}

func (c *ca) issue(t *testing.T, cn string, notAfter time.Time) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn, Organization: []string{"team"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// counting is the plane's authenticator: the real x509 authenticator
// (plus the authenticated group, as the plane adds it), or a fixed answer.
type counting struct {
	calls int
	x509  authenticator.Request
	fixed *authenticator.Response
	err   error
}

func (c *counting) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	c.calls++
	if c.err != nil || c.fixed != nil {
		return c.fixed, c.fixed != nil, c.err
	}
	r, ok, err := c.x509.AuthenticateRequest(req)
	if ok {
		u := r.User.(*user.DefaultInfo)
		u.Groups = append(u.Groups, user.AllAuthenticated)
	}
	return r, ok, err
}

func request(chain []*x509.Certificate, header http.Header) *http.Request {
	if header == nil {
		header = http.Header{}
	}
	return &http.Request{Header: header, TLS: &tls.ConnectionState{PeerCertificates: chain}}
}

func TestAuthenticator(t *testing.T) {
	now := time.Now()
	root := newCA(t, "client-ca")
	other := newCA(t, "other-ca")
	alice := root.issue(t, "alice", now.Add(time.Hour))
	soon := root.issue(t, "bob", now.Add(3*time.Second))
	stranger := other.issue(t, "mallory", now.Add(time.Hour))
	frontProxy := headerrequest.StaticStringSlice{"X-Remote-User"}

	type step struct {
		after     time.Duration // from now
		chain     []*x509.Certificate
		header    http.Header
		newCA     bool // the client CA is reloaded (a new pool) before this step
		wantUser  string
		wantCalls int // calls of the inner authenticator so far
	}
	tests := []struct {
		name  string
		inner *counting // nil: the real x509 authenticator
		steps []step
	}{
		{name: "the same chain is verified once", steps: []step{
			{chain: []*x509.Certificate{alice}, wantUser: "alice", wantCalls: 1},
			{after: time.Second, chain: []*x509.Certificate{alice}, wantUser: "alice", wantCalls: 1},
			{after: 9 * time.Second, chain: []*x509.Certificate{alice}, wantUser: "alice", wantCalls: 1},
		}},
		{name: "the TTL ends an entry", steps: []step{
			{chain: []*x509.Certificate{alice}, wantUser: "alice", wantCalls: 1},
			{after: 10 * time.Second, chain: []*x509.Certificate{alice}, wantUser: "alice", wantCalls: 2},
			{after: 11 * time.Second, chain: []*x509.Certificate{alice}, wantUser: "alice", wantCalls: 2},
		}},
		{name: "the certificate's expiry ends an entry", steps: []step{
			{chain: []*x509.Certificate{soon}, wantUser: "bob", wantCalls: 1},
			{after: 2 * time.Second, chain: []*x509.Certificate{soon}, wantUser: "bob", wantCalls: 1},
			// The x509 authenticator reads the real clock (bob's
			// certificate is still valid for it); the cache, past the
			// certificate's NotAfter on its clock, neither answers nor
			// stores.
			{after: 4 * time.Second, chain: []*x509.Certificate{soon}, wantUser: "bob", wantCalls: 2},
			{after: 5 * time.Second, chain: []*x509.Certificate{soon}, wantUser: "bob", wantCalls: 3},
		}},
		{name: "a new client CA misses every entry", steps: []step{
			{chain: []*x509.Certificate{alice}, wantUser: "alice", wantCalls: 1},
			{after: time.Second, newCA: true, chain: []*x509.Certificate{alice}, wantUser: "alice", wantCalls: 2},
			{after: 2 * time.Second, chain: []*x509.Certificate{alice}, wantUser: "alice", wantCalls: 2},
		}},
		{name: "another chain is another entry", steps: []step{
			{chain: []*x509.Certificate{alice}, wantUser: "alice", wantCalls: 1},
			{chain: []*x509.Certificate{alice, root.cert}, wantUser: "alice", wantCalls: 2},
			{chain: []*x509.Certificate{alice, root.cert}, wantUser: "alice", wantCalls: 2},
			{chain: []*x509.Certificate{alice}, wantUser: "alice", wantCalls: 3},
		}},
		{name: "front proxy requests are never cached", steps: []step{
			{chain: []*x509.Certificate{alice}, header: http.Header{"X-Remote-User": {"carol"}}, wantUser: "alice", wantCalls: 1},
			{chain: []*x509.Certificate{alice}, header: http.Header{"X-Remote-User": {"carol"}}, wantUser: "alice", wantCalls: 2},
		}},
		{name: "a chain of another CA is not cached", steps: []step{
			{chain: []*x509.Certificate{stranger}, wantUser: "", wantCalls: 1},
			{chain: []*x509.Certificate{stranger}, wantUser: "", wantCalls: 2},
		}},
		{name: "an answer not from the certificate is not cached",
			inner: &counting{fixed: &authenticator.Response{User: &user.DefaultInfo{Name: "system:serviceaccount:shop:bot"}}},
			steps: []step{
				{chain: []*x509.Certificate{alice}, wantUser: "system:serviceaccount:shop:bot", wantCalls: 1},
				{chain: []*x509.Certificate{alice}, wantUser: "system:serviceaccount:shop:bot", wantCalls: 2},
			}},
		{name: "failures are not cached", inner: &counting{err: errors.New("boom")}, steps: []step{
			{chain: []*x509.Certificate{alice}, wantCalls: 1},
			{chain: []*x509.Certificate{alice}, wantCalls: 2},
		}},
		{name: "no client certificate goes to the plane's authenticator", steps: []step{
			{wantCalls: 1},
			{wantCalls: 2},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool := root.pool
			verify := func() (x509.VerifyOptions, bool) {
				return x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, true
			}
			inner := tt.inner
			if inner == nil {
				inner = &counting{}
			}
			inner.x509 = x509request.NewDynamic(verify, x509request.CommonNameUserConversion)
			a := New(inner, verify, frontProxy, NewOptions()).(*Authenticator)
			clock := now
			a.now = func() time.Time { return clock }
			for i, s := range tt.steps {
				clock = now.Add(s.after)
				if s.newCA {
					pool = x509.NewCertPool()
					pool.AddCert(root.cert)
				}
				resp, ok, _ := a.AuthenticateRequest(request(s.chain, s.header))
				got := ""
				if ok {
					got = resp.User.GetName()
				}
				if got != s.wantUser {
					t.Errorf("step %d: user %q, want %q", i, got, s.wantUser)
				}
				if inner.calls != s.wantCalls {
					t.Errorf("step %d: the plane's authenticator ran %d times, want %d", i, inner.calls, s.wantCalls)
				}
				if ok && got == "alice" {
					if g := resp.User.GetGroups(); len(g) != 2 || g[0] != "team" || g[1] != user.AllAuthenticated {
						t.Errorf("step %d: groups %v, want [team %s]", i, g, user.AllAuthenticated)
					}
				}
			}
		})
	}
}

func TestCachedUserIsACopy(t *testing.T) {
	root := newCA(t, "client-ca")
	alice := root.issue(t, "alice", time.Now().Add(time.Hour))
	verify := func() (x509.VerifyOptions, bool) {
		return x509.VerifyOptions{Roots: root.pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, true
	}
	inner := &counting{x509: x509request.NewDynamic(verify, x509request.CommonNameUserConversion)}
	a := New(inner, verify, nil, NewOptions())
	first, _, _ := a.AuthenticateRequest(request([]*x509.Certificate{alice}, nil))
	first.User.(*user.DefaultInfo).Groups[0] = "system:masters"
	second, _, _ := a.AuthenticateRequest(request([]*x509.Certificate{alice}, nil))
	if inner.calls != 1 {
		t.Fatalf("the plane's authenticator ran %d times, want 1", inner.calls)
	}
	if g := second.User.GetGroups(); g[0] != "team" {
		t.Errorf("a caller's change of its user reached the cache: groups %v", g)
	}
}

func TestMaxEntries(t *testing.T) {
	root := newCA(t, "client-ca")
	verify := func() (x509.VerifyOptions, bool) {
		return x509.VerifyOptions{Roots: root.pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, true
	}
	inner := &counting{x509: x509request.NewDynamic(verify, x509request.CommonNameUserConversion)}
	a := New(inner, verify, nil, Options{TTL: time.Minute, MaxEntries: 3}).(*Authenticator)
	for i := range 10 {
		c := root.issue(t, "user", time.Now().Add(time.Hour))
		if _, ok, err := a.AuthenticateRequest(request([]*x509.Certificate{c}, nil)); !ok || err != nil {
			t.Fatalf("certificate %d: not authenticated: %v", i, err)
		}
		if n := a.Len(); n > 3 {
			t.Fatalf("after %d chains the cache holds %d, want at most 3", i+1, n)
		}
	}
}

func TestOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantErr bool
	}{
		{"defaults", NewOptions(), false},
		{"off", Options{}, false},
		{"negative TTL", Options{TTL: -time.Second, MaxEntries: 1}, true},
		{"no room", Options{TTL: time.Second}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.opts.Validate(); (err != nil) != tt.wantErr {
				t.Errorf("Validate() = %v, want error %v", err, tt.wantErr)
			}
		})
	}
	inner := &counting{}
	if got := New(inner, func() (x509.VerifyOptions, bool) { return x509.VerifyOptions{}, false }, nil, Options{}); got != authenticator.Request(inner) {
		t.Errorf("with TTL 0, New wrapped the authenticator")
	}
}
