package proxy

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/registration"
)

func TestConnectCredentials(t *testing.T) {
	secret := bytes.Repeat([]byte{7}, secretSize)
	other := bytes.Repeat([]byte{8}, secretSize)
	good := ConnectCredential(secret, "alpha", 0)
	rotated := ConnectCredential(secret, "alpha", 1)
	tests := []struct {
		name              string
		secret            []byte
		cluster, password string
		generation        int64
		want              bool
	}{
		{"own credential", secret, "alpha", good, 0, true},
		{"another cluster's credential", secret, "beta", good, 0, false},
		{"credential of another hub", other, "alpha", good, 0, false},
		{"empty password", secret, "alpha", "", 0, false},
		{"truncated", secret, "alpha", good[:len(good)-1], 0, false},
		{"rotated credential at its generation", secret, "alpha", rotated, 1, true},
		{"credential of the generation before", secret, "alpha", good, 1, false},
		{"credential of a later generation", secret, "alpha", rotated, 0, false},
		{"another cluster at the same generation", secret, "beta", rotated, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := checkConnectCredential(tt.secret, tt.cluster, tt.generation, tt.password); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestProxyURLRoundTrip: the header Go's transport sends for a proxy URL
// built by ConnectProxyURL is accepted for its cluster.
func TestProxyURLRoundTrip(t *testing.T) {
	secret := bytes.Repeat([]byte{7}, secretSize)
	raw := ConnectProxyURL(secret, "hub:8133", "alpha.cell-1", 0, false)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if u.Scheme != "https" || u.Host != "hub:8133" {
		t.Fatalf("proxy URL %s", raw)
	}
	if c, ok := ClusterFromProxyURL(raw); !ok || c != "alpha.cell-1" {
		t.Fatalf("ClusterFromProxyURL = %q, %v", c, ok)
	}
	if plain := ConnectProxyURL(secret, "hub:8133", "alpha.cell-1", 0, true); !strings.HasPrefix(plain, "http://") {
		t.Fatalf("plain-HTTP proxy URL %s", plain)
	}
	if _, ok := ClusterFromProxyURL("http://hub:8133"); ok {
		t.Fatal("a proxy URL without user names a cluster")
	}
	// What net/http puts in Proxy-Authorization for a URL's user info.
	req := &http.Request{Header: http.Header{}}
	p, _ := u.User.Password()
	req.SetBasicAuth(u.User.Username(), p)
	user, password, ok := parseProxyAuthorization(req.Header.Get("Authorization"))
	if !ok || user != "alpha.cell-1" || !checkConnectCredential(secret, user, 0, password) {
		t.Fatalf("parsed %q %q %v", user, password, ok)
	}
}

func TestParseProxyAuthorization(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		name, header, user, password string
		ok                           bool
	}{
		{"basic", "Basic " + b64("alpha:pw"), "alpha", "pw", true},
		{"lowercase scheme", "basic " + b64("alpha:pw"), "alpha", "pw", true},
		{"colon in password", "Basic " + b64("alpha:p:w"), "alpha", "p:w", true},
		{"bearer", "Bearer abc", "", "", false},
		{"no colon", "Basic " + b64("alpha"), "", "", false},
		{"empty user", "Basic " + b64(":pw"), "", "", false},
		{"not base64", "Basic !!!", "", "", false},
		{"empty", "", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, p, ok := parseProxyAuthorization(tt.header)
			if ok != tt.ok || u != tt.user || p != tt.password {
				t.Errorf("got %q %q %v, want %q %q %v", u, p, ok, tt.user, tt.password, tt.ok)
			}
		})
	}
}

func TestLoadOrCreateSecret(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pki", "tunnel-connect.secret")
	a, err := LoadOrCreateSecret(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("secret file mode %v (%v), want 0600", st.Mode(), err)
	}
	b, err := LoadOrCreateSecret(path)
	if err != nil || !bytes.Equal(a, b) {
		t.Fatalf("second load differs (%v)", err)
	}
	short := filepath.Join(t.TempDir(), "short")
	if err := os.WriteFile(short, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateSecret(short); err == nil {
		t.Fatal("a short secret was accepted")
	}
}

// TestHandJoinedConnectCredential: a cluster joined by hand has no
// ClusterRegistration, so its CONNECT credential generation is always 0
// and its proxyURL changes only with the hub's whole CONNECT secret,
// which changes every tunnelled cluster's proxyURL at once. A registered
// cluster's generation revokes its credential alone.
func TestHandJoinedConnectCredential(t *testing.T) {
	secret := bytes.Repeat([]byte{7}, secretSize)
	newSecret := bytes.Repeat([]byte{9}, secretSize)
	hand := registration.ProxyCredentialGeneration(nil)
	if hand != 0 {
		t.Fatalf("generation of a cluster without a registration: %d, want 0", hand)
	}
	reg := &cellv1alpha1.ClusterRegistration{ObjectMeta: metav1.ObjectMeta{Name: "edge-reg"},
		Spec: cellv1alpha1.ClusterRegistrationSpec{ProxyCredentialGeneration: 1}}
	registered := registration.ProxyCredentialGeneration(reg)
	if registered != 1 {
		t.Fatalf("generation of a registered cluster: %d, want its spec.proxyCredentialGeneration 1", registered)
	}
	type urlOf struct {
		secret     []byte
		cluster    string
		generation int64
	}
	for _, tc := range []struct {
		name          string
		before, after urlOf
		wantChanged   bool
	}{
		{"a hand-joined cluster keeps its proxyURL under the same secret",
			urlOf{secret, "edge-hand", hand}, urlOf{secret, "edge-hand", registration.ProxyCredentialGeneration(nil)}, false},
		{"a new CONNECT secret changes the hand-joined cluster's proxyURL",
			urlOf{secret, "edge-hand", hand}, urlOf{newSecret, "edge-hand", hand}, true},
		{"a new CONNECT secret changes a registered cluster's proxyURL too",
			urlOf{secret, "edge-reg", registered}, urlOf{newSecret, "edge-reg", registered}, true},
		{"raising a registered cluster's generation changes its proxyURL",
			urlOf{secret, "edge-reg", registered}, urlOf{secret, "edge-reg", registered + 1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := ConnectProxyURL(tc.before.secret, "hub:8133", tc.before.cluster, tc.before.generation, false)
			after := ConnectProxyURL(tc.after.secret, "hub:8133", tc.after.cluster, tc.after.generation, false)
			if changed := before != after; changed != tc.wantChanged {
				t.Errorf("proxyURL changed: %v (%s, then %s), want %v", changed, before, after, tc.wantChanged)
			}
		})
	}
	t.Run("the hub accepts a hand-joined cluster's generation-0 credential only", func(t *testing.T) {
		if !checkConnectCredential(secret, "edge-hand", hand, ConnectCredential(secret, "edge-hand", 0)) {
			t.Error("the generation-0 credential was refused, want it accepted")
		}
		if checkConnectCredential(secret, "edge-hand", hand, ConnectCredential(secret, "edge-hand", 1)) {
			t.Error("a generation-1 credential was accepted for a cluster without a registration, want it refused")
		}
	})
}
