package certexpiry

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"
)

func certPEM(t *testing.T, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"}, NotBefore: notAfter.Add(-time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestEarliest(t *testing.T) {
	soon := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	late := soon.Add(100 * 24 * time.Hour)
	key := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: []byte("x")})
	for _, tc := range []struct {
		name    string
		bundle  []byte
		want    time.Time
		wantErr bool
	}{
		{"one certificate", certPEM(t, late), late, false},
		{"the first to expire of a bundle, wherever it is", append(append(certPEM(t, late), key...), certPEM(t, soon)...), soon, false},
		{"no certificate", key, time.Time{}, true},
		{"empty", nil, time.Time{}, true},
		{"a broken certificate", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("junk")}), time.Time{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Earliest(tc.bundle)
			if (err != nil) != tc.wantErr || !got.Equal(tc.want) {
				t.Errorf("Earliest = %v, %v; want %v (error: %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
