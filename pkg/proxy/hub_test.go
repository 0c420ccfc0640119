package proxy

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellfed/cellfed/pkg/pki"
	"github.com/cellfed/cellfed/pkg/proxy/agent"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// testHub runs a hub on loopback with a fresh PKI.
// hubOptions makes a plane's PKI and hub options on free ports.
func hubOptions(t *testing.T) (*Options, pki.Files) {
	t.Helper()
	f := pki.Files{Dir: t.TempDir()}
	if err := pki.Ensure(f, pki.Options{AdminUser: "admin"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := pki.EnsureAgentCA(f); err != nil {
		t.Fatal(err)
	}
	o := NewOptions()
	o.AgentPort, o.GRPCPort, o.ConnectPort = freePort(t), freePort(t), freePort(t)
	o.ServingCertFile, o.ServingKeyFile = f.ServingCert(), f.ServingKey()
	o.AgentCAFile, o.ClientCAFile, o.ConnectCAFile = f.AgentCACert(), f.CACert(), f.CACert()
	o.ConnectSecretFile = filepath.Join(f.Dir, "tunnel-connect.secret")
	return o, f
}

func testHub(t *testing.T, admit func(context.Context, string, *x509.Certificate) error) (*Hub, pki.Files) {
	t.Helper()
	o, f := hubOptions(t)
	o.Admit = admit
	return runHub(t, o), f
}

// runHub runs a hub with o until the test ends.
func runHub(t *testing.T, o *Options) *Hub {
	t.Helper()
	h, err := New(*o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := h.Listen(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("hub: %v", err)
		}
	})
	return h
}

// writeAgentCert signs a new agent certificate for cluster into dir
// (a.crt, a.key), replacing what is there.
func writeAgentCert(t *testing.T, f pki.Files, cluster, dir string) (certFile, keyFile string) {
	t.Helper()
	keyPEM, csrPEM, err := pki.NewAgentKeyAndCSR(cluster)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err := pki.SignAgentCSR(f, csrPEM, cluster, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "a.crt"), filepath.Join(dir, "a.key")
	// Key first, then certificate: a reader between the two sees a
	// mismatched pair and keeps the previous one.
	for _, w := range []struct {
		path string
		data []byte
	}{{keyFile, keyPEM}, {certFile, certPEM}} {
		tmp := w.path + ".tmp"
		if err := os.WriteFile(tmp, w.data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, w.path); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile
}

// testAgent runs an in-process agent for cluster, serving target, with
// its certificate in a new directory it returns.
func testAgent(t *testing.T, h *Hub, f pki.Files, cluster, target string) string {
	t.Helper()
	dir := t.TempDir()
	runAgent(t, h, f, cluster, target, dir, func(o *agent.Options) {
		o.RefusedRetryCap = time.Second // tests readmit refused agents within seconds
	})
	return dir
}

// runAgent runs an in-process agent for cluster with its certificate in
// dir, its options adjusted by tune, until the test ends.
func runAgent(t *testing.T, h *Hub, f pki.Files, cluster, target, dir string, tune func(*agent.Options)) *agent.Agent {
	t.Helper()
	o := agent.NewOptions()
	o.Cluster, o.Target = cluster, target
	o.HubAddress, o.HubServerName, o.HubCAFile = h.AgentAddr().String(), "localhost", f.CACert()
	o.CertFile, o.KeyFile = writeAgentCert(t, f, cluster, dir)
	tune(o)
	a, err := agent.New(*o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = a.Run(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return a
}

func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// getVia GETs the member (target) through the hub's CONNECT frontend as
// cluster, on a fresh connection.
func getVia(t *testing.T, h *Hub, srv *httptest.Server, cluster string) (string, error) {
	t.Helper()
	pu, err := h.ConnectURL(cluster, 0)
	if err != nil {
		t.Fatal(err)
	}
	return getThrough(t, srv, pu, h.ConnectCA())
}

// getThrough GETs the member (target) through the proxy URL pu with a
// client that trusts the member's CA and proxyCA (what a KubeFedCluster's
// caBundle holds), on a fresh connection.
func getThrough(t *testing.T, srv *httptest.Server, pu string, proxyCA []byte) (string, error) {
	t.Helper()
	u, err := url.Parse(pu)
	if err != nil {
		t.Fatal(err)
	}
	tr := srv.Client().Transport.(*http.Transport).Clone()
	if proxyCA != nil {
		roots := tr.TLSClientConfig.RootCAs.Clone()
		if !roots.AppendCertsFromPEM(proxyCA) {
			t.Fatal("proxy CA holds no PEM certificate")
		}
		tr.TLSClientConfig.RootCAs = roots
	}
	tr.Proxy = http.ProxyURL(u)
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	defer tr.CloseIdleConnections()
	// The member's "real" endpoint: unreachable directly (port 1), but its
	// certificate names 127.0.0.1.
	resp, err := c.Get("https://127.0.0.1:1/hello")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestHubAdmitAndDisconnect: Admit refuses an agent; Disconnect drops a
// connected one at once, and with Admit refusing it stays away.
func TestHubAdmitAndDisconnect(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "member") }))
	defer srv.Close()
	var revoked sync.Map
	var admits atomic.Int32
	h, f := testHub(t, func(_ context.Context, cluster string, cert *x509.Certificate) error {
		admits.Add(1)
		if c, err := pki.ClusterFromAgentCert(cert); err != nil || c != cluster {
			return fmt.Errorf("Admit got cluster %q for a certificate of %q (%v)", cluster, c, err)
		}
		if _, ok := revoked.Load(cluster); ok {
			return errors.New("registration revoked")
		}
		return nil
	})
	target := strings.TrimPrefix(srv.URL, "https://")
	revoked.Store("beta", true)
	testAgent(t, h, f, "alpha", target)
	testAgent(t, h, f, "beta", target)

	// Connected counts an agent only once ANP routes dials to it, so a
	// request right after must go through.
	poll(t, "alpha's agent", func() bool { return h.Connected("alpha") == 1 })
	if body, err := getVia(t, h, srv, "alpha"); err != nil || body != "member" {
		t.Fatalf("through alpha's tunnel: %q, %v", body, err)
	}
	before := admits.Load()
	poll(t, "beta's agent to retry", func() bool { return admits.Load() >= before+2 })
	if n := h.Connected("beta"); n != 0 {
		t.Fatalf("revoked beta has %d agents", n)
	}
	if _, err := getVia(t, h, srv, "beta"); err == nil || !strings.Contains(err.Error(), "no agent connected for cluster beta") {
		t.Fatalf("through revoked beta: %v", err)
	}

	revoked.Store("alpha", true)
	if n := h.Disconnect("alpha"); n != 1 {
		t.Fatalf("Disconnect dropped %d agents, want 1", n)
	}
	poll(t, "alpha's agent to go", func() bool { return h.Connected("alpha") == 0 })
	before = admits.Load()
	poll(t, "alpha's agent to retry", func() bool { return admits.Load() >= before+1 })
	if _, err := getVia(t, h, srv, "alpha"); err == nil || !strings.Contains(err.Error(), "no agent connected for cluster alpha") {
		t.Fatalf("through alpha after revocation: %v", err)
	}
	revoked.Delete("alpha")
	poll(t, "alpha's agent to return", func() bool { return h.Connected("alpha") == 1 })
	if body, err := getVia(t, h, srv, "alpha"); err != nil || body != "member" {
		t.Fatalf("through alpha after readmission: %q, %v", body, err)
	}
}

// TestDialerCloseDoesNotBlock: closing a gRPC tunnel connection returns at
// once even when the agent end is gone.
func TestDialerCloseDoesNotBlock(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	h, f := testHub(t, nil)
	testAgent(t, h, f, "alpha", strings.TrimPrefix(srv.URL, "https://"))
	poll(t, "alpha's agent", func() bool { return h.Connected("alpha") == 1 })
	o := NewDialerOptions()
	o.Address, o.ServerName = h.GRPCAddr().String(), "localhost"
	o.CAFile, o.CertFile, o.KeyFile = f.CACert(), f.AdminCert(), f.AdminKey()
	d, err := NewDialer(o)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { go d.Close() }()
	c, err := d.DialCluster(context.Background(), "alpha")
	if err != nil {
		t.Fatal(err)
	}
	h.Disconnect("alpha")
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Fatalf("Close took %s", d)
	}
}

// TestAgentPicksUpRenewedCertificate: after its certificate files are
// replaced, the agent's next connection presents the new certificate.
func TestAgentPicksUpRenewedCertificate(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	var mu sync.Mutex
	var serials []string
	h, f := testHub(t, func(_ context.Context, _ string, cert *x509.Certificate) error {
		mu.Lock()
		defer mu.Unlock()
		serials = append(serials, cert.SerialNumber.String())
		return nil
	})
	dir := testAgent(t, h, f, "alpha", strings.TrimPrefix(srv.URL, "https://"))
	poll(t, "alpha's agent", func() bool { return h.Connected("alpha") == 1 })
	mu.Lock()
	first := serials[len(serials)-1]
	mu.Unlock()
	writeAgentCert(t, f, "alpha", dir)
	h.Disconnect("alpha")
	poll(t, "alpha's agent with a new certificate", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return h.Connected("alpha") == 1 && serials[len(serials)-1] != first
	})
}

// TestAgentBacksOffWhenRefused: an agent the hub refuses learns why and
// waits longer after each refusal in a row (it knocked once a second
// forever, logging only "expected one server ID in the context, got []");
// once admitted it connects and the refusal is forgotten.
func TestAgentBacksOffWhenRefused(t *testing.T) {
	var mu sync.Mutex
	var attempts []time.Time
	var admit atomic.Bool
	h, f := testHub(t, func(context.Context, string, *x509.Certificate) error {
		mu.Lock()
		attempts = append(attempts, time.Now())
		mu.Unlock()
		if admit.Load() {
			return nil
		}
		return errors.New("registration revoked")
	})
	a := runAgent(t, h, f, "gamma", "127.0.0.1:1", t.TempDir(), func(o *agent.Options) {
		o.RetryInterval, o.RetryIntervalCap, o.RefusedRetryCap = 100*time.Millisecond, 100*time.Millisecond, 2*time.Second
	})

	const n = 6
	poll := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	poll(fmt.Sprintf("%d refused attempts", n), func() bool { mu.Lock(); defer mu.Unlock(); return len(attempts) >= n })
	if err := a.Refusal(); err == nil || !strings.Contains(err.Error(), "the tunnel hub refused this agent: tunnel agent for cluster gamma not admitted: registration revoked (PermissionDenied)") {
		t.Errorf("Refusal() = %v, want the hub's reason", err)
	}
	// Each wait is at least 100 ms × 1.5^(refusals-1): a lower bound the
	// agent keeps however loaded the machine is. Without the backoff the
	// attempts came every ~100 ms.
	mu.Lock()
	gap := attempts[n-1].Sub(attempts[n-2])
	mu.Unlock()
	if min := time.Duration(float64(100*time.Millisecond) * math.Pow(1.5, n-2)); gap < min {
		t.Errorf("attempt %d came %v after the one before; want at least %v after %d refusals", n, gap, min, n-2)
	}
	admit.Store(true)
	poll("the admitted agent", func() bool { return h.Connected("gamma") == 1 && a.Refusal() == nil })
}

// TestHubHealth: the hub reports healthy while it serves and says why
// once its agent listener fails (the plane's /readyz shows it).
func TestHubHealth(t *testing.T) {
	o, _ := hubOptions(t)
	h, err := New(*o)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Healthy(); err == nil || !strings.Contains(err.Error(), "has not started yet") {
		t.Fatalf("Healthy() before Run = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := h.Listen(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	poll(t, "a healthy hub", func() bool { return h.Healthy() == nil })
	// The agent listener fails under the running hub.
	if err := h.agentLn.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "agent listener") {
		t.Fatalf("Run returned %v, want the agent listener's failure", err)
	}
	if err := h.Healthy(); err == nil || !strings.Contains(err.Error(), "the tunnel hub stopped: tunnel hub agent listener") {
		t.Fatalf("Healthy() after the failure = %v", err)
	}
}

// TestConnectFrontendTLS: the CONNECT frontend speaks TLS by default, so
// the proxy credential never travels in clear. A client built as KubeFed
// builds its REST config (one CA pool for the member and the https proxy)
// reaches the member through it; a plain-HTTP proxy request, or a client
// that does not trust the hub, does not. Raising one cluster's credential
// generation refuses that cluster's old credential and no other cluster's.
func TestConnectFrontendTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "member") }))
	defer srv.Close()
	var generations sync.Map // cluster -> int64
	o, f := hubOptions(t)
	o.ConnectGeneration = func(cluster string) (int64, error) {
		if g, ok := generations.Load(cluster); ok {
			return g.(int64), nil
		}
		return 0, nil
	}
	h := runHub(t, o)
	target := strings.TrimPrefix(srv.URL, "https://")
	testAgent(t, h, f, "alpha", target)
	testAgent(t, h, f, "beta", target)
	poll(t, "both agents", func() bool {
		a, errA := getVia(t, h, srv, "alpha")
		b, errB := getVia(t, h, srv, "beta")
		return errA == nil && errB == nil && a == "member" && b == "member"
	})

	alpha0, err := h.ConnectURL("alpha", 0)
	if err != nil {
		t.Fatal(err)
	}
	if u := mustURL(t, alpha0); u.Scheme != "https" {
		t.Fatalf("proxy URL %s: want https (the credential must not travel in clear)", alpha0)
	}
	if h.ConnectCA() == nil {
		t.Fatal("ConnectCA() is nil with TLS on")
	}

	t.Run("a plain-HTTP proxy request is not served", func(t *testing.T) {
		plain := strings.Replace(alpha0, "https://", "http://", 1)
		if body, err := getThrough(t, srv, plain, h.ConnectCA()); err == nil {
			t.Fatalf("plain-HTTP CONNECT succeeded: %q", body)
		}
	})
	t.Run("a client that does not trust the hub refuses it", func(t *testing.T) {
		_, err := getThrough(t, srv, alpha0, nil)
		if err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
			t.Fatalf("got %v, want an unknown-authority error for the hub", err)
		}
	})
	t.Run("rotating one cluster's credential revokes its old one only", func(t *testing.T) {
		generations.Store("alpha", int64(1))
		if _, err := getThrough(t, srv, alpha0, h.ConnectCA()); err == nil || !strings.Contains(err.Error(), "Proxy Authentication Required") {
			t.Fatalf("alpha's generation-0 credential after rotation: %v, want 407", err)
		}
		alpha1, err := h.ConnectURL("alpha", 1)
		if err != nil {
			t.Fatal(err)
		}
		if alpha1 == alpha0 {
			t.Fatal("the generation-1 proxy URL equals the generation-0 one")
		}
		if body, err := getThrough(t, srv, alpha1, h.ConnectCA()); err != nil || body != "member" {
			t.Fatalf("alpha's generation-1 credential: %q, %v", body, err)
		}
		if body, err := getVia(t, h, srv, "beta"); err != nil || body != "member" {
			t.Fatalf("beta's credential after alpha rotated: %q, %v", body, err)
		}
	})
	t.Run("a failed generation lookup answers 503 with the reason", func(t *testing.T) {
		o.ConnectGeneration = nil // the hub keeps its own copy of the options
		h.opts.ConnectGeneration = func(string) (int64, error) { return 0, errors.New("registrations not loaded") }
		defer func() { h.opts.ConnectGeneration = nil }()
		if _, err := getVia(t, h, srv, "beta"); err == nil || !strings.Contains(err.Error(), "registrations not loaded") {
			t.Fatalf("got %v, want the lookup's error", err)
		}
	})
}

// TestConnectFrontendPlainHTTP: with --tunnel-connect-tls=false the
// frontend speaks plain HTTP (http:// proxy URLs, no CA to add).
func TestConnectFrontendPlainHTTP(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "member") }))
	defer srv.Close()
	o, f := hubOptions(t)
	o.ConnectTLS = false
	h := runHub(t, o)
	testAgent(t, h, f, "alpha", strings.TrimPrefix(srv.URL, "https://"))
	pu, err := h.ConnectURL("alpha", 0)
	if err != nil {
		t.Fatal(err)
	}
	if mustURL(t, pu).Scheme != "http" || h.ConnectCA() != nil {
		t.Fatalf("plain frontend: proxy URL %s, CA %v", pu, h.ConnectCA() != nil)
	}
	poll(t, "alpha through the plain frontend", func() bool {
		body, err := getVia(t, h, srv, "alpha")
		return err == nil && body == "member"
	})
}

// TestConnectServingMustNameHost: a hub whose serving certificate does not
// name the host of its proxy URLs refuses to start, saying what to do.
func TestConnectServingMustNameHost(t *testing.T) {
	o, _ := hubOptions(t)
	o.ConnectAdvertiseHost = "hub.example.com"
	if _, err := New(*o); err == nil || !strings.Contains(err.Error(), "--tunnel-connect-advertise-host") {
		t.Fatalf("New = %v, want an error naming --tunnel-connect-advertise-host", err)
	}
	o.ConnectTLS = false
	if _, err := New(*o); err != nil {
		t.Fatalf("plain frontend: %v", err)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
