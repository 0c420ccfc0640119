package pki

import (
	"encoding/pem"
	"strings"
	"testing"
	"time"
)

func TestParsePEM(t *testing.T) {
	f := Files{Dir: t.TempDir()}
	if _, _, err := EnsureAgentCA(f); err != nil {
		t.Fatal(err)
	}
	keyPEM, csrPEM, err := NewAgentKeyAndCSR("alpha")
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err := SignAgentCSR(f, csrPEM, "alpha", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	corrupt := func(blockType string) []byte {
		return pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: []byte("not DER")})
	}
	parsers := map[string]func([]byte) error{
		"csr":  func(b []byte) error { _, err := ParseCSRPEM(b); return err },
		"cert": func(b []byte) error { _, err := ParseCertificatePEM(b); return err },
		"key":  func(b []byte) error { _, err := ParseECPrivateKeyPEM(b); return err },
	}
	for _, tc := range []struct {
		name, parser string
		data         []byte
		wantErr      string // "" for success
	}{
		{"csr", "csr", csrPEM, ""},
		{"csr: not PEM", "csr", []byte("garbage"), `the certificate request is not a PEM "CERTIFICATE REQUEST" block`},
		{"csr: a certificate", "csr", certPEM, `the certificate request is not a PEM "CERTIFICATE REQUEST" block`},
		{"csr: corrupt", "csr", corrupt(BlockCertificateRequest), "parsing the certificate request: "},
		{"cert", "cert", certPEM, ""},
		{"cert followed by more blocks", "cert", append(append([]byte(nil), certPEM...), csrPEM...), ""},
		{"cert: empty", "cert", nil, `the certificate is not a PEM "CERTIFICATE" block`},
		{"cert: a request", "cert", csrPEM, `the certificate is not a PEM "CERTIFICATE" block`},
		{"cert: corrupt", "cert", corrupt(BlockCertificate), "parsing the certificate: "},
		{"key", "key", keyPEM, ""},
		{"key: PKCS#8", "key", []byte("-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----\n"), `the key is not a PEM "EC PRIVATE KEY" block`},
		{"key: corrupt", "key", corrupt(BlockECPrivateKey), "parsing the key: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := parsers[tc.parser](tc.data)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr)):
				t.Fatalf("err = %v, want it to start with %q", err, tc.wantErr)
			}
		})
	}
}

func TestSamePublicKey(t *testing.T) {
	f := Files{Dir: t.TempDir()}
	if _, _, err := EnsureAgentCA(f); err != nil {
		t.Fatal(err)
	}
	keyPEM, csrPEM, err := NewAgentKeyAndCSR("alpha")
	if err != nil {
		t.Fatal(err)
	}
	_, otherPEM, err := NewAgentKeyAndCSR("alpha")
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err := SignAgentCSR(f, csrPEM, "alpha", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	again, err := AgentCSRForKey(keyPEM, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	parse := func(b []byte) any {
		csr, err := ParseCSRPEM(b)
		if err != nil {
			t.Fatal(err)
		}
		return csr.PublicKey
	}
	cert, err := ParseCertificatePEM(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		a, b any
		want bool
	}{
		{"certificate and its request", cert.PublicKey, parse(csrPEM), true},
		{"certificate and a request for the same key", cert.PublicKey, parse(again), true},
		{"certificate and another key's request", cert.PublicKey, parse(otherPEM), false},
		{"unencodable key", nil, parse(csrPEM), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SamePublicKey(tc.a, tc.b); got != tc.want {
				t.Fatalf("SamePublicKey = %v, want %v", got, tc.want)
			}
		})
	}
}
