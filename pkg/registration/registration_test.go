package registration

import (
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

func TestParseToken(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"abcdef.0123456789abcdef", true},
		{" abcdef.0123456789abcdef\n", true},
		{"abcdef0123456789abcdef", false},
		{"ABCDEF.0123456789abcdef", false},
		{"abcde.0123456789abcdef", false},
		{"abcdef.0123456789abcde", false},
		{"abcdef.0123456789abcde!", false},
		{"", false},
	} {
		_, err := ParseToken(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("ParseToken(%q) = %v, want ok=%v", tc.in, err, tc.ok)
		}
		if err != nil && strings.Contains(err.Error(), "0123456789") {
			t.Errorf("ParseToken(%q) error repeats the secret: %v", tc.in, err)
		}
	}
	tok, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	if back, err := ParseToken(tok.String()); err != nil || back != tok {
		t.Errorf("NewToken %q does not parse back: %v", tok.ID, err)
	}
}

func TestTokenSecret(t *testing.T) {
	exp := time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC)
	s := TokenSecret(Token{ID: "abcdef", Secret: "0123456789abcdef"}, "acme", "prod", exp)
	if s.Name != "bootstrap-token-abcdef" || s.Namespace != "kube-system" || s.Type != "bootstrap.kubernetes.io/token" {
		t.Errorf("secret %s/%s type %s", s.Namespace, s.Name, s.Type)
	}
	if s.StringData["expiration"] != "2026-11-23T15:00:00Z" || s.StringData["auth-extra-groups"] != BootstrapGroup ||
		s.StringData["usage-bootstrap-authentication"] != "true" || s.StringData["usage-bootstrap-signing"] != "" {
		t.Errorf("secret data %v", s.StringData)
	}
	if tenant, ws := TokenTenancy(s); tenant != "acme" || ws != "prod" {
		t.Errorf("tenancy %q/%q", tenant, ws)
	}
}

func TestPhase(t *testing.T) {
	c := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason}
	}
	const (
		approved = cellv1alpha1.RegistrationConditionApproved
		denied   = cellv1alpha1.RegistrationConditionDenied
		revoked  = cellv1alpha1.RegistrationConditionRevoked
		ready    = cellv1alpha1.RegistrationConditionReady
	)
	for _, tc := range []struct {
		name  string
		conds []metav1.Condition
		want  cellv1alpha1.RegistrationPhase
	}{
		{"nothing", nil, cellv1alpha1.RegistrationPending},
		{"approved", []metav1.Condition{c(approved, "True", "")}, cellv1alpha1.RegistrationApproved},
		{"approved, signing", []metav1.Condition{c(approved, "True", ""), c(ready, "False", ReasonSigning)}, cellv1alpha1.RegistrationApproved},
		{"approved, failed", []metav1.Condition{c(approved, "True", ""), c(ready, "False", ReasonClusterExists)}, cellv1alpha1.RegistrationFailed},
		{"registered", []metav1.Condition{c(approved, "True", ""), c(ready, "True", ReasonRegistered)}, cellv1alpha1.RegistrationRegistered},
		{"denied", []metav1.Condition{c(denied, "True", "")}, cellv1alpha1.RegistrationDenied},
		{"revoked wins", []metav1.Condition{c(approved, "True", ""), c(ready, "True", ""), c(revoked, "True", "")}, cellv1alpha1.RegistrationRevoked},
		{"ready without approval is pending", []metav1.Condition{c(ready, "True", "")}, cellv1alpha1.RegistrationPending},
	} {
		if got := Phase(tc.conds); got != tc.want {
			t.Errorf("%s: Phase = %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestTunnelEndpoint(t *testing.T) {
	tests := []struct {
		name, endpoint, serverName, want, wantErr string
	}{
		{"no server name", "https://10.0.0.5:6443", "", "https://10.0.0.5:6443", ""},
		{"server name replaces the host", "https://10.0.0.5:6443", "api.edge.internal", "https://api.edge.internal:6443", ""},
		{"no port", "https://10.0.0.5", "kubernetes.default.svc", "https://kubernetes.default.svc", ""},
		{"IPv6 endpoint", "https://[fd00::5]:6443", "api.edge", "https://api.edge:6443", ""},
		{"a path is kept", "https://10.0.0.5:6443/k8s", "api.edge", "https://api.edge:6443/k8s", ""},
		{"not a name", "https://10.0.0.5:6443", "bad name", "", "is not a DNS name"},
		{"not a URL", "10.0.0.5:6443", "api.edge", "", "is not a URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := TunnelEndpoint(cellv1alpha1.ClusterRegistrationSpec{APIEndpoint: tt.endpoint, TLSServerName: tt.serverName})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %q, %v; want an error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestExpiredOut(t *testing.T) {
	notAfter := time.Date(2026, 11, 27, 8, 16, 7, 0, time.UTC)
	unauthorized := apierrors.NewUnauthorized("certificate has expired")
	for _, tc := range []struct {
		name string
		err  error
		now  time.Time
		want bool
	}{
		{"refused after expiry: stop", unauthorized, notAfter.Add(time.Second), true},
		{"refused before expiry: retry", unauthorized, notAfter.Add(-time.Second), false},
		{"other error after expiry: retry", apierrors.NewServiceUnavailable("plane starting"), notAfter.Add(time.Second), false},
		{"no error", nil, notAfter.Add(time.Second), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := expiredOut(tc.err, notAfter, tc.now); got != tc.want {
				t.Errorf("expiredOut = %v, want %v", got, tc.want)
			}
		})
	}
}
