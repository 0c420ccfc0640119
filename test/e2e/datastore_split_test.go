package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/cellfed/cellfed/test/framework"
)

// TestOnlineSplit moves the FederatedConfigMaps of a running plane from its
// SQLite onto a MariaDB database of their own with `cellfed-apiserver
// split` while releases keep coming: writes are refused (and retried)
// only while frozen, the plane restarts with the override, `split
// --finish` lifts the freeze, and afterwards every acknowledged release is
// served, stored in the new database only, and on the member; an
// informer that ran throughout ends equal to the API.
func TestOnlineSplit(t *testing.T) {
	t.Parallel()
	f := startFederationWith(t, 1, framework.PlaneOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	target := framework.NewDatabase(t)
	const resource = "types.kubefed.io/federatedconfigmaps"
	gvr := schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta2", Resource: "federatedconfigmaps"}

	// An informer through the whole split: it must end equal to the API.
	inf := dynamicinformer.NewFilteredDynamicSharedInformerFactory(f.dyn, 0, "shop", nil).ForResource(gvr).Informer()
	go inf.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}

	// The writer releases live-NNN (v=1), then v=2 of the one before, and
	// retries what the freeze refuses.
	var mu sync.Mutex
	acked := map[string]string{} // name → value the API acknowledged
	refused := 0
	stop := make(chan struct{})
	done := make(chan struct{})
	apply := func(name, v string) {
		for {
			out, err := f.kubectl.Run(ctx, configMap("shop", name, fmt.Sprintf("v: %q", v), []string{"rz00a"}, ""), "apply", "-f", "-")
			if err == nil {
				mu.Lock()
				acked[name] = v
				mu.Unlock()
				return
			}
			if !strings.Contains(out+err.Error(), "frozen") && !strings.Contains(out+err.Error(), "connection refused") &&
				!strings.Contains(out+err.Error(), "EOF") && !strings.Contains(out+err.Error(), "reset by peer") {
				t.Errorf("applying %s: %v: %s", name, err, out)
				return
			}
			mu.Lock()
			refused++
			mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			apply(fmt.Sprintf("live-%03d", i), "1")
			if i > 0 {
				apply(fmt.Sprintf("live-%03d", i-1), "2")
			}
		}
	}()
	ackedCount := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	eventually(t, "10 releases before the split", func() (bool, string) { return ackedCount() >= 10, fmt.Sprint(ackedCount()) })

	split := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, framework.Binary(t, "cellfed-apiserver"), append([]string{"split", "--kubeconfig=" + f.plane.Kubeconfig,
			"--resource=" + resource, "--to=" + target}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("cellfed-apiserver split %v: %v\n%s", args, err, out)
		}
		t.Logf("split %v:\n%s", args, out)
		return string(out)
	}
	start := time.Now()
	split("--from=" + f.plane.DataDir)
	f.plane.Stop(30 * time.Second)
	if err := f.plane.RestartWith("--datastore-override=" + resource + "=" + target); err != nil {
		t.Fatal(err)
	}
	if err := f.plane.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	split("--finish")
	frozen := time.Since(start)
	before := ackedCount()
	eventually(t, "10 releases after the split", func() (bool, string) { return ackedCount() >= before+10, fmt.Sprint(ackedCount()) })
	close(stop)
	<-done

	mu.Lock()
	want := make(map[string]string, len(acked))
	for k, v := range acked {
		want[k] = v
	}
	t.Logf("%d objects released, %d writes refused while frozen and retried; frozen for %s (split, restart, finish)", len(want), refused, frozen.Round(time.Millisecond))
	mu.Unlock()

	values := func(items []*unstructured.Unstructured) map[string]string {
		got := map[string]string{}
		for _, o := range items {
			v, _, _ := unstructured.NestedString(o.Object, "spec", "template", "data", "v")
			got[o.GetName()] = v
		}
		return got
	}
	eventually(t, "the API serves every acknowledged release", func() (bool, string) {
		l, err := f.dyn.Resource(gvr).Namespace("shop").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var items []*unstructured.Unstructured
		for i := range l.Items {
			items = append(items, &l.Items[i])
		}
		return mapsEqual(values(items), want), diffValues(values(items), want)
	})
	eventually(t, "the informer that ran throughout holds every release", func() (bool, string) {
		var items []*unstructured.Unstructured
		for _, o := range inf.GetStore().List() {
			items = append(items, o.(*unstructured.Unstructured))
		}
		return mapsEqual(values(items), want), diffValues(values(items), want)
	})
	for name, v := range want {
		eventually(t, "configmap "+name+" released to member-0", func() (bool, string) {
			cm, err := f.memberKube[0].CoreV1().ConfigMaps("shop").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return cm.Data["v"] == v, fmt.Sprint(cm.Data)
		})
	}
	// Stored in the new database; the main one got no row of them after
	// the split.
	newDB := framework.OpenRawDatabase(t, filepath.Join(t.TempDir(), "unused"), target)
	got := liveNames(t, newDB, fedCMPrefix, "live-")
	if len(got) != len(want) {
		t.Errorf("the new database holds %d FederatedConfigMaps, want %d", len(got), len(want))
	}
	mainDB := framework.OpenRawDatabase(t, f.plane.DataDir, "")
	last := liveNames(t, mainDB, fedCMPrefix, "live-")
	if len(last) >= len(want) {
		t.Errorf("the main database holds %d FederatedConfigMaps, as many as were released (%d): releases after the split went there", len(last), len(want))
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func diffValues(got, want map[string]string) string {
	var d []string
	for k, v := range want {
		if got[k] != v {
			d = append(d, fmt.Sprintf("%s: got %q want %q", k, got[k], v))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			d = append(d, k+": unexpected")
		}
	}
	if len(d) > 5 {
		d = append(d[:5], fmt.Sprintf("… %d more", len(d)-5))
	}
	return strings.Join(d, "; ")
}
