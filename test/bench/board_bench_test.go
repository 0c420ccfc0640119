package bench

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/cellfed/cellfed/test/framework"
)

// The board's size (issue 28): 500 objects × 20 cells.
var (
	boardObjects = envInt("CELLFED_BENCH_BOARD_OBJECTS", 500)
	boardCells   = envInt("CELLFED_BENCH_BOARD_CELLS", 20)
	boardBatch   = envInt("CELLFED_BENCH_BOARD_BATCH", 5)
)

const boardNamespace = "board-shop"

// BenchmarkBoard measures the release board (`cellfedctl board`) in
// Debian's Chromium against a real plane holding CELLFED_BENCH_BOARD_OBJECTS
// FederatedDeployments placed on CELLFED_BENCH_BOARD_CELLS cells. There are
// no members and no controller: the benchmark writes each object's
// per-cell status itself, as cellfed-controller would, so the board's
// feed (the plane's watches) is real and the members' work is not.
//
//   - render: from navigating to the board until every row is drawn, and
//     the script's own time to draw the first snapshot;
//   - a release of every object: the benchmark writes, with 8 writers,
//     each object's rollout (mask to the first CELLFED_BENCH_BOARD_BATCH
//     cells, a new image), then its status (the batch updating, then
//     ready). Meanwhile the page's event loop is probed every 50 ms (the
//     worst lateness is how long the page could not answer a click) and
//     the name filter is typed into (time to filter 500 rows);
//   - catch-up: from the last write until the board shows every object
//     released and ready in the batch and held back elsewhere.
func BenchmarkBoard(b *testing.B) {
	chromium := ""
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		b.Skip("no Chromium: install it with hack/chromium.sh")
	}
	for range b.N {
		benchBoard(b, chromium)
	}
}

func benchBoard(b *testing.B, chromium string) {
	ctx := context.Background()
	plane := framework.StartPlane(b, framework.PlaneOptions{})
	k := framework.Kubectl{Kubeconfig: plane.Kubeconfig}
	dyn := dynamic.NewForConfigOrDie(plane.RESTConfig(b))
	var fixture strings.Builder
	fixture.WriteString(tenantNamespace(boardNamespace, "acme"))
	fixture.WriteString("---\napiVersion: v1\nkind: Secret\nmetadata: {name: member-token, namespace: kube-federation-system}\nstringData: {token: not-a-real-token}\n")
	var cellFixture strings.Builder
	for i := range boardCells {
		fmt.Fprintf(&fixture, "---\napiVersion: core.kubefed.io/v1beta1\nkind: KubeFedCluster\nmetadata: {name: member-%d, namespace: kube-federation-system}\nspec: {apiEndpoint: \"https://127.0.0.1:1\", secretRef: {name: member-token}}\n", i)
		cellFixture.WriteString(cellYAML(boardNamespace, i))
	}
	k.MustRun(b, fixture.String(), "apply", "-f", "-")
	k.MustRun(b, cellFixture.String(), "apply", "-f", "-")
	cells := cellNames(boardCells)

	res := dyn.Resource(fedDeployments).Namespace(boardNamespace)
	start := time.Now()
	forEach(boardObjects, func(i int) {
		obj := federatedDeployment(i)
		var tops []any
		for _, c := range cells {
			tops = append(tops, map[string]any{"name": c})
		}
		obj.Object["spec"].(map[string]any)["placement"] = map[string]any{"topologyType": "cell", "topologies": tops}
		delete(obj.Object["spec"].(map[string]any), "overrides")
		created, err := res.Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			b.Errorf("creating %s: %v", obj.GetName(), err)
			return
		}
		writeBoardStatus(ctx, b, res, created, cells, func(string) (int64, bool) { return created.GetGeneration(), true })
	})
	if b.Failed() {
		b.FailNow()
	}
	b.Logf("%d objects × %d cells created with status in %s", boardObjects, boardCells, time.Since(start).Round(time.Millisecond))

	url := startBoardProcess(b, plane.Kubeconfig, boardNamespace)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(b.TempDir()), chromedp.WindowSize(1600, 1000))
	defer cancelAlloc()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(bctx); err != nil {
		b.Fatalf("starting Chromium: %v", err)
	}
	eval := func(expr string) any {
		tctx, cancel := context.WithTimeout(bctx, 30*time.Second)
		defer cancel()
		v, err := chromedp.Run(tctx, chromedp.Evaluate[any](expr, chromedp.EvalAwaitPromise))
		if err != nil {
			b.Fatalf("browser: %s: %v", expr, err)
		}
		return v
	}
	until := func(what, expr string, within time.Duration) time.Duration {
		t0 := time.Now()
		for time.Since(t0) < within {
			if v, ok := eval(expr).(bool); ok && v {
				return time.Since(t0)
			}
			time.Sleep(20 * time.Millisecond) // polling the page, with a deadline
		}
		b.Fatalf("browser: %s: not within %s; the board has %v", what, within, eval(`JSON.stringify({rows: document.querySelectorAll("#board tbody tr").length,
			ready: document.querySelectorAll("#board tbody .s-ready").length, held: document.querySelectorAll("#board tbody .s-held").length,
			updating: document.querySelectorAll("#board tbody .s-updating").length, released: document.querySelectorAll("#board tbody .s-released").length,
			stats: window.boardStats, text: document.body.innerText.slice(0, 300)})`))
		return 0
	}
	allRows := fmt.Sprintf(`document.querySelectorAll("#board tbody tr").length === %d && document.querySelectorAll("#board tbody .s-ready").length === %d`,
		boardObjects, boardObjects*boardCells)

	// Render, three times (the first warms Chromium up).
	base := strings.Split(url, "?")[0]
	var loads []time.Duration
	var scripts, painted []float64
	for range 3 {
		t0 := time.Now()
		if err := chromedp.Do(bctx, chromedp.Navigate(url)); err != nil {
			b.Fatalf("opening the board: %v", err)
		}
		until("every row drawn", allRows, 30*time.Second)
		loads = append(loads, time.Since(t0))
		scripts = append(scripts, eval(`window.boardStats.renderMs`).(float64))
		until("painted", `!!window.boardStats.paintedAt`, 10*time.Second)
		painted = append(painted, eval(`window.boardStats.paintedAt`).(float64))
		url = base + "w/" + boardNamespace // signed in: the cookie is set
	}
	// The release, with the page probed meanwhile.
	eval(`window.lag = 0; window.stalls = 0; window.lagLast = performance.now(); window.lagTimer = setInterval(() => {
		const now = performance.now(); const late = now - window.lagLast - 50; window.lag = Math.max(window.lag, late);
		if (late > 100) window.stalls++; window.lagLast = now; }, 50); true`)
	var filters []float64
	stopFilter := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-time.After(300 * time.Millisecond):
			case <-stopFilter:
				return
			}
			expr := fmt.Sprintf(`(() => { const f = document.getElementById("f-name"); const t0 = performance.now();
				f.value = %q; f.dispatchEvent(new Event("input")); const ms = performance.now() - t0;
				f.value = ""; f.dispatchEvent(new Event("input")); return ms; })()`, fmt.Sprintf("web-%04d", i%boardObjects))
			tctx, cancel := context.WithTimeout(bctx, 10*time.Second)
			v, err := chromedp.Run(tctx, chromedp.Evaluate[float64](expr))
			cancel()
			if err != nil {
				continue // the main goroutine's checks report a broken page
			}
			filters = append(filters, v)
		}
	}()
	batch := cells[:boardBatch]
	t0 := time.Now()
	forEach(boardObjects, func(i int) {
		name := fmt.Sprintf("web-%04d", i)
		obj, err := res.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			b.Errorf("reading %s: %v", name, err)
			return
		}
		var mask []any
		for _, c := range batch {
			mask = append(mask, map[string]any{"name": c})
		}
		spec := obj.Object["spec"].(map[string]any)
		spec["placementMask"] = map[string]any{"topologies": mask}
		containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "template", "spec", "containers")
		containers[0].(map[string]any)["image"] = "registry.example.com/shop/web:1.28.0"
		_ = unstructured.SetNestedSlice(obj.Object, containers, "spec", "template", "spec", "template", "spec", "containers")
		updated, err := res.Update(ctx, obj, metav1.UpdateOptions{})
		if err != nil {
			b.Errorf("releasing %s: %v", name, err)
			return
		}
		gen := updated.GetGeneration()
		old := func(c string) (int64, bool) { return gen - 1, false }
		writeBoardStatus(ctx, b, res, updated, cells, func(c string) (int64, bool) {
			if inBatch(c, batch) {
				return gen, false // updating: not ready yet
			}
			return old(c)
		})
		latest, err := res.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			b.Errorf("reading %s: %v", name, err)
			return
		}
		writeBoardStatus(ctx, b, res, latest, cells, func(c string) (int64, bool) {
			if inBatch(c, batch) {
				return gen, true
			}
			return old(c)
		})
	})
	writes := time.Since(t0)
	released := fmt.Sprintf(`document.querySelectorAll("#board tbody td[data-cell='%s'] .s-ready").length === %d && document.querySelectorAll("#board tbody td[data-cell='%s'] .s-held").length === %d`,
		batch[0], boardObjects, cells[len(cells)-1], boardObjects)
	catchUp := until("the release on the board", released, 60*time.Second)
	close(stopFilter)
	<-done
	lag := eval(`clearInterval(window.lagTimer); window.lag`).(float64)
	stalls := eval(`window.stalls`).(float64)
	snapshots := eval(`window.boardStats.snapshots`).(float64)
	maxDelta := eval(`window.boardStats.maxDeltaMs`).(float64)
	deltas := eval(`window.boardStats.deltas`).(float64)
	if b.Failed() {
		b.FailNow()
	}
	var maxFilter float64
	for _, f := range filters {
		maxFilter = max(maxFilter, f)
	}
	b.Logf("board of %d objects × %d cells: load to every row drawn %v (first, warm-up) %v %v (seen by polling from Go); in the page, navigation to painted %.0f/%.0f/%.0f ms, of which the script's draw of the snapshot %.0f/%.0f/%.0f ms",
		boardObjects, boardCells, loads[0].Round(time.Millisecond), loads[1].Round(time.Millisecond), loads[2].Round(time.Millisecond),
		painted[0], painted[1], painted[2], scripts[0], scripts[1], scripts[2])
	b.Logf("release of all %d (3 writes each, %d writes in %s): %0.f deltas, the slowest applied in %.0f ms; worst event-loop lateness %.0f ms (%.0f stalls over 100 ms; %.0f snapshots: 1 means no reconnect); name filter over %d rows %d× during it, slowest %.1f ms; board caught up %s after the last write",
		boardObjects, 3*boardObjects, writes.Round(time.Millisecond), deltas, maxDelta, lag, stalls, snapshots, boardObjects, len(filters), maxFilter, catchUp.Round(time.Millisecond))
	b.ReportMetric(float64(max(loads[1], loads[2]).Milliseconds()), "load-ms")
	b.ReportMetric(max(painted[1], painted[2]), "painted-ms")
	b.ReportMetric(max(scripts[1], scripts[2]), "draw-ms")
	b.ReportMetric(lag, "max-lag-ms")
	b.ReportMetric(maxDelta, "max-delta-ms")
	b.ReportMetric(float64(catchUp.Milliseconds()), "catch-up-ms")
}

func inBatch(c string, batch []string) bool {
	for _, x := range batch {
		if x == c {
			return true
		}
	}
	return false
}

// writeBoardStatus writes obj's status as cellfed-controller would: per
// cell the generation it runs and whether it is ready (the cells outside
// the mask HeldBack).
func writeBoardStatus(ctx context.Context, b *testing.B, res dynamic.ResourceInterface, obj *unstructured.Unstructured, cells []string, run func(cell string) (gen int64, ready bool)) {
	mask := map[string]bool{}
	tops, hasMask, _ := unstructured.NestedSlice(obj.Object, "spec", "placementMask", "topologies")
	for _, t := range tops {
		mask[t.(map[string]any)["name"].(string)] = true
	}
	var sts []any
	for _, c := range cells {
		gen, ready := run(c)
		status := "OK"
		if hasMask && !mask[c] {
			status, ready = "HeldBack", true
		}
		readyReplicas := int64(0)
		if ready {
			readyReplicas = 3
		}
		sts = append(sts, map[string]any{"name": c, "cluster": boardNamespace + "." + c, "status": status, "generation": gen, "ready": ready,
			"remoteStatus": map[string]any{"replicas": int64(3), "readyReplicas": readyReplicas}})
	}
	obj.Object["status"] = map[string]any{"observedGeneration": obj.GetGeneration(), "topologies": sts}
	if _, err := res.UpdateStatus(ctx, obj, metav1.UpdateOptions{}); err != nil {
		b.Errorf("writing the status of %s: %v", obj.GetName(), err)
	}
}

// startBoardProcess runs bin/cellfedctl board and returns its address.
func startBoardProcess(b *testing.B, kubeconfig, ns string) string {
	cmd := exec.Command(framework.Binary(b, "cellfedctl"), "--kubeconfig="+kubeconfig, "board", "-n", ns, "--address=127.0.0.1:0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("starting cellfedctl board: %v", err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if i := strings.Index(sc.Text(), "http://"); i >= 0 {
			url := sc.Text()[i:]
			go func() {
				for sc.Scan() { // keep draining
				}
			}()
			return url
		}
	}
	b.Fatalf("cellfedctl board printed no address")
	return ""
}
