package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/pkg/controller/clusters"
	"github.com/cellfed/cellfed/test/framework"
)

// moveFixture is what TestMoveCell places on cell shop/rz10a.
const (
	moveDeployments = 20
	moveConfigMaps  = 29
)

// moveObjects is the YAML of the 50 federated objects on rz10a: 20
// Deployments, 29 ConfigMaps and a Service.
func moveObjects() string {
	var b strings.Builder
	on := []string{"rz10a"}
	for i := range moveDeployments {
		extra := ""
		if i == 2 {
			// An override of the cell that names its nodes: it moves
			// with the cell, and the move reports it.
			extra = "  overrides:\n  - topologyName: rz10a\n    clusterOverrides:\n    - {path: /spec/template/spec/nodeSelector, value: {disk: ssd}}\n"
		}
		b.WriteString(deployment("shop", fmt.Sprintf("web-%d", i), "nginx:1.27", on, extra) + "---\n")
	}
	for i := range moveConfigMaps {
		b.WriteString(configMap("shop", fmt.Sprintf("cfg-%d", i), fmt.Sprintf("i: %q", fmt.Sprint(i)), on, "") + "---\n")
	}
	b.WriteString(`apiVersion: types.kubefed.io/v1beta2
kind: FederatedService
metadata: {name: front, namespace: shop}
spec:
  placement: ` + framework.CellPlacement(on...) + `
  template:
    spec:
      selector: {app: web-0}
      ports: [{port: 80}]
`)
	return b.String()
}

// deploymentReadyOn is the Deployments of shop that are ready on a member
// (the readiness kubectl rollout status applies), by name.
func deploymentReadyOn(ctx context.Context, dyn dynamic.Interface) (map[string]bool, error) {
	list, err := dyn.Resource(deployments).Namespace("shop").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, d := range list.Items {
		spec, ok, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
		if !ok {
			spec = 1
		}
		gen, _, _ := unstructured.NestedInt64(d.Object, "status", "observedGeneration")
		upd, _, _ := unstructured.NestedInt64(d.Object, "status", "updatedReplicas")
		avail, _, _ := unstructured.NestedInt64(d.Object, "status", "availableReplicas")
		out[d.GetName()] = gen >= d.GetGeneration() && upd >= spec && avail >= upd
	}
	return out, nil
}

// managedNames lists the names of a member's objects of a resource in shop
// that the federation manages.
func managedNames(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource) ([]string, error) {
	list, err := dyn.Resource(gvr).Namespace("shop").List(ctx, metav1.ListOptions{LabelSelector: clusters.ManagedLabel + "=true"})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, o := range list.Items {
		out = append(out, o.GetName())
	}
	slices.Sort(out)
	return out, nil
}

// TestMoveCell moves cell shop/rz10a, holding 50 objects (Deployments the
// harness marks ready, ConfigMaps, a Service), from member-1 to member-2
// in batches of 5 while cell rz00a keeps releasing, and SIGKILLs
// cellfed-controller halfway. Every object ends on member-2 exactly once,
// none is left on member-1, the cell's cluster and labels follow, and at
// no moment sampled every 200 ms is a Deployment ready on neither
// cluster. Then a move back is paused (nothing more starts) and undone:
// the cell stays on member-2 with everything, member-1 holds nothing.
func TestMoveCell(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := startFederation(t, 3)
	dyns := make([]dynamic.Interface, len(f.members))
	for i, m := range f.members {
		dyns[i] = dynamic.NewForConfigOrDie(m.RESTConfig(t))
	}

	// The player: what a deployment controller does, a Deployment's pods
	// ready a second after it appears; on member stuck, none gets ready.
	var stuck atomic.Int32
	stuck.Store(-1)
	seen := map[string]time.Time{}
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			for i := range dyns {
				list, err := dyns[i].Resource(deployments).Namespace("shop").List(ctx, metav1.ListOptions{})
				if err != nil {
					continue
				}
				for _, d := range list.Items {
					gen, _, _ := unstructured.NestedInt64(d.Object, "status", "observedGeneration")
					if gen >= d.GetGeneration() {
						continue
					}
					first, ok := seen[fmt.Sprint(i, d.GetUID())]
					if !ok {
						seen[fmt.Sprint(i, d.GetUID())] = time.Now()
						continue
					}
					if int(stuck.Load()) == i || time.Since(first) < time.Second {
						continue
					}
					spec, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
					body, _ := json.Marshal(map[string]any{"status": deploymentStatus(d.GetGeneration(), int(spec), int(spec))})
					pctx, pcancel := context.WithTimeout(ctx, time.Second)
					_, _ = dyns[i].Resource(deployments).Namespace("shop").Patch(pctx, d.GetName(), types.MergePatchType, body, metav1.PatchOptions{}, "status")
					pcancel()
				}
			}
		}
	}()

	f.kubectl.MustRun(t, moveObjects(), "apply", "-f", "-")
	var wantDeploy, wantCM []string
	for i := range moveDeployments {
		wantDeploy = append(wantDeploy, fmt.Sprintf("web-%d", i))
	}
	for i := range moveConfigMaps {
		wantCM = append(wantCM, fmt.Sprintf("cfg-%d", i))
	}
	slices.Sort(wantDeploy)
	slices.Sort(wantCM)
	// on reports whether member i holds exactly the fixture (all) or
	// none of it, managed.
	holds := func(i int, all bool) (bool, string) {
		for _, c := range []struct {
			gvr  schema.GroupVersionResource
			want []string
		}{{deployments, wantDeploy}, {configmaps, wantCM}, {services, []string{"front"}}} {
			got, err := managedNames(ctx, dyns[i], c.gvr)
			if err != nil {
				return false, err.Error()
			}
			want := c.want
			if !all {
				want = nil
			}
			if !slices.Equal(got, want) {
				return false, fmt.Sprintf("member-%d holds %s %v, want %v", i, c.gvr.Resource, got, want)
			}
		}
		return true, ""
	}
	eventually(t, "the 50 objects on member-1, its Deployments ready", func() (bool, string) {
		if ok, msg := holds(1, true); !ok {
			return false, msg
		}
		ready, err := deploymentReadyOn(ctx, dyns[1])
		if err != nil {
			return false, err.Error()
		}
		for _, n := range wantDeploy {
			if !ready[n] {
				return false, n + " not ready on member-1"
			}
		}
		return true, ""
	})

	// A release held back on rz10a (an empty mask): web-0
	// stays at nginx:1.27 there, and moves at that revision.
	f.kubectl.MustRun(t, masked("web-0", "nginx:1.28", []string{"rz10a"}, []string{}), "apply", "-f", "-")
	f.waitSettled(t, fedDeployV2, "shop", "web-0", map[string]string{"rz10a": "HeldBack"})

	// The other cell keeps releasing: a ConfigMap on rz00a gets a new
	// value every 300 ms through the whole move.
	var releases sync.WaitGroup
	releaseCtx, stopReleases := context.WithCancel(ctx)
	lastRelease := make(chan int, 1)
	releases.Add(1)
	go func() {
		defer releases.Done()
		n := 0
		for releaseCtx.Err() == nil {
			if _, err := f.kubectl.Run(releaseCtx, configMap("shop", "pulse", fmt.Sprintf("round: %q", fmt.Sprint(n)), []string{"rz00a"}, ""), "apply", "-f", "-"); err == nil {
				n++
			}
			select {
			case <-releaseCtx.Done():
			case <-time.After(300 * time.Millisecond):
			}
		}
		lastRelease <- n - 1
	}()

	// The sampler: every 200 ms, each Deployment must be ready on
	// member-1 or member-2.
	var (
		mu       sync.Mutex
		gaps     []string
		samples  int
		sampling sync.WaitGroup
	)
	sampleCtx, stopSampling := context.WithCancel(ctx)
	sampling.Add(1)
	go func() {
		defer sampling.Done()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-sampleCtx.Done():
				return
			case <-tick.C:
			}
			r1, err1 := deploymentReadyOn(sampleCtx, dyns[1])
			r2, err2 := deploymentReadyOn(sampleCtx, dyns[2])
			if err1 != nil || err2 != nil {
				continue // a read failed: no sample
			}
			mu.Lock()
			samples++
			for _, n := range wantDeploy {
				if !r1[n] && !r2[n] {
					gaps = append(gaps, fmt.Sprintf("%s at %s", n, time.Now().Format("15:04:05.000")))
				}
			}
			mu.Unlock()
		}
	}()

	start := time.Now()
	out := f.ctl.ok(t, "cell", "move", "rz10a", "-n", "shop", "--to=member-2", "--batch=5", "--wait=false")
	if !strings.Contains(out, "moving from member-1 to member-2, 5 objects at a time") || !strings.Contains(out, "FederatedDeployment/web-2 /spec/template/spec/nodeSelector") {
		t.Errorf("cell move printed %q; want the start and the override of web-2 that may name member-1's nodes", out)
	}
	cells := f.dyn.Resource(cellv1alpha1.CellsResource).Namespace("shop")
	moveStatus := func() (*cellv1alpha1.Cell, error) {
		u, err := cells.Get(ctx, "rz10a", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		var c cellv1alpha1.Cell
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &c); err != nil {
			return nil, err
		}
		return &c, nil
	}
	// Halfway, the controller dies (SIGKILL) and another starts.
	eventually(t, "25 objects moved", func() (bool, string) {
		c, err := moveStatus()
		if err != nil {
			return false, err.Error()
		}
		if st := c.Status.Move; st != nil && st.Moved >= 25 {
			return true, ""
		}
		return false, fmt.Sprintf("move status %+v", c.Status.Move)
	})
	c, err := moveStatus()
	if err != nil {
		t.Fatal(err)
	}
	if st := c.Status.Move; st == nil || st.Moved >= 50 || st.Copied-st.Moved > 5 {
		t.Fatalf("at the kill: %+v; want the move under way, at most the batch of 5 in flight", st)
	}
	t.Logf("killing cellfed-controller with %d of 50 objects moved, %d copied", c.Status.Move.Moved, c.Status.Move.Copied)
	f.controller.Signal(syscall.SIGKILL)
	_ = f.controller.Wait(ctx)
	restart := time.Now()
	f.controller = framework.StartController(t, f.plane)
	leaderless := time.Since(restart) // the killed one's Lease runs out

	// The same command resumes the wait and reports the end. Its
	// timeout is generous: under the whole suite's load on 2 cores the
	// move took up to 134 s, and this asserts that it ends, not how fast
	// (the time is logged below).
	out = f.ctl.ok(t, "cell", "move", "rz10a", "-n", "shop", "--to=member-2", "--timeout=8m")
	took := time.Since(start)
	if !strings.Contains(out, "cell shop/rz10a: already mov") || !strings.Contains(out, "cell shop/rz10a moved from member-1 to member-2: 50 objects") {
		t.Errorf("resumed cell move printed %q", out)
	}
	stopSampling()
	sampling.Wait()

	eventually(t, "every object on member-2 exactly once, none on member-1", func() (bool, string) {
		if ok, msg := holds(2, true); !ok {
			return false, msg
		}
		return holds(1, false)
	})
	c, err = moveStatus()
	if err != nil {
		t.Fatal(err)
	}
	if c.Spec.Cluster != "member-2" || c.Spec.Move != nil {
		t.Errorf("cell spec after the move: cluster %s, move %+v; want member-2 and no move", c.Spec.Cluster, c.Spec.Move)
	}
	if st := c.Status.Move; st == nil || st.Phase != cellv1alpha1.MovePhaseCompleted || st.Moved != 50 || st.Objects != 50 {
		t.Errorf("status.move after the move: %+v; want Completed, 50 of 50 moved", st)
	}
	// The topology stays: the per-cell cluster keeps the cell's labels
	// and reaches member-2; the move cluster goes.
	kfcs := f.dyn.Resource(kubefed.KubeFedClustersResource).Namespace("kube-federation-system")
	eventually(t, "shop.rz10a reaching member-2, shop.rz10a.move gone", func() (bool, string) {
		cl, err := kfcs.Get(ctx, "shop.rz10a", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		phys, err := kfcs.Get(ctx, "member-2", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got, _, _ := unstructured.NestedString(cl.Object, "spec", "apiEndpoint")
		want, _, _ := unstructured.NestedString(phys.Object, "spec", "apiEndpoint")
		if got != want {
			return false, fmt.Sprintf("shop.rz10a reaches %s, member-2 is %s", got, want)
		}
		if cl.GetLabels()["zone"] != "z1" {
			return false, fmt.Sprintf("shop.rz10a labels %v lack zone=z1", cl.GetLabels())
		}
		if _, err := kfcs.Get(ctx, "shop.rz10a.move", metav1.GetOptions{}); err == nil {
			return false, "shop.rz10a.move still exists"
		}
		return true, ""
	})
	// Every object's propagation record lists the cell, and only it.
	eventually(t, "every record listing shop.rz10a only", func() (bool, string) {
		for _, gvr := range []schema.GroupVersionResource{fedDeployV2, fedCMV2, fedServiceV2} {
			list, err := f.dyn.Resource(gvr).Namespace("shop").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, o := range list.Items {
				if o.GetName() == "pulse" {
					continue
				}
				recs, _, _ := unstructured.NestedSlice(o.Object, "status", "record", "clusterVersions")
				var got []string
				for _, r := range recs {
					got = append(got, fmt.Sprint(r.(map[string]any)["clusterName"]))
				}
				if !slices.Equal(got, []string{"shop.rz10a"}) {
					return false, fmt.Sprintf("%s %s records clusters %v", gvr.Resource, o.GetName(), got)
				}
			}
		}
		return true, ""
	})
	for _, name := range []string{"web-1", "cfg-0"} {
		gvr := fedResource("federateddeployments", "v1beta2")
		if strings.HasPrefix(name, "cfg") {
			gvr = fedResource("federatedconfigmaps", "v1beta2")
		}
		f.waitSettled(t, gvr, "shop", name, map[string]string{"rz10a": "OK"})
	}
	if sel, _, _ := unstructured.NestedStringMap(f.memberObject(t, 2, deployments, "shop", "web-2").Object, "spec", "template", "spec", "nodeSelector"); sel["disk"] != "ssd" {
		t.Errorf("web-2 on member-2 has nodeSelector %v, want the cell's override disk=ssd", sel)
	}
	if img := image(f.memberObject(t, 2, deployments, "shop", "web-0")); img != "nginx:1.27" {
		t.Errorf("web-0, held back at nginx:1.27 on rz10a, is %s on member-2 after the move", img)
	}
	f.waitSettled(t, fedDeployV2, "shop", "web-0", map[string]string{"rz10a": "HeldBack"})
	// The mask lifted, the release reaches the moved cell.
	f.kubectl.MustRun(t, masked("web-0", "nginx:1.28", []string{"rz10a"}, nil), "apply", "-f", "-")
	eventually(t, "web-0 released to nginx:1.28 on member-2", func() (bool, string) {
		img := image(f.memberObject(t, 2, deployments, "shop", "web-0"))
		return img == "nginx:1.28", "member-2 runs " + img
	})
	status := f.ctl.ok(t, "cell", "status", "rz10a", "-n", "shop")
	for _, want := range []string{"Cluster:", "member-2", "member-1 → member-2, Completed", "Moved:", "50 (ready on member-2"} {
		if !strings.Contains(status, want) {
			t.Errorf("cell status lacks %q:\n%s", want, status)
		}
	}

	stopReleases()
	releases.Wait()
	last := <-lastRelease
	eventually(t, "the other cell's last release on member-0", func() (bool, string) {
		cm := f.memberObject(t, 0, configmaps, "shop", "pulse")
		if cm == nil {
			return false, "no shop/pulse on member-0"
		}
		// The last apply may have landed as its kubectl was stopped.
		got, _, _ := unstructured.NestedString(cm.Object, "data", "round")
		return got == fmt.Sprint(last) || got == fmt.Sprint(last+1), fmt.Sprintf("member-0 has round=%s, want %d (or %d)", got, last, last+1)
	})
	mu.Lock()
	t.Logf("moved 50 objects from member-1 to member-2 in %v, %v of it without a leader (controller killed halfway); %d availability samples; %d releases of rz00a meanwhile",
		took.Round(100*time.Millisecond), leaderless.Round(100*time.Millisecond), samples, last+1)
	if len(gaps) > 0 {
		t.Errorf("a Deployment was ready on neither cluster in %d samples: %v", len(gaps), gaps[:min(len(gaps), 10)])
	}
	if samples < 10 {
		t.Errorf("only %d availability samples", samples)
	}
	mu.Unlock()

	t.Run("paused and undone", func(t *testing.T) {
		// Deployments copied to member-1 do not get ready until the
		// move is paused: the move cannot finish before.
		stuck.Store(1)
		f.ctl.ok(t, "cell", "move", "rz10a", "-n", "shop", "--to=member-1", "--batch=2", "--wait=false")
		eventually(t, "some objects copied to member-1", func() (bool, string) {
			c, err := moveStatus()
			if err != nil {
				return false, err.Error()
			}
			st := c.Status.Move
			return st != nil && st.To == "member-1" && st.Copied >= 2, fmt.Sprintf("%+v", st)
		})
		f.ctl.ok(t, "cell", "move", "rz10a", "-n", "shop", "--pause")
		eventually(t, "the move paused", func() (bool, string) {
			c, err := moveStatus()
			if err != nil {
				return false, err.Error()
			}
			st := c.Status.Move
			return st != nil && st.Phase == cellv1alpha1.MovePhasePaused, fmt.Sprintf("%+v", st)
		})
		stuck.Store(-1)
		var copied int32
		eventually(t, "the paused move's batch finished", func() (bool, string) {
			c, err := moveStatus()
			if err != nil {
				return false, err.Error()
			}
			st := c.Status.Move
			if st == nil || st.Phase != cellv1alpha1.MovePhasePaused || st.Copied != st.Moved {
				return false, fmt.Sprintf("%+v", st)
			}
			copied = st.Copied
			return true, ""
		})
		// Paused: nothing more starts, watched for 2 s.
		tick := time.NewTicker(200 * time.Millisecond)
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); <-tick.C {
			c, err := moveStatus()
			if err != nil {
				t.Fatal(err)
			}
			if c.Status.Move == nil || c.Status.Move.Copied != copied {
				t.Fatalf("the paused move went on: %+v, was %d copied", c.Status.Move, copied)
			}
		}
		tick.Stop()
		if copied >= 50 {
			t.Fatalf("all %d objects were copied before the pause took hold", copied)
		}
		out := f.ctl.ok(t, "cell", "move", "rz10a", "-n", "shop", "--undo", "--timeout=6m")
		if !strings.Contains(out, "move to member-1 undone; the cell stays on member-2") {
			t.Errorf("undo printed %q", out)
		}
		eventually(t, "everything back on member-2, nothing on member-1", func() (bool, string) {
			if ok, msg := holds(2, true); !ok {
				return false, msg
			}
			return holds(1, false)
		})
		c, err := moveStatus()
		if err != nil {
			t.Fatal(err)
		}
		if c.Spec.Cluster != "member-2" || c.Spec.Move != nil || c.Status.Move == nil || c.Status.Move.Phase != cellv1alpha1.MovePhaseRolledBack {
			t.Errorf("after the undo: cluster %s, move %+v, status %+v", c.Spec.Cluster, c.Spec.Move, c.Status.Move)
		}
	})
}
