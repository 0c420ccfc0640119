package clusters

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	fedv1b1 "sigs.k8s.io/kubefed/pkg/apis/core/v1beta1"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

var serial int64

func nextSerial() *big.Int { serial++; return big.NewInt(serial) }

func newCA(t *testing.T, name string, notBefore, notAfter time.Time) testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          nextSerial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue makes a serving certificate for the names and IPs.
func (ca testCA) issue(t *testing.T, notBefore, notAfter time.Time, dns []string, ips []net.IP) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(),
		Subject:      pkix.Name{CommonName: "member"},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     dns,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

const testToken = "s3cret-token"

// member starts a TLS server presenting cert that answers /readyz with
// "ok" to requests bearing testToken.
func member(t *testing.T, cert tls.Certificate) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+testToken {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // handshake failures are expected
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func TestRESTConfigTLS(t *testing.T) {
	now := time.Now()
	loopback := []net.IP{net.ParseIP("127.0.0.1")}
	wrongName := []string{"example.test"}
	caA := newCA(t, "ca-a", now.Add(-48*time.Hour), now.Add(48*time.Hour))
	caB := newCA(t, "ca-b", now.Add(-48*time.Hour), now.Add(48*time.Hour))
	// caLate was made after the leaves it signs say they start: many
	// tools backdate a leaf's notBefore for clock skew.
	caLate := newCA(t, "ca-late", now.Add(-time.Hour), now.Add(48*time.Hour))
	valid := func(ca testCA, dns []string, ips []net.IP) tls.Certificate {
		return ca.issue(t, now.Add(-time.Hour), now.Add(time.Hour), dns, ips)
	}
	certs := map[string]tls.Certificate{
		"good":             valid(caA, nil, loopback),
		"wrongName":        valid(caA, wrongName, nil),
		"expired":          caA.issue(t, now.Add(-3*time.Hour), now.Add(-2*time.Hour), nil, loopback),
		"expiredWrongName": caA.issue(t, now.Add(-3*time.Hour), now.Add(-2*time.Hour), wrongName, nil),
		"notYetValid":      caA.issue(t, now.Add(2*time.Hour), now.Add(3*time.Hour), nil, loopback),
		"otherCA":          valid(caB, nil, loopback),
		"otherCAWrongName": valid(caB, wrongName, nil),
		"backdated":        caLate.issue(t, now.Add(-2*time.Hour), now.Add(time.Hour), nil, loopback),
	}
	servers := map[string]*httptest.Server{}
	for name, c := range certs {
		servers[name] = member(t, c)
	}
	skip := func(v ...fedv1b1.TLSValidation) []fedv1b1.TLSValidation { return v }
	all, name, period := fedv1b1.TLSAll, fedv1b1.TLSSubjectName, fedv1b1.TLSValidityPeriod
	tests := []struct {
		server string
		ca     []byte // nil: system roots
		skip   []fedv1b1.TLSValidation
		ok     bool
		note   string // distinguishes the subtest name
	}{
		{server: "good", ca: caA.pem, ok: true},
		{server: "good", ca: caA.pem, skip: skip(name), ok: true},
		{server: "good", ca: caA.pem, skip: skip(period), ok: true},
		{server: "good", ca: nil, ok: false},
		{server: "good", ca: nil, skip: skip(name, period), ok: false},
		{server: "wrongName", ca: caA.pem, ok: false},
		{server: "wrongName", ca: caA.pem, skip: skip(name), ok: true},
		{server: "wrongName", ca: caA.pem, skip: skip(period), ok: false},
		{server: "wrongName", ca: nil, skip: skip(name), ok: false},
		{server: "expired", ca: caA.pem, ok: false},
		{server: "expired", ca: caA.pem, skip: skip(period), ok: true},
		{server: "expired", ca: caA.pem, skip: skip(name), ok: false},
		{server: "expiredWrongName", ca: caA.pem, skip: skip(period), ok: false},
		{server: "expiredWrongName", ca: caA.pem, skip: skip(name), ok: false},
		{server: "expiredWrongName", ca: caA.pem, skip: skip(period, name), ok: true},
		{server: "expiredWrongName", ca: nil, skip: skip(all), ok: true},
		{server: "notYetValid", ca: caA.pem, ok: false},
		{server: "notYetValid", ca: caA.pem, skip: skip(period), ok: true},
		{server: "otherCA", ca: caA.pem, ok: false},
		{server: "otherCA", ca: caA.pem, skip: skip(name), ok: false},
		{server: "otherCA", ca: caA.pem, skip: skip(period), ok: false},
		{server: "otherCAWrongName", ca: caA.pem, skip: skip(name, period), ok: false},
		{server: "otherCA", ca: caA.pem, skip: skip(all), ok: true},
		{server: "otherCAWrongName", ca: caA.pem, skip: skip(all, name), ok: true},
		{server: "otherCA", ca: append(append([]byte{}, caA.pem...), caB.pem...), ok: true, note: "bundleOfBoth"},
		{server: "backdated", ca: caLate.pem, ok: true},
		{
			server: "backdated", ca: caLate.pem, skip: skip(period), ok: true,
		},
	}
	for _, tc := range tests {
		label := tc.server + "/skip=" + strings.Trim(strings.ReplaceAll(strings.Join(toStrings(tc.skip), ","), "*", "all"), ",")
		if tc.ca == nil {
			label += "/systemRoots"
		}
		if tc.note != "" {
			label += "/" + tc.note
		}
		t.Run(label, func(t *testing.T) {
			srv := servers[tc.server]
			a := Access{Endpoint: srv.URL, CABundle: tc.ca, Token: testToken, SkipValidation: tc.skip}
			cfg, err := a.RESTConfig(5, 10, 5*time.Second)
			if err != nil {
				t.Fatalf("RESTConfig: %v", err)
			}
			client, err := rest.HTTPClientFor(cfg)
			if err != nil {
				t.Fatalf("HTTPClientFor: %v", err)
			}
			defer client.CloseIdleConnections()
			resp, err := client.Get(srv.URL + "/readyz")
			if !tc.ok {
				if err == nil {
					_ = resp.Body.Close()
					t.Fatalf("request succeeded (%s), want a TLS failure", resp.Status)
				}
				if msg := err.Error(); !strings.Contains(msg, "certificate") && !strings.Contains(msg, "x509") {
					t.Fatalf("request failed, but not on the certificate: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("request failed: %v", err)
			}
			defer func() { _ = resp.Body.Close() }()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || string(body) != "ok" {
				t.Fatalf("got %s %q, want 200 ok (bearer token sent?)", resp.Status, body)
			}
		})
	}
}

func toStrings(v []fedv1b1.TLSValidation) []string {
	out := make([]string, len(v))
	for i, s := range v {
		out[i] = string(s)
	}
	return out
}

func TestRESTConfigFields(t *testing.T) {
	ca := newCA(t, "ca", time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	tests := []struct {
		name          string
		access        Access
		wantTransport bool
		wantErr       bool
	}{
		{name: "full validation uses rest.Config's TLS settings", access: Access{Endpoint: "https://m:6443", CABundle: ca.pem, Token: "t"}},
		{name: "full validation with a proxy", access: Access{Endpoint: "https://m:6443", Token: "t", ProxyURL: "http://proxy:3128"}},
		{name: "partial validation builds a transport", access: Access{Endpoint: "https://m:6443", CABundle: ca.pem, Token: "t", SkipValidation: []fedv1b1.TLSValidation{fedv1b1.TLSSubjectName}}, wantTransport: true},
		{name: "no validation builds a transport", access: Access{Endpoint: "https://m:6443", Token: "t", SkipValidation: []fedv1b1.TLSValidation{fedv1b1.TLSAll}, ProxyURL: "http://proxy:3128"}, wantTransport: true},
		{name: "unparsable proxy", access: Access{Endpoint: "https://m:6443", Token: "t", ProxyURL: "://proxy"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := tc.access.RESTConfig(7, 9, 3*time.Second)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("RESTConfig succeeded, want an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != tc.access.Endpoint || cfg.BearerToken != tc.access.Token || cfg.QPS != 7 || cfg.Burst != 9 || cfg.Timeout != 3*time.Second {
				t.Errorf("config = host %q token %q qps %v burst %d timeout %v", cfg.Host, cfg.BearerToken, cfg.QPS, cfg.Burst, cfg.Timeout)
			}
			if (cfg.Transport != nil) != tc.wantTransport {
				t.Errorf("custom transport = %v, want %v", cfg.Transport != nil, tc.wantTransport)
			}
			if !tc.wantTransport && string(cfg.CAData) != string(tc.access.CABundle) {
				t.Errorf("CAData not the CA bundle")
			}
			if tc.access.ProxyURL != "" && !tc.wantTransport {
				if cfg.Proxy == nil {
					t.Fatalf("proxy not set")
				}
				u, err := cfg.Proxy(&http.Request{})
				if err != nil || u == nil || u.String() != tc.access.ProxyURL {
					t.Errorf("proxy = %v, %v; want %s", u, err, tc.access.ProxyURL)
				}
			}
			if tc.access.ProxyURL != "" && tc.wantTransport {
				tr, ok := cfg.Transport.(*http.Transport)
				if !ok || tr.Proxy == nil {
					t.Fatalf("transport %T has no proxy", cfg.Transport)
				}
				u, err := tr.Proxy(&http.Request{})
				if err != nil || u == nil || u.String() != tc.access.ProxyURL {
					t.Errorf("transport proxy = %v, %v; want %s", u, err, tc.access.ProxyURL)
				}
			}
			// Whatever the path, client-go must accept the config.
			if _, err := rest.HTTPClientFor(cfg); err != nil {
				t.Errorf("HTTPClientFor: %v", err)
			}
		})
	}
}

func TestAccessFor(t *testing.T) {
	ca := newCA(t, "ca", time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	kfc := func(edit func(s *fedv1b1.KubeFedClusterSpec)) *fedv1b1.KubeFedCluster {
		c := &fedv1b1.KubeFedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "m1", Namespace: "kube-federation-system"},
			Spec: fedv1b1.KubeFedClusterSpec{
				APIEndpoint: "https://m1.example:6443",
				SecretRef:   fedv1b1.LocalSecretReference{Name: "m1-token"},
			},
		}
		if edit != nil {
			edit(&c.Spec)
		}
		return c
	}
	secret := map[string][]byte{"token": []byte("Zq9secret")}
	tests := []struct {
		name    string
		cluster *fedv1b1.KubeFedCluster
		secret  map[string][]byte
		want    Access
		wantErr string
	}{
		{
			name:    "minimal",
			cluster: kfc(nil), secret: secret,
			want: Access{Endpoint: "https://m1.example:6443", Token: "Zq9secret"},
		},
		{
			name: "everything, token trimmed, trailing slash dropped",
			cluster: kfc(func(s *fedv1b1.KubeFedClusterSpec) {
				s.APIEndpoint = "https://m1.example:6443/"
				s.CABundle = ca.pem
				s.ProxyURL = "http://proxy.example:3128"
				s.DisabledTLSValidations = []fedv1b1.TLSValidation{fedv1b1.TLSSubjectName, fedv1b1.TLSValidityPeriod}
			}),
			secret: map[string][]byte{"token": []byte("  Zq9secret\n"), "ca.crt": []byte("ignored")},
			want: Access{Endpoint: "https://m1.example:6443", CABundle: ca.pem, Token: "Zq9secret", ProxyURL: "http://proxy.example:3128",
				SkipValidation: []fedv1b1.TLSValidation{fedv1b1.TLSSubjectName, fedv1b1.TLSValidityPeriod}},
		},
		{
			name:    "plain http endpoint with a path",
			cluster: kfc(func(s *fedv1b1.KubeFedClusterSpec) { s.APIEndpoint = "http://10.0.0.1:8080/prefix" }), secret: secret,
			want: Access{Endpoint: "http://10.0.0.1:8080/prefix", Token: "Zq9secret"},
		},
		{
			name: "disable all validation",
			cluster: kfc(func(s *fedv1b1.KubeFedClusterSpec) {
				s.DisabledTLSValidations = []fedv1b1.TLSValidation{fedv1b1.TLSAll}
			}), secret: secret,
			want: Access{Endpoint: "https://m1.example:6443", Token: "Zq9secret", SkipValidation: []fedv1b1.TLSValidation{fedv1b1.TLSAll}},
		},
		{
			name:    "endpoint without a scheme, as KubeFed's API documents (hostname:port)",
			cluster: kfc(func(s *fedv1b1.KubeFedClusterSpec) { s.APIEndpoint = "m1.example:6443" }), secret: secret,
			want: Access{Endpoint: "https://m1.example:6443", Token: "Zq9secret"},
		},
		{name: "empty endpoint", cluster: kfc(func(s *fedv1b1.KubeFedClusterSpec) { s.APIEndpoint = "" }), secret: secret, wantErr: "spec.apiEndpoint"},
		{name: "endpoint without host", cluster: kfc(func(s *fedv1b1.KubeFedClusterSpec) { s.APIEndpoint = "https://" }), secret: secret, wantErr: "spec.apiEndpoint"},
		{name: "endpoint with another scheme", cluster: kfc(func(s *fedv1b1.KubeFedClusterSpec) { s.APIEndpoint = "ftp://m1.example" }), secret: secret, wantErr: "spec.apiEndpoint"},
		{name: "unparsable endpoint", cluster: kfc(func(s *fedv1b1.KubeFedClusterSpec) { s.APIEndpoint = "https://m1 example:6443" }), secret: secret, wantErr: "spec.apiEndpoint"},
		{name: "proxy that is not a URL", cluster: kfc(func(s *fedv1b1.KubeFedClusterSpec) { s.ProxyURL = "proxy" }), secret: secret, wantErr: "spec.proxyURL"},
		{
			name: "unknown disabledTLSValidations value",
			cluster: kfc(func(s *fedv1b1.KubeFedClusterSpec) {
				s.DisabledTLSValidations = []fedv1b1.TLSValidation{"SubjectName", "Hostname"}
			}), secret: secret,
			wantErr: `unknown value "Hostname"`,
		},
		{
			name:    "disabledTLSValidations is case sensitive",
			cluster: kfc(func(s *fedv1b1.KubeFedClusterSpec) { s.DisabledTLSValidations = []fedv1b1.TLSValidation{"subjectname"} }), secret: secret,
			wantErr: "spec.disabledTLSValidations",
		},
		{name: "no secret name", cluster: kfc(func(s *fedv1b1.KubeFedClusterSpec) { s.SecretRef.Name = "" }), secret: secret, wantErr: "spec.secretRef.name"},
		{name: "missing secret", cluster: kfc(nil), secret: nil, wantErr: "secret kube-federation-system/m1-token not found"},
		{name: "secret without token", cluster: kfc(nil), secret: map[string][]byte{"ca.crt": []byte("x")}, wantErr: `has no key "token"`},
		{name: "empty secret", cluster: kfc(nil), secret: map[string][]byte{}, wantErr: `has no key "token"`},
		{name: "blank token", cluster: kfc(nil), secret: map[string][]byte{"token": []byte(" \n\t")}, wantErr: `has no key "token"`},
		{name: "garbage caBundle", cluster: kfc(func(s *fedv1b1.KubeFedClusterSpec) { s.CABundle = []byte("not pem") }), secret: secret, wantErr: "spec.caBundle"},
		{
			name: "caBundle with a PEM block that is no certificate",
			cluster: kfc(func(s *fedv1b1.KubeFedClusterSpec) {
				s.CABundle = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("garbage")})
			}),
			secret: secret, wantErr: "spec.caBundle",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := accessFor(tc.cluster, tc.secret)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("accessFor = %+v, want an error mentioning %q", got, tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %q does not mention %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "Zq9secret") {
					t.Errorf("error %q leaks the token", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("accessFor: %v", err)
			}
			if got.Endpoint != tc.want.Endpoint || string(got.CABundle) != string(tc.want.CABundle) || got.Token != tc.want.Token ||
				got.ProxyURL != tc.want.ProxyURL || strings.Join(toStrings(got.SkipValidation), ",") != strings.Join(toStrings(tc.want.SkipValidation), ",") {
				t.Errorf("accessFor:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestAccessKey(t *testing.T) {
	ca1 := newCA(t, "ca1", time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	ca2 := newCA(t, "ca2", time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	base := func() Access {
		return Access{Endpoint: "https://m:6443", CABundle: ca1.pem, Token: "tok", ProxyURL: "http://p:1",
			SkipValidation: []fedv1b1.TLSValidation{fedv1b1.TLSSubjectName, fedv1b1.TLSValidityPeriod}}
	}
	baseKey := base().key()
	if strings.Contains(baseKey, "tok") {
		t.Fatalf("key %q holds the token", baseKey)
	}
	tests := []struct {
		name string
		edit func(a *Access)
		same bool
	}{
		{"equal access", func(*Access) {}, true},
		{"validations in another order", func(a *Access) {
			a.SkipValidation = []fedv1b1.TLSValidation{fedv1b1.TLSValidityPeriod, fedv1b1.TLSSubjectName}
		}, true},
		{"token", func(a *Access) { a.Token = "tok2" }, false},
		{"endpoint", func(a *Access) { a.Endpoint = "https://m:6444" }, false},
		{"CA", func(a *Access) { a.CABundle = ca2.pem }, false},
		{"no CA", func(a *Access) { a.CABundle = nil }, false},
		{"proxy", func(a *Access) { a.ProxyURL = "" }, false},
		{"fewer validations skipped", func(a *Access) { a.SkipValidation = a.SkipValidation[:1] }, false},
		{"no validation skipped", func(a *Access) { a.SkipValidation = nil }, false},
		// Length prefixes keep fields from running into each other.
		{"field boundary moved", func(a *Access) { a.Endpoint, a.Token = "https://m:6443t", "ok" }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := base()
			tc.edit(&a)
			if got := a.key(); (got == baseKey) != tc.same {
				t.Errorf("key equal = %v, want %v", got == baseKey, tc.same)
			}
		})
	}
	// key must not reorder the caller's slice.
	a := Access{SkipValidation: []fedv1b1.TLSValidation{fedv1b1.TLSValidityPeriod, fedv1b1.TLSSubjectName}}
	_ = a.key()
	if a.SkipValidation[0] != fedv1b1.TLSValidityPeriod {
		t.Errorf("key sorted the Access's SkipValidation in place")
	}

	// Per-cell KubeFedClusters of one physical cluster (same endpoint,
	// CA and secret) share a member; the trailing slash does not matter.
	c1 := &fedv1b1.KubeFedCluster{ObjectMeta: metav1.ObjectMeta{Name: "shop.rz00a", Namespace: "kube-federation-system"},
		Spec: fedv1b1.KubeFedClusterSpec{APIEndpoint: "https://m:6443", CABundle: ca1.pem, SecretRef: fedv1b1.LocalSecretReference{Name: "m"}}}
	c2 := c1.DeepCopy()
	c2.Name = "other.rz00a"
	c2.Spec.APIEndpoint = "https://m:6443/"
	a1, err1 := accessFor(c1, map[string][]byte{"token": []byte("tok")})
	a2, err2 := accessFor(c2, map[string][]byte{"token": []byte("tok\n")})
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if a1.key() != a2.key() {
		t.Errorf("clusters with the same access got different keys")
	}
}
