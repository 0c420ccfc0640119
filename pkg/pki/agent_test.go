package pki

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"strings"
	"testing"
	"time"
)

func TestAgentCertificates(t *testing.T) {
	f := Files{Dir: t.TempDir()}
	if err := Ensure(f, Options{AdminUser: "admin"}); err != nil {
		t.Fatal(err)
	}
	ca, _, err := EnsureAgentCA(f)
	if err != nil {
		t.Fatal(err)
	}
	again, _, err := EnsureAgentCA(f)
	if err != nil || !again.Equal(ca) {
		t.Fatalf("second EnsureAgentCA: err=%v, same=%v", err, again != nil && again.Equal(ca))
	}
	planeCA, err := os.ReadFile(f.CACert())
	if err != nil {
		t.Fatal(err)
	}
	agentCA, err := os.ReadFile(f.AgentCACert())
	if err != nil {
		t.Fatal(err)
	}
	if string(planeCA) == string(agentCA) {
		t.Fatal("agent CA must differ from the plane CA")
	}

	// A request asking for another cluster still gets a certificate for the
	// cluster it is signed for.
	keyPEM, csrPEM, err := NewAgentKeyAndCSR("mallory")
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err := SignAgentCSR(f, csrPEM, "alpha", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatalf("signed certificate does not match the key: %v", err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("agent certificate does not verify under the agent CA: %v", err)
	}
	if got, err := ClusterFromAgentCert(cert); err != nil || got != "alpha" {
		t.Fatalf("ClusterFromAgentCert = %q, %v; want alpha", got, err)
	}
	if d := time.Until(cert.NotAfter); d > time.Hour || d < 50*time.Minute {
		t.Fatalf("validity %v, want about 1h", d)
	}

	for _, tc := range []struct {
		name, csr, cluster, want string
	}{
		{"not PEM", "garbage", "alpha", "not a PEM"},
		{"bad cluster", string(csrPEM), "Not_A_Name", "cluster name"},
		{"certificate instead of request", string(certPEM), "alpha", "CERTIFICATE REQUEST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := SignAgentCSR(f, []byte(tc.csr), tc.cluster, time.Hour)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestClusterFromAgentCert(t *testing.T) {
	f := Files{Dir: t.TempDir()}
	if err := Ensure(f, Options{AdminUser: "admin"}); err != nil {
		t.Fatal(err)
	}
	// The admin certificate is not an agent certificate.
	data, err := os.ReadFile(f.AdminCert())
	if err != nil {
		t.Fatal(err)
	}
	admin, err := ParseCertificatePEM(data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ClusterFromAgentCert(admin); err == nil {
		t.Fatal("the admin certificate was accepted as an agent certificate")
	}
}
