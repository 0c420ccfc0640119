package kinedata_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cellfed/cellfed/pkg/storage"
	"github.com/cellfed/cellfed/pkg/storage/kinedata"
)

// TestSplitKeepsRevisions moves the config maps of a store that also
// holds leases into a database of their own: every config map keeps its
// value and revisions, no lease moves, the new store starts at the
// source's revision and writes above it, and a second split into the
// now non-empty database is refused without Force.
func TestSplitKeepsRevisions(t *testing.T) {
	ctx := context.Background()
	src := storage.NewOptions()
	src.DataDir = t.TempDir()
	c, stop := startKine(t, src)
	fill(t, c, 60)
	for _, name := range []string{"a", "b"} {
		if _, err := c.Put(ctx, "/registry/leases/kube-system/"+name, "lease"); err != nil {
			t.Fatal(err)
		}
	}
	want, srcRev := snapshot(t, c)
	_, srcOldErr := c.Get(ctx, "/registry/configmaps/default/cm-0000", clientv3.WithRev(2))
	stop()

	from, err := storage.DatabaseFor(src.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	targetPath := filepath.Join(t.TempDir(), "cm.db")
	to, err := storage.DatabaseFor("sqlite://" + targetPath)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res, err := kinedata.Split(ctx, kinedata.SplitOptions{From: from, To: to, Prefix: "/registry/configmaps/", Batch: 7, Out: &out})
	if err != nil {
		t.Fatalf("split: %v\n%s", err, out.String())
	}
	if res.Revision != srcRev {
		t.Errorf("split started the target at revision %d, the source is at %d", res.Revision, srcRev)
	}

	dst := storage.NewOptions()
	dst.DataDir = t.TempDir()
	dst.Endpoint = "sqlite://" + targetPath
	c2, _ := startKine(t, dst)
	got, dstRev := snapshot(t, c2)
	if dstRev < srcRev {
		t.Errorf("the split store is at revision %d, below the source's %d: clients would hold revisions it has not reached", dstRev, srcRev)
	}
	for k, v := range want {
		if !strings.HasPrefix(k, "/registry/configmaps/") {
			if _, ok := got[k]; ok && k != "/registry/health" { // kine writes its own
				t.Errorf("%s moved with the config maps", k)
			}
			continue
		}
		if got[k] != v {
			t.Errorf("%s: got %+v, want %+v", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok && k != "/registry/health" {
			t.Errorf("%s in the split store, not in the source", k)
		}
	}
	r, err := c2.Put(ctx, "/registry/configmaps/default/after", "x")
	if err != nil {
		t.Fatal(err)
	}
	if r.Header.Revision <= srcRev {
		t.Errorf("a write to the split store got revision %d, not above the source's %d", r.Header.Revision, srcRev)
	}
	// An old revision reads the same: compacted in both, or in neither.
	if _, err := c2.Get(ctx, "/registry/configmaps/default/cm-0000", clientv3.WithRev(2)); (err == nil) != (srcOldErr == nil) {
		t.Errorf("reading revision 2: the split store says %v, the source said %v", err, srcOldErr)
	}

	if _, err := kinedata.Split(ctx, kinedata.SplitOptions{From: from, To: to, Prefix: "/registry/configmaps/", Batch: 7, Out: &out}); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("a second split into the non-empty target: %v, want a refusal naming --force", err)
	}
}
