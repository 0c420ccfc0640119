package admission

import (
	"encoding/pem"
	"strings"
	"testing"
)

func TestPlaneEndpointReason(t *testing.T) {
	loopback := []string{"127.0.0.1:6443"}
	all := []string{"127.0.0.1:6443", "[::1]:6443", "10.0.0.5:6443", "plane.example.com:6443"}
	for _, tc := range []struct {
		name     string
		endpoint string
		plane    []string
		own      bool
	}{
		{"the plane's bind address", "https://127.0.0.1:6443", loopback, true},
		{"another loopback name for it", "https://localhost:6443", loopback, true},
		{"another loopback IP for it", "https://127.0.0.2:6443", loopback, true},
		{"IPv6 loopback for it", "https://[::1]:6443", loopback, true},
		{"a member on loopback, another port", "https://127.0.0.1:7443", loopback, false},
		{"a member elsewhere on the plane's port", "https://10.0.0.9:6443", loopback, false},
		{"the plane's interface address", "https://10.0.0.5:6443", all, true},
		{"the plane's name, any case", "https://Plane.Example.com:6443", all, true},
		{"no port is 443", "https://plane.example.com", []string{"plane.example.com:443"}, true},
		{"no port is 443, plane elsewhere", "https://plane.example.com", all, false},
		{"no plane addresses known", "https://127.0.0.1:6443", nil, false},
		{"not a URL is left to the URL rule", "://", all, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why := PlaneEndpointReason(tc.endpoint, tc.plane)
			if (why != "") != tc.own {
				t.Fatalf("PlaneEndpointReason(%q, %v) = %q, want the plane's own: %v", tc.endpoint, tc.plane, why, tc.own)
			}
			if tc.own && !strings.Contains(why, "is the plane's own address") {
				t.Errorf("reason %q does not say it is the plane's own address", why)
			}
		})
	}
}

// TestValidateRegistrationEndpointAndCSR: a registration naming the
// plane as its member, and one with a junk CSR, are refused with the
// field named and no ASN.1 internals (issue #40, item 11).
func TestValidateRegistrationEndpointAndCSR(t *testing.T) {
	plane := []string{"127.0.0.1:6443"}
	junk := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: []byte("not DER at all")})
	for _, tc := range []struct {
		name    string
		req     func(t *testing.T) RegistrationRequest
		wantErr []string
		notErr  []string
	}{
		{"a member endpoint is accepted", func(t *testing.T) RegistrationRequest {
			r := testRegistration(t, "edge-1")
			r.Spec.APIEndpoint = "https://127.0.0.1:7443"
			return RegistrationRequest{Operation: Create, User: "admin", Object: r, PlaneAddresses: plane}
		}, nil, nil},
		{"the plane's own endpoint is refused", func(t *testing.T) RegistrationRequest {
			r := testRegistration(t, "edge-1")
			r.Spec.APIEndpoint = "https://localhost:6443"
			return RegistrationRequest{Operation: Create, User: "admin", Object: r, PlaneAddresses: plane}
		}, []string{"spec.apiEndpoint: Invalid value: \"https://localhost:6443\"", "is the plane's own address"}, nil},
		{"an unchanged endpoint is not checked again (agent renewal)", func(t *testing.T) RegistrationRequest {
			old := testRegistration(t, "edge-1")
			old.Spec.APIEndpoint = "https://127.0.0.1:6443"
			r := old.DeepCopy()
			return RegistrationRequest{Operation: Update, User: "admin", Object: r, OldObject: old, PlaneAddresses: plane}
		}, nil, nil},
		{"a junk CSR names the field, not ASN.1", func(t *testing.T) RegistrationRequest {
			r := testRegistration(t, "edge-1")
			r.Spec.CSR = junk
			return RegistrationRequest{Operation: Create, User: "admin", Object: r}
		}, []string{"spec.csr: Invalid value: \"<PEM>\": not a PEM-encoded certificate request"}, []string{"asn1", "ASN.1", "structure error"}},
		{"a CSR that is no PEM at all", func(t *testing.T) RegistrationRequest {
			r := testRegistration(t, "edge-1")
			r.Spec.CSR = []byte("hello")
			return RegistrationRequest{Operation: Create, User: "admin", Object: r}
		}, []string{"spec.csr: Invalid value: \"<PEM>\": not a PEM-encoded certificate request"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateRegistration(tc.req(t))
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("allowed, want %q", tc.wantErr)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			for _, n := range tc.notErr {
				if strings.Contains(err.Error(), n) {
					t.Errorf("error %q contains %q", err, n)
				}
			}
		})
	}
}
