package bench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/cellfed/cellfed/test/framework"
)

// The restart's size.
var (
	restartMembers = envInt("CELLFED_BENCH_RESTART_MEMBERS", 10)
	restartObjects = envInt("CELLFED_BENCH_RESTART_OBJECTS", 1000)
	restartRounds  = envInt("CELLFED_BENCH_RESTART_ROUNDS", 5)
)

// restartIdentity is the controller's name in its Lease, stable across
// restarts as a pod's name is (manifests/deploy sets it so).
const restartIdentity = "--leader-elect-identity=bench-controller-0"

// BenchmarkControllerRestart kills cellfed-controller with SIGKILL while
// it holds restartObjects objects on restartMembers cells (one per
// member), starts it again with the same Lease identity, and measures:
// how soon it is ready (/readyz), how soon an object created while it
// was down reaches every cell, and what the restart wrote to the members
// besides that object (it must write nothing). A last round restarts
// with a new identity, as a replica without a stable name would, to show
// the Lease wait that a stable identity saves.
func BenchmarkControllerRestart(b *testing.B) {
	for range b.N {
		started := time.Now()
		var members []*framework.Server
		for len(members) < restartMembers {
			members = append(members, framework.StartMembers(b, min(4, restartMembers-len(members)))...)
		}
		plane := framework.StartPlane(b, framework.PlaneOptions{})
		k := framework.Kubectl{Kubeconfig: plane.Kubeconfig}
		ns := "restart-shop"
		k.MustRun(b, tenantNamespace(ns, "acme"), "apply", "-f", "-")
		var cells strings.Builder
		var cellClusters []string
		for i, m := range members {
			framework.JoinMember(b, plane, m, fmt.Sprintf("member-%d", i))
			cells.WriteString(cellYAML(ns, i))
			cellClusters = append(cellClusters, ns+"."+cellName(i))
		}
		k.MustRun(b, cells.String(), "apply", "-f", "-")
		ctrl := framework.StartController(b, plane, restartIdentity)
		defer ctrl.Stop(10 * time.Second)
		framework.WaitKubeFedClustersReady(b, plane, cellClusters...)
		w := startWatchers(b, members, configMaps, ns, (*unstructured.Unstructured).GetName)
		defer w.stop()
		placeNamespace(b, k, members, ns)
		dyn := dynamic.NewForConfigOrDie(plane.RESTConfig(b))
		all := cellNames(len(members))
		forEach(restartObjects, func(i int) {
			createFedConfigMap(b, dyn, ns, fmt.Sprintf("conv-%04d", i), all)
		})
		want := restartObjects * len(members)
		if got := waitProgress("restart: convergence", "converged", want, 15*time.Minute, 100*time.Millisecond, func() int { return w.count("conv-") }); got < want {
			b.Fatalf("only %d of %d member objects before the first restart", got, want)
		}
		kubes := make([]kubernetes.Interface, len(members))
		for i, m := range members {
			kubes[i] = m.Client(b)
		}
		fmt.Printf("restart: %d members × %d objects converged (%.0f s)\n", len(members), restartObjects, time.Since(started).Seconds())

		var ready, first []time.Duration
		for round := 1; round <= restartRounds+1; round++ {
			stable := round <= restartRounds
			r := restartOnce(b, ctrl, dyn, w, kubes, ns, fmt.Sprintf("restart-%d", round), all, stable)
			fmt.Printf("restart %d (%s identity): ready %.2f s, object created while down on all %d cells %.2f s, other member writes %d\n",
				round, map[bool]string{true: "same", false: "new"}[stable], r.ready.Seconds(), len(members), r.first.Seconds(), r.extraWrites)
			if r.extraWrites != 0 {
				b.Errorf("restart %d wrote %d times to members besides the new object; a restart must write nothing that is right", round, r.extraWrites)
			}
			if stable {
				ready, first = append(ready, r.ready), append(first, r.first)
			} else {
				b.ReportMetric(r.ready.Seconds(), "new-identity-ready-s")
			}
		}
		b.ReportMetric(percentile(ready, 50).Seconds(), "ready-p50-s")
		b.ReportMetric(percentile(ready, 100).Seconds(), "ready-max-s")
		b.ReportMetric(percentile(first, 50).Seconds(), "first-object-p50-s")
		b.ReportMetric(percentile(first, 100).Seconds(), "first-object-max-s")
	}
}

// restarted is one restart's measurements.
type restarted struct {
	ready, first time.Duration
	// extraWrites are the member writes of the restart other than the
	// creates of the object made while the controller was down.
	extraWrites int
}

// restartOnce SIGKILLs the controller, creates object name on cells while
// it is down, starts it again (with its Lease identity, or a new one when
// stable is false) and waits until it is ready and the object is on every
// cell, then until the controller has had 5 s to write anything else.
func restartOnce(b *testing.B, ctrl *framework.Controller, dyn dynamic.Interface, w *watchers, kubes []kubernetes.Interface, ns, name string, cells []string, stable bool) restarted {
	before := sumWrites(b, kubes)
	ctrl.Kill()
	if err := ctrl.Process.Wait(context.Background()); err == nil {
		b.Fatal("the killed controller exited cleanly")
	}
	createFedConfigMap(b, dyn, ns, name, cells)
	start := time.Now()
	var err error
	if stable {
		err = ctrl.Process.Restart()
	} else {
		err = ctrl.Process.RestartWith(fmt.Sprintf("--leader-elect-identity=bench-controller-%d", os.Getpid()))
	}
	if err != nil {
		b.Fatal(err)
	}
	var r restarted
	if err := ctrl.WaitReady(context.Background(), 2*time.Minute); err != nil {
		b.Fatalf("restarted controller not ready: %v\n%s", err, ctrl.Tail(30))
	}
	r.ready = time.Since(start)
	if err := framework.Poll(context.Background(), 10*time.Millisecond, 2*time.Minute, func(context.Context) (bool, error) {
		_, ok := w.lastSeen(name, len(cells))
		return ok, nil
	}); err != nil {
		b.Fatalf("%s not on every cell 2 min after the restart (missing in members %v)\n%s", name, w.missing(name, len(cells)), ctrl.Tail(30))
	}
	last, _ := w.lastSeen(name, len(cells))
	r.first = last.Sub(start)
	// A restart that rewrote what was right would do so while it loads:
	// give it 5 s beyond the first object, then count.
	time.Sleep(5 * time.Second) // an observation window, not a sync
	after := sumWrites(b, kubes)
	r.extraWrites = after.Creates + after.Updates + after.Deletes - before.Creates - before.Updates - before.Deletes - len(cells)
	return r
}

// sumWrites is the members' configmap writes, summed.
func sumWrites(b *testing.B, kubes []kubernetes.Interface) framework.Writes {
	var s framework.Writes
	for _, c := range kubes {
		w := memberWrites(b, c)
		s.Creates, s.Updates, s.Deletes = s.Creates+w.Creates, s.Updates+w.Updates, s.Deletes+w.Deletes
	}
	return s
}
