package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/cellfed/cellfed/pkg/placement/division"
	"github.com/cellfed/cellfed/test/framework"
)

// divisionCells are the fixture's shop cells on three members, with the
// weights the test divides by.
var divisionCells = []struct {
	cell   string
	member int
	weight int32
}{{"rz00a", 0, 1}, {"rz10a", 1, 2}, {"rz20a", 2, 2}}

// TestReplicaDivision divides a FederatedDeployment's replicas among
// three cells on three real members by weight 1:2:2: 10 replicas run as
// 2/4/4 and are reported per cell; scaled to 11, the one extra replica
// goes to the cell the division rule names (the same pure function the
// controller runs), and no other cell changes; a staged release (a
// placement mask on one cell) with a new image moves no replica.
func TestReplicaDivision(t *testing.T) {
	t.Parallel()
	f := startFederation(t, 3)
	cells := make([]string, len(divisionCells))
	tops := ""
	for i, c := range divisionCells {
		cells[i] = c.cell
		tops += fmt.Sprintf("    - {name: %s, weight: %d}\n", c.cell, c.weight)
	}
	obj := strings.Replace(deployment("shop", "web", "nginx:1.27", cells, "  replicaDivision:\n    mode: Divide\n    topologies:\n"+tops), "replicas: 2", "replicas: 10", 1)
	f.kubectl.MustRun(t, obj, "apply", "-f", "-")
	fd := fedResource("federateddeployments", "v1beta2")

	// members reads each cell's member Deployment: replicas and image.
	members := func() (map[string]int64, map[string]string, string) {
		reps, imgs := map[string]int64{}, map[string]string{}
		for _, c := range divisionCells {
			obj := f.memberObject(t, c.member, deployments, "shop", "web")
			if obj == nil {
				return nil, nil, c.cell + " has no Deployment yet"
			}
			n, _, _ := unstructuredInt(obj.Object, "spec", "replicas")
			reps[c.cell], imgs[c.cell] = n, image(obj)
		}
		return reps, imgs, fmt.Sprintf("replicas %v images %v", reps, imgs)
	}
	// assigned reads status.topologies[].replicas (-1: not reported).
	assigned := func() map[string]int64 {
		_, _, _, st := f.fedStatus(t, fd, "shop", "web")
		out := map[string]int64{}
		list, _ := st["topologies"].([]any)
		for _, e := range list {
			m, _ := e.(map[string]any)
			name, _ := m["name"].(string)
			out[name] = -1
			if n, ok, _ := unstructuredInt(m, "replicas"); ok {
				out[name] = n
			}
		}
		return out
	}
	// ready plays the members' controllers: every Deployment reports
	// its replicas ready.
	ready := func(reps map[string]int64) {
		for _, c := range divisionCells {
			obj := f.memberObject(t, c.member, deployments, "shop", "web")
			f.patchMemberStatus(t, c.member, deployments, "shop", "web", deploymentStatus(obj.GetGeneration(), int(reps[c.cell]), int(reps[c.cell])))
		}
	}
	waitDivided := func(what string, want map[string]int64) {
		t.Helper()
		eventually(t, what, func() (bool, string) {
			reps, _, msg := members()
			got := assigned()
			return maps.Equal(reps, want) && maps.Equal(got, want), msg + fmt.Sprintf(", assigned %v, want %v", got, want)
		})
	}

	// 10 replicas by weight 1:2:2.
	first := map[string]int64{"rz00a": 2, "rz10a": 4, "rz20a": 4}
	waitDivided("10 replicas divided 2/4/4", first)
	ready(first)
	// cellfedctl status shows each cell's share next to what it runs.
	eventually(t, "cellfedctl status shows ASSIGNED and REPLICAS", func() (bool, string) {
		out := f.ctl.ok(t, "status", "deployment/web", "-n", "shop")
		rows := map[string][]string{}
		var header []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			fields := strings.Fields(line)
			if len(fields) > 0 && fields[0] == "CELL" {
				header = fields
				continue
			}
			if len(fields) > 0 {
				rows[fields[0]] = fields
			}
		}
		col := func(name string) int { return slices.Index(header, name) }
		a, r := col("ASSIGNED"), col("REPLICAS")
		if a < 0 || r < 0 {
			return false, out
		}
		for cell, n := range first {
			row := rows[cell]
			if len(row) <= max(a, r) || row[a] != fmt.Sprint(n) || row[r] != fmt.Sprintf("%d/%d", n, n) {
				return false, out
			}
		}
		return true, out
	})

	// 11: where the extra one goes is the division rule's choice.
	in := division.Input{Key: "shop/web", Mode: division.ModeDivide, Replicas: 11}
	for _, c := range divisionCells {
		in.Cells = append(in.Cells, division.Cell{Name: "shop." + c.cell, Weight: c.weight})
	}
	res, err := division.Divide(in)
	if err != nil {
		t.Fatal(err)
	}
	second := map[string]int64{}
	changed := 0
	for _, a := range res.Cells {
		cell := a.Name[len("shop."):]
		second[cell] = int64(a.Replicas)
		if second[cell] != first[cell] {
			changed++
		}
	}
	if changed != 1 {
		t.Fatalf("the division rule moves %d cells from 10 to 11 replicas (%v → %v), want 1", changed, first, second)
	}
	f.kubectl.MustRun(t, "", "patch", "federateddeployment", "web", "-n", "shop", "--type=merge", "-p", `{"spec":{"template":{"spec":{"replicas":11}}}}`)
	waitDivided(fmt.Sprintf("11 replicas divided as %v", second), second)
	ready(second)

	// A staged release: only rz00a gets the new image; no replica moves.
	f.kubectl.MustRun(t, "", "patch", "federateddeployment", "web", "-n", "shop", "--type=merge", "-p",
		`{"spec":{"placementMask":{"topologies":[{"name":"rz00a"}]},"template":{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.28"}]}}}}}}`)
	eventually(t, "rz00a runs nginx:1.28, the others hold nginx:1.27", func() (bool, string) {
		_, imgs, msg := members()
		return imgs["rz00a"] == "nginx:1.28" && imgs["rz10a"] == "nginx:1.27" && imgs["rz20a"] == "nginx:1.27", msg
	})
	f.waitSettled(t, fd, "shop", "web", map[string]string{"rz00a": "OK", "rz10a": "HeldBack", "rz20a": "HeldBack"})
	reps, _, msg := members()
	if got := assigned(); !maps.Equal(reps, second) || !maps.Equal(got, second) {
		t.Fatalf("a release on rz00a moved replicas: %s, assigned %v; want %v", msg, got, second)
	}

	// The type's replicas path (cellfed's FederatedTypeConfig extension)
	// is kept by the plane's schema, and a bad one is refused.
	ftc := []string{"-n", framework.KubeFedNamespace, "patch", "federatedtypeconfigs", "deployments.apps", "--type=merge", "-p"}
	if _, err := f.kubectl.Run(context.Background(), "", append(ftc, `{"spec":{"replicasPath":"spec.replicas"}}`)...); err == nil ||
		!strings.Contains(err.Error(), "spec.replicasPath") || !strings.Contains(err.Error(), "not a JSON pointer") {
		t.Fatalf("a replicas path that is not a JSON pointer: %v", err)
	}
	f.kubectl.MustRun(t, "", append(ftc, `{"spec":{"replicasPath":"/spec/replicas"}}`)...)
	if got := f.kubectl.MustRun(t, "", "-n", framework.KubeFedNamespace, "get", "federatedtypeconfigs", "deployments.apps", "-o", "jsonpath={.spec.replicasPath}"); got != "/spec/replicas" {
		t.Fatalf("spec.replicasPath read back as %q: the plane's schema dropped it", got)
	}
	// Issue #40: a path to a field that is not an integer, or not
	// normalised, was accepted and broke division for the type.
	for _, c := range []struct{ path, want string }{
		{"/spec/template/spec/containers/0/name", "/spec/template/spec/containers/0/name is a string, not an integer"},
		{"/spec/../metadata", `is not normalised: a JSON pointer has no ".." segments`},
	} {
		if _, err := f.kubectl.Run(context.Background(), "", append(ftc, `{"spec":{"replicasPath":"`+c.path+`"}}`)...); err == nil ||
			!strings.Contains(err.Error(), "spec.replicasPath: Invalid value: \""+c.path+"\"") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("replicasPath %s: %v; want it refused with %q", c.path, err, c.want)
		}
	}
	refuseDivisions(t, f.kubectl)
}

// refuseDivisions applies divisions a hostile or careless tenant might
// (issue #40) to the real plane and checks that each is refused with a
// message naming the field: negative divided replicas were admitted,
// numbers past int32 were refused as "<nil>: Invalid value: \"\"", and
// 2147483647 replicas by weights [2147483647, 1] stalled propagation for
// every tenant.
func refuseDivisions(t *testing.T, k framework.Kubectl) {
	t.Helper()
	cells := []string{"rz00a", "rz10a"}
	withReplicas := func(name, replicas, division string) string {
		return strings.Replace(deployment("shop", name, "nginx:1.27", cells, division), "replicas: 2", "replicas: "+replicas, 1)
	}
	for _, c := range []struct {
		name, obj string
		want      []string
	}{
		{"negative replicas", withReplicas("neg", "-5", "  replicaDivision: {mode: Divide}\n"),
			[]string{"spec.template.spec.replicas: Invalid value: -5: must be >= 0 when spec.replicaDivision.mode is Divide"}},
		{"a weight past int32", withReplicas("wide", "4", "  replicaDivision: {mode: Divide, topologies: [{name: rz00a, weight: 3000000000}]}\n"),
			[]string{"spec.replicaDivision.topologies[0].weight: Invalid value: 3000000000: must be from 0 to 1000000"}},
		{"a surge past int32", withReplicas("surge", "4", "  replicaDivision: {mode: Divide, maxSurge: 99999999999}\n"),
			[]string{"spec.replicaDivision.maxSurge: Invalid value: 99999999999: must be from 1 to 1000000"}},
		{"MaxInt32 replicas by weights MaxInt32:1", withReplicas("huge", "2147483647", "  replicaDivision: {mode: Divide, topologies: [{name: rz00a, weight: 2147483647}, {name: rz10a, weight: 1}]}\n"),
			[]string{"spec.template.spec.replicas: Invalid value: 2147483647: must be at most 1000000", "spec.replicaDivision.topologies[0].weight: Invalid value: 2147483647: must be from 0 to 1000000"}},
	} {
		_, err := k.Run(context.Background(), c.obj, "apply", "-f", "-")
		if err == nil {
			t.Errorf("%s: admitted", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v; want %q", c.name, err, w)
			}
		}
		if strings.Contains(err.Error(), "<nil>") {
			t.Errorf("%s: the refusal names no field: %v", c.name, err)
		}
	}
}

// unstructuredInt reads an integer field of unstructured content.
func unstructuredInt(obj map[string]any, path ...string) (int64, bool, error) {
	v := field(obj, path...)
	switch n := v.(type) {
	case int64:
		return n, true, nil
	case float64:
		return int64(n), true, nil
	}
	return 0, false, nil
}

// TestReplicaDivisionFailover divides 9 replicas equally on three cells
// with failover on, with a player acting as the members' deployment
// controllers (each Deployment's replicas become ready 100 ms after they
// are written). Member-2 is stopped: its share moves to the two others
// and, sampled every 200 ms across the move, the ready replicas on them
// never fall below the 6 they ran. Member-2 returns: the share moves
// back, and the ready total never falls below 9. Then member-2's replicas
// stop being ready (its pods crash): after failoverAfterSeconds its share
// moves again, and back once they are ready.
func TestReplicaDivisionFailover(t *testing.T) {
	t.Parallel()
	f := startFederation(t, 3)
	cells := []string{"rz00a", "rz10a", "rz20a"}
	obj := strings.Replace(deployment("shop", "fo", "nginx:1.27", cells, "  replicaDivision: {mode: Divide, failover: true}\n"), "replicas: 2", "replicas: 9", 1)
	f.kubectl.MustRun(t, obj, "apply", "-f", "-")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var down atomic.Int32 // member index that is stopped, -1: none
	down.Store(-1)
	var stuck atomic.Int32 // member index whose replicas never get ready, -1: none
	stuck.Store(-1)
	dyns := make([]dynamic.Interface, len(f.members))
	for i, m := range f.members {
		dyns[i] = dynamic.NewForConfigOrDie(m.RESTConfig(t))
	}
	// counts reads a member's Deployment: spec replicas, ready replicas.
	counts := func(ctx context.Context, i int) (spec, ready int64, gen, observed int64, ok bool) {
		if int(down.Load()) == i {
			return 0, 0, 0, 0, false
		}
		rctx, rcancel := context.WithTimeout(ctx, time.Second)
		defer rcancel()
		o, err := dyns[i].Resource(deployments).Namespace("shop").Get(rctx, "fo", metav1.GetOptions{})
		if err != nil {
			return 0, 0, 0, 0, false
		}
		spec, _, _ = unstructuredInt(o.Object, "spec", "replicas")
		ready, _, _ = unstructuredInt(o.Object, "status", "readyReplicas")
		observed, _, _ = unstructuredInt(o.Object, "status", "observedGeneration")
		return spec, ready, o.GetGeneration(), observed, true
	}
	// The player: what a deployment controller does, 100 ms late.
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			for i := range f.members {
				spec, ready, gen, observed, ok := counts(ctx, i)
				want := spec
				if int(stuck.Load()) == i {
					want = 0 // its pods crash: none ready
				}
				if !ok || (want == ready && gen == observed) {
					continue
				}
				body, _ := json.Marshal(map[string]any{"status": deploymentStatus(gen, int(spec), int(want))})
				pctx, pcancel := context.WithTimeout(ctx, time.Second)
				_, _ = dyns[i].Resource(deployments).Namespace("shop").Patch(pctx, "fo", types.MergePatchType, body, metav1.PatchOptions{}, "status")
				pcancel()
			}
		}
	}()
	readyOn := func(members ...int) (sum int64, each []int64) {
		for _, i := range members {
			_, ready, _, _, _ := counts(ctx, i)
			sum += ready
			each = append(each, ready)
		}
		return sum, each
	}
	// move samples the ready replicas on members every 200 ms until done
	// holds, and fails if they fall below floor.
	move := func(what string, floor int64, members []int, done func() (bool, string)) time.Duration {
		t.Helper()
		start := time.Now()
		lowest := int64(1 << 62)
		samples := 0
		var broke error
		err := framework.Poll(ctx, 200*time.Millisecond, controllerTimeout, func(context.Context) (bool, error) {
			sum, each := readyOn(members...)
			samples++
			lowest = min(lowest, sum)
			if sum < floor {
				broke = fmt.Errorf("%d ready on members %v (%v), below the floor %d", sum, members, each, floor)
				return true, nil // stop sampling: the test fails
			}
			if ok, msg := done(); !ok {
				return false, fmt.Errorf("%s; ready %v", msg, each)
			}
			return true, nil
		})
		if broke != nil {
			err = broke
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		took := time.Since(start)
		t.Logf("%s: %v, %d samples, lowest ready %d (floor %d)", what, took.Round(100*time.Millisecond), samples, lowest, floor)
		return took
	}
	specs := func(want ...int64) func() (bool, string) {
		return func() (bool, string) {
			var got []int64
			ok := true
			for i, w := range want {
				if w < 0 {
					continue
				}
				spec, ready, _, _, _ := counts(ctx, i)
				got = append(got, spec)
				ok = ok && spec == w && ready == w
			}
			return ok, fmt.Sprintf("member replicas %v, want %v", got, want)
		}
	}
	eventually(t, "9 replicas divided 3/3/3 and ready", specs(3, 3, 3))

	f.members[2].Stop(5 * time.Second)
	down.Store(2)
	took := move("member-2 stopped: its share moves to the others", 6, []int{0, 1}, func() (bool, string) {
		sum, each := readyOn(0, 1)
		return sum == 9, fmt.Sprintf("ready on member-0 and member-1 %v", each)
	})
	t.Logf("failover took %v", took.Round(100*time.Millisecond))

	f.members[2].RestartAndWait(t)
	down.Store(-1)
	move("member-2 back: its share moves back", 9, []int{0, 1, 2}, specs(3, 3, 3))

	// Member-2 stays up but its replicas stop being ready: after
	// failoverAfterSeconds its share moves to the others, and the ready
	// replicas there never fall below the 6 they ran.
	f.kubectl.MustRun(t, "", "-n", "shop", "patch", "federateddeployments.v1beta2.types.kubefed.io", "fo", "--type=merge",
		"-p", `{"spec":{"replicaDivision":{"failoverAfterSeconds":3}}}`)
	stuck.Store(2)
	took = move("member-2's replicas unready: its share moves to the others", 6, []int{0, 1}, func() (bool, string) {
		sum, each := readyOn(0, 1)
		spec2, _, _, _, _ := counts(ctx, 2)
		return sum == 9 && spec2 == 0, fmt.Sprintf("ready on member-0 and member-1 %v, member-2 assigned %d", each, spec2)
	})
	t.Logf("failover of unready replicas took %v (failoverAfterSeconds 3)", took.Round(100*time.Millisecond))
	// Its pods recover: the cell is tried again after the same 3 s and
	// takes its share back.
	stuck.Store(-1)
	move("member-2's replicas ready again: its share moves back", 9, []int{0, 1, 2}, specs(3, 3, 3))
}
