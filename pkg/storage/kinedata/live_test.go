package kinedata_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cellfed/cellfed/pkg/storage"
	"github.com/cellfed/cellfed/pkg/storage/kinedata"
	"github.com/cellfed/cellfed/test/framework"
)

// TestDataToolsRefuseALiveStore runs restore --force into, and migrate
// out of and into, a store a running kine serves, on each backend: each
// refuses, saying what holds the store and how to stop it, writes
// nothing, and kine keeps serving. A backup of the live store still
// works (it reads one snapshot by design).
func TestDataToolsRefuseALiveStore(t *testing.T) {
	ctx := context.Background()
	for _, b := range framework.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			o := storage.NewOptions()
			o.DataDir = t.TempDir()
			o.Endpoint = b.Endpoint(t)
			c, _ := startKine(t, o)
			fill(t, c, 30)
			live, err := o.Database()
			if err != nil {
				t.Fatal(err)
			}
			backup := filepath.Join(t.TempDir(), "b.kine.gz")
			if _, err := kinedata.Backup(ctx, kinedata.BackupOptions{From: live, To: backup}); err != nil {
				t.Fatalf("backing up the live store: %v", err)
			}
			before, rev := snapshot(t, c)

			other, err := storage.DatabaseFor(filepath.Join(t.TempDir(), "other"))
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			for _, tc := range []struct {
				name string
				run  func() error
				want string
			}{
				{"restore --force into it", func() error {
					_, err := kinedata.Restore(ctx, kinedata.RestoreOptions{From: backup, To: live, Force: true})
					return err
				}, "refusing to restore: " + live.Description + " is in use by a running cellfed-apiserver"},
				{"migrate from it", func() error {
					_, err := kinedata.Migrate(ctx, kinedata.MigrateOptions{From: live, To: other, Batch: 10, Out: &out})
					return err
				}, "refusing to migrate: --from: " + live.Description + " is in use by a running cellfed-apiserver"},
				{"migrate --force into it", func() error {
					_, err := kinedata.Migrate(ctx, kinedata.MigrateOptions{From: other, To: live, Mode: kinedata.StartForce, Batch: 10, Out: &out})
					return err
				}, "refusing to migrate: --to: " + live.Description + " is in use by a running cellfed-apiserver"},
			} {
				err := tc.run()
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "stop every cellfed-apiserver using this database") {
					t.Errorf("%s: %v, want a refusal saying %q and how to stop the plane", tc.name, err, tc.want)
				}
			}
			if other.Exists() {
				t.Errorf("migrate from the live store created its target %s", other.SQLitePath)
			}
			// The store is untouched and kine serves it and takes writes.
			after, afterRev := snapshot(t, c)
			if afterRev != rev || len(after) != len(before) {
				t.Fatalf("the live store moved from revision %d (%d keys) to %d (%d keys)", rev, len(before), afterRev, len(after))
			}
			r, err := c.Put(ctx, "/registry/configmaps/default/after", "x")
			if err != nil || r.Header.Revision != rev+1 {
				t.Fatalf("a write after the refusals: %v (revision %v, want %d)", err, r, rev+1)
			}
		})
	}
}
