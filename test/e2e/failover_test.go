package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/cellfed/cellfed/test/framework"
)

// TestDatabaseFailover runs the plane on a MariaDB primary replicated to a
// second MariaDB, kills the primary (SIGKILL) while a writer and a
// client-go informer run, promotes the replica and restarts the plane on
// it, on the same data directory and port.
//   - Semi-synchronous replication: no acknowledged write is lost.
//   - Asynchronous replication with the replica stopped behind: the writes
//     acknowledged after it stopped are lost, the plane finds that its
//     database server changed and moves the store's revision above what it
//     served, and the informer relists and ends equal to the new store
//     instead of keeping the lost objects and missing new writes (which
//     would reuse the lost revisions).
//
// Either way the plane refuses to start on the replica before it is
// promoted (read_only=ON), with the way out.
func TestDatabaseFailover(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		semiSync bool
	}{
		{"semi-synchronous replication loses no acknowledged write", true},
		{"asynchronous replication: the lost tail is detected and clients relist", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			failover(t, tc.semiSync)
		})
	}
}

func openRoot(t *testing.T, addr string) *sql.DB {
	t.Helper()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.Timeout = "root", "tcp", addr, 5*time.Second
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// pollFor waits up to timeout for cond, which explains itself while false.
func pollFor(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := framework.Poll(context.Background(), 100*time.Millisecond, timeout, func(context.Context) (bool, error) {
		ok, msg := cond()
		last = msg
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (%s)", what, err, last)
	}
}

func mustExec(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// slaveStatus reads one column of SHOW SLAVE STATUS.
func slaveStatus(t *testing.T, db *sql.DB, column string) string {
	t.Helper()
	rows, err := db.Query("SHOW SLAVE STATUS")
	if err != nil {
		t.Fatalf("SHOW SLAVE STATUS: %v", err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	if !rows.Next() {
		return ""
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		t.Fatal(err)
	}
	if i := slices.Index(cols, column); i >= 0 {
		return vals[i].String
	}
	return ""
}

func failover(t *testing.T, semiSync bool) {
	binlog := []string{"--log-bin=binlog", "--binlog-format=ROW", "--log-slave-updates=ON"}
	primary := framework.StartMariaDB(t, append([]string{"--server-id=1"}, binlog...)...)
	replica := framework.StartMariaDB(t, append([]string{"--server-id=2", "--read-only=ON"}, binlog...)...)
	pdb, rdb := openRoot(t, primary.Addr), openRoot(t, replica.Addr)
	if semiSync {
		mustExec(t, pdb, "SET GLOBAL rpl_semi_sync_master_enabled=ON", "SET GLOBAL rpl_semi_sync_master_timeout=120000")
		mustExec(t, rdb, "SET GLOBAL rpl_semi_sync_slave_enabled=ON")
	}
	_, port, _ := strings.Cut(primary.Addr, ":")
	mustExec(t, rdb,
		"CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT="+port+", MASTER_USER='root', MASTER_PASSWORD='', MASTER_USE_GTID=slave_pos",
		"START SLAVE")
	pollFor(t, "replication running", 60*time.Second, func() (bool, string) {
		io, sqlRunning := slaveStatus(t, rdb, "Slave_IO_Running"), slaveStatus(t, rdb, "Slave_SQL_Running")
		ok := io == "Yes" && sqlRunning == "Yes"
		if ok && semiSync {
			var name, v string
			_ = pdb.QueryRow("SHOW STATUS LIKE 'Rpl_semi_sync_master_clients'").Scan(&name, &v)
			ok = v == "1"
		}
		return ok, fmt.Sprintf("IO %s, SQL %s, %s", io, sqlRunning, slaveStatus(t, rdb, "Last_Error"))
	})

	dataDir := t.TempDir()
	planePort := framework.FreePort(t)
	opts := func(addr string) framework.PlaneOptions {
		return framework.PlaneOptions{DataDir: dataDir, Port: planePort, Endpoint: "mysql://root@tcp(" + addr + ")/cellfed",
			Args: []string{"--default-federated-types="}}
	}
	plane := framework.StartPlane(t, opts(primary.Addr))
	kube := plane.Client(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fo"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// A client-go informer, as every controller runs one. lists counts
	// its lists, plain or streamed (watch-list).
	var lists atomic.Int32
	lw := cache.NewListWatchFromClient(kube.CoreV1().RESTClient(), "configmaps", "fo", fields.Everything())
	informer := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			lists.Add(1)
			return lw.ListWithContext(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			if o.SendInitialEvents != nil && *o.SendInitialEvents {
				lists.Add(1) // a watch-list is a list
			}
			return lw.WatchWithContext(ctx, o)
		},
	}, &corev1.ConfigMap{}, 0, cache.Indexers{})
	go informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("informer did not sync")
	}

	writer := framework.StartConfigMapWriter(ctx, t, kube, "fo", "w")
	writer.WaitAcked(t, 100)
	var replicated int
	if !semiSync {
		// The replica catches up with what was acknowledged so far, then
		// falls behind: what the primary acknowledges from then on is
		// lost with it.
		replicated = writer.Acked()
		var pos string
		if err := pdb.QueryRow("SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
			t.Fatal(err)
		}
		var waited int
		if err := rdb.QueryRow("SELECT MASTER_GTID_WAIT(?, 60)", pos).Scan(&waited); err != nil || waited != 0 {
			t.Fatalf("the replica did not reach the primary's position %s: %d, %v", pos, waited, err)
		}
		mustExec(t, rdb, "STOP SLAVE")
		writer.WaitAcked(t, writer.Acked()+50)
	}
	primary.Kill()
	writer.WaitFailures(t, 3)
	acked := writer.Stop()
	plane.Stop(5 * time.Second)

	// Before promotion the replica is read-only: the plane says so.
	code, out := framework.RunToExit(t, framework.Binary(t, "cellfed-apiserver"), framework.PlaneArgs(dataDir, planePort, opts(replica.Addr))...)
	if code == 0 || !strings.Contains(out, "read_only=ON") || !strings.Contains(out, "promote this replica") {
		t.Fatalf("the plane on the unpromoted replica exited %d, want a refusal naming read_only=ON and the promotion:\n%s", code, out)
	}

	// Promote the replica once it has applied everything it received.
	if semiSync {
		pollFor(t, "the replica to apply its relay log", 60*time.Second, func() (bool, string) {
			st := slaveStatus(t, rdb, "Slave_SQL_Running_State")
			return strings.Contains(st, "read all relay log"), st
		})
	}
	mustExec(t, rdb, "STOP SLAVE", "RESET SLAVE ALL", "SET GLOBAL read_only=OFF")
	listsBefore := lists.Load()
	plane = framework.StartPlane(t, opts(replica.Addr))
	if log := plane.Log(); !strings.Contains(log, "Moved the store's revision above every revision this plane may have served") ||
		!strings.Contains(log, "the database server changed") {
		t.Errorf("the plane's log does not say it moved the store's revision after the server changed:\n%s", plane.Tail(40))
	}

	now := framework.ListConfigMapNames(ctx, t, kube, "fo")
	var lost []string
	for _, n := range acked {
		if !now[n] {
			lost = append(lost, n)
		}
	}
	if semiSync {
		if len(lost) > 0 {
			t.Errorf("semi-synchronous replication lost %d acknowledged writes: %v", len(lost), lost[:min(5, len(lost))])
		}
	} else {
		for _, n := range acked[:replicated] {
			if !now[n] {
				t.Errorf("%s, replicated before the replica stopped, is missing", n)
			}
		}
		if len(lost) == 0 {
			t.Errorf("no acknowledged write was lost with the replica stopped: the test did not exercise a lost tail")
		}
		t.Logf("%d of %d acknowledged writes lost with the primary, as expected of asynchronous replication", len(lost), len(acked))
	}

	// A write after the failover: with revisions reused, the informer
	// (holding a resourceVersion of the lost tail) would never see it.
	if _, err := kube.CoreV1().ConfigMaps("fo").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-failover"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	now["after-failover"] = true
	pollFor(t, "the informer to equal the promoted store", 90*time.Second, func() (bool, string) {
		got := map[string]bool{}
		for _, k := range informer.GetStore().ListKeys() {
			_, name, _ := strings.Cut(k, "/")
			got[name] = true
		}
		var extra, missing []string
		for n := range got {
			if !now[n] {
				extra = append(extra, n)
			}
		}
		for n := range now {
			if !got[n] {
				missing = append(missing, n)
			}
		}
		return len(extra) == 0 && len(missing) == 0, fmt.Sprintf("informer has %d extra (%v) and misses %d (%v)", len(extra), extra[:min(3, len(extra))], len(missing), missing[:min(3, len(missing))])
	})
	relists := lists.Load() - listsBefore
	if relists < 1 || relists > 2 {
		t.Errorf("the informer listed %d times after the failover, want a relist (at most 2 lists)", relists)
	}
	list, err := kube.CoreV1().ConfigMaps("fo").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rv, _ := strconv.ParseInt(list.ResourceVersion, 10, 64); rv < 1_000_000 {
		t.Errorf("the promoted store is at revision %d, want it moved above %d", rv, 1_000_000)
	}
	t.Logf("informer relisted %d time(s); %d acknowledged writes, %d lost", relists, len(acked), len(lost))
}
