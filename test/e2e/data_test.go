package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/cellfed/cellfed/test/framework"
)

// dataNamespace holds the objects of the data tests.
const dataNamespace = "data"

// TestDataMigrateBackupRestore moves one plane's store from SQLite to
// MariaDB and to PostgreSQL with `cellfed-apiserver migrate`, then backs
// the PostgreSQL store up while the plane runs, writes 500 more times,
// and restores the backup. A client-go informer runs through all of it,
// and a `kubectl get --watch` (restarted when the plane stops, as
// kubectl's watch ends with its server) runs across the restore:
//   - after each migration every object is equal with the same
//     resourceVersion, the informer did not relist and missed nothing;
//   - after the restore both end equal to the restored state (the informer
//     relisted once, on 410 Gone) and see an object written after it;
//   - restore refuses a non-empty store without --force and another
//     plane's PKI.
//
// It moves 2,000 objects. Its time is four plane starts and three stops;
// on 2026-11-26 at load 20 (with 200 objects) it took 163–208 s, most of
// it plane starts (14–26 s each) and client-go's reflector backoff after
// the plane was down (up to 85 s before the informer came back).
func TestDataMigrateBackupRestore(t *testing.T) {
	t.Parallel()
	const objects = 2000
	dir := t.TempDir()
	port := framework.FreePort(t)
	plane := startPlaneAt(t, dir, port, "")
	ctx := context.Background()
	c := plane.Client(t)
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: dataNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	createCMs(t, c, objects, 8)
	t.Logf("%d objects created in %s", objects, time.Since(start).Round(time.Millisecond))
	if _, err := c.CoreV1().Secrets(dataNamespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "token"}, StringData: map[string]string{"token": "data-canary"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The plane's root-CA publisher adds kube-root-ca.crt to the new
	// namespace on its own time: wait for it, or it could land between a
	// snapshot and the stop before a migration.
	eventually(t, "kube-root-ca.crt in "+dataNamespace, func() (bool, string) {
		_, err := c.CoreV1().ConfigMaps(dataNamespace).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	inf := startCountingInformer(t, plane.Client(t))
	inf.waitEqual(t, c, "the informer's first list")

	bin := framework.Binary(t, "cellfed-apiserver")
	run := func(args ...string) string {
		t.Helper()
		start := time.Now()
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("cellfed-apiserver %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("cellfed-apiserver %s (%s):\n%s", args[0], time.Since(start).Round(time.Millisecond), out)
		return string(out)
	}

	endpoint := ""
	for _, b := range framework.Backends[1:] { // mariadb, postgres
		before := listCMs(t, c)
		lists := inf.lists.Load()
		stopPlane(t, plane)
		target := b.Endpoint(t)
		from := dir
		if endpoint != "" {
			from = endpoint
		}
		run("migrate", "--from", from, "--to", target, "--batch", "200")
		endpoint = target
		plane = startPlaneAt(t, dir, port, endpoint)
		if got := listCMs(t, c); !equalMaps(got, before) {
			t.Fatalf("%s: after the migration the objects (name → resourceVersion/value) differ: %s", b.Name, framework.DiffViews(got, before))
		}
		if s, err := c.CoreV1().Secrets(dataNamespace).Get(ctx, "token", metav1.GetOptions{}); err != nil || string(s.Data["token"]) != "data-canary" {
			t.Fatalf("%s: the encrypted secret does not read back after the migration: %v", b.Name, err)
		}
		createCM(t, c, "after-"+b.Name, "v1")
		inf.waitEqual(t, c, "the informer after migrating to "+b.Name)
		if n := inf.lists.Load() - lists; n > 1 {
			t.Fatalf("%s: the informer listed %d times across the migration, want at most 1:\n%s", b.Name, n, inf.calls())
		}
	}

	// Backup while the plane runs, 500 writes, restore.
	backup := filepath.Join(t.TempDir(), "plane.kine.gz")
	run("backup", "--data-dir", dir, "--datastore-endpoint", endpoint, "--to", backup)
	restored := listCMs(t, c)
	watchLog := startKubectlWatchLoop(t, plane.Kubeconfig)
	start = time.Now()
	for i := range 500 {
		name := fmt.Sprintf("cm-%04d", i%objects)
		if i%5 == 0 {
			createCM(t, c, fmt.Sprintf("later-%04d", i), "v1")
			continue
		}
		cm, err := c.CoreV1().ConfigMaps(dataNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["v"] = fmt.Sprintf("w%d", i)
		if _, err := c.CoreV1().ConfigMaps(dataNamespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("500 writes in %s", time.Since(start).Round(time.Millisecond))
	inf.waitEqual(t, c, "the informer after 500 writes")
	lists := inf.lists.Load()
	stopPlane(t, plane)

	if out, err := exec.Command(bin, "restore", "--from", backup, "--to", endpoint, "--pki-dir", filepath.Join(dir, "pki"), "--kms-key-file", filepath.Join(dir, "kms", "keys")).CombinedOutput(); err == nil || !strings.Contains(string(out), "--force") {
		t.Fatalf("restore into a non-empty store without --force: %v\n%s", err, out)
	}
	other := t.TempDir()
	run("init", "--dir", other)
	if out, err := exec.Command(bin, "restore", "--from", backup, "--to", endpoint, "--force", "--pki-dir", other).CombinedOutput(); err == nil || !strings.Contains(string(out), "another CA") {
		t.Fatalf("restore with another plane's PKI: %v\n%s", err, out)
	}
	run("restore", "--from", backup, "--to", endpoint, "--force", "--pki-dir", filepath.Join(dir, "pki"), "--kms-key-file", filepath.Join(dir, "kms", "keys"))
	c = startPlaneAt(t, dir, port, endpoint).Client(t) // a new client on the restored plane
	if got := listCMs(t, c); !equalMaps(got, restored) {
		t.Fatalf("the restored plane does not serve the backed-up objects: %s", framework.DiffViews(got, restored))
	}
	createCM(t, c, "after-restore", "v1")
	inf.waitEqual(t, c, "the informer after the restore")
	if n := inf.lists.Load() - lists; n != 1 {
		t.Errorf("the informer listed %d times across the restore, want 1 (a relist on 410 Gone):\n%s", n, inf.calls())
	}
	want := map[string]string{}
	for name, v := range listCMs(t, c) {
		v = v[strings.Index(v, "/")+1:]
		if v == "" {
			v = "<none>" // kubectl's custom column for a missing field (kube-root-ca.crt)
		}
		want[name] = v
	}
	eventually(t, "kubectl get --watch to show the restored state and the object written after the restore", func() (bool, string) {
		got := watchLog.state()
		d := framework.DiffViews(got, want)
		return d == "", "kubectl's view: " + d
	})
}

// stopPlane stops the plane as an operator would (SIGTERM).
// stopPlane stops a plane with SIGTERM while clients watch it: it must
// end the watches and exit well within a pod's termination grace period
// (it took 60 s before --shutdown-watch-termination-grace-period had a
// default).
func stopPlane(t *testing.T, p *framework.Server) {
	t.Helper()
	start := time.Now()
	p.Signal(syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.Wait(ctx); errors.Is(err, context.DeadlineExceeded) {
		p.Kill()
		t.Errorf("the plane did not exit within 20 s of SIGTERM with watches open; killed it")
	}
	t.Logf("plane stopped in %s", time.Since(start).Round(time.Millisecond))
}

// startPlaneAt starts a plane on a fixed port, so that clients built
// before a restart (the informer, kubectl) reach the next one.
func startPlaneAt(t *testing.T, dir string, port int, endpoint string) *framework.Server {
	t.Helper()
	start := time.Now()
	defer func() { t.Logf("plane on %q ready in %s", endpoint, time.Since(start).Round(time.Millisecond)) }()
	// It writes ConfigMaps and a Secret only: no federated types.
	o := framework.PlaneOptions{Endpoint: endpoint, Args: []string{"--default-federated-types="}}
	p := framework.StartProcess(t, "cellfed-apiserver", filepath.Join(dir, "apiserver.log"),
		framework.Binary(t, "cellfed-apiserver"), framework.PlaneArgs(dir, port, o)...)
	s := &framework.Server{Process: p, DataDir: dir, Port: port, Kubeconfig: filepath.Join(dir, "admin.kubeconfig")}
	if err := s.WaitReady(context.Background()); err != nil {
		t.Fatalf("cellfed-apiserver did not become ready: %v\n%s", err, p.Tail(30))
	}
	return s
}

func createCM(t *testing.T, c kubernetes.Interface, name, v string) {
	t.Helper()
	_, err := c.CoreV1().ConfigMaps(dataNamespace).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": v},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating %s: %v", name, err)
	}
}

// createCMs creates cm-0000 … cm-<n-1> with value v1, workers at a time.
func createCMs(t *testing.T, c kubernetes.Interface, n, workers int) {
	t.Helper()
	names := make(chan string)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range names {
				_, err := c.CoreV1().ConfigMaps(dataNamespace).Create(context.Background(), &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": "v1"},
				}, metav1.CreateOptions{})
				if err != nil {
					errs <- fmt.Errorf("creating %s: %w", name, err)
					return
				}
			}
		}()
	}
	func() {
		defer close(names)
		for i := range n {
			select {
			case names <- fmt.Sprintf("cm-%04d", i):
			case err := <-errs:
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// listCMs is the server's view: name → "resourceVersion/value".
func listCMs(t *testing.T, c kubernetes.Interface) map[string]string {
	t.Helper()
	l, err := c.CoreV1().ConfigMaps(dataNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, cm := range l.Items {
		out[cm.Name] = cm.ResourceVersion + "/" + cm.Data["v"]
	}
	return out
}

func equalMaps(a, b map[string]string) bool { return framework.DiffViews(a, b) == "" }

// countingInformer is a client-go informer on the data namespace's
// config maps that counts its lists (a relist is a list after the first).
type countingInformer struct {
	store cache.Store
	lists atomic.Int64

	mu          sync.Mutex
	watchListed bool     // the last call was a watch-list
	log         []string // calls, for failure messages
}

func startCountingInformer(t *testing.T, c kubernetes.Interface) *countingInformer {
	t.Helper()
	ci := &countingInformer{}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			l, err := c.CoreV1().ConfigMaps(dataNamespace).List(ctx, o)
			ci.mu.Lock()
			defer ci.mu.Unlock()
			// A list right after a watch-list attempt is its fallback: one relist.
			if err == nil && !ci.watchListed {
				ci.lists.Add(1)
			}
			ci.watchListed = false
			ci.log = append(ci.log, fmt.Sprintf("list at %q: %v", o.ResourceVersion, err))
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w, err := c.CoreV1().ConfigMaps(dataNamespace).Watch(ctx, o)
			ci.mu.Lock()
			defer ci.mu.Unlock()
			listing := o.SendInitialEvents != nil && *o.SendInitialEvents
			if listing && err == nil {
				ci.lists.Add(1) // a watch-list is a list
				ci.watchListed = true
			}
			ci.log = append(ci.log, fmt.Sprintf("watch from %q (list %v): %v", o.ResourceVersion, listing, err))
			return w, err
		},
	}
	inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	ci.store = inf.GetStore()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go inf.RunWithContext(ctx)
	return ci
}

func (ci *countingInformer) calls() string {
	ci.mu.Lock()
	defer ci.mu.Unlock()
	return strings.Join(ci.log, "\n")
}

// waitEqual waits until the informer holds what the server lists.
func (ci *countingInformer) waitEqual(t *testing.T, c kubernetes.Interface, what string) {
	t.Helper()
	start := time.Now()
	defer func() { t.Logf("%s equal after %s", what, time.Since(start).Round(time.Millisecond)) }()
	eventually(t, what+" to equal the server's list", func() (bool, string) {
		got := map[string]string{}
		for _, o := range ci.store.List() {
			cm := o.(*corev1.ConfigMap)
			got[cm.Name] = cm.ResourceVersion + "/" + cm.Data["v"]
		}
		d := framework.DiffViews(got, listCMs(t, c))
		return d == "", d
	})
}

// kubectlWatch is `kubectl get --watch` run again whenever it ends (it
// ends when its server stops); each run starts with a marker line, and
// its view is what the last run printed.
type kubectlWatch struct {
	mu   sync.Mutex
	runs []map[string]string
}

func startKubectlWatchLoop(t *testing.T, kubeconfig string) *kubectlWatch {
	t.Helper()
	kw := &kubectlWatch{}
	ctx, cancel := context.WithCancel(context.Background())
	script := `while :; do echo '--- start'; "$KUBECTL" --kubeconfig="$KUBECONFIG" -n ` + dataNamespace +
		` get configmaps --watch --no-headers -o 'custom-columns=N:.metadata.name,V:.data.v' 2>/dev/null; sleep 0.2; done`
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Env = append(os.Environ(), "KUBECTL="+framework.KubectlBinary(t), "KUBECONFIG="+kubeconfig)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			kw.mu.Lock()
			if line == "--- start" {
				kw.runs = append(kw.runs, map[string]string{})
			} else if f := strings.Fields(line); len(f) == 2 && len(kw.runs) > 0 {
				kw.runs[len(kw.runs)-1][f[0]] = f[1]
			}
			kw.mu.Unlock()
		}
	}()
	return kw
}

// state is the view of the last run that printed anything.
func (kw *kubectlWatch) state() map[string]string {
	kw.mu.Lock()
	defer kw.mu.Unlock()
	for i := len(kw.runs) - 1; i >= 0; i-- {
		if len(kw.runs[i]) > 0 {
			out := make(map[string]string, len(kw.runs[i]))
			for k, v := range kw.runs[i] {
				out[k] = v
			}
			return out
		}
	}
	return nil
}
