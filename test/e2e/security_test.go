package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3" // reads the plane's SQLite file directly

	"github.com/cellfed/cellfed/test/framework"
)

// TestEncryptionAtRestAndAudit checks that kube-apiserver's
// --encryption-provider-config and audit flags pass through: a secret is
// stored encrypted in the SQLite file, and its creation is audited
// without its value.
func TestEncryptionAtRestAndAudit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	encryption := filepath.Join(dir, "encryption.yaml")
	policy := filepath.Join(dir, "audit-policy.yaml")
	auditLog := filepath.Join(dir, "audit.log")
	framework.OverwriteFile(t, encryption, `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - secretbox:
          keys:
            - name: key1
              secret: 0yUEtSJbuNF4SIU4DXU47MgQbYcStBdVEs/0WXG86WQ=
      - identity: {}
`)
	framework.OverwriteFile(t, policy, `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
  - level: Metadata
    resources: [{group: "", resources: [secrets]}]
  - level: None
`)
	plane := framework.StartPlane(t, framework.PlaneOptions{DataDir: filepath.Join(dir, "data"), Args: []string{
		"--encryption-provider-config=" + encryption,
		"--audit-policy-file=" + policy,
		"--audit-log-path=" + auditLog,
		"--default-federated-types=", // secrets only: no federated types to install
	}})
	k := framework.Kubectl{Kubeconfig: plane.Kubeconfig}
	k.MustRun(t, "", "-n", "default", "create", "secret", "generic", "vault", "--from-literal=token=plaintext-canary-42")
	if got := k.MustRun(t, "", "-n", "default", "get", "secret", "vault", "-o", "jsonpath={.data.token}"); got != "cGxhaW50ZXh0LWNhbmFyeS00Mg==" {
		t.Fatalf("secret reads back as %q", got)
	}

	db, err := sql.Open("sqlite3", "file:"+filepath.Join(plane.DataDir, "db", "state.db")+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var value []byte
	if err := db.QueryRow(`SELECT value FROM kine WHERE name = '/registry/secrets/default/vault' ORDER BY id DESC LIMIT 1`).Scan(&value); err != nil {
		t.Fatalf("reading the stored secret from SQLite: %v", err)
	}
	if !bytes.HasPrefix(value, []byte("k8s:enc:secretbox:v1:key1:")) {
		t.Errorf("stored secret is not secretbox-encrypted: starts with %q", value[:min(len(value), 40)])
	}
	if bytes.Contains(value, []byte("plaintext-canary-42")) {
		t.Errorf("stored secret contains the plaintext")
	}

	var audit string
	if err := framework.Poll(context.Background(), 100*time.Millisecond, 30*time.Second, func(context.Context) (bool, error) {
		b, err := os.ReadFile(auditLog)
		audit = string(b)
		return strings.Contains(audit, `"verb":"create"`) && strings.Contains(audit, `"name":"vault"`), err
	}); err != nil {
		t.Fatalf("secret creation never reached the audit log: %v", err)
	}
	for _, leak := range []string{"plaintext-canary-42", "cGxhaW50ZXh0LWNhbmFyeS00Mg"} {
		if strings.Contains(audit, leak) {
			t.Errorf("audit log contains the secret value")
		}
	}
	if log := plane.Log(); strings.Contains(log, "plaintext-canary-42") || strings.Contains(log, "cGxhaW50ZXh0LWNhbmFyeS00Mg") {
		t.Errorf("server log contains the secret value")
	}
}
