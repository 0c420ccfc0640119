package bench

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	corev1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/test/framework"
	"github.com/cellfed/cellfed/test/simfront"
)

// The scale simulation's size (docs/scale.md); the environment shrinks
// or moves it.
var (
	// Cells at each step of the first curve: cells on min(cells,
	// members) logical members, a workspace of up to one cell per member
	// for every 100 cells.
	scaleCellSteps = envInts("CELLFED_SCALE_CELLS", []int{10, 50, 100, 500, 1000})
	// Placements (object × cell) at each step of the second curve, on
	// the last cell step's cells.
	scalePlacementSteps = envInts("CELLFED_SCALE_PLACEMENTS", []int{25000, 50000, 100000})
	// Logical members, and the real kube-apiservers serving them.
	scaleMembers     = envInt("CELLFED_SCALE_MEMBERS", 100)
	scaleRealMembers = envInt("CELLFED_SCALE_REAL_MEMBERS", 4)
	// Latency objects per step, created at a rate of placements per s.
	// The rate stays below what the machine converges (about 150
	// placements/s at load 18–40), so latency is not queueing behind the
	// phase's own objects.
	scaleSamples = envInt("CELLFED_SCALE_SAMPLES", 30)
	scaleRate    = envInt("CELLFED_SCALE_RATE", 50)
)

// scaleIdle is how long the idle cost is observed at each step.
const scaleIdle = 15 * time.Second

// envInts is the comma-separated positive integers in the environment
// variable name, else def.
func envInts(name string, def []int) []int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			panic(fmt.Sprintf("%s=%q: want comma-separated positive integers", name, v))
		}
		out = append(out, n)
	}
	return out
}

// scalePoint is one measured step.
type scalePoint struct {
	Curve      string  `json:"curve"` // "cells" or "placements"
	Cells      int     `json:"cells"`
	Members    int     `json:"members"`
	Placements int     `json:"placements"` // present before the latency phase
	Fanout     int     `json:"fanout"`     // cells per latency object (up to one per member)
	Samples    int     `json:"samples"`
	Missing    int     `json:"missing"` // latency objects not on every cell within 2 min
	P50        float64 `json:"p50_ms,omitempty"`
	P99        float64 `json:"p99_ms,omitempty"`
	// The controller's own propagation histogram over the phase.
	HistP50 float64 `json:"hist_p50_ms,omitempty"`
	HistP99 float64 `json:"hist_p99_ms,omitempty"`
	// Controller CPU: idle (ms of CPU per s, no change in flight) and
	// per placement of the latency phase, the idle rate taken out.
	IdleCPU         float64 `json:"idle_cpu_ms_per_s"`
	CPUPerPlacement float64 `json:"cpu_ms_per_placement"`
	// Fill: placements written in bulk before the step (placements
	// curve), their rate to every cell, and the controller's CPU per
	// placement for them.
	Filled              int     `json:"filled,omitempty"`
	FillRate            float64 `json:"fill_placements_per_s,omitempty"`
	FillCPUPerPlacement float64 `json:"fill_cpu_ms_per_placement,omitempty"`
	// The same for the real member kube-apiservers (summed) and for this
	// benchmark process (the fronts and the watches).
	FillMemberCPUPerPlacement float64 `json:"fill_member_cpu_ms_per_placement,omitempty"`
	FillBenchCPUPerPlacement  float64 `json:"fill_bench_cpu_ms_per_placement,omitempty"`
	// RSS after the step, MiB; peak so far (VmHWM).
	RSS  float64 `json:"rss_mib"`
	Peak float64 `json:"peak_rss_mib"`
	// CPU per s over the idle window of the real member kube-apiservers
	// (summed) and of this benchmark process (the fronts and watches).
	MemberIdleCPU float64 `json:"member_idle_cpu_ms_per_s"`
	BenchIdleCPU  float64 `json:"bench_idle_cpu_ms_per_s"`
	// Settle is how long the controller took to quiet down (its CPU rate
	// steady over two 5 s windows) after the step's change, before the
	// idle window.
	Settle float64 `json:"settle_s"`
	// IdleProfile is the top of the controller's CPU profile over the
	// idle window (at the largest cell step only).
	IdleProfile string `json:"idle_profile,omitempty"`
	Load        string `json:"load"`
	At          string `json:"at"`
}

// BenchmarkScale is the scale simulation of docs/scale.md: the cost
// curve of cellfed-controller up to 1,000 cells on 100 members and
// 100,000 placements, measured against a real plane and real
// kube-apiservers, each serving many logical members through a
// rewriting front (test/simfront: a namespace prefix and a label per
// logical member). Two curves: against cells (CELLFED_SCALE_CELLS, idle
// cost and latency of objects placed on every cell of their workspace),
// then against placements on the last step's cells
// (CELLFED_SCALE_PLACEMENTS, filled in bulk). It writes scale.json, a
// markdown table and the plots to CELLFED_SCALE_OUT (else a new
// directory outside the tree, printed); `make scale` writes them to
// docs/.
//
// CELLFED_SCALE_REPLOT=<scale.json> rewrites the table and plots of a
// recorded run instead of running one.
func BenchmarkScale(b *testing.B) {
	if path := os.Getenv("CELLFED_SCALE_REPLOT"); path != "" {
		replotScale(b, path)
		return
	}
	for range b.N {
		s := startScaleSim(b)
		var points []scalePoint
		last := scaleCellSteps[len(scaleCellSteps)-1]
		for _, c := range scaleCellSteps {
			s.growTo(c)
			p := s.measure("cells", fmt.Sprintf("c%d", c))
			points = append(points, p)
			s.print(p)
			writeScaleResults(b, points, s.started, time.Now(), last) // each step: a cut-short run keeps its data
		}
		for _, target := range scalePlacementSteps {
			if target <= s.placements {
				continue
			}
			f := s.fill(target)
			p := s.measure("placements", fmt.Sprintf("p%d", target))
			p.Filled, p.FillRate, p.FillCPUPerPlacement = f.placed, f.rate, f.ctrlCPU
			p.FillMemberCPUPerPlacement, p.FillBenchCPUPerPlacement = f.memberCPU, f.benchCPU
			points = append(points, p)
			s.print(p)
			writeScaleResults(b, points, s.started, time.Now(), last)
		}
		writeScaleResults(b, points, s.started, time.Now(), last)
		s.stop()
	}
}

type scaleSim struct {
	b          *testing.B
	started    time.Time
	plane      *framework.Server
	dyn        dynamic.Interface
	kube       kubernetes.Interface
	reals      []*framework.Server
	fronts     []*simfront.Front
	members    []simfront.Member // logical member i
	joined     int
	cells      int
	ctrl       *framework.Controller
	profiles   string
	metrics    string
	w          *simWatch
	objects    int
	placements int
}

func memberName(i int) string   { return fmt.Sprintf("lm%03d", i) }
func simNamespace(j int) string { return fmt.Sprintf("sim-%02d", j) }
func simCell(i int) string      { return fmt.Sprintf("c%03d", i) }

// cellsIn is how many cells workspace j has when there are cells in all:
// workspace j holds cells j*members … on members 0, 1, …
func cellsIn(j, cells int) int { return max(0, min(scaleMembers, cells-j*scaleMembers)) }

func workspaces(cells int) int { return (cells + scaleMembers - 1) / scaleMembers }

func startScaleSim(b *testing.B) *scaleSim {
	s := &scaleSim{b: b, started: time.Now()}
	fmt.Printf("scale: %d logical members on %d real kube-apiservers; cells %v, then placements %v; load %s\n",
		scaleMembers, scaleRealMembers, scaleCellSteps, scalePlacementSteps, loadAvg())
	plane := framework.StartPlane(b, framework.PlaneOptions{NoWait: true})
	for len(s.reals) < scaleRealMembers {
		// A real member holds 100/4 logical members' watches (10 types
		// each) and tens of thousands of objects.
		s.reals = append(s.reals, framework.StartMembers(b, min(4, scaleRealMembers-len(s.reals)),
			"--http2-max-streams-per-connection=4000", "--max-requests-inflight=2000", "--max-mutating-requests-inflight=1000")...)
	}
	if err := plane.WaitReady(context.Background()); err != nil {
		b.Fatalf("cellfed-apiserver did not become ready: %v", err)
	}
	s.plane, s.dyn, s.kube = plane, dynamic.NewForConfigOrDie(plane.RESTConfig(b)), plane.Client(b)
	names := make([][]string, len(s.reals))
	for i := range scaleMembers {
		names[i%len(s.reals)] = append(names[i%len(s.reals)], memberName(i))
	}
	s.members = make([]simfront.Member, scaleMembers)
	for r, real := range s.reals {
		f, err := simfront.Start(real.RESTConfig(b), b.TempDir(), names[r])
		if err != nil {
			b.Fatal(err)
		}
		s.fronts = append(s.fronts, f)
		b.Cleanup(f.Close)
		for k, m := range f.Members {
			s.members[k*len(s.reals)+r] = m
		}
	}
	s.w = startSimWatch(b, s.reals)
	s.profiles = benchOutputDir(b, "cellfed-scale-profiles-")
	c := framework.StartController(b, plane, "--profiling",
		// Production's probing, and a Lease that survives a loaded machine.
		"--cluster-probe-period=2s", "--cluster-probe-timeout=3s", "--cluster-failure-threshold=3",
		"--leader-elect-lease-duration=60s", "--leader-elect-renew-deadline=40s", "--leader-elect-retry-period=5s")
	s.ctrl, s.metrics = c, c.HealthURL
	fmt.Printf("scale: plane, %d real members, fronts and controller ready (%.0f s)\n", len(s.reals), time.Since(s.started).Seconds())
	return s
}

func (s *scaleSim) stop() {
	s.w.stop()
	s.ctrl.Stop(10 * time.Second)
	for _, f := range s.fronts {
		f.Close()
	}
	s.plane.Stop(10 * time.Second)
}

// growTo joins members and creates workspaces and cells until there are
// cells, and waits until every per-cell cluster is ready and every
// workspace namespace is on its cells' members.
func (s *scaleSim) growTo(cells int) {
	b, ctx := s.b, context.Background()
	start := time.Now()
	need := min(cells, scaleMembers)
	forEach(need-s.joined, func(k int) {
		i := s.joined + k
		m := s.members[i]
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: m.Name + "-token", Namespace: framework.KubeFedNamespace},
			StringData: map[string]string{"token": m.Token}}
		if _, err := s.kube.CoreV1().Secrets(framework.KubeFedNamespace).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
			b.Errorf("secret of %s: %v", m.Name, err)
		}
		kfc := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "core.kubefed.io/v1beta1", "kind": "KubeFedCluster",
			"metadata": map[string]any{"name": m.Name, "namespace": framework.KubeFedNamespace},
			"spec": map[string]any{"apiEndpoint": m.Endpoint, "caBundle": base64.StdEncoding.EncodeToString(s.fronts[i%len(s.fronts)].CABundle),
				"secretRef": map[string]any{"name": m.Name + "-token"}},
		}}
		if _, err := s.dyn.Resource(kubefed.KubeFedClustersResource).Namespace(framework.KubeFedNamespace).Create(ctx, kfc, metav1.CreateOptions{}); err != nil {
			b.Errorf("KubeFedCluster %s: %v", m.Name, err)
		}
	})
	s.joined = max(s.joined, need)
	for j := range workspaces(cells) {
		ns := simNamespace(j)
		from, to := cellsIn(j, s.cells), cellsIn(j, cells)
		if from == 0 {
			n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
				Labels: map[string]string{"cellfed.io/tenant": fmt.Sprintf("t%02d", j), "cellfed.io/workspace": "prod"}}}
			if _, err := s.kube.CoreV1().Namespaces().Create(ctx, n, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				b.Fatalf("namespace %s: %v", ns, err)
			}
		}
		forEach(to-from, func(k int) {
			i := from + k
			cell := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "core.cellfed.io/v1alpha1", "kind": "Cell",
				"metadata": map[string]any{"name": simCell(i), "namespace": ns},
				"spec":     map[string]any{"cluster": memberName(i)},
			}}
			if _, err := s.dyn.Resource(corev1alpha1.CellsResource).Namespace(ns).Create(ctx, cell, metav1.CreateOptions{}); err != nil {
				b.Errorf("cell %s/%s: %v", ns, simCell(i), err)
			}
		})
		if from != to {
			s.applyFederatedNamespace(ns, to)
		}
	}
	s.cells = cells
	s.waitReadyCells(cells)
	s.waitNamespaces(cells)
	fmt.Printf("scale: %d cells on %d members ready (%.0f s; load %s)\n", cells, s.joined, time.Since(start).Seconds(), loadAvg())
}

// applyFederatedNamespace places workspace ns on its first n cells.
func (s *scaleSim) applyFederatedNamespace(ns string, n int) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta2", "kind": "FederatedNamespace",
		"metadata": map[string]any{"name": ns, "namespace": ns},
		"spec": map[string]any{
			"placement": map[string]any{"topologyType": "cell", "topologies": topologies(n)},
			"template":  map[string]any{},
		},
	}}
	raw, err := json.Marshal(obj.Object)
	if err != nil {
		s.b.Fatal(err)
	}
	// Admission checks the cells against the plane's cache: new cells
	// may take a moment to be there.
	var last error
	err = framework.Poll(context.Background(), 200*time.Millisecond, time.Minute, func(ctx context.Context) (bool, error) {
		_, last = s.dyn.Resource(fedResource("federatednamespaces", "v1beta2")).Namespace(ns).Patch(ctx, ns,
			"application/apply-patch+yaml", raw, metav1.PatchOptions{FieldManager: "bench-scale", Force: ptrTrue()})
		return last == nil, nil
	})
	if err != nil {
		s.b.Fatalf("FederatedNamespace %s: %v (last: %v)", ns, err, last)
	}
}

func ptrTrue() *bool { t := true; return &t }

func topologies(n int) []any {
	tops := make([]any, n)
	for i := range tops {
		tops[i] = map[string]any{"name": simCell(i)}
	}
	return tops
}

// waitReadyCells waits until n per-cell KubeFedClusters are Ready.
func (s *scaleSim) waitReadyCells(n int) {
	res := s.dyn.Resource(kubefed.KubeFedClustersResource).Namespace(framework.KubeFedNamespace)
	got := waitProgress("per-cell clusters", "ready", n, 5*time.Minute, time.Second, func() int {
		list, err := res.List(context.Background(), metav1.ListOptions{LabelSelector: "cellfed.io/topology-type=cell"})
		if err != nil {
			return 0
		}
		ready := 0
		for _, c := range list.Items {
			conds, _, _ := unstructured.NestedSlice(c.Object, "status", "conditions")
			for _, cond := range conds {
				if m, ok := cond.(map[string]any); ok && m["type"] == "Ready" && m["status"] == "True" {
					ready++
				}
			}
		}
		return ready
	})
	if got < n {
		s.b.Fatalf("only %d of %d per-cell clusters ready after 5 min", got, n)
	}
}

// waitNamespaces waits until every workspace is on its cells' members.
func (s *scaleSim) waitNamespaces(cells int) {
	got := waitProgress("workspace namespaces", "on members", cells, 5*time.Minute, time.Second, func() int {
		n := 0
		for _, r := range s.reals {
			list, err := r.Client(s.b).CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{LabelSelector: simfront.MemberLabel})
			if err != nil {
				return 0
			}
			for _, ns := range list.Items {
				if _, rest, ok := strings.Cut(ns.Name, "-"); ok && strings.HasPrefix(rest, "sim-") && ns.Status.Phase == corev1.NamespaceActive {
					n++
				}
			}
		}
		return n
	})
	if got < cells {
		s.b.Fatalf("only %d of %d workspace namespaces on members after 5 min", got, cells)
	}
}

// measure observes the idle cost, then runs a latency phase.
func (s *scaleSim) measure(curve, tag string) scalePoint {
	b, pid := s.b, s.ctrl.Pid()
	p := scalePoint{Curve: curve, Cells: s.cells, Members: s.joined, Placements: s.placements, At: time.Now().UTC().Format(time.RFC3339)}
	p.Settle = s.settle()
	self := os.Getpid()
	var prof *cpuProfiler
	if s.cells == scaleCellSteps[len(scaleCellSteps)-1] {
		// Where the idle CPU goes at the largest size.
		prof = startCPUProfile(s.metrics, filepath.Join(s.profiles, tag))
	}
	c0, m0, b0, t0 := cpuTime(b, pid), s.membersCPU(), cpuTime(b, self), time.Now()
	time.Sleep(scaleIdle) // a fixed observation window, not a sync
	c1, m1, b1, t1 := cpuTime(b, pid), s.membersCPU(), cpuTime(b, self), time.Now()
	if prof != nil {
		var notes []string
		p.IdleProfile = prof.finish(&notes)
		for _, n := range notes {
			fmt.Printf("  %s\n", n)
		}
	}
	secs := t1.Sub(t0).Seconds()
	p.IdleCPU = ms(c1-c0) / secs
	p.MemberIdleCPU, p.BenchIdleCPU = ms(m1-m0)/secs, ms(b1-b0)/secs

	// Latency: objects round-robin over the workspaces, each on every
	// cell of its workspace, at scaleRate placements per second.
	cm0 := readControllerMetrics(b, s.metrics)
	c2, t2 := cpuTime(b, pid), time.Now()
	type sample struct {
		name  string
		cells int
		start time.Time
	}
	samples := make([]sample, scaleSamples)
	placed := 0
	for i := range samples {
		j := i % workspaces(s.cells)
		n := cellsIn(j, s.cells)
		samples[i] = sample{name: fmt.Sprintf("lat-%s-%04d", tag, i), cells: n, start: time.Now()}
		createFedConfigMap(b, s.dyn, simNamespace(j), samples[i].name, cellNamesSim(n))
		placed += n
		p.Fanout = max(p.Fanout, n)
		time.Sleep(time.Duration(float64(n) / float64(scaleRate) * float64(time.Second))) // the arrival rate
	}
	deadline := time.Now().Add(2 * time.Minute)
	var lat []time.Duration
	for _, sm := range samples {
		for {
			if last, ok := s.w.complete(sm.name, sm.cells); ok {
				lat = append(lat, last.Sub(sm.start))
				break
			}
			if time.Now().After(deadline) {
				p.Missing++
				break
			}
			time.Sleep(20 * time.Millisecond) // polling the watch record
		}
	}
	c3, t3 := cpuTime(b, pid), time.Now()
	cm1 := readControllerMetrics(b, s.metrics)
	s.objects += len(samples)
	s.placements += placed
	p.Samples = len(samples)
	if len(lat) > 0 {
		p.P50, p.P99 = ms(percentile(lat, 50)), ms(percentile(lat, 99))
	}
	if q, ok := cm1.quantile(cm0, 0.5); ok {
		p.HistP50 = ms(q)
	}
	if q, ok := cm1.quantile(cm0, 0.99); ok {
		p.HistP99 = ms(q)
	}
	p.CPUPerPlacement = max(0, ms(c3-c2)-p.IdleCPU*t3.Sub(t2).Seconds()) / float64(placed)
	p.RSS, p.Peak = procStatusMiB(b, pid, "VmRSS:"), procStatusMiB(b, pid, "VmHWM:")
	p.Load = loadAvg()
	return p
}

// settle waits, up to 2 min, until the controller's CPU rate over two
// 5 s windows in a row agrees within 25% (or 10 ms/s): the work a step
// started (new cells' clusters, statuses) is done. It returns the
// seconds it waited.
func (s *scaleSim) settle() float64 {
	pid, start := s.ctrl.Pid(), time.Now()
	window := func() float64 {
		c0, t0 := cpuTime(s.b, pid), time.Now()
		time.Sleep(5 * time.Second) // a measuring window, not a sync
		return ms(cpuTime(s.b, pid)-c0) / time.Since(t0).Seconds()
	}
	prev := window()
	for time.Since(start) < 2*time.Minute {
		cur := window()
		if math.Abs(cur-prev) <= max(10, 0.25*prev) {
			break
		}
		prev = cur
	}
	return time.Since(start).Seconds()
}

func cellNamesSim(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = simCell(i)
	}
	return names
}

// fillResult is a fill's placements, their rate to the members and the
// CPU per placement (ms) of the controller, the members and the bench.
type fillResult struct {
	placed                       int
	rate                         float64
	ctrlCPU, memberCPU, benchCPU float64
}

// fill creates objects, each on every cell of its workspace, until there
// are target placements, and waits until all are on their members.
func (s *scaleSim) fill(target int) fillResult {
	b, pid := s.b, s.ctrl.Pid()
	type obj struct {
		ns, name string
		cells    int
	}
	var objs []obj
	placed := 0
	for i := 0; s.placements+placed < target; i++ {
		j := (s.objects + i) % workspaces(s.cells)
		n := cellsIn(j, s.cells)
		objs = append(objs, obj{simNamespace(j), fmt.Sprintf("fill-%06d", s.objects+i), n})
		placed += n
	}
	before := s.w.total("fill-")
	c0, m0, b0, t0 := cpuTime(b, pid), s.membersCPU(), cpuTime(b, os.Getpid()), time.Now()
	fmt.Printf("scale: filling %d objects (%d placements) to %d placements; load %s\n", len(objs), placed, target, loadAvg())
	forEach(len(objs), func(i int) {
		createFedConfigMap(b, s.dyn, objs[i].ns, objs[i].name, cellNamesSim(objs[i].cells))
	})
	timeout := max(10*time.Minute, time.Duration(placed)*10*time.Millisecond)
	got := waitProgress("fill", "placed", before+placed, timeout, 200*time.Millisecond, func() int { return s.w.total("fill-") })
	d := time.Since(t0)
	cpu, mcpu, bcpu := cpuTime(b, pid)-c0, s.membersCPU()-m0, cpuTime(b, os.Getpid())-b0
	s.objects += len(objs)
	s.placements += placed
	if got < before+placed {
		s.b.Errorf("fill: only %d of %d placements on their members after %s", got-before, placed, timeout)
	}
	n := float64(placed)
	return fillResult{placed: placed, rate: float64(got-before) / d.Seconds(), ctrlCPU: ms(cpu) / n, memberCPU: ms(mcpu) / n, benchCPU: ms(bcpu) / n}
}

func (s *scaleSim) membersCPU() time.Duration {
	return membersCPU(s.b, s.reals)
}

func (s *scaleSim) print(p scalePoint) {
	fmt.Printf("scale: %s: %d cells, %d members, %d placements: latency to %d cells p50 %.0f ms p99 %.0f ms (missing %d of %d); "+
		"settled in %.0f s, controller idle %.0f ms/s, %.3f ms per placement, RSS %.0f MiB (peak %.0f); load %s\n",
		p.Curve, p.Cells, p.Members, p.Placements, p.Fanout, p.P50, p.P99, p.Missing, p.Samples,
		p.Settle, p.IdleCPU, p.CPUPerPlacement, p.RSS, p.Peak, p.Load)
}

// simWatch records when each member object reached each logical member,
// watching the real kube-apiservers directly (one watch each): a
// member's objects are in the real namespaces named <member>-<ns>.
type simWatch struct {
	mu     sync.Mutex
	seen   map[string]*arrival
	cancel context.CancelFunc
}

type arrival struct {
	members map[int]bool
	last    time.Time
}

func startSimWatch(b *testing.B, reals []*framework.Server) *simWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &simWatch{seen: map[string]*arrival{}, cancel: cancel}
	b.Cleanup(cancel) // before the members stop
	opts := metav1.ListOptions{LabelSelector: "kubefed.io/managed=true"}
	for r, real := range reals {
		// Metadata only: a watcher too slow for the real server is
		// closed by it, and decoding whole objects at 100,000 was.
		c := metadata.NewForConfigOrDie(real.RESTConfig(b)).Resource(configMaps)
		wi, err := c.Watch(ctx, opts)
		if err != nil {
			b.Fatalf("watching real member %d: %v", r, err)
		}
		go func() {
			for {
				for ev := range wi.ResultChan() {
					if ev.Type == watch.Error {
						fmt.Printf("  watch of real member %d: %v\n", r, apierrors.FromObject(ev.Object))
					}
					if ev.Type != watch.Added && ev.Type != watch.Modified {
						continue
					}
					if obj, ok := ev.Object.(*metav1.PartialObjectMetadata); ok {
						w.record(obj)
					}
				}
				wi.Stop()
				if wi = rewatch(ctx, fmt.Sprintf("real member %d", r), func(ctx context.Context) (string, error) {
					list, err := c.List(ctx, opts)
					if err != nil {
						return "", err
					}
					for j := range list.Items {
						w.record(&list.Items[j])
					}
					return list.GetResourceVersion(), nil
				}, func(ctx context.Context, rv string) (watch.Interface, error) {
					o := opts
					o.ResourceVersion = rv
					return c.Watch(ctx, o)
				}); wi == nil {
					return
				}
			}
		}()
	}
	return w
}

func (w *simWatch) record(obj metav1.Object) {
	now := time.Now()
	prefix, _, ok := strings.Cut(obj.GetNamespace(), "-")
	if !ok || !strings.HasPrefix(prefix, "lm") {
		return
	}
	i, err := strconv.Atoi(strings.TrimPrefix(prefix, "lm"))
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	a := w.seen[obj.GetName()]
	if a == nil {
		a = &arrival{members: map[int]bool{}}
		w.seen[obj.GetName()] = a
	}
	if !a.members[i] {
		a.members[i] = true
		a.last = now
	}
}

// complete is when name reached the last of its n members.
func (w *simWatch) complete(name string, n int) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	a := w.seen[name]
	if a == nil || len(a.members) < n {
		return time.Time{}, false
	}
	return a.last, true
}

// total is the number of (object, member) pairs seen with the prefix.
func (w *simWatch) total(prefix string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for name, a := range w.seen {
		if strings.HasPrefix(name, prefix) {
			n += len(a.members)
		}
	}
	return n
}

func (w *simWatch) stop() { w.cancel() }

// scaleOutDir is CELLFED_SCALE_OUT, else a new directory outside the tree.
func scaleOutDir(b *testing.B) string {
	if dir := os.Getenv("CELLFED_SCALE_OUT"); dir != "" {
		if err := os.MkdirAll(filepath.Join(dir, "images"), 0o755); err != nil {
			b.Fatal(err)
		}
		return dir
	}
	dir := benchOutputDir(b, "cellfed-scale-")
	if err := os.MkdirAll(filepath.Join(dir, "images"), 0o755); err != nil {
		b.Fatal(err)
	}
	return dir
}
