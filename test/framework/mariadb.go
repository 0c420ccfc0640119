package framework

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// SharedMySQLAddr is the MariaDB that `make mariadb` keeps running
// (override with CELLFED_MYSQL_ADDR; user root, empty password).
func SharedMySQLAddr() string {
	if a := os.Getenv("CELLFED_MYSQL_ADDR"); a != "" {
		return a
	}
	return "127.0.0.1:3306"
}

// NewDatabase creates a throwaway database on the shared MariaDB, drops it
// when the test ends, and returns the plane's --datastore-endpoint for it.
func NewDatabase(t testing.TB) string {
	t.Helper()
	return newDatabaseAt(t, SharedMySQLAddr())
}

func newDatabaseAt(t testing.TB, addr string) string {
	t.Helper()
	db := openMySQL(t, addr, "")
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "cellfed_test_" + hex.EncodeToString(b)
	if _, err := db.Exec("CREATE DATABASE `" + name + "`"); err != nil {
		t.Fatalf("creating database %s on %s: %v (is MariaDB running? `make mariadb` starts it)", name, addr, err)
	}
	t.Cleanup(func() {
		if _, err := db.Exec("DROP DATABASE IF EXISTS `" + name + "`"); err != nil {
			t.Logf("dropping database %s: %v", name, err)
		}
		db.Close()
	})
	return fmt.Sprintf("mysql://root@tcp(%s)/%s", addr, name)
}

func openMySQL(t testing.TB, addr, dbName string) *sql.DB {
	t.Helper()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName = "root", "tcp", addr, dbName
	cfg.Timeout = 5 * time.Second
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatalf("opening MySQL %s: %v", addr, err)
	}
	if err := db.Ping(); err != nil {
		if addr != SharedMySQLAddr() || !restartSharedMariaDB(t, err) || db.Ping() != nil {
			db.Close()
			t.Fatalf("cannot reach MariaDB at %s: %v (run `make mariadb` to install and start it)", addr, err)
		}
	}
	return db
}

// sharedRestart serialises restarts of the shared MariaDB.
var sharedRestart sync.Mutex

// restartSharedMariaDB starts the shared MariaDB again with
// hack/mariadb.sh (which does nothing when it answers) and says whether
// that worked. MariaDB 10.11.19 (Debian 12) has crashed with signal 11 in
// ha_maria::drop_table running kine's poll query on a loaded machine
// (docs/operations.md): the tests that ran on it fail, the ones after
// find it started again instead of failing one by one.
func restartSharedMariaDB(t testing.TB, cause error) bool {
	t.Helper()
	sharedRestart.Lock()
	defer sharedRestart.Unlock()
	if os.Getenv("CELLFED_MYSQL_ADDR") != "" {
		return false // not ours to start
	}
	script := filepath.Join(RepoRoot(t), "hack", "mariadb.sh")
	out, err := exec.Command(script).CombinedOutput()
	t.Logf("the shared MariaDB did not answer (%v); hack/mariadb.sh: %v\n%s", cause, err, out)
	return err == nil
}

// MariaDB is a private mariadbd started by a test, with its own data
// directory and port, so it can be killed, restarted or configured
// without touching the shared server.
type MariaDB struct {
	*Process
	Addr string
}

// StartMariaDB initialises a data directory and starts mariadbd on a free
// port with the given extra server options (e.g. --innodb-autoinc-lock-mode=2).
func StartMariaDB(t testing.TB, extra ...string) *MariaDB {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	// mariadb-install-db has failed now and then with several private
	// servers installing at once on a loaded machine ("Installation of
	// system tables failed"); a second try in a clean directory worked.
	for try := 1; ; try++ {
		install := exec.Command("mariadb-install-db", "--no-defaults", "--datadir="+data, "--user=root",
			"--auth-root-authentication-method=normal", "--skip-test-db")
		out, err := install.CombinedOutput()
		if err == nil {
			break
		}
		if try == 3 {
			t.Fatalf("mariadb-install-db (%d tries): %v\n%s", try, err, out)
		}
		t.Logf("mariadb-install-db failed (try %d), trying again: %v\n%s", try, err, out)
		if err := os.RemoveAll(data); err != nil {
			t.Fatal(err)
		}
	}
	port := FreePort(t)
	args := append([]string{
		"--no-defaults", "--datadir=" + data, "--user=root",
		"--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1",
		"--socket=" + filepath.Join(dir, "mysqld.sock"), "--pid-file=" + filepath.Join(dir, "mysqld.pid"),
		"--innodb-buffer-pool-size=64M", "--skip-log-bin", "--max-connections=500",
		// A commit is written to the OS, not flushed to the disk: a
		// killed server (what the tests do) loses nothing, a crashed
		// machine could. Flushing each commit made the plane's first
		// start, about 150 bootstrap writes that kube-apiserver's RBAC
		// hook allows 30 s for, fail on a loaded CI machine with the
		// binary log and semi-synchronous replication on (exit 255).
		"--innodb-flush-log-at-trx-commit=2", "--sync-binlog=0",
	}, extra...)
	m := &MariaDB{
		Process: StartProcess(t, "mariadbd", filepath.Join(dir, "mariadbd.log"), "/usr/sbin/mariadbd", args...),
		Addr:    loopbackAddr(port),
	}
	m.WaitReady(t)
	return m
}

func loopbackAddr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// WaitReady waits until the server accepts connections.
func (m *MariaDB) WaitReady(t testing.TB) {
	t.Helper()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.Timeout = "root", "tcp", m.Addr, time.Second
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = Poll(context.Background(), 100*time.Millisecond, 60*time.Second, func(ctx context.Context) (bool, error) {
		if err := exitedError(m.Process); err != nil {
			return false, err
		}
		return db.PingContext(ctx) == nil, nil
	})
	if err != nil {
		t.Fatalf("private mariadbd not ready: %v", err)
	}
}

// NewDatabase creates a throwaway database on this server.
func (m *MariaDB) NewDatabase(t testing.TB) string {
	t.Helper()
	return newDatabaseAt(t, m.Addr)
}
