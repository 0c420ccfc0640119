package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/cellfed/cellfed/test/framework"
)

// Release control's size (issue 11). The churn is 1,000 objects
// × 10 cells; the defaults finish in a few minutes on two shared cores.
var (
	reflowCells   = envInt("CELLFED_BENCH_REFLOW_CELLS", 4)
	reflowObjects = envInt("CELLFED_BENCH_REFLOW_OBJECTS", 200)
	reflowSamples = envInt("CELLFED_BENCH_REFLOW_SAMPLES", 50)
	churnSeconds  = envInt("CELLFED_BENCH_CHURN_SECONDS", 30)
	churnPeriodMS = envInt("CELLFED_BENCH_CHURN_PERIOD_MS", 2500)
	churnLight    = envInt("CELLFED_BENCH_CHURN_LIGHT_OBJECTS", 10)
	maskSamples   = envInt("CELLFED_BENCH_MASK_SAMPLES", 50)
)

const (
	releaseNamespace = "rel-shop"
	// churnConcurrency is how many status patches a member has in flight.
	churnConcurrency = 4
	// reflowSampleGap is the quiet between two reflow delay samples.
	reflowSampleGap = 200 * time.Millisecond
)

// releaseResult is one run of BenchmarkRelease.
type releaseResult struct {
	reflow         [2]time.Duration // p50, p99
	noMask, masked [2]time.Duration
	churn          []churnResult
	notes          []string
}

// churnResult is one controller's run of the status churn.
type churnResult struct {
	interval      string
	objects       int
	window        time.Duration
	patches       int
	target        float64       // patches/s asked for
	statusWrites  int           // PUT/PATCH federateddeployments/status on the plane
	conflicts     int           // of which answered 409 Conflict
	statusPutMean time.Duration // the plane's mean time to answer them
	otherWrites   int           // federateddeployments and propagatedversions writes
	modified      int           // MODIFIED events of the plane watch
	memberWrites  int           // controller writes to member deployments (not status)
	cpu, planeCPU time.Duration
	lag           [2]time.Duration
	unseen        int
}

// BenchmarkRelease measures release control on one plane and
// cellfed-controller with CELLFED_BENCH_REFLOW_CELLS members, one cell on
// each, and CELLFED_BENCH_REFLOW_OBJECTS FederatedDeployments placed on
// every cell. The members are bare kube-apiservers: the benchmark plays
// their deployment controllers by patching the status subresource.
//
//   - Reflow delay: one member status change at a time, from the patch
//     being sent to a plane watch on v1beta2 showing it in the right
//     topology's remoteStatus (p50/p99).
//   - Template update latency (federated object updated → all members'
//     Deployments updated) for objects without a mask and for the same
//     objects with a mask naming every placed cell, interleaved.
//   - Status churn: every object's status changes in every cell every
//     CELLFED_BENCH_CHURN_PERIOD_MS for CELLFED_BENCH_CHURN_SECONDS, with
//     the default --status-interval (1s) and with 0: plane writes/s,
//     controller and plane CPU, reflow lag.
func BenchmarkRelease(b *testing.B) {
	for range b.N {
		reportRelease(b, release(b))
	}
}

func release(b *testing.B) releaseResult {
	var res releaseResult
	var members []*framework.Server
	for len(members) < reflowCells {
		members = append(members, framework.StartMembers(b, min(4, reflowCells-len(members)))...)
	}
	plane := framework.StartPlane(b, framework.PlaneOptions{})
	defer plane.Stop(10 * time.Second)
	ns := releaseNamespace
	k := framework.Kubectl{Kubeconfig: plane.Kubeconfig}
	k.MustRun(b, tenantNamespace(ns, "acme"), "apply", "-f", "-")
	var cellsYAML strings.Builder
	var clusters []string
	for i, m := range members {
		framework.JoinMember(b, plane, m, fmt.Sprintf("member-%d", i))
		cellsYAML.WriteString(cellYAML(ns, i))
		clusters = append(clusters, ns+"."+cellName(i))
	}
	k.MustRun(b, cellsYAML.String(), "apply", "-f", "-")
	ctrl := framework.StartController(b, plane)
	framework.WaitKubeFedClustersReady(b, plane, clusters...)
	cells := cellNames(len(members))
	dyn := dynamic.NewForConfigOrDie(plane.RESTConfig(b))
	rw := watchReflow(b, dyn, ns)
	defer rw.stop()
	sp := newStatusPatcher(b, members, ns)

	// The churn objects, on every cell; settled once every member holds
	// them and the plane has been quiet for 2 s.
	objs := make([]string, reflowObjects)
	for i := range objs {
		objs[i] = fmt.Sprintf("churn-%04d", i)
	}
	forEach(len(objs), func(i int) { createFedDeployment(b, dyn, ns, objs[i], "bench:1", cells, nil) })
	waitMemberDeployments(b, members, ns, "churn-", len(objs))
	rw.waitQuiet(b, 2*time.Second)

	phase := func(what string) { b.Logf("%s: %s", time.Now().Format(time.TimeOnly), what) }
	phase("reflow delay samples")
	// Reflow delay: one change at a time, each on an object whose status
	// has not been written for far longer than the status interval.
	var reflow []time.Duration
	for i := range reflowSamples {
		c := i % len(cells)
		p := sp.patch(context.Background(), c, cells[c], objs[i%len(objs)])
		if p.err != nil {
			b.Fatal(p.err)
		}
		var shown time.Time
		err := framework.Poll(context.Background(), 5*time.Millisecond, 30*time.Second, func(context.Context) (bool, error) {
			var ok bool
			shown, ok = rw.shown(p.obj, p.cell, p.value)
			return ok, nil
		})
		if err != nil {
			b.Fatalf("readyReplicas %d of %s in %s not in the plane: %v\ncontroller log:\n%s", p.value, p.obj, p.cell, err, ctrl.Tail(20))
		}
		reflow = append(reflow, shown.Sub(p.at))
		time.Sleep(reflowSampleGap) // quiet between samples: pacing, not a sync
	}
	res.reflow = [2]time.Duration{percentile(reflow, 50), percentile(reflow, 99)}

	phase("template update latency, with and without a mask")
	res.noMask, res.masked = maskLatency(b, dyn, members, rw, ns, cells, &res)

	// Churn with the default interval, then with --status-interval=0.
	planeKube := plane.Client(b)
	memberKubes := make([]kubernetes.Interface, len(members))
	for i, m := range members {
		memberKubes[i] = m.Client(b)
	}
	rw.waitQuiet(b, 2*time.Second)
	// A light load the plane keeps up with, then all objects.
	loads := [][]string{objs[:min(churnLight, len(objs))], objs}
	for _, interval := range []string{"1s", "0"} {
		if interval == "0" {
			ctrl.Stop(10 * time.Second)
			ctrl = framework.StartController(b, plane, "--status-interval=0")
			rw.waitQuiet(b, 2*time.Second)
		}
		for _, load := range loads {
			phase(fmt.Sprintf("status churn of %d objects, --status-interval=%s", len(load), interval))
			res.churn = append(res.churn, churn(b, sp, rw, load, cells, interval, ctrl.Pid(), plane.Pid(), planeKube, memberKubes))
		}
	}
	ctrl.Stop(10 * time.Second)
	if rw.restarts.Load() > 0 {
		res.notes = append(res.notes, fmt.Sprintf("the plane watch was restarted %d times", rw.restarts.Load()))
	}
	return res
}

// maskLatency creates maskSamples objects without a mask and as many
// with a mask naming all their cells, then updates each pair's template,
// in turns, 50 ms apart: update → present in every member (p50/p99).
func maskLatency(b *testing.B, dyn dynamic.Interface, members []*framework.Server, rw *reflowWatch, ns string, cells []string, res *releaseResult) (noMask, masked [2]time.Duration) {
	w := startWatchers(b, members, deployments, ns, func(u *unstructured.Unstructured) string {
		return u.GetName() + "@" + templateImage(u)
	})
	defer w.stop()
	forEach(maskSamples, func(i int) {
		createFedDeployment(b, dyn, ns, fmt.Sprintf("plain-%03d", i), "bench:1", cells, nil)
		createFedDeployment(b, dyn, ns, fmt.Sprintf("masked-%03d", i), "bench:1", cells, cells)
	})
	deadline := time.Now().Add(5 * time.Minute)
	for i := range maskSamples {
		for _, name := range []string{fmt.Sprintf("plain-%03d", i), fmt.Sprintf("masked-%03d", i)} {
			for {
				if _, ok := w.lastSeen(name+"@bench:1", len(cells)); ok {
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("%s not in all %d members after 5 min", name, len(cells))
				}
				time.Sleep(20 * time.Millisecond) // polling the watchers' record
			}
		}
	}
	rw.waitQuiet(b, 2*time.Second)
	// A mask naming every placed cell holds nothing back.
	if got, err := dyn.Resource(fedDeployments).Namespace(ns).Get(context.Background(), "masked-000", metav1.GetOptions{}); err == nil {
		tops, _, _ := unstructured.NestedSlice(got.Object, "status", "topologies")
		for _, t := range tops {
			if m, _ := t.(map[string]any); m["status"] != "OK" {
				res.notes = append(res.notes, fmt.Sprintf("masked-000: topology %v is %v, want OK", m["name"], m["status"]))
			}
		}
	}

	type update struct {
		name string
		at   time.Time
	}
	var plain, mask []update
	for i := range maskSamples {
		pair := []string{fmt.Sprintf("plain-%03d", i), fmt.Sprintf("masked-%03d", i)}
		if i%2 == 1 {
			pair[0], pair[1] = pair[1], pair[0] // neither kind always goes first
		}
		for _, name := range pair {
			u := update{name: name, at: time.Now()}
			setTemplateImage(b, dyn, ns, name, "bench:2")
			if strings.HasPrefix(name, "plain-") {
				plain = append(plain, u)
			} else {
				mask = append(mask, u)
			}
			time.Sleep(50 * time.Millisecond) // the arrival rate: 20 updates/s
		}
	}
	lat := func(us []update) [2]time.Duration {
		var d []time.Duration
		for _, u := range us {
			for {
				if last, ok := w.lastSeen(u.name+"@bench:2", len(cells)); ok {
					d = append(d, last.Sub(u.at))
					break
				}
				if time.Now().After(deadline.Add(2 * time.Minute)) {
					b.Fatalf("%s not updated in all %d members", u.name, len(cells))
				}
				time.Sleep(20 * time.Millisecond) // polling the watchers' record
			}
		}
		return [2]time.Duration{percentile(d, 50), percentile(d, 99)}
	}
	return lat(plain), lat(mask)
}

// churn patches every object's status in every cell once per churn
// period, one goroutine per member going round the objects (each member
// starting at another object, so an object's changes are spread over the
// period), for churnSeconds; then it waits until the plane shows every
// patch (or a later one).
func churn(b *testing.B, sp *statusPatcher, rw *reflowWatch, objs, cells []string, interval string, ctrlPid, planePid int, plane kubernetes.Interface, members []kubernetes.Interface) churnResult {
	ctx := context.Background()
	res := churnResult{interval: interval, objects: len(objs)}
	period := time.Duration(churnPeriodMS) * time.Millisecond
	window := time.Duration(churnSeconds) * time.Second
	res.target = float64(len(objs)*len(cells)) / period.Seconds()
	writes := func() (status, conflicts, other, member int) {
		for _, r := range []struct{ resource, sub string }{{"federateddeployments", "status"}, {"federateddeployments", ""}, {"propagatedversions", ""}} {
			w, err := framework.CountSubresourceWrites(ctx, plane, r.resource, r.sub)
			if err != nil {
				b.Fatal(err)
			}
			if r.sub == "status" {
				status, conflicts = w.Creates+w.Updates, w.Conflicts
			} else {
				other += w.Creates + w.Updates + w.Deletes
			}
		}
		for _, m := range members {
			w, err := framework.CountWrites(ctx, m, "deployments")
			if err != nil {
				b.Fatal(err)
			}
			member += w.Creates + w.Updates + w.Deletes
		}
		return
	}
	status0, conflicts0, other0, member0 := writes()
	putSum0, putCount0 := requestSeconds(b, plane, "federateddeployments", "status", "PUT")
	cpu0, planeCPU0, mod0 := cpuTime(b, ctrlPid), cpuTime(b, planePid), rw.modified.Load()

	start := time.Now()
	end := start.Add(window)
	step := period / time.Duration(len(objs))
	var mu sync.Mutex
	var sent []statusPatch
	var wg sync.WaitGroup
	for c := range cells {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inFlight := make(chan struct{}, churnConcurrency)
			var patches sync.WaitGroup
			for k := 0; ; k++ {
				at := start.Add(time.Duration(k) * step)
				if !at.Before(end) {
					break
				}
				time.Sleep(time.Until(at)) // paces the churn
				obj := objs[(k+c*len(objs)/len(cells))%len(objs)]
				v := sp.nextValue(obj, cells[c])
				inFlight <- struct{}{}
				patches.Add(1)
				go func() {
					defer patches.Done()
					p := sp.send(ctx, c, cells[c], obj, v)
					<-inFlight
					if p.err != nil {
						b.Error(p.err)
						return
					}
					mu.Lock()
					sent = append(sent, p)
					mu.Unlock()
				}()
			}
			patches.Wait()
		}()
	}
	wg.Wait()
	res.window = time.Since(start)
	status1, conflicts1, other1, member1 := writes()
	putSum1, putCount1 := requestSeconds(b, plane, "federateddeployments", "status", "PUT")
	if putCount1 > putCount0 {
		res.statusPutMean = time.Duration((putSum1 - putSum0) / (putCount1 - putCount0) * float64(time.Second))
	}
	res.cpu, res.planeCPU = cpuTime(b, ctrlPid)-cpu0, cpuTime(b, planePid)-planeCPU0
	res.modified = int(rw.modified.Load() - mod0)
	res.statusWrites, res.conflicts = status1-status0, conflicts1-conflicts0
	res.otherWrites, res.memberWrites = other1-other0, member1-member0
	res.patches = len(sent)

	// Lag: until the plane shows the patched value or a later one.
	var lags []time.Duration
	deadline := time.Now().Add(2 * time.Minute)
	for _, p := range sent {
		for {
			if t, ok := rw.shown(p.obj, p.cell, p.value); ok {
				lags = append(lags, t.Sub(p.at))
				break
			}
			if time.Now().After(deadline) {
				res.unseen++
				break
			}
			time.Sleep(20 * time.Millisecond) // polling the watch's record
		}
	}
	if len(lags) > 0 {
		res.lag = [2]time.Duration{percentile(lags, 50), percentile(lags, 99)}
	}
	rw.waitQuiet(b, 2*time.Second)
	return res
}

// requestSeconds is a server's apiserver_request_duration_seconds sum and
// count for verb on resource's subresource.
func requestSeconds(b *testing.B, c kubernetes.Interface, resource, subresource, verb string) (sum, count float64) {
	raw, err := c.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatalf("reading /metrics: %v", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.Contains(line, `resource="`+resource+`"`) || !strings.Contains(line, `subresource="`+subresource+`"`) ||
			!strings.Contains(line, `verb="`+verb+`"`) {
			continue
		}
		f := strings.Fields(line)
		var v float64
		if _, err := fmt.Sscan(f[len(f)-1], &v); err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(line, "apiserver_request_duration_seconds_sum{"):
			sum += v
		case strings.HasPrefix(line, "apiserver_request_duration_seconds_count{"):
			count += v
		}
	}
	return sum, count
}

// statusPatcher plays the members' deployment controllers: it merges a
// status into member Deployments, each object's values growing in each
// cell (replicas = readyReplicas = … = the value).
type statusPatcher struct {
	dyn  []dynamic.Interface
	ns   string
	mu   sync.Mutex
	last map[string]int64 // obj/cell → last value sent
}

type statusPatch struct {
	obj, cell string
	value     int64
	at        time.Time // when the patch was sent
	err       error
}

func newStatusPatcher(b *testing.B, members []*framework.Server, ns string) *statusPatcher {
	s := &statusPatcher{ns: ns, last: map[string]int64{}}
	for _, m := range members {
		s.dyn = append(s.dyn, dynamic.NewForConfigOrDie(m.RESTConfig(b)))
	}
	return s
}

func (s *statusPatcher) nextValue(obj, cell string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last[obj+"/"+cell]++
	return s.last[obj+"/"+cell]
}

func (s *statusPatcher) patch(ctx context.Context, member int, cell, obj string) statusPatch {
	return s.send(ctx, member, cell, obj, s.nextValue(obj, cell))
}

func (s *statusPatcher) send(ctx context.Context, member int, cell, obj string, v int64) statusPatch {
	body, _ := json.Marshal(map[string]any{"status": map[string]any{
		"observedGeneration": 1, "replicas": v, "updatedReplicas": v, "readyReplicas": v, "availableReplicas": v,
	}})
	p := statusPatch{obj: obj, cell: cell, value: v, at: time.Now()}
	if _, err := s.dyn[member].Resource(deployments).Namespace(s.ns).Patch(ctx, obj, types.MergePatchType, body, metav1.PatchOptions{}, "status"); err != nil {
		p.err = fmt.Errorf("patching the status of %s in member-%d: %w", obj, member, err)
	}
	return p
}

// reflowWatch watches v1beta2 FederatedDeployments on the plane and
// records when each topology's remoteStatus.readyReplicas first showed
// each value, and counts MODIFIED events.
type reflowWatch struct {
	mu        sync.Mutex
	seen      map[string][]shownValue // obj/cell → increasing values
	modified  atomic.Int64
	lastEvent atomic.Int64 // unix nanoseconds
	restarts  atomic.Int64
	cancel    context.CancelFunc
}

type shownValue struct {
	value int64
	at    time.Time
}

func watchReflow(b *testing.B, dyn dynamic.Interface, ns string) *reflowWatch {
	ctx, cancel := context.WithCancel(context.Background())
	r := &reflowWatch{seen: map[string][]shownValue{}, cancel: cancel}
	r.lastEvent.Store(time.Now().UnixNano())
	res := dyn.Resource(fedDeployments).Namespace(ns)
	wi, err := res.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatalf("watching federated deployments: %v", err)
	}
	go func() {
		rv := ""
		for {
			for ev := range wi.ResultChan() {
				obj, ok := ev.Object.(*unstructured.Unstructured)
				if !ok || ev.Type == watch.Error {
					continue // the watch ends and is started again
				}
				rv = obj.GetResourceVersion()
				r.record(ev.Type, obj)
			}
			// Closed by the server (or by stop): resume where it was.
			if ctx.Err() == nil {
				b.Logf("%s: the plane closed the watch on federated deployments; resuming from resourceVersion %s", time.Now().Format(time.TimeOnly), rv)
			}
			for ctx.Err() == nil {
				r.restarts.Add(1)
				next, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
				if err == nil {
					wi = next
					break
				}
				// Perhaps too old: start again from the current state,
				// after a pause.
				rv = ""
				time.Sleep(100 * time.Millisecond)
			}
			if ctx.Err() != nil {
				return
			}
		}
	}()
	return r
}

func (r *reflowWatch) record(typ watch.EventType, obj *unstructured.Unstructured) {
	now := time.Now()
	r.lastEvent.Store(now.UnixNano())
	if typ == watch.Modified {
		r.modified.Add(1)
	}
	if typ != watch.Added && typ != watch.Modified {
		return
	}
	tops, _, _ := unstructured.NestedSlice(obj.Object, "status", "topologies")
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range tops {
		m, _ := t.(map[string]any)
		rs, _ := m["remoteStatus"].(map[string]any)
		v, ok := rs["readyReplicas"].(int64)
		if !ok {
			continue
		}
		key := obj.GetName() + "/" + fmt.Sprint(m["name"])
		if s := r.seen[key]; len(s) == 0 || s[len(s)-1].value < v {
			r.seen[key] = append(s, shownValue{v, now})
		}
	}
}

// shown is when the plane first showed value v, or a later one, as obj's
// remoteStatus in cell.
func (r *reflowWatch) shown(obj, cell string, v int64) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.seen[obj+"/"+cell] {
		if s.value >= v {
			return s.at, true
		}
	}
	return time.Time{}, false
}

// waitQuiet waits until the plane has sent no event for quiet.
func (r *reflowWatch) waitQuiet(b *testing.B, quiet time.Duration) {
	err := framework.Poll(context.Background(), 100*time.Millisecond, 3*time.Minute, func(context.Context) (bool, error) {
		return time.Since(time.Unix(0, r.lastEvent.Load())) >= quiet, nil
	})
	if err != nil {
		b.Fatalf("the federated deployments never went quiet for %s: %v", quiet, err)
	}
}

func (r *reflowWatch) stop() { r.cancel() }

func createFedDeployment(b *testing.B, dyn dynamic.Interface, ns, name, image string, cells, mask []string) {
	topologies := func(names []string) []any {
		tops := make([]any, len(names))
		for i, c := range names {
			tops[i] = map[string]any{"name": c}
		}
		return tops
	}
	spec := map[string]any{
		"placement": map[string]any{"topologyType": "cell", "topologies": topologies(cells)},
		"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"app": name}},
			"spec": map[string]any{
				"replicas": int64(2),
				"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
				"template": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{"app": name}},
					"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": image}}},
				},
			},
		},
	}
	if mask != nil {
		spec["placementMask"] = map[string]any{"topologies": topologies(mask)}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta2", "kind": "FederatedDeployment",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     spec,
	}}
	if _, err := dyn.Resource(fedDeployments).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		b.Errorf("creating %s/%s: %v", ns, name, err)
	}
}

func setTemplateImage(b *testing.B, dyn dynamic.Interface, ns, name, image string) {
	body, _ := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": image}}}},
	}}}})
	if _, err := dyn.Resource(fedDeployments).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		b.Fatalf("updating %s/%s: %v", ns, name, err)
	}
}

// templateImage is a Deployment's first container image.
func templateImage(u *unstructured.Unstructured) string {
	cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		return ""
	}
	m, _ := cs[0].(map[string]any)
	return fmt.Sprint(m["image"])
}

// waitMemberDeployments waits until every member holds n managed
// Deployments named with prefix.
func waitMemberDeployments(b *testing.B, members []*framework.Server, ns, prefix string, n int) {
	for i, m := range members {
		c := dynamic.NewForConfigOrDie(m.RESTConfig(b))
		err := framework.Poll(context.Background(), 500*time.Millisecond, 5*time.Minute, func(ctx context.Context) (bool, error) {
			l, err := c.Resource(deployments).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: "kubefed.io/managed=true"})
			if err != nil {
				return false, err
			}
			got := 0
			for _, d := range l.Items {
				if strings.HasPrefix(d.GetName(), prefix) {
					got++
				}
			}
			return got >= n, fmt.Errorf("%d of %d", got, n)
		})
		if err != nil {
			b.Fatalf("member-%d does not hold the %s deployments: %v", i, prefix, err)
		}
	}
}

func reportRelease(b *testing.B, r releaseResult) {
	pct := func(d [2]time.Duration) string { return fmt.Sprintf("%8.1f ms %8.1f ms", ms(d[0]), ms(d[1])) }
	var s strings.Builder
	fmt.Fprintf(&s, "\nrelease control: %d FederatedDeployments on %d cells (one per member cluster)\n", reflowObjects, reflowCells)
	fmt.Fprintf(&s, "%-58s %11s %11s\n", "", "p50", "p99")
	fmt.Fprintf(&s, "%-58s %s\n", fmt.Sprintf("reflow delay, member status → plane (%d samples)", reflowSamples), pct(r.reflow))
	fmt.Fprintf(&s, "%-58s %s\n", fmt.Sprintf("template update → %d members, no mask (%d)", reflowCells, maskSamples), pct(r.noMask))
	fmt.Fprintf(&s, "%-58s %s\n", fmt.Sprintf("template update → %d members, mask = all cells (%d)", reflowCells, maskSamples), pct(r.masked))
	b.ReportMetric(ms(r.reflow[0]), "reflow-p50-ms")
	b.ReportMetric(ms(r.reflow[1]), "reflow-p99-ms")
	b.ReportMetric(ms(r.noMask[0]), "update-nomask-p50-ms")
	b.ReportMetric(ms(r.noMask[1]), "update-nomask-p99-ms")
	b.ReportMetric(ms(r.masked[0]), "update-mask-p50-ms")
	b.ReportMetric(ms(r.masked[1]), "update-mask-p99-ms")

	fmt.Fprintf(&s, "\nstatus churn: each object's status changes every %.1f s in each cell, %d s per run\n",
		float64(churnPeriodMS)/1000, churnSeconds)
	// Side by side: each load with the interval, then without.
	cols := slices.Clone(r.churn)
	sort.SliceStable(cols, func(i, j int) bool { return cols[i].objects < cols[j].objects })
	row := func(name string, f func(c churnResult) string) {
		fmt.Fprintf(&s, "%-46s", name)
		for _, c := range cols {
			fmt.Fprintf(&s, " %13s", f(c))
		}
		s.WriteString("\n")
	}
	row("objects churned", func(c churnResult) string { return fmt.Sprint(c.objects) })
	row("--status-interval", func(c churnResult) string { return c.interval })
	perSec := func(n int, c churnResult) float64 { return float64(n) / c.window.Seconds() }
	row("member status patches/s (sent/asked)", func(c churnResult) string {
		return fmt.Sprintf("%.0f/%.0f", perSec(c.patches, c), c.target)
	})
	row("plane status writes/s (federateddeployments)", func(c churnResult) string { return fmt.Sprintf("%.1f", perSec(c.statusWrites, c)) })
	row("  of which 409 Conflict /s", func(c churnResult) string { return fmt.Sprintf("%.1f", perSec(c.conflicts, c)) })
	row("  plane's mean time to answer one (ms)", func(c churnResult) string { return fmt.Sprintf("%.1f", ms(c.statusPutMean)) })
	row("plane MODIFIED events/s (v1beta2 watch)", func(c churnResult) string { return fmt.Sprintf("%.1f", perSec(c.modified, c)) })
	row("status writes per member patch", func(c churnResult) string {
		return fmt.Sprintf("%.2f", float64(c.statusWrites)/float64(max(1, c.patches)))
	})
	row("other plane writes (spec, propagatedversions)", func(c churnResult) string { return fmt.Sprint(c.otherWrites) })
	row("writes to member deployments (not status)", func(c churnResult) string { return fmt.Sprint(c.memberWrites) })
	row("controller CPU (s, % of a core)", func(c churnResult) string {
		return fmt.Sprintf("%.1f (%.0f%%)", c.cpu.Seconds(), 100*c.cpu.Seconds()/c.window.Seconds())
	})
	row("plane CPU (s, % of a core)", func(c churnResult) string {
		return fmt.Sprintf("%.1f (%.0f%%)", c.planeCPU.Seconds(), 100*c.planeCPU.Seconds()/c.window.Seconds())
	})
	row("reflow lag p50 (ms)", func(c churnResult) string { return fmt.Sprintf("%.1f", ms(c.lag[0])) })
	row("reflow lag p99 (ms)", func(c churnResult) string { return fmt.Sprintf("%.1f", ms(c.lag[1])) })
	row("patches never shown in 2 min", func(c churnResult) string { return fmt.Sprint(c.unseen) })
	for _, c := range r.churn {
		p := fmt.Sprintf("churn%d-i%s-", c.objects, c.interval)
		b.ReportMetric(perSec(c.statusWrites, c), p+"status-writes/s")
		b.ReportMetric(perSec(c.patches, c), p+"patches/s")
		b.ReportMetric(c.cpu.Seconds(), p+"ctrl-cpu-s")
		b.ReportMetric(ms(c.lag[0]), p+"lag-p50-ms")
		b.ReportMetric(ms(c.lag[1]), p+"lag-p99-ms")
	}
	for _, n := range r.notes {
		fmt.Fprintf(&s, "note: %s\n", n)
	}
	if reflowObjects < 1000 || reflowCells < 10 {
		s.WriteString("note: issue 11's size is 1,000 objects × 10 cells: CELLFED_BENCH_REFLOW_OBJECTS=1000 CELLFED_BENCH_REFLOW_CELLS=10\n")
	}
	b.Log(s.String())
	fmt.Print(s.String())
}
