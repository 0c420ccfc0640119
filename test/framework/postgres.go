package framework

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// SharedPostgresAddr is the PostgreSQL that `make postgres` keeps running
// (override with CELLFED_POSTGRES_ADDR; user postgres, trust auth on
// loopback).
func SharedPostgresAddr() string {
	if a := os.Getenv("CELLFED_POSTGRES_ADDR"); a != "" {
		return a
	}
	return "127.0.0.1:5432"
}

// NewPostgresDatabase creates a throwaway database on the shared
// PostgreSQL, drops it when the test ends, and returns the plane's
// --datastore-endpoint for it.
func NewPostgresDatabase(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable&connect_timeout=5", SharedPostgresAddr())
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("cannot reach PostgreSQL at %s: %v (run `make postgres` to install and start it)", SharedPostgresAddr(), err)
	}
	defer conn.Close(context.Background())
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "cellfed_test_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, `CREATE DATABASE "`+name+`"`); err != nil {
		t.Fatalf("creating database %s on %s: %v", name, SharedPostgresAddr(), err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Logf("dropping database %s: %v", name, err)
			return
		}
		defer conn.Close(context.Background())
		// WITH (FORCE): a plane that outlived its test may still hold connections.
		if _, err := conn.Exec(ctx, `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`); err != nil {
			t.Logf("dropping database %s: %v", name, err)
		}
	})
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", SharedPostgresAddr(), name)
}

// Postgres is a private PostgreSQL server started by a test, with its own
// data directory and port, so it can be killed or restarted without
// touching the shared server. It runs as the system user postgres (the
// server refuses to run as root).
type Postgres struct {
	*Process
	Addr string
}

// StartPostgres initialises a data directory and starts the newest
// installed PostgreSQL on a free loopback port.
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(bins) == 0 {
		t.Fatalf("no PostgreSQL server installed (run `make postgres`)")
	}
	sort.Strings(bins) // ok for the one or two majors a machine has
	binDir := filepath.Dir(bins[len(bins)-1])
	dir, err := os.MkdirTemp("", "cellfed-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("no system user postgres (run `make postgres`): %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	asPostgres := []string{"--reuid=postgres", "--regid=postgres", "--init-groups", "--"}
	data := filepath.Join(dir, "data")
	initdb := exec.Command("setpriv", append(asPostgres, filepath.Join(binDir, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "--no-sync")...)
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	port := FreePort(t)
	p := &Postgres{
		Process: StartProcess(t, "postgres", filepath.Join(dir, "postgres.log"), "/usr/bin/setpriv", append(asPostgres,
			filepath.Join(binDir, "postgres"), "-D", data, "-p", strconv.Itoa(port), "-k", dir,
			"-c", "listen_addresses=127.0.0.1", "-c", "shared_buffers=32MB", "-c", "max_connections=300")...),
		Addr: loopbackAddr(port),
	}
	p.WaitReady(t)
	return p
}

// WaitReady waits until the server accepts connections.
func (p *Postgres) WaitReady(t testing.TB) {
	t.Helper()
	err := Poll(context.Background(), 100*time.Millisecond, 60*time.Second, func(ctx context.Context) (bool, error) {
		if err := exitedError(p.Process); err != nil {
			return false, err
		}
		return p.accepts(ctx), nil
	})
	if err != nil {
		t.Fatalf("private postgres not ready: %v", err)
	}
}

// NewDatabase returns an endpoint for a database on this server; kine
// creates it at the plane's first start and the server goes with the test.
func (p *Postgres) NewDatabase(testing.TB) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return fmt.Sprintf("postgres://postgres@%s/cellfed_test_%s?sslmode=disable", p.Addr, hex.EncodeToString(b))
}

// Restart starts the killed server again and waits until it accepts
// connections. PostgreSQL's backends leave the postmaster's process group
// (setsid), so a SIGKILL to the group kills only the postmaster; the
// backends exit when they notice, and until then a new postmaster refuses
// to start ("pre-existing shared memory block is still in use"): it is
// started again until it stays up.
func (p *Postgres) Restart(t testing.TB) {
	t.Helper()
	err := Poll(context.Background(), 200*time.Millisecond, 60*time.Second, func(ctx context.Context) (bool, error) {
		if exited, _ := p.Exited(); exited {
			if err := p.Process.Restart(); err != nil {
				return false, err
			}
			return false, nil
		}
		return p.accepts(ctx), nil
	})
	if err != nil {
		t.Fatalf("restarting the private postgres: %v", err)
	}
}

// accepts reports whether the server takes a connection now.
func (p *Postgres) accepts(ctx context.Context) bool {
	conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable&connect_timeout=1", p.Addr))
	if err != nil {
		return false
	}
	conn.Close(ctx)
	return true
}
