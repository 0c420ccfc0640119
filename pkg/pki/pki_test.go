package pki

import (
	"bytes"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"

	certutil "k8s.io/client-go/util/cert"
)

func TestEnsureCreatesThenReuses(t *testing.T) {
	f := Files{Dir: filepath.Join(t.TempDir(), "pki")}
	if err := Ensure(f, Options{Hosts: []string{"plane.example.com", "10.1.2.3"}, AdminUser: "admin"}); err != nil {
		t.Fatalf("first Ensure: %v", err)
	}
	before := readAll(t, f)
	if err := Ensure(f, Options{AdminUser: "admin"}); err != nil {
		t.Fatalf("second Ensure: %v", err)
	}
	for name, data := range readAll(t, f) {
		if !bytes.Equal(before[name], data) {
			t.Errorf("%s changed on the second start", name)
		}
	}

	ca := mustCert(t, f.CACert())
	serving := mustCert(t, f.ServingCert())
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	for _, host := range []string{"localhost", "127.0.0.1", "plane.example.com", "10.1.2.3"} {
		if _, err := serving.Verify(x509.VerifyOptions{DNSName: host, Roots: pool}); err != nil {
			t.Errorf("serving certificate not valid for %s: %v", host, err)
		}
	}
	admin := mustCert(t, f.AdminCert())
	if admin.Subject.CommonName != "admin" || len(admin.Subject.Organization) != 1 || admin.Subject.Organization[0] != AdminGroup {
		t.Errorf("admin subject = %v, want CN=admin O=%s", admin.Subject, AdminGroup)
	}
	if _, err := admin.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("admin certificate not a client certificate of the CA: %v", err)
	}
	if info, err := os.Stat(f.CAKey()); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("CA key mode = %v (%v), want 0600", info.Mode().Perm(), err)
	}
}

func TestEnsureRefusesBrokenFilesAndChangesNothing(t *testing.T) {
	tests := []struct {
		name    string
		breakIt func(f Files) error
		wantErr string
	}{
		{"corrupt CA certificate", func(f Files) error { return os.WriteFile(f.CACert(), []byte("garbage"), 0o644) }, "ca.crt is unusable"},
		{"corrupt serving key", func(f Files) error { return os.WriteFile(f.ServingKey(), []byte("garbage"), 0o600) }, "serving.key is unusable"},
		{"missing CA key", func(f Files) error { return os.Remove(f.CAKey()) }, "only one of"},
		{"serving cert from another CA", func(f Files) error {
			other := Files{Dir: filepath.Join(filepath.Dir(f.Dir), "other")}
			if err := Ensure(other, Options{AdminUser: "x"}); err != nil {
				return err
			}
			for _, p := range [][2]string{{other.ServingCert(), f.ServingCert()}, {other.ServingKey(), f.ServingKey()}} {
				b, err := os.ReadFile(p[0])
				if err != nil {
					return err
				}
				if err := os.WriteFile(p[1], b, 0o600); err != nil {
					return err
				}
			}
			return nil
		}, "not valid under the plane's CA"},
		{"leaves without CA", func(f Files) error {
			if err := os.Remove(f.CACert()); err != nil {
				return err
			}
			return os.Remove(f.CAKey())
		}, "is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Files{Dir: filepath.Join(t.TempDir(), "pki")}
			if err := Ensure(f, Options{AdminUser: "admin"}); err != nil {
				t.Fatal(err)
			}
			if err := tt.breakIt(f); err != nil {
				t.Fatal(err)
			}
			before := readAll(t, f)
			err := Ensure(f, Options{AdminUser: "admin"})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Ensure() = %v, want an error containing %q", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), "restore") {
				t.Errorf("error %q does not say how to fix it", err)
			}
			after := readAll(t, f)
			if len(after) != len(before) {
				t.Errorf("files changed: before %d, after %d", len(before), len(after))
			}
			for name, data := range before {
				if !bytes.Equal(after[name], data) {
					t.Errorf("%s was overwritten", name)
				}
			}
		})
	}
}

func readAll(t *testing.T, f Files) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	entries, err := os.ReadDir(f.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(f.Dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

func mustCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	certs, err := certutil.CertsFromFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return certs[0]
}
