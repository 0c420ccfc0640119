package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cellfed/cellfed/test/framework"
)

// TestRestoreConvergesMembers backs a running plane up, changes a
// federated object's template and adds another, restores the backup into
// the stopped plane and starts it on the same data directory and port,
// with cellfed-controller running throughout. The controller relists and
// brings the member back to the restored template; the object created
// after the backup is gone from the plane and its member copy is left as
// it is (docs/backup-and-migration.md says so: deleting it is the
// operator's decision).
func TestRestoreConvergesMembers(t *testing.T) {
	t.Parallel()
	port := framework.FreePort(t)
	f := startFederationWith(t, 1, framework.PlaneOptions{Port: port}, "--leader-elect=false")
	dir := f.plane.DataDir
	bin := framework.Binary(t, "cellfed-apiserver")
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
			t.Fatalf("cellfed-apiserver %v: %v\n%s", args, err, out)
		}
	}
	apply := func(name, value string) {
		t.Helper()
		f.kubectl.MustRun(t, "apiVersion: types.kubefed.io/v1beta2\nkind: FederatedConfigMap\nmetadata: {name: "+name+", namespace: shop}\n"+
			"spec: {placement: {topologies: [{name: rz00a}]}, template: {data: {v: \""+value+"\"}}}\n", "apply", "-f", "-")
	}
	memberValue := func(name string) (string, bool) {
		obj := f.memberObject(t, 0, configmaps, "shop", name)
		if obj == nil {
			return "", false
		}
		v, _, _ := unstructured.NestedString(obj.Object, "data", "v")
		return v, true
	}
	waitMember := func(name, want string) {
		t.Helper()
		eventually(t, "member-0's "+name+" to hold v="+want, func() (bool, string) {
			v, ok := memberValue(name)
			return ok && v == want, "v=" + v
		})
	}

	apply("kept", "backed-up")
	waitMember("kept", "backed-up")
	backup := filepath.Join(t.TempDir(), "plane.kine.gz")
	run("backup", "--data-dir", dir, "--to", backup)

	apply("kept", "after-backup")
	apply("late", "after-backup")
	waitMember("kept", "after-backup")
	waitMember("late", "after-backup")

	stopPlane(t, f.plane)
	run("restore", "--from", backup, "--to", dir, "--force", "--pki-dir", filepath.Join(dir, "pki"), "--kms-key-file", filepath.Join(dir, "kms", "keys"))
	f.plane = framework.StartPlane(t, framework.PlaneOptions{DataDir: dir, Port: port})

	start := time.Now()
	waitMember("kept", "backed-up")
	t.Logf("the member went back to the restored template %s after the restored plane was ready", time.Since(start).Round(time.Millisecond))
	// The object created after the backup is not in the plane; its member
	// copy stays until an operator deletes it.
	if _, err := f.dyn.Resource(fedResource("federatedconfigmaps", "v1beta2")).Namespace("shop").Get(context.Background(), "late", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the object created after the backup, in the restored plane: %v, want NotFound", err)
	}
	if v, ok := memberValue("late"); !ok || v != "after-backup" {
		t.Errorf("member-0's late = %q (present %v), want it left as it was", v, ok)
	}
	if err := f.controller.WaitReady(context.Background(), 30*time.Second); err != nil {
		t.Errorf("cellfed-controller is not ready after the restore: %v", err)
	}
}

// TestDataToolsRefuseARunningPlane runs `cellfed-apiserver restore
// --force` into, and `migrate` out of, the store of a running plane on
// SQLite and on MariaDB: both refuse with exit code 1, naming what holds
// the store and saying to stop every cellfed-apiserver using it, and the
// plane keeps serving (a watch opened before sees a write made after).
// Once the plane is killed with SIGKILL, restore goes through: the plane
// left no stale hold.
func TestDataToolsRefuseARunningPlane(t *testing.T) {
	t.Parallel()
	for _, b := range framework.Backends[:2] { // sqlite, mariadb
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			endpoint := b.Endpoint(t)
			plane := startPlaneAt(t, dir, framework.FreePort(t), endpoint)
			store := dir
			if endpoint != "" {
				store = endpoint
			}
			bin := framework.Binary(t, "cellfed-apiserver")
			tool := func(args ...string) (string, error) {
				out, err := exec.Command(bin, args...).CombinedOutput()
				return string(out), err
			}
			backup := filepath.Join(t.TempDir(), "plane.kine.gz")
			if out, err := tool("backup", "--data-dir", dir, "--datastore-endpoint", endpoint, "--to", backup); err != nil {
				t.Fatalf("backup of the running plane: %v\n%s", err, out)
			}
			ctx := context.Background()
			c := plane.Client(t)
			w, err := c.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()

			holder := fmt.Sprintf("cellfed-apiserver pid %d on ", plane.Pid())
			if endpoint != "" {
				holder = "cellfed-apiserver on MySQL connection "
			}
			restoreArgs := []string{"restore", "--from", backup, "--to", store, "--force",
				"--pki-dir", filepath.Join(dir, "pki"), "--kms-key-file", filepath.Join(dir, "kms", "keys")}
			for _, tc := range []struct {
				name string
				args []string
				want string
			}{
				{"restore --force", restoreArgs, "cellfed-apiserver: refusing to restore: "},
				{"migrate", []string{"migrate", "--from", store, "--to", "sqlite://" + filepath.Join(t.TempDir(), "state.db")}, "cellfed-apiserver: refusing to migrate: --from: "},
			} {
				out, err := tool(tc.args...)
				t.Logf("%s against the running plane: %v\n%s", tc.name, err, out)
				var exit *exec.ExitError
				if !errors.As(err, &exit) || exit.ExitCode() != 1 {
					t.Errorf("%s against the running plane: %v, want exit code 1\n%s", tc.name, err, out)
				}
				for _, want := range []string{tc.want, "is in use by a running cellfed-apiserver (held by: " + holder, "stop every cellfed-apiserver using this database"} {
					if !strings.Contains(out, want) {
						t.Errorf("%s: the refusal does not say %q:\n%s", tc.name, want, out)
					}
				}
			}

			if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-refusals"}}, metav1.CreateOptions{}); err != nil {
				t.Fatalf("the plane takes no write after the refusals: %v", err)
			}
			deadline := time.After(30 * time.Second)
			for seen := false; !seen; {
				select {
				case ev, ok := <-w.ResultChan():
					if !ok {
						t.Fatal("the watch opened before the refusals ended")
					}
					if cm, isCM := ev.Object.(*corev1.ConfigMap); isCM && cm.Name == "after-refusals" && ev.Type == watch.Added {
						seen = true
					}
				case <-deadline:
					t.Fatal("the watch opened before the refusals did not see a write made after them within 30 s")
				}
			}
			if log := plane.Log(); strings.Contains(log, "Too large resource version") {
				t.Errorf("the plane's watch caches fell behind its store:\n%s", plane.Tail(30))
			}

			plane.Kill()
			if out, err := tool(restoreArgs...); err != nil {
				t.Fatalf("restore after the plane was killed (a stale hold?): %v\n%s", err, out)
			}
		})
	}
}
