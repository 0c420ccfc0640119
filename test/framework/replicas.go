package framework

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sharedPKIFiles are the files replicas of one plane must share: the
// cluster CA (clients and serving certificates), the service-account
// signing key, the agent CA and the tunnel's CONNECT secret. Each replica
// generates its own serving certificate from the shared CA. The value
// says whether the file is optional: the first replica writes the
// tunnel's secret only when it serves the tunnel.
var sharedPKIFiles = map[string]bool{"ca.crt": false, "ca.key": false, "sa.key": false,
	"agent-ca.crt": false, "agent-ca.key": false, "tunnel-connect.secret": true}

// StartPlaneReplica starts another replica of first's plane: o.Endpoint
// must name the MySQL/MariaDB database first runs on. first's shared PKI
// is copied into the new replica's <data-dir>/pki before it starts.
// (When cellfed-apiserver grows --shared-pki-dir, pass
// "--shared-pki-dir="+filepath.Join(first.DataDir, "pki") in o.Args
// instead of copying.)
func StartPlaneReplica(t testing.TB, first *Server, o PlaneOptions) *Server {
	t.Helper()
	if !strings.HasPrefix(o.Endpoint, "mysql://") {
		t.Fatalf("replicas share a MySQL/MariaDB database: Endpoint %q is not one", o.Endpoint)
	}
	if o.DataDir == "" {
		o.DataDir = t.TempDir()
	}
	copySharedPKI(t, filepath.Join(first.DataDir, "pki"), filepath.Join(o.DataDir, "pki"))
	return StartPlane(t, o)
}

func copySharedPKI(t testing.TB, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(to, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, optional := range sharedPKIFiles {
		b, err := os.ReadFile(filepath.Join(from, name))
		if optional && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatalf("reading the first replica's PKI: %v", err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".key") || strings.HasSuffix(name, ".secret") {
			mode = 0o600
		}
		if err := os.WriteFile(filepath.Join(to, name), b, mode); err != nil {
			t.Fatalf("sharing PKI with a replica: %v", err)
		}
	}
}
