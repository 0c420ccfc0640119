package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/cellfed/cellfed/test/framework"
)

// The fairness benchmark's size (issue 40).
var (
	fairSamples   = envInt("CELLFED_BENCH_FAIR_SAMPLES", 30)
	fairDivisions = envInt("CELLFED_BENCH_FAIR_DIVISIONS", 13)
	fairLarge     = envInt("CELLFED_BENCH_FAIR_LARGE", 4)
	fairLargeKB   = envInt("CELLFED_BENCH_FAIR_TEMPLATE_KB", 1000)
	fairRounds    = envInt("CELLFED_BENCH_FAIR_ROUNDS", 3)
	fairBurst     = envInt("CELLFED_BENCH_FAIR_BURST", 300)
)

const (
	// fairFlooder and fairQuiet are the two tenants' workspaces.
	fairFlooder = "fair-flood"
	fairQuiet   = "fair-quiet"
	// fairMembers: one cell of each workspace on each.
	fairMembers = 2
	// fairMaxRatio is the bound: the quiet tenant's p99 under the flood
	// stays within twice its p99 alone.
	fairMaxRatio = 2.0
	// fairSampleGap is the quiet between two samples.
	fairSampleGap = 200 * time.Millisecond
)

// BenchmarkFairness measures one tenant's propagation latency
// (FederatedDeployment created → a Deployment on each of its 2 cells'
// members) alone, then while another tenant floods the same controller:
// CELLFED_BENCH_FAIR_DIVISIONS FederatedDeployments of 2147483647
// replicas divided by weights [2147483647, 1] on two cells,
// CELLFED_BENCH_FAIR_BURST ordinary ones created at once, and
// CELLFED_BENCH_FAIR_LARGE FederatedDeployments with a template of
// CELLFED_BENCH_FAIR_TEMPLATE_KB kB updated in a loop (when admission
// refuses such a division, the largest it accepts). Quiet and flood
// phases alternate CELLFED_BENCH_FAIR_ROUNDS times (the divisions
// created at each flood's start, deleted at its end, and the flooder's
// objects settled before the next quiet phase), so the machine's other
// load weighs on both alike. It reports both p99s and their ratio, and
// the create call's p99 under the flood (the plane's part, which the
// controller's fairness cannot change), and fails when the ratio
// exceeds 2.
func BenchmarkFairness(b *testing.B) {
	for range b.N {
		fairness(b)
	}
}

func fairness(b *testing.B) {
	members := framework.StartMembers(b, fairMembers)
	plane := framework.StartPlane(b, framework.PlaneOptions{})
	defer plane.Stop(10 * time.Second)
	k := framework.Kubectl{Kubeconfig: plane.Kubeconfig}
	var clusters []string
	for i, m := range members {
		framework.JoinMember(b, plane, m, fmt.Sprintf("member-%d", i))
	}
	for _, ws := range []struct{ ns, tenant string }{{fairFlooder, "flooder"}, {fairQuiet, "quiet"}} {
		k.MustRun(b, tenantNamespace(ws.ns, ws.tenant), "apply", "-f", "-")
		var cells strings.Builder
		for i := range members {
			cells.WriteString(cellYAML(ws.ns, i))
			clusters = append(clusters, ws.ns+"."+cellName(i))
		}
		k.MustRun(b, cells.String(), "apply", "-f", "-")
	}
	ctrl := framework.StartController(b, plane)
	defer ctrl.Stop(10 * time.Second)
	framework.WaitKubeFedClustersReady(b, plane, clusters...)
	cells := cellNames(len(members))
	dyn := dynamic.NewForConfigOrDie(plane.RESTConfig(b))
	w := startWatchers(b, members, deployments, fairQuiet, func(u *unstructured.Unstructured) string { return u.GetName() })
	defer w.stop()

	// A plane watch of the quiet tenant's objects: when its event of a
	// create arrives is about when the controller's does.
	var watchMu sync.Mutex
	watched := map[string]time.Time{}
	pw, err := dyn.Resource(fedDeployments).Namespace(fairQuiet).Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		b.Fatalf("watching %s: %v", fairQuiet, err)
	}
	defer pw.Stop()
	go func() {
		for ev := range pw.ResultChan() {
			if u, ok := ev.Object.(*unstructured.Unstructured); ok {
				watchMu.Lock()
				if _, ok := watched[u.GetName()]; !ok {
					watched[u.GetName()] = time.Now()
				}
				watchMu.Unlock()
			}
		}
	}()

	// sample creates n of the quiet tenant's objects one at a time:
	// created → on every member (lat), the create call alone (write),
	// and the plane watch's event → on every member (after, the
	// controller's and the members' part).
	var lat, write, after [2][]time.Duration // [quiet, flood]
	sample := func(phase, n int, prefix string) {
		for i := range n {
			name := fmt.Sprintf("%s-%03d", prefix, i)
			start := time.Now()
			createFedDeployment(b, dyn, fairQuiet, name, "bench:1", cells, nil)
			created := time.Now()
			var seen time.Time
			err := framework.Poll(context.Background(), 5*time.Millisecond, 5*time.Minute, func(context.Context) (bool, error) {
				var ok bool
				seen, ok = w.lastSeen(name, len(members))
				return ok, nil
			})
			if err != nil {
				b.Fatalf("%s/%s not on members %v: %v\ncontroller log:\n%s", fairQuiet, name, w.missing(name, len(members)), err, ctrl.Tail(20))
			}
			lat[phase] = append(lat[phase], seen.Sub(start))
			watchMu.Lock()
			if at, ok := watched[name]; ok {
				after[phase] = append(after[phase], seen.Sub(at))
			}
			watchMu.Unlock()
			write[phase] = append(write[phase], created.Sub(start))
			time.Sleep(fairSampleGap) // pacing between samples, not a sync
		}
	}
	logf := func(format string, args ...any) {
		b.Logf("%s: %s", time.Now().Format(time.TimeOnly), fmt.Sprintf(format, args...))
	}
	for i := range fairLarge {
		createFlood(b, dyn, fmt.Sprintf("large-%02d", i), cells, 2, nil, payload(0, fairLargeKB))
	}
	waitFloodSettled(b, dyn)

	// Quiet and flood blocks alternate, so that the machine's other load
	// weighs on both alike.
	var updates, failed atomic.Int64
	var floodTime, floodCPU time.Duration
	per := max(1, fairSamples/fairRounds)
	for r := range fairRounds {
		logf("round %d: quiet, %d samples", r, per)
		sample(0, per, fmt.Sprintf("alone-%d", r))

		logf("round %d: flood: %d huge divisions, %d objects at once, %d templates of %d kB updated in a loop", r, fairDivisions, fairBurst, fairLarge, fairLargeKB)
		cpu0, start := cpuTime(b, ctrl.Pid()), time.Now()
		for i := range fairDivisions {
			createFlood(b, dyn, fmt.Sprintf("division-%d-%02d", r, i), cells, int64(1<<31-1), []int64{1<<31 - 1, 1}, "")
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { // while the samples start
			defer wg.Done()
			forEach(fairBurst, func(i int) {
				createFlood(b, dyn, fmt.Sprintf("burst-%d-%03d", r, i), cells, 1, nil, "")
			})
		}()
		n0 := updates.Load()
		for i := range fairLarge {
			name := fmt.Sprintf("large-%02d", i)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 1; ctx.Err() == nil; n++ {
					if err := setPayload(ctx, dyn, name, payload(r*1_000_000+n, fairLargeKB)); err != nil {
						if ctx.Err() == nil {
							failed.Add(1)
						}
						continue
					}
					updates.Add(1)
				}
			}()
		}
		// The flood is on once every large object has been updated.
		if err := framework.Poll(context.Background(), 50*time.Millisecond, 2*time.Minute, func(context.Context) (bool, error) {
			return updates.Load()-n0 >= int64(fairLarge), nil
		}); err != nil {
			b.Fatalf("the large templates are not being updated (%d updates, %d failed): %v", updates.Load(), failed.Load(), err)
		}
		sample(1, per, fmt.Sprintf("flood-%d", r))
		cancel()
		wg.Wait()
		var names []string
		for i := range fairDivisions {
			names = append(names, fmt.Sprintf("division-%d-%02d", r, i))
		}
		for i := range fairBurst {
			names = append(names, fmt.Sprintf("burst-%d-%03d", r, i))
		}
		forEach(len(names), func(i int) {
			if err := dyn.Resource(fedDeployments).Namespace(fairFlooder).Delete(context.Background(), names[i], metav1.DeleteOptions{}); err != nil {
				b.Errorf("deleting %s: %v", names[i], err)
			}
		})
		floodTime += time.Since(start)
		floodCPU += cpuTime(b, ctrl.Pid()) - cpu0
		waitFloodSettled(b, dyn)
	}

	q99, f99 := percentile(lat[0], 99), percentile(lat[1], 99)
	pct := func(d []time.Duration, p int) float64 {
		if len(d) == 0 {
			return 0
		}
		return ms(percentile(d, p))
	}
	ratio := float64(f99) / float64(q99)
	b.Logf("\nfairness: %d samples of the quiet tenant's latency (created → on both members) in %d rounds\n"+
		"  alone:       p50 %8.1f ms  p99 %8.1f ms   (create call p50 %6.1f ms, p99 %8.1f ms)\n"+
		"  under flood: p50 %8.1f ms  p99 %8.1f ms   (create call p50 %6.1f ms, p99 %8.1f ms)\n"+
		"  plane watch event → on both members: alone p50 %6.1f ms, p99 %8.1f ms; under flood p50 %6.1f ms, p99 %8.1f ms\n"+
		"  p99 ratio %.2f (bound %.0f)\n"+
		"  flood, each round: %d divisions of 2147483647 replicas and %d objects created at once, %d templates of %d kB: %d updates in %.0f s (%.1f/s, %d failed)\n"+
		"  controller CPU during the floods: %.1f s (%.2f cores)",
		len(lat[0]), fairRounds,
		ms(percentile(lat[0], 50)), ms(q99), ms(percentile(write[0], 50)), ms(percentile(write[0], 99)),
		ms(percentile(lat[1], 50)), ms(f99), ms(percentile(write[1], 50)), ms(percentile(write[1], 99)),
		pct(after[0], 50), pct(after[0], 99), pct(after[1], 50), pct(after[1], 99),
		ratio, fairMaxRatio,
		fairDivisions, fairBurst, fairLarge, fairLargeKB, updates.Load(), floodTime.Seconds(), float64(updates.Load())/floodTime.Seconds(), failed.Load(),
		floodCPU.Seconds(), floodCPU.Seconds()/floodTime.Seconds())
	b.ReportMetric(ms(q99), "quiet-p99-ms")
	b.ReportMetric(ms(f99), "flood-p99-ms")
	b.ReportMetric(ratio, "p99-ratio")
	b.ReportMetric(ms(percentile(write[1], 99)), "flood-create-p99-ms")
	b.ReportMetric(pct(after[1], 99), "flood-watch-to-member-p99-ms")
	b.ReportMetric(float64(updates.Load())/floodTime.Seconds(), "flood-updates/s")
	if ratio > fairMaxRatio {
		b.Errorf("the quiet tenant's p99 under the flood is %.1f ms, %.2f× its %.1f ms alone: more than %.0f×",
			ms(f99), ratio, ms(q99), fairMaxRatio)
	}
}

// waitFloodSettled waits until the controller has caught up with the
// flooder's objects: every one's status observes its generation and
// none is being deleted.
func waitFloodSettled(b *testing.B, dyn dynamic.Interface) {
	var left string
	err := framework.Poll(context.Background(), 200*time.Millisecond, 5*time.Minute, func(ctx context.Context) (bool, error) {
		l, err := dyn.Resource(fedDeployments).Namespace(fairFlooder).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, o := range l.Items {
			gen, _, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration")
			if o.GetDeletionTimestamp() != nil || gen != o.GetGeneration() {
				left = o.GetName()
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		b.Fatalf("the flooder's objects did not settle (%s): %v", left, err)
	}
}

// payload is a string of kb kilobytes (1,000 bytes) that differs for
// each n.
func payload(n, kb int) string {
	if kb <= 0 {
		return ""
	}
	head := fmt.Sprintf("%010d", n)
	return head + strings.Repeat("x", max(0, kb*1000-len(head)))
}

// createFlood creates FederatedDeployment name in the flooder's
// workspace, placed on cells, with replicas, divided by weights when
// given (one per cell), and an environment variable of payload when
// not empty.
func createFlood(b *testing.B, dyn dynamic.Interface, name string, cells []string, replicas int64, weights []int64, payload string) {
	var tops []any
	for _, c := range cells {
		tops = append(tops, map[string]any{"name": c})
	}
	spec := map[string]any{
		"placement": map[string]any{"topologyType": "cell", "topologies": tops},
		"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"app": name}},
			"spec": map[string]any{
				"replicas": replicas,
				"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
				"template": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{"app": name}},
					"spec":     map[string]any{"containers": []any{floodContainer(payload)}},
				},
			},
		},
	}
	if weights != nil {
		var div []any
		for i, wt := range weights {
			div = append(div, map[string]any{"name": cells[i%len(cells)], "weight": wt})
		}
		spec["replicaDivision"] = map[string]any{"mode": "Divide", "topologies": div}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta2", "kind": "FederatedDeployment",
		"metadata": map[string]any{"name": name, "namespace": fairFlooder},
		"spec":     spec,
	}}
	_, err := dyn.Resource(fedDeployments).Namespace(fairFlooder).Create(context.Background(), obj, metav1.CreateOptions{})
	if apierrors.IsInvalid(err) && weights != nil && replicas > floodBounded {
		// Admission bounds divisions: the largest it accepts.
		if floodRefusedLogged.CompareAndSwap(false, true) {
			b.Logf("%s/%s refused (%v): %d replicas by weights [%d, 1] instead (and for the others)", fairFlooder, name, err, floodBounded, floodBounded)
		}
		createFlood(b, dyn, name, cells, floodBounded, []int64{floodBounded, 1}, payload)
		return
	}
	if err != nil {
		b.Errorf("creating %s/%s: %v", fairFlooder, name, err)
	}
}

// floodBounded is the division the flood falls back to when admission
// refuses 2147483647 replicas and weights (its bound, issue 40).
const floodBounded = 1_000_000

// floodRefusedLogged: the fallback to floodBounded is logged once.
var floodRefusedLogged atomic.Bool

func floodContainer(payload string) map[string]any {
	c := map[string]any{"name": "app", "image": "bench:1"}
	if payload != "" {
		c["env"] = []any{map[string]any{"name": "PAYLOAD", "value": payload}}
	}
	return c
}

// setPayload replaces the payload of the flooder's object name.
func setPayload(ctx context.Context, dyn dynamic.Interface, name, payload string) error {
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"template": map[string]any{"spec": map[string]any{"containers": []any{floodContainer(payload)}}},
	}}}})
	if err != nil {
		return err
	}
	_, err = dyn.Resource(fedDeployments).Namespace(fairFlooder).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
	return err
}
