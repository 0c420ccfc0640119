package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"strings"
	"testing"
	"time"
)

func csrPEMFor(t *testing.T, key crypto.Signer) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "x"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: BlockCertificateRequest, Bytes: der})
}

// Weak keys are refused before anything is signed: an RSA-1024 request was
// signed for an agent identity (issue 29).
func TestCheckCSR(t *testing.T) {
	mustRSA := func(bits int) crypto.Signer {
		k, err := rsa.GenerateKey(rand.Reader, bits)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	mustEC := func(c elliptic.Curve) crypto.Signer {
		k, err := ecdsa.GenerateKey(c, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		key  crypto.Signer
		want string // substring of the error; "" = accepted
	}{
		{"RSA 1024", mustRSA(1024), "1024-bit RSA key; use at least 2048 bits"},
		{"RSA 2048", mustRSA(2048), ""},
		{"P-224", mustEC(elliptic.P224()), "curve P-224; use P-256 or P-384"},
		{"P-256", mustEC(elliptic.P256()), ""},
		{"P-384", mustEC(elliptic.P384()), ""},
		{"Ed25519", ed, ""},
	}
	files := Files{Dir: t.TempDir()}
	if _, _, err := EnsureAgentCA(files); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			csrPEM := csrPEMFor(t, c.key)
			csr, err := ParseCSRPEM(csrPEM)
			if err != nil {
				t.Fatal(err)
			}
			err = CheckCSR(csr)
			_, signErr := SignAgentCSR(files, csrPEM, "edge-1", time.Hour)
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			for _, e := range []error{err, signErr} {
				if e == nil || !strings.Contains(e.Error(), c.want) {
					t.Errorf("want an error with %q, got %v", c.want, e)
				}
			}
		})
	}
}
