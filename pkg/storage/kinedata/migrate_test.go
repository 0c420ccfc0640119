package kinedata_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cellfed/cellfed/pkg/storage"
	"github.com/cellfed/cellfed/pkg/storage/kinedata"
	"github.com/cellfed/cellfed/test/framework"
)

// startKine runs the plane's kine on o until stop is called.
func startKine(t *testing.T, o *storage.Options) (c *clientv3.Client, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b, err := storage.Start(ctx, o)
	if err != nil {
		cancel()
		t.Fatalf("starting kine: %v", err)
	}
	c, err = clientv3.New(clientv3.Config{
		Endpoints:   b.Endpoints,
		DialTimeout: 10 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())},
	})
	if err != nil {
		cancel()
		t.Fatalf("etcd client: %v", err)
	}
	stop = func() { c.Close(); cancel() }
	t.Cleanup(stop)
	return c, stop
}

// fill writes creates, updates, deletes and a compaction: the rows a
// plane leaves (superseded rows, tombstones, the compaction marker).
func fill(t *testing.T, c *clientv3.Client, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		if _, err := c.Put(ctx, fmt.Sprintf("/registry/configmaps/default/cm-%04d", i), fmt.Sprintf("v1-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	var rev int64
	for i := 0; i < n; i += 3 {
		r, err := c.Put(ctx, fmt.Sprintf("/registry/configmaps/default/cm-%04d", i), fmt.Sprintf("v2-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		rev = r.Header.Revision
	}
	if _, err := c.Compact(ctx, rev-10); err != nil {
		t.Fatalf("compacting: %v", err)
	}
	for i := 1; i < n; i += 7 {
		key := fmt.Sprintf("/registry/configmaps/default/cm-%04d", i)
		// kine deletes only inside a transaction, as the API server does.
		g, err := c.Get(ctx, key)
		if err != nil || len(g.Kvs) != 1 {
			t.Fatalf("reading %s: %v", key, err)
		}
		r, err := c.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", g.Kvs[0].ModRevision)).
			Then(clientv3.OpDelete(key)).Else(clientv3.OpGet(key)).Commit()
		if err != nil || !r.Succeeded {
			t.Fatalf("deleting %s: %v", key, err)
		}
	}
}

type kv struct {
	value                string
	create, mod, version int64
}

func snapshot(t *testing.T, c *clientv3.Client) (map[string]kv, int64) {
	t.Helper()
	resp, err := c.Get(context.Background(), "/registry/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]kv{}
	for _, k := range resp.Kvs {
		out[string(k.Key)] = kv{string(k.Value), k.CreateRevision, k.ModRevision, k.Version}
	}
	return out, resp.Header.Revision
}

func TestMigrateResumesAfterInterruption(t *testing.T) {
	src := storage.NewOptions()
	src.DataDir = t.TempDir()
	src.CompactMinRetain = 10 // so that fill's compaction drops rows
	c, stop := startKine(t, src)
	fill(t, c, 300)
	want, wantRev := snapshot(t, c)
	stop()

	from, err := storage.DatabaseFor(src.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	dstOpts := storage.NewOptions()
	dstOpts.DataDir = t.TempDir()
	dstOpts.Endpoint = framework.NewDatabase(t)
	to, err := dstOpts.Database()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	errStop := errors.New("interrupted")
	batches := 0
	var out bytes.Buffer
	o := kinedata.MigrateOptions{From: from, To: to, Batch: 40, Out: &out, AfterBatch: func(int64) error {
		if batches++; batches == 3 {
			return errStop
		}
		return nil
	}}
	if _, err := kinedata.Migrate(ctx, o); !errors.Is(err, errStop) {
		t.Fatalf("the first run was not interrupted: %v", err)
	}
	o.AfterBatch = nil
	if _, err := kinedata.Migrate(ctx, o); !errors.Is(err, kinedata.ErrTargetNotEmpty) {
		t.Fatalf("a half-copied target was not refused without --resume: %v", err)
	}
	o.Mode = kinedata.StartResume
	res, err := kinedata.Migrate(ctx, o)
	if err != nil {
		t.Fatalf("resuming: %v\n%s", err, out.String())
	}
	t.Logf("%s", out.String())
	if res.Source.CompactRevision == 0 {
		t.Fatal("the source was not compacted: the test covers no compacted store")
	}
	if res.Copied >= res.Source.Rows {
		t.Fatalf("the resumed run copied %d of %d rows: it started over", res.Copied, res.Source.Rows)
	}

	c2, stop2 := startKine(t, dstOpts)
	got, gotRev := snapshot(t, c2)
	if gotRev != wantRev || len(got) != len(want) {
		t.Fatalf("target at revision %d with %d keys, source at %d with %d", gotRev, len(got), wantRev, len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s: target %+v, source %+v", k, got[k], v)
		}
	}
	// And back into a new data dir's SQLite, from the MariaDB copy, once
	// no kine serves it (migrate refuses a live store).
	stop2()
	back := storage.NewOptions()
	back.DataDir = t.TempDir() + "/plane"
	backDB, err := storage.DatabaseFor(back.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kinedata.Migrate(ctx, kinedata.MigrateOptions{From: to, To: backDB, Batch: 1000, Out: &out}); err != nil {
		t.Fatalf("migrating MariaDB into a new data dir: %v", err)
	}
	c3, stop3 := startKine(t, back)
	if got, rev := snapshot(t, c3); rev != wantRev || len(got) != len(want) {
		t.Fatalf("SQLite copy at revision %d with %d keys, source at %d with %d", rev, len(got), wantRev, len(want))
	}
	r3, err := c3.Put(ctx, "/registry/configmaps/default/after", "x")
	if err != nil {
		t.Fatal(err)
	}
	if r3.Header.Revision != wantRev+1 {
		t.Fatalf("the SQLite copy's next write got revision %d, want %d", r3.Header.Revision, wantRev+1)
	}
	stop3()

	c2, _ = startKine(t, dstOpts)
	r, err := c2.Put(ctx, "/registry/configmaps/default/after", "x")
	if err != nil {
		t.Fatal(err)
	}
	if r.Header.Revision <= wantRev {
		t.Fatalf("the target's next revision %d is not above the source's %d", r.Header.Revision, wantRev)
	}

	// Verification sees a changed byte.
	db := framework.OpenRawDatabase(t, "", dstOpts.Endpoint)
	if _, err := db.Exec(`UPDATE kine SET value = 'tampered' WHERE name = '/registry/configmaps/default/cm-0002'`); err != nil {
		t.Fatal(err)
	}
	srcStore, err := kinedata.OpenSource(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	defer srcStore.Close()
	dstStore, err := kinedata.OpenTarget(ctx, to)
	if err != nil {
		t.Fatal(err)
	}
	defer dstStore.Close()
	d, err := kinedata.Verify(ctx, srcStore, dstStore, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Changed) != 1 || d.Changed[0] != "/registry/configmaps/default/cm-0002" || len(d.Extra) != 1 {
		t.Fatalf("verification found %s", d)
	}
}

func TestRestoreStartsAboveEveryRevision(t *testing.T) {
	src := storage.NewOptions()
	src.DataDir = t.TempDir()
	c, _ := startKine(t, src)
	fill(t, c, 100)
	from, err := src.Database()
	if err != nil {
		t.Fatal(err)
	}
	file := t.TempDir() + "/b.kine.gz"
	ctx := context.Background()
	h, err := kinedata.Backup(ctx, kinedata.BackupOptions{From: from, To: file}) // while kine runs
	if err != nil {
		t.Fatal(err)
	}
	want, wantRev := snapshot(t, c)
	if h.MaxRevision != wantRev {
		t.Fatalf("backup at revision %d, store at %d", h.MaxRevision, wantRev)
	}

	for _, b := range framework.Backends[1:] {
		t.Run(b.Name, func(t *testing.T) {
			o := storage.NewOptions()
			o.DataDir = t.TempDir()
			o.Endpoint = b.Endpoint(t)
			// A store that went further than the backup, then is lost.
			c2, stop := startKine(t, o)
			fill(t, c2, 150)
			_, lostRev := snapshot(t, c2)
			stop()
			to, err := o.Database()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := kinedata.Restore(ctx, kinedata.RestoreOptions{From: file, To: to}); err == nil {
				t.Fatal("restored into a non-empty store without --force")
			}
			res, err := kinedata.Restore(ctx, kinedata.RestoreOptions{From: file, To: to, Force: true, Gap: 5})
			if err != nil {
				t.Fatal(err)
			}
			if res.Revision <= lostRev {
				t.Fatalf("restored store starts at %d, not above the lost store's %d", res.Revision, lostRev)
			}
			c3, _ := startKine(t, o)
			got, rev := snapshot(t, c3)
			if rev != res.Revision || len(got) != len(want) {
				t.Fatalf("restored store at %d with %d keys, want %d with %d", rev, len(got), res.Revision, len(want))
			}
			for k, v := range want {
				if got[k] != v {
					t.Fatalf("%s: restored %+v, backed up %+v", k, got[k], v)
				}
			}
			// Every revision a client may hold is compacted: it relists.
			for _, old := range []int64{wantRev, lostRev, res.Revision - 1} {
				if _, err := c3.Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithRev(old)); !errors.Is(err, rpctypes.ErrCompacted) {
					t.Fatalf("a read at revision %d answered %v, want compacted", old, err)
				}
			}
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			w := c3.Watch(wctx, "/registry/", clientv3.WithPrefix(), clientv3.WithRev(res.Revision+1))
			if _, err := c3.Put(ctx, "/registry/configmaps/default/after", "x"); err != nil {
				t.Fatal(err)
			}
			ev := <-w
			if ev.Err() != nil || len(ev.Events) != 1 || ev.Events[0].Kv.ModRevision != res.Revision+1 {
				t.Fatalf("a watch from the restored revision got %+v (err %v)", ev.Events, ev.Err())
			}
		})
	}
}
