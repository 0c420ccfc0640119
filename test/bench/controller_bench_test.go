package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/cellfed/cellfed/test/framework"
)

// The race's size; environment variables shrink it for a quick look.
var (
	raceMembers   = envInt("CELLFED_BENCH_MEMBERS", 20)
	raceObjects   = envInt("CELLFED_BENCH_OBJECTS", 2000)
	raceLatencies = envInt("CELLFED_BENCH_LATENCY_SAMPLES", 100)
	// CELLFED_BENCH_SKIP_KUBEFED=1 runs cellfed-controller alone (its
	// before/after on a busy machine, where KubeFed's 10 s lease renewal
	// deadline can make it exit).
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

var (
	fedConfigMaps = schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta2", Resource: "federatedconfigmaps"}
	configMaps    = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// raceResult is one controller's run.
type raceResult struct {
	name         string
	latency      map[int][2]time.Duration // cells → p50, p99
	converge     time.Duration
	converged    int // member objects present at the end
	writes, noop framework.Writes
	// updates are the member writes of one template update of every
	// object.
	updates framework.Writes
	// The plane's cost: of the convergence's new objects (until the
	// plane is quiet), of one template update of each, and of one no-op
	// change of each (an annotation of the federated object).
	planeNew, planeUpdate, planeNoop planeCost
	// cellfed-controller's own view, from its /metrics: the propagation
	// latency histogram's p50/p99 over each latency phase, and its plane
	// writes by kind for new objects, updates and no-ops.
	histLatency                   map[int][2]time.Duration
	ctrlNew, ctrlUpdate, ctrlNoop map[string]int
	// getsNew, getsUpdate, getsNoop: the controller's member GETs.
	getsNew, getsUpdate, getsNoop int
	cpu                           time.Duration
	peakRSS                       float64
	// baseRSS: the controller's RSS with the members joined, before the
	// race objects; endRSS: after the no-op phase.
	baseRSS, endRSS float64
	notes           []string
}

// BenchmarkControllerRace runs upstream KubeFed v0.10.0 and
// cellfed-controller, one after the other, each on a fresh plane with
// the same members and the same workload: propagation latency to all
// placed cells (p50/p99) and the convergence of objects × cells, with
// member writes, CPU and peak RSS. One cell per member for KubeFed, which
// deletes objects through any other KubeFedCluster reaching the same
// member; cellfed additionally runs with 50 cells sharing members.
func BenchmarkControllerRace(b *testing.B) {
	for range b.N {
		// Four at a time: twenty kube-apiservers starting at once on two
		// cores miss their own start-up deadlines.
		var members []*framework.Server
		for len(members) < raceMembers {
			members = append(members, framework.StartMembers(b, min(4, raceMembers-len(members)))...)
		}
		kf := raceResult{name: "KubeFed (skipped)", latency: map[int][2]time.Duration{}}
		if os.Getenv("CELLFED_BENCH_SKIP_KUBEFED") == "" {
			kf = race(b, members, "kf", false)
		}
		cf := race(b, members, "cf", true)
		report(b, kf, cf)
	}
}

func race(b *testing.B, members []*framework.Server, prefix string, cellfed bool) raceResult {
	plane := framework.StartPlane(b, framework.PlaneOptions{})
	k := framework.Kubectl{Kubeconfig: plane.Kubeconfig}
	ns := prefix + "-shop"
	k.MustRun(b, tenantNamespace(ns, "acme"), "apply", "-f", "-")
	joined := make([]framework.KubeFedMember, len(members))
	var cells strings.Builder
	for i, m := range members {
		joined[i] = framework.JoinMember(b, plane, m, fmt.Sprintf("member-%d", i))
		cells.WriteString(cellYAML(ns, i))
	}
	k.MustRun(b, cells.String(), "apply", "-f", "-")
	res := raceResult{name: "cellfed-controller", latency: map[int][2]time.Duration{}}
	var ctrl *framework.Process
	metricsURL := ""
	var cellClusters []string
	for i := range members {
		cellClusters = append(cellClusters, ns+"."+cellName(i))
	}
	if cellfed {
		c := framework.StartController(b, plane)
		ctrl, metricsURL = c.Process, c.HealthURL
	} else {
		res.name = "KubeFed v0.10.0"
		// KubeFed has no cell controller: create the per-cell clusters,
		// then drop the physical ones so each member is reached by one
		// KubeFedCluster only.
		for i := range members {
			framework.JoinCell(b, plane, joined[i], ns, cellName(i), nil)
		}
		for i := range members {
			k.MustRun(b, "", "delete", "kubefedcluster", "-n", framework.KubeFedNamespace, fmt.Sprintf("member-%d", i))
		}
		ctrl = framework.StartKubeFed(b, plane, framework.KubeFedOptions{}).Process
	}
	framework.WaitKubeFedClustersReady(b, plane, cellClusters...)
	pid := ctrl.Pid()
	// The next run shares the members: this controller and plane must be
	// gone by then, or they would fight over the members' objects.
	defer plane.Stop(10 * time.Second)
	defer ctrl.Stop(10 * time.Second)
	cpu0 := cpuTime(b, pid)
	w := startWatchers(b, members, configMaps, ns, (*unstructured.Unstructured).GetName)
	dyn := dynamic.NewForConfigOrDie(plane.RESTConfig(b))
	// KubeFed propagates a namespaced object only to clusters its
	// namespace's FederatedNamespace is placed on: place it on every cell
	// (for both controllers, so the workload is the same) and wait for the
	// namespace in every member.
	k.MustRun(b, "apiVersion: types.kubefed.io/v1beta2\nkind: FederatedNamespace\nmetadata: {name: "+ns+", namespace: "+ns+"}\n"+
		"spec: {placement: "+framework.CellPlacement(cellNames(len(members))...)+", template: {}}\n", "apply", "-f", "-")
	for i, m := range members {
		c := m.Client(b)
		if err := framework.Poll(context.Background(), 100*time.Millisecond, 2*time.Minute, func(ctx context.Context) (bool, error) {
			_, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return err == nil, nil
		}); err != nil {
			b.Fatalf("namespace %s not in member-%d: %v", ns, i, err)
		}
	}
	scrape := func() controllerMetrics {
		if metricsURL == "" {
			return controllerMetrics{}
		}
		return readControllerMetrics(b, metricsURL)
	}
	res.histLatency = map[int][2]time.Duration{}
	for _, n := range phases(len(members)) {
		m0 := scrape()
		res.latency[n] = latency(b, dyn, w, ns, fmt.Sprintf("lat%d", n), n)
		m1 := scrape()
		p50, ok50 := m1.quantile(m0, 0.5)
		p99, ok99 := m1.quantile(m0, 0.99)
		if ok50 && ok99 {
			res.histLatency[n] = [2]time.Duration{p50, p99}
		}
	}
	kubes := make([]kubernetes.Interface, len(members))
	writes0 := make([]framework.Writes, len(members))
	for i, m := range members {
		kubes[i] = m.Client(b)
		writes0[i] = memberWrites(b, kubes[i])
	}

	// Convergence: every object on every cell.
	all := cellNames(len(members))
	planeClient := plane.Client(b)
	pc0 := readPlaneCost(b, planeClient)
	cm0 := scrape()
	res.baseRSS = procStatusMiB(b, pid, "VmRSS:")
	start := time.Now()
	forEach(raceObjects, func(i int) {
		createFedConfigMap(b, dyn, ns, fmt.Sprintf("conv-%04d", i), all)
	})
	want := raceObjects * len(members)
	deadline := time.Now().Add(15 * time.Minute)
	for w.count("conv-") < want && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // polling the watchers' counter, which is the sync
	}
	res.converge = time.Since(start)
	res.converged = w.count("conv-")
	if res.converged < want {
		res.notes = append(res.notes, fmt.Sprintf("%s: only %d of %d member objects after 15 min", res.name, res.converged, want))
	}
	for i := range members {
		d := memberWrites(b, kubes[i])
		res.writes.Creates += d.Creates - writes0[i].Creates
		res.writes.Updates += d.Updates - writes0[i].Updates
		res.writes.Deletes += d.Deletes - writes0[i].Deletes
		writes0[i] = d
	}
	// Idle: nothing changes, so any member write now is a no-op write.
	time.Sleep(15 * time.Second) // a fixed observation window, not a sync
	for i := range members {
		d := memberWrites(b, kubes[i])
		res.noop.Creates += d.Creates - writes0[i].Creates
		res.noop.Updates += d.Updates - writes0[i].Updates
		res.noop.Deletes += d.Deletes - writes0[i].Deletes
	}
	pc1 := waitPlaneQuiet(b, planeClient, 3*time.Second, time.Minute)
	res.planeNew = pc1.since(pc0)
	cm1 := scrape()
	res.ctrlNew = cm1.writesSince(cm0)
	res.getsNew = cm1.memberGets - cm0.memberGets

	// One template update of every object: member updates counted until
	// every member object is updated, plane writes until it is quiet.
	forEach(raceObjects, func(i int) {
		patchFedConfigMap(b, dyn, ns, fmt.Sprintf("conv-%04d", i), `{"spec":{"template":{"data":{"key":"v2"}}}}`)
	})
	if err := framework.Poll(context.Background(), 200*time.Millisecond, 10*time.Minute, func(context.Context) (bool, error) {
		n := 0
		for i := range members {
			n += memberWrites(b, kubes[i]).Updates - writes0[i].Updates
		}
		return n >= want, nil
	}); err != nil {
		res.notes = append(res.notes, fmt.Sprintf("%s: template update not on every member: %v", res.name, err))
	}
	pc2 := waitPlaneQuiet(b, planeClient, 3*time.Second, time.Minute)
	res.planeUpdate = pc2.since(pc1)
	cm2 := scrape()
	res.ctrlUpdate = cm2.writesSince(cm1)
	res.getsUpdate = cm2.memberGets - cm1.memberGets
	for i := range members {
		d := memberWrites(b, kubes[i])
		res.updates.Creates += d.Creates - writes0[i].Creates
		res.updates.Updates += d.Updates - writes0[i].Updates
		res.updates.Deletes += d.Deletes - writes0[i].Deletes
		writes0[i] = d
	}
	// A no-op: an annotation on each federated object, nothing to
	// propagate; the bench's own PATCHes are in the count.
	forEach(raceObjects, func(i int) {
		patchFedConfigMap(b, dyn, ns, fmt.Sprintf("conv-%04d", i), `{"metadata":{"annotations":{"bench.cellfed.io/noop":"1"}}}`)
	})
	pc3 := waitPlaneQuiet(b, planeClient, 3*time.Second, time.Minute)
	res.planeNoop = pc3.since(pc2)
	cm3 := scrape()
	res.ctrlNoop, res.getsNoop = cm3.writesSince(cm2), cm3.memberGets-cm2.memberGets
	for i := range members {
		d := memberWrites(b, kubes[i])
		res.noop.Creates += d.Creates - writes0[i].Creates
		res.noop.Updates += d.Updates - writes0[i].Updates
		res.noop.Deletes += d.Deletes - writes0[i].Deletes
	}
	res.cpu = cpuTime(b, pid) - cpu0
	res.peakRSS = procStatusMiB(b, pid, "VmHWM:")
	res.endRSS = procStatusMiB(b, pid, "VmRSS:")

	if cellfed {
		// 50 cells: 30 more in two more workspaces, sharing members.
		var more strings.Builder
		for j, extra := range []string{prefix + "-shop2", prefix + "-shop3"} {
			more.WriteString("---\n" + tenantNamespace(extra, fmt.Sprintf("t%d", j)))
			for i := range members[:min(len(members), 20-10*j)] {
				more.WriteString(cellYAML(extra, i))
			}
		}
		k.MustRun(b, more.String(), "apply", "-f", "-")
		out := k.MustRun(b, "", "get", "cells", "-A", "--no-headers")
		total := len(strings.Split(strings.TrimSpace(out), "\n"))
		var extraClusters []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(l)
			extraClusters = append(extraClusters, f[0]+"."+f[1])
		}
		framework.WaitKubeFedClustersReady(b, plane, extraClusters...)
		res.latency[total] = latency(b, dyn, w, ns, fmt.Sprintf("lat%dc", total), min(10, len(members)))
	}
	w.stop()
	return res
}

// phases are the cell counts latency is measured at: 10 and all members.
func phases(members int) []int {
	if members <= 10 {
		return []int{members}
	}
	return []int{10, members}
}

func cellName(i int) string { return fmt.Sprintf("rz%02d", i) }

// cellYAML is cell i of namespace ns on member-i, as kubectl input.
func cellYAML(ns string, i int) string {
	return fmt.Sprintf("---\napiVersion: core.cellfed.io/v1alpha1\nkind: Cell\nmetadata: {name: %s, namespace: %s}\nspec: {cluster: member-%d}\n", cellName(i), ns, i)
}

// tenantNamespace is a tenant workspace (workspace prod), as kubectl input.
func tenantNamespace(ns, tenant string) string {
	return "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ns + ", labels: {cellfed.io/tenant: " + tenant + ", cellfed.io/workspace: prod}}\n"
}

// forEach calls f(0) … f(n-1) on eight goroutines and waits for them.
func forEach(n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				f(i)
			}
		}()
	}
	wg.Wait()
}

// cellNames are the first n cells: rz00, rz01, …
func cellNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = cellName(i)
	}
	return names
}

func createFedConfigMap(b *testing.B, dyn dynamic.Interface, ns, name string, cells []string) {
	tops := make([]any, len(cells))
	for i, c := range cells {
		tops[i] = map[string]any{"name": c}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta2", "kind": "FederatedConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"placement": map[string]any{"topologyType": "cell", "topologies": tops},
			"template":  map[string]any{"data": map[string]any{"key": name}},
		},
	}}
	if _, err := dyn.Resource(fedConfigMaps).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		b.Errorf("creating %s/%s: %v", ns, name, err)
	}
}

func patchFedConfigMap(b *testing.B, dyn dynamic.Interface, ns, name, patch string) {
	if _, err := dyn.Resource(fedConfigMaps).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		b.Errorf("patching %s/%s: %v", ns, name, err)
	}
}

// latency creates samples objects on the first n cells, one every 50 ms,
// and returns p50 and p99 of apply → present in all n members.
func latency(b *testing.B, dyn dynamic.Interface, w *watchers, ns, prefix string, n int) [2]time.Duration {
	cells := cellNames(n)
	starts := make([]time.Time, raceLatencies)
	for i := range raceLatencies {
		starts[i] = time.Now()
		createFedConfigMap(b, dyn, ns, fmt.Sprintf("%s-%03d", prefix, i), cells)
		time.Sleep(50 * time.Millisecond) // the arrival rate: 20 objects/s
	}
	deadline := time.Now().Add(2 * time.Minute)
	var lat []time.Duration
	for i := range raceLatencies {
		name := fmt.Sprintf("%s-%03d", prefix, i)
		for {
			last, ok := w.lastSeen(name, n)
			if ok {
				lat = append(lat, last.Sub(starts[i]))
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%s not in all %d members after 2 min", name, n)
			}
			time.Sleep(20 * time.Millisecond) // polling the watchers' record
		}
	}
	return [2]time.Duration{percentile(lat, 50), percentile(lat, 99)}
}

// watchers record when each member first saw each key of its managed
// objects of one resource: the object's name for the race's config maps,
// name and image for template updates of deployments.
type watchers struct {
	mu     sync.Mutex
	seen   map[string]map[int]time.Time
	cancel context.CancelFunc
}

func startWatchers(b *testing.B, members []*framework.Server, gvr schema.GroupVersionResource, ns string, key func(*unstructured.Unstructured) string) *watchers {
	ctx, cancel := context.WithCancel(context.Background())
	w := &watchers{seen: map[string]map[int]time.Time{}, cancel: cancel}
	for i, m := range members {
		c := dynamic.NewForConfigOrDie(m.RESTConfig(b))
		wi, err := c.Resource(gvr).Namespace(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "kubefed.io/managed=true"})
		if err != nil {
			b.Fatalf("watching member-%d: %v", i, err)
		}
		go func() {
			for ev := range wi.ResultChan() {
				if ev.Type != watch.Added && ev.Type != watch.Modified {
					continue
				}
				obj, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				now := time.Now()
				k := key(obj)
				w.mu.Lock()
				if w.seen[k] == nil {
					w.seen[k] = map[int]time.Time{}
				}
				if _, ok := w.seen[k][i]; !ok {
					w.seen[k][i] = now
				}
				w.mu.Unlock()
			}
		}()
	}
	return w
}

func (w *watchers) stop() { w.cancel() }

// lastSeen is when the last of the first n members saw name.
func (w *watchers) lastSeen(name string, n int) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var last time.Time
	for i := range n {
		t, ok := w.seen[name][i]
		if !ok {
			return time.Time{}, false
		}
		if t.After(last) {
			last = t
		}
	}
	return last, true
}

// count is the number of (object, member) pairs seen with the prefix.
func (w *watchers) count(prefix string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for name, ms := range w.seen {
		if strings.HasPrefix(name, prefix) {
			n += len(ms)
		}
	}
	return n
}

func memberWrites(b *testing.B, c kubernetes.Interface) framework.Writes {
	w, err := framework.CountWrites(context.Background(), c, "configmaps")
	if err != nil {
		b.Fatal(err)
	}
	return w
}

// cpuTime is a process's user+system CPU time from /proc.
func cpuTime(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatalf("reading CPU time: %v", err)
	}
	// Fields after the command name, which is in parentheses.
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ = 100
}

func report(b *testing.B, kf, cf raceResult) {
	ratio := func(a, c time.Duration) string {
		if c == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", float64(a)/float64(c))
	}
	var s strings.Builder
	fmt.Fprintf(&s, "\n%-38s %18s %18s %10s\n", "", kf.name, cf.name, "kf/cf")
	for _, n := range phases(raceMembers) {
		for q, qn := range []string{"p50", "p99"} {
			fmt.Fprintf(&s, "%-38s %15.1f ms %15.1f ms %10s\n", fmt.Sprintf("latency to %d cells %s", n, qn),
				ms(kf.latency[n][q]), ms(cf.latency[n][q]), ratio(kf.latency[n][q], cf.latency[n][q]))
		}
	}
	for n, l := range cf.latency {
		if n > raceMembers {
			fmt.Fprintf(&s, "%-38s %18s %15.1f ms\n", fmt.Sprintf("latency to 10 of %d cells p50", n), "n/a", ms(l[0]))
			fmt.Fprintf(&s, "%-38s %18s %15.1f ms\n", fmt.Sprintf("latency to 10 of %d cells p99", n), "n/a", ms(l[1]))
		}
	}
	fmt.Fprintf(&s, "%-38s %16.1f s %16.1f s %10s\n", fmt.Sprintf("converge %d objects x %d cells", raceObjects, raceMembers),
		kf.converge.Seconds(), cf.converge.Seconds(), ratio(kf.converge, cf.converge))
	fmt.Fprintf(&s, "%-38s %18d %18d\n", "member objects present", kf.converged, cf.converged)
	fmt.Fprintf(&s, "%-38s %18s %18s\n", "member writes (create/update/delete)",
		fmt.Sprintf("%d/%d/%d", kf.writes.Creates, kf.writes.Updates, kf.writes.Deletes),
		fmt.Sprintf("%d/%d/%d", cf.writes.Creates, cf.writes.Updates, cf.writes.Deletes))
	fmt.Fprintf(&s, "%-38s %18s %18s\n", "member writes, template update",
		fmt.Sprintf("%d/%d/%d", kf.updates.Creates, kf.updates.Updates, kf.updates.Deletes),
		fmt.Sprintf("%d/%d/%d", cf.updates.Creates, cf.updates.Updates, cf.updates.Deletes))
	fmt.Fprintf(&s, "%-38s %18s %18s\n", "member writes in 15 s idle + no-op",
		fmt.Sprintf("%d/%d/%d", kf.noop.Creates, kf.noop.Updates, kf.noop.Deletes),
		fmt.Sprintf("%d/%d/%d", cf.noop.Creates, cf.noop.Updates, cf.noop.Deletes))
	fmt.Fprintf(&s, "%-38s %16.1f s %16.1f s %10s\n", "controller CPU", kf.cpu.Seconds(), cf.cpu.Seconds(), ratio(kf.cpu, cf.cpu))
	fmt.Fprintf(&s, "%-38s %14.0f MiB %14.0f MiB\n", "controller peak RSS", kf.peakRSS, cf.peakRSS)
	fmt.Fprintf(&s, "%-38s %14.0f MiB %14.0f MiB\n", "controller RSS before the objects", kf.baseRSS, cf.baseRSS)
	perEntry := func(r raceResult, rss float64) float64 {
		return (rss - r.baseRSS) * 1024 / float64(raceObjects*raceMembers)
	}
	fmt.Fprintf(&s, "%-38s %14.2f KiB %14.2f KiB\n", "RSS growth per object x cell, peak", perEntry(kf, kf.peakRSS), perEntry(cf, cf.peakRSS))
	fmt.Fprintf(&s, "%-38s %14.2f KiB %14.2f KiB\n", "RSS growth per object x cell, at end", perEntry(kf, kf.endRSS), perEntry(cf, cf.endRSS))
	for n, l := range cf.histLatency {
		fmt.Fprintf(&s, "%-38s %18s %12.1f/%.1f ms  (the controller's propagation_latency_seconds: observed → written)\n",
			fmt.Sprintf("histogram p50/p99 to %d cells", n), "", ms(l[0]), ms(l[1]))
	}
	if cf.ctrlNew != nil {
		fmt.Fprintf(&s, "cellfed-controller's plane_writes_total: new %v, update %v, no-op %v\n", cf.ctrlNew, cf.ctrlUpdate, cf.ctrlNoop)
		fmt.Fprintf(&s, "cellfed-controller's member GETs: new %d, update %d, no-op %d\n", cf.getsNew, cf.getsUpdate, cf.getsNoop)
	}
	for _, r := range []raceResult{kf, cf} {
		fmt.Fprintf(&s, "plane, %s, %d new objects (incl. the bench's creates): %s\n", r.name, raceObjects, r.planeNew.String(raceObjects))
		fmt.Fprintf(&s, "plane, %s, %d template updates (incl. the bench's patches): %s\n", r.name, raceObjects, r.planeUpdate.String(raceObjects))
		fmt.Fprintf(&s, "plane, %s, %d no-op annotation patches (incl. the bench's patches): %s\n", r.name, raceObjects, r.planeNoop.String(raceObjects))
	}
	for _, n := range append(kf.notes, cf.notes...) {
		fmt.Fprintf(&s, "note: %s\n", n)
	}
	b.Log(s.String())
	fmt.Print(s.String())
}
