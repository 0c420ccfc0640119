package storage_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cellfed/cellfed/pkg/storage"
	"github.com/cellfed/cellfed/test/framework"
)

// TestDataToolsSeeARunningPlane starts kine as the plane does on each
// backend and checks, in turn, that a data tool's exclusive hold is
// refused while it runs (naming the holder and how to stop it), that a
// plane refuses to start while a tool holds the store, and that the tool
// gets the store once the plane stopped (nothing stale is left behind).
func TestDataToolsSeeARunningPlane(t *testing.T) {
	for name, opts := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o := opts(t)
			d, err := o.Database()
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if _, err := storage.Start(ctx, o); err != nil {
				t.Fatalf("starting kine: %v", err)
			}
			// A second replica on the same store is no conflict.
			replicaCtx, stopReplica := context.WithCancel(context.Background())
			defer stopReplica()
			if name != "sqlite" {
				r := *o
				r.DataDir = t.TempDir()
				if _, err := storage.Start(replicaCtx, &r); err != nil {
					t.Fatalf("starting a second replica: %v", err)
				}
			}

			release, err := storage.HoldExclusive(context.Background(), d, "test tool")
			var inUse *storage.InUseError
			if !errors.As(err, &inUse) {
				if release != nil {
					release()
				}
				t.Fatalf("a tool took the store of a running plane: err = %v, want an InUseError", err)
			}
			msg := err.Error()
			wantHolder := map[string]string{
				"sqlite":   fmt.Sprintf("cellfed-apiserver pid %d", os.Getpid()),
				"mariadb":  "MySQL connection",
				"postgres": fmt.Sprintf("cellfed-apiserver pid %d", os.Getpid()),
			}[name]
			for _, want := range []string{d.Description, "in use by a running cellfed-apiserver", wantHolder, "stop every cellfed-apiserver using this database"} {
				if !strings.Contains(msg, want) {
					t.Errorf("the refusal %q does not say %q", msg, want)
				}
			}
			if name != "sqlite" && len(inUse.Holders) != 2 {
				t.Errorf("the refusal names %d holders, want both replicas: %q", len(inUse.Holders), inUse.Holders)
			}

			stopReplica()
			cancel()
			// The plane lets go as it stops: the tool waits a moment for it.
			release, err = storage.HoldExclusive(context.Background(), d, "test tool")
			if err != nil {
				t.Fatalf("the stopped plane still holds the store: %v", err)
			}
			o2 := *o
			o2.DataDir = t.TempDir()
			if name == "sqlite" {
				o2.Endpoint = "sqlite://" + d.SQLitePath
			}
			ctx2, cancel2 := context.WithTimeout(context.Background(), time.Minute)
			defer cancel2()
			wantTool := "held by a data tool (test tool pid "
			if name == "mariadb" {
				wantTool = "held by a data tool (MySQL connection " // MySQL's process list does not name programs
			}
			if _, err := storage.Start(ctx2, &o2); err == nil || !strings.Contains(err.Error(), wantTool) {
				t.Errorf("a plane started while a tool held its store: %v", err)
			}
			release()
			if _, err := storage.Start(ctx2, &o2); err != nil {
				t.Fatalf("a plane did not start once the tool let go: %v", err)
			}
		})
	}
}

// TestPlaneHoldsAPostgresDatabaseItCreates starts kine on a PostgreSQL
// database that does not exist yet: the plane creates it (as kine would)
// to hold it before kine starts, and a tool then sees it held.
func TestPlaneHoldsAPostgresDatabaseItCreates(t *testing.T) {
	o := storage.NewOptions()
	o.DataDir = t.TempDir()
	o.Endpoint = framework.NewPostgresDatabase(t)
	d, err := o.Database()
	if err != nil {
		t.Fatal(err)
	}
	name := d.Description[strings.LastIndex(d.Description, "/")+1:]
	admin, err := sql.Open("pgx", "postgres://postgres@"+framework.SharedPostgresAddr()+"/postgres?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec(`DROP DATABASE "` + name + `" WITH (FORCE)`); err != nil {
		t.Fatal(err)
	}
	startKine(t, o)
	release, err := storage.HoldExclusive(context.Background(), d, "test tool")
	if err == nil {
		release()
		t.Fatal("a tool took the store of a plane that created its database")
	}
	if !strings.Contains(err.Error(), "in use by a running cellfed-apiserver") {
		t.Fatalf("the refusal: %v", err)
	}
}
