package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cellfed/cellfed/test/framework"
)

// TestKubectlAgainstPlane drives the plane with the real kubectl on each
// backend: namespace, secret, a two-version CRD converted by a webhook,
// discovery, authorization; then restarts the plane and finds it all again.
func TestKubectlAgainstPlane(t *testing.T) {
	t.Parallel()
	for _, b := range framework.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			plane := framework.StartPlane(t, framework.PlaneOptions{Endpoint: b.Endpoint(t)})
			k := framework.Kubectl{Kubeconfig: plane.Kubeconfig}
			webhook := startWidgetConverter(t)

			var v struct {
				ServerVersion struct{ GitVersion, Major, Minor string }
			}
			if err := json.Unmarshal([]byte(k.MustRun(t, "", "version", "-o", "json")), &v); err != nil {
				t.Fatalf("kubectl version -o json: %v", err)
			}
			if !strings.HasPrefix(v.ServerVersion.GitVersion, "v1.36.4") || v.ServerVersion.Major != "1" || v.ServerVersion.Minor != "36" {
				t.Errorf("server version = %+v, want v1.36.4 (major 1, minor 36)", v.ServerVersion)
			}

			k.MustRun(t, "", "create", "namespace", "demo")
			k.MustRun(t, "", "-n", "demo", "create", "secret", "generic", "db", "--from-literal=password=hunter2")
			k.MustRun(t, widgetCRD(webhook), "apply", "-f", "-")
			k.WaitEstablished(t, "widgets.fixtures.cellfed.io")
			// One object written in each version.
			k.MustRun(t, widget("v1", "small", "size", 3), "apply", "-f", "-")
			k.MustRun(t, widget("v2", "large", "replicas", 7), "apply", "-f", "-")
			checkWidgets(t, k)

			resources := k.MustRun(t, "", "api-resources", "-o", "name")
			for _, r := range []string{"namespaces", "secrets", "configmaps", "serviceaccounts", "events", "leases.coordination.k8s.io",
				"clusterroles.rbac.authorization.k8s.io", "customresourcedefinitions.apiextensions.k8s.io",
				"validatingwebhookconfigurations.admissionregistration.k8s.io", "tokenreviews.authentication.k8s.io",
				"subjectaccessreviews.authorization.k8s.io", "flowschemas.flowcontrol.apiserver.k8s.io", "widgets.fixtures.cellfed.io",
				"storageversionmigrations.storagemigration.k8s.io"} {
				if !containsLine(resources, r) {
					t.Errorf("kubectl api-resources does not list %s", r)
				}
			}
			for _, r := range []string{"pods", "nodes"} {
				if containsLine(resources, r) {
					t.Errorf("kubectl api-resources lists %s, which the plane must not serve", r)
				}
			}
			for _, path := range []string{"/livez", "/readyz"} {
				if got := k.MustRun(t, "", "get", "--raw", path); got != "ok" {
					t.Errorf("%s = %q, want ok", path, got)
				}
			}
			metrics := k.MustRun(t, "", "get", "--raw", "/metrics")
			for _, m := range []string{"apiserver_request_total", "kine_sql_total", "etcd_request_duration_seconds"} {
				if !strings.Contains(metrics, m) {
					t.Errorf("/metrics has no %s", m)
				}
			}
			if out := strings.TrimSpace(k.MustRun(t, "", "auth", "can-i", "create", "secrets", "-n", "demo")); out != "yes" {
				t.Errorf("admin: can-i create secrets = %q, want yes", out)
			}
			// RBAC is on: an unknown user may not read secrets (can-i exits 1 on "no").
			out, err := k.Run(context.Background(), "", "auth", "can-i", "get", "secrets", "-n", "demo", "--as=mallory")
			if strings.TrimSpace(out) != "no" || err == nil {
				t.Errorf("mallory: can-i get secrets = %q (%v), want no", out, err)
			}

			plane.Stop(30 * time.Second)
			plane.RestartAndWait(t)
			k.MustRun(t, "", "get", "namespace", "demo")
			if got := k.MustRun(t, "", "-n", "demo", "get", "secret", "db", "-o", "jsonpath={.data.password}"); got != "aHVudGVyMg==" {
				t.Errorf("secret after restart = %q, want base64(hunter2)", got)
			}
			checkWidgets(t, k)
		})
	}
}

// checkWidgets reads both widgets in both versions.
func checkWidgets(t *testing.T, k framework.Kubectl) {
	t.Helper()
	for _, c := range []struct{ name, version, field, want string }{
		{"small", "v1", "size", "3"}, {"small", "v2", "replicas", "3"},
		{"large", "v1", "size", "7"}, {"large", "v2", "replicas", "7"},
	} {
		got := k.MustRun(t, "", "-n", "demo", "get", "widgets."+c.version+".fixtures.cellfed.io", c.name, "-o", "jsonpath={.spec."+c.field+"}")
		if got != c.want {
			t.Errorf("widget %s read as %s: spec.%s = %q, want %s", c.name, c.version, c.field, got, c.want)
		}
	}
}

func containsLine(out, line string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

// TestStartupRefusesBadInput: each bad input gives one clear error line,
// a non-zero exit, and leaves existing files alone.
func TestStartupRefusesBadInput(t *testing.T) {
	t.Parallel()
	bin := framework.Binary(t, "cellfed-apiserver")
	busy := framework.ListenBusyPort(t)
	fileNotDir := framework.WriteTempFile(t, "not a directory")

	// A plane that ran once: failed starts must leave its files alone.
	// And another whose CA certificate then got corrupted. Both start
	// while MariaDB does.
	existingDir, corruptDir := t.TempDir(), t.TempDir()
	planes := []*framework.Server{
		framework.StartPlane(t, framework.PlaneOptions{DataDir: existingDir, NoWait: true, Args: []string{"--default-federated-types="}}),
		framework.StartPlane(t, framework.PlaneOptions{DataDir: corruptDir, NoWait: true, Args: []string{"--default-federated-types="}}),
	}
	unsafeDB := framework.StartMariaDB(t, "--innodb-autoinc-lock-mode=2")
	for _, p := range planes {
		if err := p.WaitReady(context.Background()); err != nil {
			t.Fatalf("cellfed-apiserver in %s did not become ready: %v", p.DataDir, err)
		}
		p.Stop(30 * time.Second)
	}
	framework.OverwriteFile(t, corruptDir+"/pki/ca.crt", "-----BEGIN CERTIFICATE-----\ngarbage\n-----END CERTIFICATE-----\n")

	tests := []struct {
		name    string
		dataDir string // must be unchanged after the failed start ("" = not checked)
		args    []string
		want    []string
	}{
		{"port in use", existingDir, []string{fmt.Sprintf("--secure-port=%d", busy)}, []string{"port is in use", "--secure-port"}},
		{"unwritable data dir", "", []string{"--data-dir=" + fileNotDir + "/data"}, []string{"data directory", "--data-dir"}},
		{"unreachable mysql", existingDir, []string{"--datastore-endpoint=mysql://root:pw-s3cret@tcp(127.0.0.1:1)/cellfed"}, []string{"cannot connect to MySQL at 127.0.0.1:1", "--datastore-endpoint"}},
		{"wrong mysql password", existingDir, []string{"--datastore-endpoint=mysql://cellfed-nobody:pw-s3cret@tcp(" + framework.SharedMySQLAddr() + ")/cellfed"}, []string{"cannot connect to MySQL", "Access denied", "password"}},
		{"unknown scheme", existingDir, []string{"--datastore-endpoint=etcd://x"}, []string{`unsupported scheme "etcd"`, "postgres://"}},
		{"corrupt certificate", corruptDir, nil, []string{"ca.crt is unusable", "restore it"}},
		{"mysql lock mode 2", existingDir, []string{"--datastore-endpoint=" + unsafeDB.NewDatabase(t)},
			[]string{"innodb_autoinc_lock_mode=2", "miss writes", "innodb_autoinc_lock_mode=1", "--unsafe-skip-mysql-safety-checks"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before map[string][]byte
			args := []string{"--secure-port=0"} // later flags win: a case that needs a port names it
			if tt.dataDir != "" {
				before = framework.SnapshotDir(t, tt.dataDir)
				args = append(args, "--data-dir="+tt.dataDir)
			}
			code, lastLine := framework.RunToExit(t, bin, append(args, tt.args...)...)
			if code == 0 {
				t.Fatalf("exit code 0, want non-zero")
			}
			if !strings.HasPrefix(lastLine, "cellfed-apiserver: ") {
				t.Errorf("last line %q is not the error line", lastLine)
			}
			for _, w := range tt.want {
				if !strings.Contains(lastLine, w) {
					t.Errorf("error line %q does not mention %q", lastLine, w)
				}
			}
			if strings.Contains(lastLine, "s3cret") {
				t.Errorf("error line leaks the database password: %q", lastLine)
			}
			if tt.dataDir != "" && !framework.SameFiles(before, framework.SnapshotDir(t, tt.dataDir)) {
				t.Errorf("files in %s changed after a failed start", tt.dataDir)
			}
		})
	}
}

// TestPlaneSurvivesDatabaseRestart kills the database server (SIGKILL,
// MariaDB and PostgreSQL) while a writer and a watch run through the plane,
// then starts it again: no acknowledged write is lost, no watch event is
// missed, the plane recovers by itself.
func TestPlaneSurvivesDatabaseRestart(t *testing.T) {
	t.Parallel()
	type server struct {
		proc     *framework.Process
		restart  func(testing.TB) // after the kill, until it accepts connections
		endpoint string
	}
	for _, tt := range []struct {
		name  string
		start func(t *testing.T) server
	}{
		{"mariadb", func(t *testing.T) server {
			db := framework.StartMariaDB(t)
			return server{db.Process, func(t testing.TB) {
				if err := db.Process.Restart(); err != nil {
					t.Fatalf("restarting mariadbd: %v", err)
				}
				db.WaitReady(t)
			}, db.NewDatabase(t)}
		}},
		{"postgres", func(t *testing.T) server {
			db := framework.StartPostgres(t)
			return server{db.Process, db.Restart, db.NewDatabase(t)}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := tt.start(t)
			// Config maps only: no federated types to install.
			plane := framework.StartPlane(t, framework.PlaneOptions{Endpoint: db.endpoint, Args: []string{"--default-federated-types="}})
			client := plane.Client(t)
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()

			w := framework.StartConfigMapWriter(ctx, t, client, "default", "survivor")
			seen := framework.WatchConfigMaps(ctx, t, client, "default")

			w.WaitAcked(t, 50)
			db.proc.Signal(syscall.SIGKILL)
			if err := db.proc.Wait(ctx); err == nil {
				t.Fatalf("%s exited cleanly after SIGKILL?", tt.name)
			}
			w.WaitFailures(t, 1) // the outage is visible to clients
			db.restart(t)
			ackedAtRestart := w.Acked()
			w.WaitAcked(t, ackedAtRestart+50) // the plane recovered by itself
			acked := w.Stop()

			list := framework.ListConfigMapNames(ctx, t, client, "default")
			for _, name := range acked {
				if !list[name] {
					t.Errorf("acknowledged write %s is missing after the %s restart", name, tt.name)
				}
			}
			if err := framework.Poll(ctx, 100*time.Millisecond, 30*time.Second, func(context.Context) (bool, error) {
				return seen.HasAll(acked), nil
			}); err != nil {
				t.Errorf("watch missed events: %v; missing %v", err, seen.Missing(acked))
			}
			if exited, err := plane.Exited(); exited {
				t.Errorf("the plane exited during the %s outage: %v", tt.name, err)
			}
			t.Logf("%d writes acknowledged, %d failed during the outage", len(acked), w.Failures())
		})
	}
}

// TestPlaneFailsFastOnHungMariaDB freezes MariaDB (SIGSTOP): with the DSN
// timeouts the plane adds, a write fails within seconds instead of hanging
// until the request times out, and the plane recovers when MariaDB resumes.
func TestPlaneFailsFastOnHungMariaDB(t *testing.T) {
	t.Parallel()
	db := framework.StartMariaDB(t)
	plane := framework.StartPlane(t, framework.PlaneOptions{Endpoint: db.NewDatabase(t),
		Args: []string{"--datastore-read-timeout=2s", "--datastore-write-timeout=2s", "--default-federated-types="}})
	client := plane.Client(t)
	ctx := context.Background()
	create := func(name string) error {
		ctx, cancel := context.WithTimeout(ctx, 45*time.Second)
		defer cancel()
		_, err := client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		return err
	}
	if err := create("before"); err != nil {
		t.Fatalf("create before the freeze: %v", err)
	}

	db.Process.Signal(syscall.SIGSTOP)
	start := time.Now()
	err := create("frozen")
	took := time.Since(start)
	db.Process.Signal(syscall.SIGCONT)
	if err == nil {
		t.Fatalf("create succeeded while MariaDB was frozen")
	}
	// Without the timeouts this takes the API server's request timeout
	// (34 s measured); with them, about one read timeout.
	if took > 20*time.Second {
		t.Errorf("create against a frozen MariaDB took %s (%v): the DSN timeouts are not applied", took, err)
	}
	t.Logf("create against a frozen MariaDB failed after %s: %v", took.Round(time.Millisecond), err)
	// docs/limitations.md: the client sees the database's error as kine
	// hands it over, a gRPC Unknown carrying the driver's text, in a 500.
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "code = Unknown") {
		t.Errorf("create against a frozen MariaDB: %v (reason %q), want an InternalError carrying gRPC code Unknown, as docs/limitations.md says",
			err, apierrors.ReasonForError(err))
	}

	if err := framework.Poll(ctx, 200*time.Millisecond, time.Minute, func(context.Context) (bool, error) {
		err := create("after")
		return err == nil || apierrors.IsAlreadyExists(err), err
	}); err != nil {
		t.Fatalf("plane did not recover after MariaDB resumed: %v", err)
	}
}
