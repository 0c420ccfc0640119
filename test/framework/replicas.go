package framework

import (
	"path/filepath"
	"strings"
	"testing"
)

// StartPlaneReplica starts another replica of first's plane: o.Endpoint
// must name the MySQL/MariaDB database first runs on. The replica gets
// first's PKI with --shared-pki-dir (first's pki directory holds every
// shared file) and first's KMS key file; it generates its own serving
// certificate from the CA.
func StartPlaneReplica(t testing.TB, first *Server, o PlaneOptions) *Server {
	t.Helper()
	if !strings.HasPrefix(o.Endpoint, "mysql://") {
		t.Fatalf("replicas share a MySQL/MariaDB database: Endpoint %q is not one", o.Endpoint)
	}
	o.Args = append([]string{
		"--shared-pki-dir=" + filepath.Join(first.DataDir, "pki"),
		// Replicas share the KMS keys too (in production: one Secret).
		"--kms-key-file=" + filepath.Join(first.DataDir, "kms", "keys"),
	}, o.Args...)
	return StartPlane(t, o)
}
