package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3" // reading the plane's SQLite store
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cellfed/cellfed/pkg/version"
	"github.com/cellfed/cellfed/test/framework"
)

// TestRollbackRefusedByNewerData: a plane records in
// kube-system/cellfed-data-release the newest release that served its
// database and the oldest that reads the data. When the record says a
// newer release stored what this one cannot read, the plane refuses to
// start, says which release to run or which backup to restore, and
// writes nothing.
func TestRollbackRefusedByNewerData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dataDir := t.TempDir()
	opts := framework.PlaneOptions{DataDir: dataDir, Port: framework.FreePort(t), Args: []string{"--default-federated-types="}}
	plane := framework.StartPlane(t, opts)
	kube := plane.Client(t)
	own := release(t)
	var last string
	err := framework.Poll(ctx, 200*time.Millisecond, time.Minute, func(ctx context.Context) (bool, error) {
		cm, err := kube.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, "cellfed-data-release", metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprint(cm.Data)
		return cm.Data["newest"] == own && cm.Data["readableFrom"] == version.DataReadableFrom, nil
	})
	if err != nil {
		t.Fatalf("kube-system/cellfed-data-release does not record newest %s, readableFrom %s: %v (last seen: %s)", own, version.DataReadableFrom, err, last)
	}

	// As a newer release that stores what this one cannot read leaves it.
	k := framework.Kubectl{Kubeconfig: plane.Kubeconfig}
	k.MustRun(t, "", "-n", "kube-system", "patch", "configmap", "cellfed-data-release", "--type=merge",
		"-p", `{"data":{"newest":"v9.9.1","readableFrom":"v9.9.0"}}`)
	plane.Stop(30 * time.Second)

	before := newestRow(t, filepath.Join(dataDir, "db", "state.db"))
	code, lastLine := framework.RunToExit(t, framework.Binary(t, "cellfed-apiserver"), framework.PlaneArgs(dataDir, opts.Port, opts)...)
	if code == 0 {
		t.Fatalf("the plane of %s started on data that v9.9.1 stored and releases before v9.9.0 cannot read", own)
	}
	for _, w := range []string{"v9.9.1", "older than v9.9.0 cannot read", "run v9.9.0 or later", "restore the backup", "nothing was written"} {
		if !strings.Contains(lastLine, w) {
			t.Errorf("the refusal %q does not say %q", lastLine, w)
		}
	}
	if after := newestRow(t, filepath.Join(dataDir, "db", "state.db")); after != before {
		t.Errorf("the refused start wrote to the store: its newest row is %s, was %s", after, before)
	}
}

// newestRow describes the newest row of kine's table in the SQLite
// store at path (the plane stopped): its id, key and count of rows.
func newestRow(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var id, n int64
	var name string
	if err := db.QueryRow(`SELECT id, name, (SELECT COUNT(*) FROM kine) FROM kine ORDER BY id DESC LIMIT 1`).Scan(&id, &name, &n); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return fmt.Sprintf("id %d (%s) of %d rows", id, name, n)
}
