package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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
