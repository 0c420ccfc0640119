package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/cellfed/cellfed/test/framework"
)

// The race's size; environment variables shrink it for a quick look.
var (
	raceMembers   = envInt("CELLFED_BENCH_MEMBERS", 20)
	raceObjects   = envInt("CELLFED_BENCH_OBJECTS", 1000)
	raceLatencies = envInt("CELLFED_BENCH_LATENCY_SAMPLES", 100)
	raceRuns      = envInt("CELLFED_BENCH_RUNS", 3)
	// CELLFED_BENCH_SKIP_KUBEFED=1 leaves KubeFed out (cellfed's
	// before/after on a busy machine, where KubeFed's 10 s lease renewal
	// deadline can make it exit); CELLFED_BENCH_SKIP_FLOOR=1 leaves the
	// floor out.
)

// contestant is who propagates in one race.
type contestant int

const (
	kubeFed contestant = iota
	cellfedController
	// floorPropagator is test/bench/floor: the least a correct
	// propagator does per placement.
	floorPropagator
)

// raceCells is how many cells the last latency phase of cellfed-controller
// has, sharing the members (the "50 cells on 10 members").
const raceCells = 50

// raceResult is one controller's run.
type raceResult struct {
	name    string
	latency map[int][2]time.Duration // cells → p50, p99
	// latMissing are the latency samples of a phase not on every cell
	// within 2 min (left out of its percentiles).
	latMissing   map[int]int
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
	// endRSS: the controller's RSS after the no-op phase.
	endRSS float64
	// Controller and member CPU (the sum over the member
	// kube-apiservers) over the convergence (create → every object on
	// every cell) and over the whole race (latency phases to the no-op).
	cpu, convCPU             time.Duration
	memberCPU, memberConvCPU time.Duration
	// The controller's RSS once the members are joined, before any object
	// exists, and its peak (VmHWM) after the no-op.
	baseRSS, peakRSS float64
	// baseAnon and baseFile split baseRSS into the process's own memory
	// (RssAnon) and the pages of its binary and other files (RssFile,
	// shared and reclaimable): most of a Go controller's baseline is its
	// binary.
	baseAnon, baseFile float64
	// cpuTop and heapTop are `go tool pprof -top` of the controller's
	// CPU over the convergence and its heap after it (cellfed only).
	cpuTop, heapTop string
	// baseHeapTop is the controller's heap once the members are joined,
	// before any object (cellfed only).
	baseHeapTop string
	notes       []string
}

// BenchmarkControllerRace runs upstream KubeFed v0.10.0 and
// cellfed-controller, one after the other, each on a fresh plane with
// the same members and the same workload: propagation latency to all
// placed cells (p50/p99) and the convergence of objects × cells, with
// member writes, CPU and peak RSS. One cell per member for KubeFed, which
// deletes objects through any other KubeFedCluster reaching the same
// member; cellfed additionally runs with 50 cells sharing members. The
// whole race is repeated CELLFED_BENCH_RUNS times on the same members
// and one table of the medians is printed and written to a file outside
// the tree (its path is printed), or to CELLFED_BENCH_TABLE when set:
// docs/race.md is regenerated at the default size (20 members × 1,000
// objects, three runs: about 50 minutes on two cores) with
//
//	CELLFED_BENCH_TABLE=docs/race.md CELLFED_BENCH_PROFILE_DIR=/tmp/prof \
//	  go test ./test/bench -run XXX -bench 'BenchmarkControllerRace$' -benchtime 1x -timeout 3h
//
// At 2,000 objects one run took 28.5 minutes here, most of it the
// twenty member kube-apiservers' own CPU, so three do not fit the hour.
func BenchmarkControllerRace(b *testing.B) {
	for range b.N {
		started := time.Now()
		// Four at a time: twenty kube-apiservers starting at once on two
		// cores miss their own start-up deadlines.
		var members []*framework.Server
		for len(members) < raceMembers {
			members = append(members, framework.StartMembers(b, min(4, raceMembers-len(members)))...)
			fmt.Printf("race: %d/%d members ready (%.0f s)\n", len(members), raceMembers, time.Since(started).Seconds())
		}
		profiles := raceProfileDir(b)
		fmt.Printf("race: cellfed-controller profiles in %s\n", profiles)
		floorBin := ""
		if os.Getenv("CELLFED_BENCH_SKIP_FLOOR") == "" {
			floorBin = buildFloor(b)
		}
		var kfs, cfs, fls []raceResult
		for run := 1; run <= raceRuns; run++ {
			fmt.Printf("race: run %d of %d, %d members × %d objects\n", run, raceRuns, raceMembers, raceObjects)
			var kf, fl raceResult
			if os.Getenv("CELLFED_BENCH_SKIP_KUBEFED") == "" {
				kf = race(b, members, fmt.Sprintf("kf%d", run), kubeFed, "")
				kfs = append(kfs, kf)
			}
			cf := race(b, members, fmt.Sprintf("cf%d", run), cellfedController, filepath.Join(profiles, fmt.Sprintf("run%d", run)))
			cfs = append(cfs, cf)
			if floorBin != "" {
				fl = race(b, members, fmt.Sprintf("fl%d", run), floorPropagator, floorBin)
				fls = append(fls, fl)
			}
			report(b, run, kf, cf, fl)
		}
		writeRaceTable(b, kfs, cfs, fls, started)
	}
}

// buildFloor builds test/bench/floor into a temporary directory.
func buildFloor(b testing.TB) string {
	bin := filepath.Join(b.TempDir(), "floor")
	cmd := exec.Command("go", "build", "-o", bin, "./test/bench/floor")
	cmd.Dir = framework.RepoRoot(b)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("building the floor: %v\n%s", err, out)
	}
	return bin
}

// race runs one contestant on a fresh plane with the members: profileDir
// is where cellfed-controller's profiles go, or the floor's binary.
func race(b *testing.B, members []*framework.Server, prefix string, who contestant, profileDir string) raceResult {
	cellfed := who == cellfedController
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
	switch who {
	case cellfedController:
		// CELLFED_BENCH_CONTROLLER_ARGS adds flags (e.g. --gc-percent=200).
		c := framework.StartController(b, plane, append([]string{"--profiling"}, strings.Fields(os.Getenv("CELLFED_BENCH_CONTROLLER_ARGS"))...)...)
		ctrl, metricsURL = c.Process, c.HealthURL
	case floorPropagator:
		res.name = "floor"
		args := []string{"--kubeconfig", plane.Kubeconfig}
		for i, m := range members {
			args = append(args, "--member", fmt.Sprintf("member-%d=%s", i, m.Kubeconfig))
			// The floor propagates config maps only: the namespace is
			// the bench's to make.
			nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
			if _, err := m.Client(b).CoreV1().Namespaces().Create(context.Background(), nsObj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				b.Fatalf("namespace %s in member-%d: %v", ns, i, err)
			}
		}
		ctrl = framework.StartProcess(b, "floor", filepath.Join(b.TempDir(), "floor.log"), profileDir, args...)
		profileDir = ""
		// Its baseline RSS is read once it has listed the plane, as
		// cellfed's once its clusters are ready.
		if err := framework.Poll(context.Background(), 50*time.Millisecond, time.Minute, func(context.Context) (bool, error) {
			return strings.Contains(ctrl.Log(), "Floor ready"), nil
		}); err != nil {
			b.Fatalf("the floor did not list the plane: %v\n%s", err, ctrl.Tail(20))
		}
	default:
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
	if who != floorPropagator {
		framework.WaitKubeFedClustersReady(b, plane, cellClusters...)
	}
	pid := ctrl.Pid()
	// The next run shares the members: this controller and plane must be
	// gone by then, or they would fight over the members' objects.
	defer plane.Stop(10 * time.Second)
	defer ctrl.Stop(10 * time.Second)
	res.baseRSS = procStatusMiB(b, pid, "VmRSS:")
	res.baseAnon, res.baseFile = procStatusMiB(b, pid, "RssAnon:"), procStatusMiB(b, pid, "RssFile:")
	if cellfed && profileDir != "" {
		res.baseHeapTop = heapProfile(metricsURL, profileDir, "heap-base.pb.gz", &res.notes)
	}
	cpu0, mcpu0 := cpuTime(b, pid), membersCPU(b, members)
	w := startWatchers(b, members, configMaps, ns, (*unstructured.Unstructured).GetName)
	dyn := dynamic.NewForConfigOrDie(plane.RESTConfig(b))
	// Both controllers get the same workload.
	placeNamespace(b, k, members, ns)
	scrape := func() controllerMetrics {
		if metricsURL == "" {
			return controllerMetrics{}
		}
		return readControllerMetrics(b, metricsURL)
	}
	res.histLatency = map[int][2]time.Duration{}
	for _, n := range phases(len(members)) {
		m0 := scrape()
		var missing []missingSample
		res.latency[n], missing = latency(b, dyn, w, ns, fmt.Sprintf("lat%d", n), n)
		res.noteMissing(b, n, n, missing, members, ns)
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

	// Convergence: every object on every cell. The deadlines grow with
	// the size: at 20 members × 2,000 objects the members' own writes
	// take minutes on two cores.
	all := cellNames(len(members))
	want := raceObjects * len(members)
	timeout := max(15*time.Minute, time.Duration(want)*50*time.Millisecond)
	quietTimeout := max(time.Minute, time.Duration(raceObjects)*30*time.Millisecond)
	planeClient := plane.Client(b)
	pc0 := readPlaneCost(b, planeClient)
	cm0 := scrape()
	var prof *cpuProfiler
	if cellfed && profileDir != "" {
		prof = startCPUProfile(metricsURL, profileDir)
	}
	convCPU0, convMCPU0 := cpuTime(b, pid), membersCPU(b, members)
	start := time.Now()
	forEach(raceObjects, func(i int) {
		createFedConfigMap(b, dyn, ns, fmt.Sprintf("conv-%04d", i), all)
	})
	res.converged = waitProgress(res.name+" convergence", "converged", want, timeout, 50*time.Millisecond, func() int { return w.count("conv-") })
	res.converge = time.Since(start)
	if prof != nil {
		prof.end()
	}
	res.convCPU, res.memberConvCPU = cpuTime(b, pid)-convCPU0, membersCPU(b, members)-convMCPU0
	if res.converged < want {
		res.notes = append(res.notes, fmt.Sprintf("%s: only %d of %d member objects after %s", res.name, res.converged, want, timeout))
	}
	if prof != nil {
		res.heapTop = heapProfile(metricsURL, profileDir, "heap.pb.gz", &res.notes)
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
	if prof != nil {
		res.cpuTop = prof.finish(&res.notes)
	}
	for i := range members {
		d := memberWrites(b, kubes[i])
		res.noop.Creates += d.Creates - writes0[i].Creates
		res.noop.Updates += d.Updates - writes0[i].Updates
		res.noop.Deletes += d.Deletes - writes0[i].Deletes
	}
	pc1 := waitPlaneQuiet(b, planeClient, 3*time.Second, quietTimeout)
	res.planeNew = pc1.since(pc0)
	cm1 := scrape()
	res.ctrlNew = cm1.writesSince(cm0)
	res.getsNew = cm1.memberGets - cm0.memberGets

	// One template update of every object: member updates counted until
	// every member object is updated, plane writes until it is quiet.
	forEach(raceObjects, func(i int) {
		patchFedConfigMap(b, dyn, ns, fmt.Sprintf("conv-%04d", i), `{"spec":{"template":{"data":{"key":"v2"}}}}`)
	})
	updated := waitProgress(res.name+" template update", "updated", want, timeout, time.Second, func() int {
		n := 0
		for i := range members {
			n += memberWrites(b, kubes[i]).Updates - writes0[i].Updates
		}
		return n
	})
	if updated < want {
		res.notes = append(res.notes, fmt.Sprintf("%s: template update on %d of %d member objects after %s", res.name, updated, want, timeout))
	}
	pc2 := waitPlaneQuiet(b, planeClient, 3*time.Second, quietTimeout)
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
	pc3 := waitPlaneQuiet(b, planeClient, 3*time.Second, quietTimeout)
	res.planeNoop = pc3.since(pc2)
	cm3 := scrape()
	res.ctrlNoop, res.getsNoop = cm3.writesSince(cm2), cm3.memberGets-cm2.memberGets
	for i := range members {
		d := memberWrites(b, kubes[i])
		res.noop.Creates += d.Creates - writes0[i].Creates
		res.noop.Updates += d.Updates - writes0[i].Updates
		res.noop.Deletes += d.Deletes - writes0[i].Deletes
	}
	res.cpu, res.memberCPU = cpuTime(b, pid)-cpu0, membersCPU(b, members)-mcpu0
	res.peakRSS = procStatusMiB(b, pid, "VmHWM:")
	res.endRSS = procStatusMiB(b, pid, "VmRSS:")

	if who != kubeFed {
		// 50 cells: the rest in more workspaces (one cell per member
		// each), sharing members — 30 more in two at 20 members, 40 in
		// four at 10.
		var more strings.Builder
		for j, left := 0, raceCells-len(members); left > 0; j++ {
			extra := fmt.Sprintf("%s-shop%d", prefix, j+2)
			more.WriteString("---\n" + tenantNamespace(extra, fmt.Sprintf("t%d", j)))
			for i := range members[:min(len(members), left)] {
				more.WriteString(cellYAML(extra, i))
			}
			left -= min(len(members), left)
		}
		k.MustRun(b, more.String(), "apply", "-f", "-")
		out := k.MustRun(b, "", "get", "cells", "-A", "--no-headers")
		total := len(strings.Split(strings.TrimSpace(out), "\n"))
		var extraClusters []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(l)
			extraClusters = append(extraClusters, f[0]+"."+f[1])
		}
		if who != floorPropagator {
			framework.WaitKubeFedClustersReady(b, plane, extraClusters...)
		}
		var missing []missingSample
		res.latency[total], missing = latency(b, dyn, w, ns, fmt.Sprintf("lat%dc", total), min(10, len(members)))
		res.noteMissing(b, total, min(10, len(members)), missing, members, ns)
	}
	w.stop()
	// A controller that lost its Lease exits (the framework restarts
	// cellfed-controller, as its Deployment would): say so, since its
	// numbers then include a restart.
	if log := ctrl.Log(); strings.Contains(log, "Lost the leader Lease") || strings.Contains(log, "leaderelection lost") {
		res.notes = append(res.notes, res.name+" lost its leader Lease during the run (its log says so); the run includes its restart")
	}
	// The next race starts on the same members: stop this one and take
	// its objects out of them, so every race finds the members alike.
	ctrl.Stop(10 * time.Second)
	plane.Stop(10 * time.Second)
	cleanMembers(b, kubes, ns)
	return res
}

// noteMissing records a latency phase's samples that did not arrive, each
// with what its members hold: a sample a member holds although the
// bench's watch never showed it is the watch's miss, not the
// controller's.
func (r *raceResult) noteMissing(b *testing.B, phase, cells int, missing []missingSample, members []*framework.Server, ns string) {
	if r.latMissing == nil {
		r.latMissing = map[int]int{}
	}
	r.latMissing[phase] = len(missing)
	var say []string
	for _, m := range missing[:min(5, len(missing))] {
		var held, absent []int
		for _, i := range m.members {
			if _, err := members[i].Client(b).CoreV1().ConfigMaps(ns).Get(context.Background(), m.name, metav1.GetOptions{}); err == nil {
				held = append(held, i)
			} else {
				absent = append(absent, i)
			}
		}
		say = append(say, fmt.Sprintf("%s (not seen by the watches of members %v; of those, held by %v, absent from %v)", m.name, m.members, held, absent))
	}
	if len(missing) > 0 {
		r.notes = append(r.notes, fmt.Sprintf("%s: %d of %d latency samples to %d cells not on every cell after 2 min (left out of p50/p99): %s",
			r.name, len(missing), raceLatencies, cells, strings.Join(say, ", ")))
	}
}

// missingSample is a latency sample not seen on every member in time.
type missingSample struct {
	name    string
	members []int // not seen on these
}

// waitProgress polls count every interval until it reaches want or
// timeout passes, printing progress every 5 s, and returns the last count.
func waitProgress(what, verb string, want int, timeout, interval time.Duration, count func() int) int {
	start := time.Now()
	deadline := start.Add(timeout)
	lastT, lastN := start, 0
	n := count()
	for n < want && time.Now().Before(deadline) {
		time.Sleep(interval) // polling the counter, which is the sync
		n = count()
		if now := time.Now(); now.Sub(lastT) >= 5*time.Second {
			fmt.Printf("  %s: %s %d/%d member objects (%d%%), %.0f/s, %.0f s\n", what, verb, n, want, 100*n/max(want, 1),
				float64(n-lastN)/now.Sub(lastT).Seconds(), now.Sub(start).Seconds())
			lastT, lastN = now, n
		}
	}
	fmt.Printf("  %s: %s %d/%d member objects in %.1f s\n", what, verb, n, want, time.Since(start).Seconds())
	return n
}

// cleanMembers deletes the race's member objects in ns from every member.
func cleanMembers(b *testing.B, kubes []kubernetes.Interface, ns string) {
	start := time.Now()
	var wg sync.WaitGroup
	for i, c := range kubes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := c.CoreV1().ConfigMaps(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{},
				metav1.ListOptions{LabelSelector: "kubefed.io/managed=true"})
			if err != nil {
				b.Errorf("cleaning member-%d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	fmt.Printf("  members cleaned of %s in %.1f s\n", ns, time.Since(start).Seconds())
}

// membersCPU is the CPU time of all members' kube-apiservers.
func membersCPU(b *testing.B, members []*framework.Server) time.Duration {
	var d time.Duration
	for _, m := range members {
		d += cpuTime(b, m.Pid())
	}
	return d
}

// phases are the cell counts latency is measured at: 10 and all members.
func phases(members int) []int {
	if members <= 10 {
		return []int{members}
	}
	return []int{10, members}
}

func createFedConfigMap(b testing.TB, dyn dynamic.Interface, ns, name string, cells []string) {
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

func patchFedConfigMap(b testing.TB, dyn dynamic.Interface, ns, name, patch string) {
	if _, err := dyn.Resource(fedConfigMaps).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		b.Errorf("patching %s/%s: %v", ns, name, err)
	}
}

// latency creates samples objects on the first n cells, one every 50 ms,
// and returns p50 and p99 of apply → present in all n members over the
// samples that arrived within 2 min, and those that did not, each with
// the members it is missing from.
func latency(b *testing.B, dyn dynamic.Interface, w *watchers, ns, prefix string, n int) ([2]time.Duration, []missingSample) {
	cells := cellNames(n)
	starts := make([]time.Time, raceLatencies)
	for i := range raceLatencies {
		starts[i] = time.Now()
		createFedConfigMap(b, dyn, ns, fmt.Sprintf("%s-%03d", prefix, i), cells)
		time.Sleep(50 * time.Millisecond) // the arrival rate: 20 objects/s
	}
	deadline := time.Now().Add(2 * time.Minute)
	var lat []time.Duration
	var missing []missingSample
	for i := range raceLatencies {
		name := fmt.Sprintf("%s-%03d", prefix, i)
		for {
			last, ok := w.lastSeen(name, n)
			if ok {
				lat = append(lat, last.Sub(starts[i]))
				break
			}
			if time.Now().After(deadline) {
				missing = append(missing, missingSample{name: name, members: w.missing(name, n)})
				break
			}
			time.Sleep(20 * time.Millisecond) // polling the watchers' record
		}
	}
	if len(lat) == 0 {
		return [2]time.Duration{}, missing
	}
	return [2]time.Duration{percentile(lat, 50), percentile(lat, 99)}, missing
}

func memberWrites(b *testing.B, c kubernetes.Interface) framework.Writes {
	w, err := framework.CountWrites(context.Background(), c, "configmaps")
	if err != nil {
		b.Fatal(err)
	}
	return w
}
