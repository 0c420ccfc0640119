package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cellfed/cellfed/pkg/kms"
	"github.com/cellfed/cellfed/test/framework"
)

// TestKMSEncryptionAtRest runs the plane with its defaults on every backend
// (SQLite, MariaDB, PostgreSQL) and reads the database underneath it: Secrets are stored
// KMS-encrypted (no row ever holds the token), read back in clear, survive
// `cellfedctl rotate-key` and the removal of the old key, and a plane
// started without the right key — or with a plugin it cannot reach, or
// another CA on the same database — exits with one clear line and writes
// nothing.
func TestKMSEncryptionAtRest(t *testing.T) {
	t.Parallel()
	for _, backend := range framework.Backends {
		t.Run(backend.Name, func(t *testing.T) {
			t.Parallel()
			endpoint := backend.Endpoint(t) // "" = SQLite in the data dir
			dir := t.TempDir()
			plane := framework.StartPlane(t, framework.PlaneOptions{DataDir: dir, Endpoint: endpoint, Args: []string{"--default-federated-types=secrets"}})
			k := framework.Kubectl{Kubeconfig: plane.Kubeconfig}
			keyFile := filepath.Join(dir, "kms", "keys")
			if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("the plane's KMS key file %s: %v (mode %v), want a 0600 file", keyFile, err, fi)
			}

			token := "kms-canary-" + backend.Name + "-7f3a9c"
			encoded := base64.StdEncoding.EncodeToString([]byte(token))
			k.MustRun(t, "", "-n", "kube-federation-system", "create", "secret", "generic", "member1-credentials", "--from-literal=token="+token)
			for i := range 20 {
				k.MustRun(t, "", "-n", "default", "create", "secret", "generic", "filler-"+string(rune('a'+i)), "--from-literal=k=v")
			}
			readBack := func() {
				t.Helper()
				if got := k.MustRun(t, "", "-n", "kube-federation-system", "get", "secret", "member1-credentials", "-o", "jsonpath={.data.token}"); got != encoded {
					t.Fatalf("the secret reads back as %q, want %q", got, encoded)
				}
			}
			readBack()
			// A FederatedSecret's template holds Secret data too: it is
			// encrypted by default as well.
			fedToken := "fed-canary-" + backend.Name + "-91c2"
			fedEncoded := base64.StdEncoding.EncodeToString([]byte(fedToken))
			fedSecret := "apiVersion: types.kubefed.io/v1beta1\nkind: FederatedSecret\nmetadata: {name: fed-credentials, namespace: default}\nspec:\n  placement: {clusters: []}\n  template: {data: {token: " + fedEncoded + "}}\n"
			if err := framework.Poll(context.Background(), 200*time.Millisecond, 30*time.Second, func(ctx context.Context) (bool, error) {
				_, err := k.Run(ctx, fedSecret, "apply", "-f", "-")
				return err == nil, nil
			}); err != nil {
				t.Fatalf("creating a FederatedSecret: %v", err)
			}

			db := framework.OpenRawDatabase(t, dir, endpoint)
			all := framework.RawRows(t, db, "")
			for _, r := range all {
				for _, clear := range []string{token, encoded, fedToken, fedEncoded} {
					if bytes.Contains(r.Value, []byte(clear)) {
						t.Fatalf("row %d (%s) of the database holds %q in clear", r.ID, r.Name, clear)
					}
				}
			}
			if rows := framework.RawRows(t, db, "/registry/types.kubefed.io/federatedsecrets/default/fed-credentials"); len(rows) == 0 || !bytes.HasPrefix(rows[len(rows)-1].Value, []byte("k8s:enc:kms:v2:cellfed-kms:")) {
				t.Errorf("the FederatedSecret is not stored KMS-encrypted (%d rows)", len(rows))
			}
			_, oldKey, err := kms.ReadKeyIDs(keyFile)
			if err != nil {
				t.Fatal(err)
			}
			secretRow := "/registry/secrets/kube-federation-system/member1-credentials"
			checkKeys := func(want, notWant string) {
				t.Helper()
				latest := framework.LatestRawRows(framework.RawRows(t, db, "/registry/secrets/"))
				if _, ok := latest[secretRow]; !ok {
					t.Fatalf("no row %s in the database", secretRow)
				}
				for name, r := range latest {
					if !bytes.HasPrefix(r.Value, []byte("k8s:enc:kms:v2:cellfed-kms:")) {
						t.Errorf("%s is stored without KMS encryption: %q", name, r.Value[:min(len(r.Value), 30)])
					}
					if !bytes.Contains(r.Value, []byte(want)) || (notWant != "" && bytes.Contains(r.Value, []byte(notWant))) {
						t.Errorf("%s is not encrypted with key %s alone", name, want)
					}
				}
			}
			checkKeys(oldKey, "")

			// Rotation: a new key, everything rewritten, the old key retired.
			out := newCellfedctl(t, plane.Kubeconfig).ok(t, "rotate-key", "--key-file="+keyFile)
			_, newKey, err := kms.ReadKeyIDs(keyFile)
			if err != nil || newKey == oldKey {
				t.Fatalf("rotate-key left the primary key at %s (%v)", newKey, err)
			}
			if !strings.Contains(out, "secrets: rewriting ") || !strings.Contains(out, "rewritten (") {
				t.Errorf("rotate-key showed no progress:\n%s", out)
			}
			checkKeys(newKey, oldKey)
			if err := kms.RemoveKey(keyFile, oldKey); err != nil {
				t.Fatal(err)
			}
			plane.Stop(10 * time.Second)
			plane.RestartAndWait(t)
			readBack()

			// Bad input: each start fails with one line and writes nothing.
			plane.Stop(10 * time.Second)
			before := framework.MaxRawID(t, db)
			args := framework.PlaneArgs(dir, framework.FreePort(t), framework.PlaneOptions{Endpoint: endpoint})
			bin := framework.Binary(t, "cellfed-apiserver")
			if err := os.Rename(keyFile, keyFile+".bak"); err != nil {
				t.Fatal(err)
			}
			otherDir := t.TempDir()
			cases := []struct {
				name  string
				setup func()
				args  []string
				want  string
			}{
				{"missing key file", func() {}, args, "does not exist: restore it from your backup"},
				{"another key", func() {
					if _, err := kms.GenerateKeyFile(keyFile); err != nil {
						t.Fatal(err)
					}
				}, args, "cannot decrypt /registry/secrets/"},
				{"unreachable plugin", func() {}, append(append([]string{}, args...), "--kms-endpoint=unix:///nonexistent/cellfed-kms.sock"), "KMS plugin at unix:///nonexistent/cellfed-kms.sock is unreachable"},
			}
			if endpoint != "" { // a database other planes can share
				cases = append(cases, struct {
					name  string
					setup func()
					args  []string
					want  string
				}{"another CA on the same database", func() {}, framework.PlaneArgs(otherDir, framework.FreePort(t), framework.PlaneOptions{Endpoint: endpoint}), "differs from the CA of the plane(s) already using this database"})
				replicaDir := t.TempDir()
				replicaKeys := filepath.Join(replicaDir, "own-keys")
				cases = append(cases, struct {
					name  string
					setup func()
					args  []string
					want  string
				}{"a replica with its own KMS key", func() {
					if _, err := kms.GenerateKeyFile(replicaKeys); err != nil {
						t.Fatal(err)
					}
				}, framework.PlaneArgs(replicaDir, framework.FreePort(t), framework.PlaneOptions{Endpoint: endpoint,
					Args: []string{"--shared-pki-dir=" + filepath.Join(dir, "pki"), "--kms-key-file=" + replicaKeys}}), "cannot decrypt /registry/secrets/"})
			}
			for _, c := range cases {
				c.setup()
				code, line := framework.RunToExit(t, bin, c.args...)
				if code == 0 || !strings.Contains(line, c.want) || !strings.Contains(line, "nothing was written") {
					t.Errorf("%s: exit %d, last line %q; want a non-zero exit and %q", c.name, code, line, c.want)
				}
				if after := framework.MaxRawID(t, db); after != before {
					t.Errorf("%s: the database changed (newest row %d → %d)", c.name, before, after)
				}
			}
			if err := os.Rename(keyFile+".bak", keyFile); err != nil {
				t.Fatal(err)
			}
			plane.RestartAndWait(t)
			readBack()
		})
	}
}

// TestKMSExternalPlugin runs cellfed-kms as its own process and the plane
// with --kms-endpoint: Secrets are stored under the plugin's key, and the
// plane refuses to start while the plugin is down.
func TestKMSExternalPlugin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sockDir, err := os.MkdirTemp("", "cellfed-kms-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	keyFile := filepath.Join(dir, "plugin-keys")
	endpoint := "unix://" + filepath.Join(sockDir, "kms.sock")
	plugin := framework.StartProcess(t, "cellfed-kms", filepath.Join(dir, "kms.log"), framework.Binary(t, "cellfed-kms"),
		"serve", "--listen="+endpoint, "--key-file="+keyFile, "--generate-if-missing")
	if err := framework.Poll(context.Background(), 50*time.Millisecond, 20*time.Second, func(context.Context) (bool, error) {
		_, err := os.Stat(filepath.Join(sockDir, "kms.sock"))
		return err == nil, nil
	}); err != nil {
		t.Fatalf("cellfed-kms never listened: %v\n%s", err, plugin.Tail(20))
	}
	_, keyID, err := kms.ReadKeyIDs(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	planeDir := filepath.Join(dir, "plane")
	plane := framework.StartPlane(t, framework.PlaneOptions{DataDir: planeDir, Args: []string{"--kms-endpoint=" + endpoint, "--default-federated-types="}})
	k := framework.Kubectl{Kubeconfig: plane.Kubeconfig}
	k.MustRun(t, "", "-n", "default", "create", "secret", "generic", "external", "--from-literal=token=external-canary-5d1e")
	if _, err := os.Stat(filepath.Join(planeDir, "kms", "keys")); err == nil {
		t.Errorf("the plane generated its own key file although --kms-endpoint was given")
	}
	db := framework.OpenRawDatabase(t, planeDir, "")
	latest := framework.LatestRawRows(framework.RawRows(t, db, "/registry/secrets/default/external"))
	row, ok := latest["/registry/secrets/default/external"]
	if !ok || !bytes.HasPrefix(row.Value, []byte("k8s:enc:kms:v2:cellfed-kms:")) || !bytes.Contains(row.Value, []byte(keyID)) || bytes.Contains(row.Value, []byte("external-canary-5d1e")) {
		t.Fatalf("the secret is not stored encrypted under the plugin's key %s: %q", keyID, row.Value[:min(len(row.Value), 40)])
	}

	plane.Stop(10 * time.Second)
	plugin.Stop(5 * time.Second)
	before := framework.MaxRawID(t, db)
	code, line := framework.RunToExit(t, framework.Binary(t, "cellfed-apiserver"),
		framework.PlaneArgs(planeDir, framework.FreePort(t), framework.PlaneOptions{Args: []string{"--kms-endpoint=" + endpoint}})...)
	if code == 0 || !strings.Contains(line, "is unreachable") || !strings.Contains(line, "nothing was written") {
		t.Errorf("with the plugin down: exit %d, last line %q; want a non-zero exit naming the unreachable plugin", code, line)
	}
	if after := framework.MaxRawID(t, db); after != before {
		t.Errorf("the database changed while the plugin was down (newest row %d → %d)", before, after)
	}
}

// TestKMSEncryptsPlaintextAfterUpgrade starts a plane on SQLite with
// encryption off (--encrypted-resources=""), as a build without encryption
// wrote its data, and stores a Secret; then starts it again on the same
// data dir with the defaults, as an upgrade would. The Secret stays in
// plaintext in the database (the start logs how many such objects there
// are) and reads back, until `cellfedctl rotate-key` rewrites it
// encrypted.
func TestKMSEncryptsPlaintextAfterUpgrade(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plane := framework.StartPlane(t, framework.PlaneOptions{DataDir: dir, Args: []string{"--encrypted-resources=", "--default-federated-types="}})
	keyFile := filepath.Join(dir, "kms", "keys")
	if _, err := os.Stat(keyFile); err == nil {
		t.Fatalf("the plane started with --encrypted-resources=\"\" created the key file %s; want none", keyFile)
	}
	k := framework.Kubectl{Kubeconfig: plane.Kubeconfig}
	token := "plaintext-canary-3e8b1d"
	encoded := base64.StdEncoding.EncodeToString([]byte(token))
	k.MustRun(t, "", "-n", "default", "create", "secret", "generic", "legacy", "--from-literal=token="+token)
	plane.Stop(10 * time.Second)

	db := framework.OpenRawDatabase(t, dir, "")
	secretRow := "/registry/secrets/default/legacy"
	latestSecret := func() framework.RawRow {
		t.Helper()
		row, ok := framework.LatestRawRows(framework.RawRows(t, db, secretRow))[secretRow]
		if !ok {
			t.Fatalf("no row %s in the database", secretRow)
		}
		return row
	}
	if row := latestSecret(); bytes.HasPrefix(row.Value, []byte("k8s:enc:")) || !bytes.Contains(row.Value, []byte(token)) {
		t.Fatalf("without encryption the secret is stored as %q, want plaintext holding %q", row.Value[:min(len(row.Value), 40)], token)
	}
	// What the upgraded start finds unencrypted: the newest row of every
	// object of the default encrypted resources.
	plaintextRows := func() []string {
		t.Helper()
		var names []string
		for _, r := range kms.DefaultResources {
			prefix := "/registry/" + r + "/"
			if res, group, ok := strings.Cut(r, "."); ok {
				prefix = "/registry/" + group + "/" + res + "/"
			}
			for name, row := range framework.LatestRawRows(framework.RawRows(t, db, prefix)) {
				if !bytes.HasPrefix(row.Value, []byte("k8s:enc:")) {
					names = append(names, name)
				}
			}
		}
		return names
	}
	before := plaintextRows()

	// The upgrade: the same data dir and port, the default flags.
	logStart := len(plane.Log())
	plane = framework.StartPlane(t, framework.PlaneOptions{DataDir: dir, Port: plane.Port, Args: []string{"--default-federated-types="}})
	if _, err := os.Stat(keyFile); err != nil {
		t.Fatalf("the upgraded plane has no key file: %v; want one generated at %s", err, keyFile)
	}
	if row := latestSecret(); bytes.HasPrefix(row.Value, []byte("k8s:enc:kms:v2:")) || !bytes.Contains(row.Value, []byte(token)) {
		t.Errorf("after the upgrade the secret is stored as %q, want it still in plaintext (holding %q)", row.Value[:min(len(row.Value), 40)], token)
	}
	startLog := plane.Log()[logStart:]
	m := regexp.MustCompile(`stored unencrypted \(written before encryption was on\).*rotate-key.* count=(\d+)`).FindStringSubmatch(startLog)
	if m == nil {
		t.Errorf("the upgraded start logged no count of unencrypted objects; want %d (%s) in a line `... stored unencrypted ... count=N`", len(before), strings.Join(before, ", "))
	} else if m[1] != strconv.Itoa(len(before)) {
		t.Errorf("the upgraded start logged count=%s unencrypted objects, want %d (%s)", m[1], len(before), strings.Join(before, ", "))
	}
	if got := k.MustRun(t, "", "-n", "default", "get", "secret", "legacy", "-o", "jsonpath={.data.token}"); got != encoded {
		t.Fatalf("after the upgrade the secret reads back as %q, want %q", got, encoded)
	}

	out := newCellfedctl(t, plane.Kubeconfig).ok(t, "rotate-key", "--key-file="+keyFile)
	if !strings.Contains(out, "secrets: rewriting ") {
		t.Errorf("rotate-key did not rewrite the secrets:\n%s", out)
	}
	_, newKey, err := kms.ReadKeyIDs(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if row := latestSecret(); !bytes.HasPrefix(row.Value, []byte("k8s:enc:kms:v2:cellfed-kms:")) || !bytes.Contains(row.Value, []byte(newKey)) || bytes.Contains(row.Value, []byte(token)) {
		t.Errorf("after rotate-key the secret is stored as %q, want it KMS-encrypted with key %s", row.Value[:min(len(row.Value), 40)], newKey)
	}
	if left := plaintextRows(); len(left) > 0 {
		t.Errorf("after rotate-key %d object(s) are still stored unencrypted (%s), want none", len(left), strings.Join(left, ", "))
	}
	if got := k.MustRun(t, "", "-n", "default", "get", "secret", "legacy", "-o", "jsonpath={.data.token}"); got != encoded {
		t.Errorf("after rotate-key the secret reads back as %q, want %q", got, encoded)
	}
	// The rewrite adds a row: the plaintext revision stays in the table
	// until compaction removes it.
	old := 0
	for _, r := range framework.RawRows(t, db, secretRow) {
		if bytes.Contains(r.Value, []byte(token)) {
			old++
		}
	}
	t.Logf("upgrade found %d unencrypted object(s) (%s); after rotate-key %d older plaintext revision(s) of %s remain in the table", len(before), strings.Join(before, ", "), old, secretRow)
}
