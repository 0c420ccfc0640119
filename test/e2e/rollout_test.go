package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/test/framework"
)

// Rollouts run against three members: rz00a on member-0, rz10a on
// member-1, rz20a on member-2 (rz01a, also on member-0, is not placed).
var (
	rolloutCells = []string{"rz00a", "rz10a", "rz20a"}
)

// TestRollout drives `cellfedctl rollout` against a plane, three real
// members and cellfed-controller (with its rollout controller); the test
// plays the members' deployment controllers by writing Deployment status.
func TestRollout(t *testing.T) {
	t.Parallel()
	f := startFederation(t, 3)
	outer := t
	t.Run("manual rollout: start, status, pause, next, undo, finish", func(t *testing.T) { testManualRollout(t, f) })
	t.Run("bad input writes nothing", func(t *testing.T) { testRolloutBadInput(t, f) })
	t.Run("a change meanwhile is a conflict, nothing half-applied", func(t *testing.T) { testRolloutConflict(t, f) })
	t.Run("selector placement of another type", func(t *testing.T) { testRolloutSelector(t, f) })
	t.Run("automatic rollout across a controller restart", func(t *testing.T) { testAutoRollout(t, outer, f) })
	t.Run("automatic rollout pauses on a failing cell", func(t *testing.T) { testAutoRolloutFailure(t, f) })
	t.Run("automatic rollout pauses at the progress deadline", func(t *testing.T) { testAutoRolloutDeadline(t, f) })
	t.Run("the history is deleted with the object", func(t *testing.T) { testHistoryDeleted(t, f) })
}

// rolloutObject is a FederatedDeployment on the three rollout cells,
// settled and ready everywhere at image app:1.
func (f *federation) rolloutObject(t *testing.T, name string) {
	t.Helper()
	f.kubectl.MustRun(t, deployment("shop", name, "app:1", rolloutCells, ""), "apply", "-f", "-")
	f.waitSettled(t, fedDeployV2, "shop", name, map[string]string{"rz00a": "OK", "rz10a": "OK", "rz20a": "OK"})
	for i := range 3 {
		f.patchMemberStatus(t, i, deployments, "shop", name, deploymentStatus(1, 2, 2))
	}
}

// setImage changes the template's image with a plain JSON patch, as a
// person would between rollout commands.
func (f *federation) setImage(t *testing.T, name, image string) {
	t.Helper()
	f.kubectl.MustRun(t, "", "-n", "shop", "patch", "federateddeployments.v1beta2.types.kubefed.io", name, "--type=json",
		"-p", `[{"op":"replace","path":"/spec/template/spec/template/spec/containers/0/image","value":"`+image+`"}]`)
}

// memberReady plays member i's deployment controller: the Deployment it
// holds is rolled out and ready at its generation.
func (f *federation) memberReady(t *testing.T, i int, name string) {
	t.Helper()
	_, gen, _ := f.memberDeployment(t, i, name)
	f.patchMemberStatus(t, i, deployments, "shop", name, deploymentStatus(gen, 2, 2))
}

// waitImage waits until member i runs image at member generation gen.
func (f *federation) waitImage(t *testing.T, i int, name, image string, gen int64) {
	t.Helper()
	eventually(t, fmt.Sprintf("member-%d runs %s at generation %d", i, image, gen), func() (bool, string) {
		img, g, _ := f.memberDeployment(t, i, name)
		return img == image && g == gen, fmt.Sprintf("member-%d image %q generation %d", i, img, g)
	})
}

// rolloutStatus runs `rollout status` until its exit code is want; it
// returns the output then.
func (f *federation) rolloutStatus(t *testing.T, name string, want int) string {
	t.Helper()
	var out string
	eventually(t, fmt.Sprintf("rollout status of %s exits %d", name, want), func() (bool, string) {
		o, errOut, code := f.ctl.run(t, "rollout", "status", "deployment/"+name, "-n", "shop")
		out = o
		return code == want, fmt.Sprintf("exit %d\n%s%s", code, o, errOut)
	})
	return out
}

// fedObject reads the v1beta2 object.
func (f *federation) fedObject(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	obj, err := f.dyn.Resource(fedDeployV2).Namespace("shop").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading federateddeployment shop/%s: %v", name, err)
	}
	return obj
}

func maskOf(obj *unstructured.Unstructured) string {
	tops, found, _ := unstructured.NestedSlice(obj.Object, "spec", "placementMask", "topologies")
	if !found {
		return "<none>"
	}
	var names []string
	for _, tp := range tops {
		names = append(names, fmt.Sprint(tp.(map[string]any)["name"]))
	}
	return strings.Join(names, ",")
}

// rowOf finds a cell's row in status output and returns its fields.
func rowOf(out, cell string) []string {
	for _, line := range strings.Split(out, "\n") {
		if fields := strings.Fields(line); len(fields) > 0 && fields[0] == cell {
			return fields
		}
	}
	return nil
}

func testManualRollout(t *testing.T, f *federation) {
	f.rolloutObject(t, "web")
	for i := range 3 {
		f.waitImage(t, i, "web", "app:1", 1)
	}

	// Start with one cell released; the template running now is recorded.
	out := f.ctl.ok(t, "rollout", "start", "deployment/web", "-n", "shop", "--cells=rz00a")
	if !strings.Contains(out, "rollout of federateddeployment shop/web started: released rz00a (1 of 3 placed cells); held back: rz10a, rz20a") {
		t.Errorf("rollout start printed %q", out)
	}
	if m := maskOf(f.fedObject(t, "web")); m != "rz00a" {
		t.Fatalf("mask after start = %s, want rz00a", m)
	}
	_, _, rv2 := f.memberDeployment(t, 2, "web")

	// The new template reaches the released cell only.
	f.setImage(t, "web", "app:2")
	f.waitImage(t, 0, "web", "app:2", 2)
	out = f.rolloutStatus(t, "web", 2) // member-0 has not rolled app:2 out yet
	if r := rowOf(out, "rz00a"); len(r) < 2 || r[1] != "not" && r[1] != "updating" {
		t.Errorf("rz00a before its member is ready: row %v, want not ready or updating\n%s", r, out)
	}
	if r := rowOf(out, "rz10a"); len(r) < 4 || r[1] != "held" || r[3] == "3" {
		t.Errorf("rz10a: row %v, want held back at its old generation\n%s", r, out)
	}
	for i := 1; i < 3; i++ {
		if img, gen, _ := f.memberDeployment(t, i, "web"); img != "app:1" || gen != 1 {
			t.Fatalf("member-%d outside the mask: image %q generation %d, want app:1 at 1", i, img, gen)
		}
	}
	f.memberReady(t, 0, "web")
	out = f.rolloutStatus(t, "web", 0)
	if !strings.Contains(out, "batch complete: 1 released cell(s) updated and ready, 2 held back") || rowOf(out, "rz00a")[1] != "updated" {
		t.Errorf("status once rz00a is ready:\n%s", out)
	}
	if r := rowOf(out, "rz00a"); len(r) < 6 || r[3] != "true" || r[4] != "2/2" || r[5] != "OK" {
		t.Errorf("rz00a row %v, want ready true, replicas 2/2, OK", r)
	}

	// The kubectl plugin runs the same command under its own name.
	binDir := filepath.Dir(framework.Binary(t, "kubectl-cellfed"))
	cmd := exec.Command(framework.KubectlBinary(t), "cellfed", "rollout", "status", "federateddeployments.types.kubefed.io/web", "-n", "shop")
	cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+f.plane.Kubeconfig)
	if plugOut, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(plugOut), "batch complete") {
		t.Errorf("kubectl cellfed rollout status: %v\n%s", err, plugOut)
	}

	// Paused, the mask does not move.
	f.ctl.ok(t, "rollout", "pause", "deployment/web", "-n", "shop", "--reason=checking error rates")
	before := f.fedObject(t, "web").GetResourceVersion()
	f.ctl.fails(t, "is paused (checking error rates)", "rollout", "next", "deployment/web", "-n", "shop", "--cells=rz10a")
	if line := f.ctl.fails(t, "rollout resume", "rollout", "next", "deployment/web", "-n", "shop", "--batch=1"); !strings.Contains(line, "deployment/web -n shop") {
		t.Errorf("the hint does not name the object: %s", line)
	}
	if obj := f.fedObject(t, "web"); obj.GetResourceVersion() != before || maskOf(obj) != "rz00a" {
		t.Fatalf("a refused next wrote the object: mask %s", maskOf(obj))
	}
	f.ctl.ok(t, "rollout", "resume", "deployment/web", "-n", "shop")

	// next widens the mask.
	out = f.ctl.ok(t, "rollout", "next", "deployment/web", "-n", "shop", "--cells=rz10a")
	if !strings.Contains(out, "released rz10a (2 of 3 placed cells); held back: rz20a") {
		t.Errorf("rollout next printed %q", out)
	}
	f.waitImage(t, 1, "web", "app:2", 2)
	f.memberReady(t, 1, "web")
	f.rolloutStatus(t, "web", 0)

	// undo: app:1 again in the released cells, rz20a untouched.
	out = f.ctl.ok(t, "rollout", "history", "deployment/web", "-n", "shop")
	if !strings.Contains(out, "app:1") || !strings.Contains(out, "app:2") {
		t.Errorf("rollout history:\n%s", out)
	}
	out = f.ctl.ok(t, "rollout", "undo", "deployment/web", "-n", "shop")
	if !strings.Contains(out, "template restored to revision 1; it reaches the released cells (rz00a, rz10a); held back cells keep what they run (rz20a)") {
		t.Errorf("rollout undo printed %q", out)
	}
	f.waitImage(t, 0, "web", "app:1", 3)
	f.waitImage(t, 1, "web", "app:1", 3)
	f.waitSettled(t, fedDeployV2, "shop", "web", map[string]string{"rz00a": "OK", "rz10a": "OK", "rz20a": "HeldBack"})
	if _, gen, rv := f.memberDeployment(t, 2, "web"); gen != 1 || rv != rv2 {
		t.Fatalf("member-2 (held back) was written by the undo: generation %d", gen)
	}
	out = f.ctl.ok(t, "rollout", "history", "deployment/web", "-n", "shop")
	if r := rowOf(out, "3"); len(r) < 6 || r[3] != "app:1" || r[5] != "*" {
		t.Errorf("after undo, app:1 should be revision 3 and current:\n%s", out)
	}

	// finish waits for the released cells, then removes the mask.
	f.ctl.fails(t, "not every released cell", "rollout", "finish", "deployment/web", "-n", "shop")
	f.memberReady(t, 0, "web")
	f.memberReady(t, 1, "web")
	f.rolloutStatus(t, "web", 0)
	out = f.ctl.ok(t, "rollout", "finish", "deployment/web", "-n", "shop")
	if !strings.Contains(out, "mask removed, every placed cell is released (newly released: rz20a)") {
		t.Errorf("rollout finish printed %q", out)
	}
	obj := f.fedObject(t, "web")
	if maskOf(obj) != "<none>" || obj.GetLabels()["rollout.cellfed.io/active"] != "" {
		t.Fatalf("after finish: mask %s labels %v", maskOf(obj), obj.GetLabels())
	}
	f.waitSettled(t, fedDeployV2, "shop", "web", map[string]string{"rz00a": "OK", "rz10a": "OK", "rz20a": "OK"})
	out = f.rolloutStatus(t, "web", 0)
	if !strings.Contains(out, "rollout complete: all 3 placed cells updated and ready") {
		t.Errorf("status after finish:\n%s", out)
	}
	f.ctl.fails(t, "no rollout in progress", "rollout", "next", "deployment/web", "-n", "shop", "--batch=1")
}

// testHistoryDeleted: the history goes with the object (the plane's
// garbage collector; last, as its monitors of new types start with its
// periodic sync).
func testHistoryDeleted(t *testing.T, f *federation) {
	uid := f.fedObject(t, "web").GetUID()
	f.kubectl.MustRun(t, "", "delete", "federateddeployments.v1beta2.types.kubefed.io", "-n", "shop", "web", "--timeout=60s")
	eventually(t, "template revisions of the deleted object garbage-collected", func() (bool, string) {
		list, err := f.dyn.Resource(cellv1alpha1.TemplateRevisionsResource).Namespace("shop").List(context.Background(), metav1.ListOptions{LabelSelector: "rollout.cellfed.io/owner-uid=" + string(uid)})
		if err != nil {
			return false, err.Error()
		}
		return len(list.Items) == 0, fmt.Sprintf("%d revisions left", len(list.Items))
	})
}

func testRolloutBadInput(t *testing.T, f *federation) {
	f.rolloutObject(t, "bad")
	state := func() string {
		obj := f.fedObject(t, "bad")
		list, err := f.dyn.Resource(cellv1alpha1.TemplateRevisionsResource).Namespace("shop").List(context.Background(), metav1.ListOptions{LabelSelector: "rollout.cellfed.io/owner-uid=" + string(obj.GetUID())})
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("generation %d annotations %v labels %v mask %s revisions %d", obj.GetGeneration(), obj.GetAnnotations(), obj.GetLabels(), maskOf(obj), len(list.Items))
	}
	before := state()
	for _, c := range []struct {
		want string
		args []string
	}{
		{`unknown kind "widget"`, []string{"start", "widget/bad", "--cells=rz00a"}},
		{`is not <kind>/<name>`, []string{"start", "bad", "--cells=rz00a"}},
		{`federateddeployment shop/nope not found`, []string{"start", "deployment/nope", "--cells=rz00a"}},
		{`unknown cell "rz99a"`, []string{"start", "deployment/bad", "--cells=rz00a,rz99a"}},
		{`cell "rz01a" is not placed`, []string{"start", "deployment/bad", "--cells=rz01a"}},
		{`--cells and --batch are exclusive`, []string{"start", "deployment/bad", "--cells=rz00a", "--batch=1"}},
		{`a batch is at least 1 cell`, []string{"start", "deployment/bad", "--batch=0"}},
		{`--auto needs --batch`, []string{"start", "deployment/bad", "--auto", "--cells=rz00a"}},
		{`apply to automatic rollouts`, []string{"start", "deployment/bad", "--cells=rz00a", "--pause-on-failure"}},
		{`no rollout in progress`, []string{"next", "deployment/bad", "--batch=1"}},
		{`no rollout in progress`, []string{"finish", "deployment/bad"}},
		{`no rollout in progress`, []string{"pause", "deployment/bad"}},
		{`no earlier template`, []string{"undo", "deployment/bad"}},
		{`say which cells to release`, []string{"next", "deployment/bad"}},
	} {
		f.ctl.fails(t, c.want, append(append([]string{"rollout"}, c.args...), "-n", "shop")...)
	}
	if after := state(); after != before {
		t.Fatalf("failed commands wrote:\nbefore %s\nafter  %s", before, after)
	}
	// In progress: a second start, and next naming a released cell.
	f.ctl.ok(t, "rollout", "start", "federateddeployment/bad", "-n", "shop", "--batch=1")
	before = state()
	f.ctl.fails(t, "a rollout is in progress", "rollout", "start", "deployment/bad", "-n", "shop", "--batch=2")
	f.ctl.fails(t, `cell "rz00a" of federateddeployment shop/bad is released already`, "rollout", "next", "deployment/bad", "-n", "shop", "--cells=rz00a")
	if after := state(); after != before {
		t.Fatalf("failed commands wrote:\nbefore %s\nafter  %s", before, after)
	}
}

// annotation reads a rollout annotation.
func (f *federation) rolloutAnnotation(t *testing.T, name, key string) string {
	return f.fedObject(t, name).GetAnnotations()["rollout.cellfed.io/"+key]
}

func testAutoRollout(t *testing.T, outer *testing.T, f *federation) {
	f.rolloutObject(t, "auto")
	out := f.ctl.ok(t, "rollout", "start", "deployment/auto", "-n", "shop", "--auto", "--batch=1", "--pause-on-failure", "--progress-deadline=10m")
	if !strings.Contains(out, "Automatic: once the template changes") {
		t.Errorf("rollout start --auto printed %q", out)
	}
	// Nothing to roll out yet: the controller waits, the mask stays.
	eventually(t, "the rollout controller waits for a new template", func() (bool, string) {
		msg := f.rolloutAnnotation(t, "auto", "message")
		return strings.Contains(msg, "waiting for a new template"), msg
	})
	if m := maskOf(f.fedObject(t, "auto")); m != "rz00a" {
		t.Fatalf("mask moved before the template changed: %s", m)
	}

	// A person follows the rollout with status --watch meanwhile.
	watch := exec.Command(f.ctl.bin, "--kubeconfig="+f.ctl.kubeconfig, "rollout", "status", "deployment/auto", "-n", "shop", "--watch", "--timeout=5m")
	var watchOut strings.Builder
	watch.Stdout, watch.Stderr = &watchOut, &watchOut
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = watch.Process.Kill() }()

	f.setImage(t, "auto", "app:2")
	f.waitImage(t, 0, "auto", "app:2", 2)
	if m := maskOf(f.fedObject(t, "auto")); m != "rz00a" {
		t.Fatalf("mask moved before rz00a was ready: %s", m)
	}
	f.memberReady(t, 0, "auto")
	f.waitImage(t, 1, "auto", "app:2", 2)
	if img, _, _ := f.memberDeployment(t, 2, "auto"); img != "app:1" {
		t.Fatalf("member-2 got %s before rz10a was ready", img)
	}

	// The controller restarts between batches; the rollout goes on.
	f.controller.Signal(syscall.SIGKILL)
	_ = f.controller.Wait(context.Background())
	f.controller = framework.StartController(outer, f.plane)
	f.memberReady(t, 1, "auto")
	f.waitImage(t, 2, "auto", "app:2", 2)
	f.memberReady(t, 2, "auto")
	eventually(t, "the automatic rollout finishes", func() (bool, string) {
		obj := f.fedObject(t, "auto")
		return maskOf(obj) == "<none>" && obj.GetAnnotations()["rollout.cellfed.io/state"] == "Finished",
			fmt.Sprintf("mask %s annotations %v", maskOf(obj), obj.GetAnnotations())
	})
	if err := watch.Wait(); err != nil || !strings.HasSuffix(watchOut.String(), "rollout complete: all 3 placed cells updated and ready\n") ||
		strings.Count(watchOut.String(), "federateddeployment shop/auto: generation") < 4 {
		t.Errorf("rollout status --watch during the rollout: %v, want exit 0 after redrawing the table as the rollout went on:\n%s", err, watchOut.String())
	}
	out = f.ctl.ok(t, "rollout", "history", "deployment/auto", "-n", "shop")
	if r := rowOf(out, "2"); len(r) < 6 || r[3] != "app:2" || r[5] != "*" {
		t.Errorf("history: app:2 should be revision 2 and current:\n%s", out)
	}
}

func testAutoRolloutFailure(t *testing.T, f *federation) {
	f.rolloutObject(t, "fail")
	f.ctl.ok(t, "rollout", "start", "deployment/fail", "-n", "shop", "--auto", "--batch=1", "--pause-on-failure")
	f.setImage(t, "fail", "app:broken")
	f.waitImage(t, 0, "fail", "app:broken", 2)
	// member-0's deployment controller gives up on the new pods.
	f.patchMemberStatus(t, 0, deployments, "shop", "fail", map[string]any{
		"observedGeneration": 2, "replicas": 2, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1,
		"conditions": []any{map[string]any{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
			"message": `ReplicaSet "fail-5d8c" has timed out progressing.`}},
	})
	eventually(t, "the rollout pauses on the failed cell", func() (bool, string) {
		ann := f.fedObject(t, "fail").GetAnnotations()
		return ann["rollout.cellfed.io/paused"] == "true" && strings.Contains(ann["rollout.cellfed.io/pause-reason"], "rz00a: Progressing ProgressDeadlineExceeded"),
			fmt.Sprintf("%v", ann)
	})
	if m := maskOf(f.fedObject(t, "fail")); m != "rz00a" {
		t.Fatalf("mask after the failure: %s, want rz00a", m)
	}
	eventually(t, "a RolloutPaused warning event on the object", func() (bool, string) {
		out, err := f.kubectl.Run(context.Background(), "", "get", "events", "-n", "shop",
			"--field-selector=involvedObject.name=fail,reason=RolloutPaused", "-o", "jsonpath={.items[*].type}")
		return err == nil && strings.Contains(out, "Warning"), fmt.Sprintf("%q %v", out, err)
	})
	f.ctl.fails(t, "is paused (paused on failure: rz00a", "rollout", "next", "deployment/fail", "-n", "shop", "--batch=1")
	out, errOut, code := f.ctl.run(t, "rollout", "status", "deployment/fail", "-n", "shop", "--watch", "--timeout=1m")
	if code != 1 || !strings.Contains(errOut, "is paused: paused on failure") || rowOf(out, "rz00a")[1] != "failed" {
		t.Errorf("status --watch of a paused rollout: exit %d\n%s%s", code, out, errOut)
	}
	// Undo brings app:1 back to rz00a only.
	f.ctl.ok(t, "rollout", "undo", "deployment/fail", "-n", "shop")
	f.waitImage(t, 0, "fail", "app:1", 3)
	for i := 1; i < 3; i++ {
		if img, gen, _ := f.memberDeployment(t, i, "fail"); img != "app:1" || gen != 1 {
			t.Fatalf("member-%d after undo: %s at %d, want app:1 untouched at 1", i, img, gen)
		}
	}
}

func testAutoRolloutDeadline(t *testing.T, f *federation) {
	f.rolloutObject(t, "slow")
	f.ctl.ok(t, "rollout", "start", "deployment/slow", "-n", "shop", "--auto", "--batch=1", "--progress-deadline=3s")
	f.setImage(t, "slow", "app:2")
	f.waitImage(t, 0, "slow", "app:2", 2)
	// member-0 never reports the new pods ready.
	eventually(t, "the rollout pauses at the deadline", func() (bool, string) {
		ann := f.fedObject(t, "slow").GetAnnotations()
		return ann["rollout.cellfed.io/paused"] == "true" && strings.Contains(ann["rollout.cellfed.io/pause-reason"], "progress deadline 3s exceeded: rz00a"),
			fmt.Sprintf("%v", ann)
	})
	out := f.rolloutStatus(t, "slow", 2)
	if !strings.Contains(out, "PAUSED: progress deadline 3s exceeded") {
		t.Errorf("status of the paused rollout:\n%s", out)
	}
	// Resumed and ready, it goes on.
	f.ctl.ok(t, "rollout", "resume", "deployment/slow", "-n", "shop")
	f.memberReady(t, 0, "slow")
	f.waitImage(t, 1, "slow", "app:2", 2)
	if m := maskOf(f.fedObject(t, "slow")); m != "rz00a,rz10a" {
		t.Errorf("mask after resume: %s, want rz00a,rz10a", m)
	}
}

// testRolloutSelector rolls a FederatedConfigMap placed by a cell
// selector out: its cells come in name order, and a kind without a
// readiness rule is ready once propagated.
func testRolloutSelector(t *testing.T, f *federation) {
	f.kubectl.MustRun(t, `apiVersion: types.kubefed.io/v1beta2
kind: FederatedConfigMap
metadata: {name: settings, namespace: shop}
spec:
  placement: {topologySelector: {matchExpressions: [{key: zone, operator: In, values: [z2, z1]}]}}
  template: {data: {level: "1"}}
`, "apply", "-f", "-")
	f.waitSettled(t, fedCMV2, "shop", "settings", map[string]string{"rz10a": "OK", "rz20a": "OK"})
	out := f.ctl.ok(t, "rollout", "start", "configmap/settings", "-n", "shop", "--batch=1")
	if !strings.Contains(out, "released rz10a (1 of 2 placed cells); held back: rz20a") {
		t.Errorf("rollout start of a selector placement printed %q, want the first cell by name", out)
	}
	f.kubectl.MustRun(t, "", "-n", "shop", "patch", "federatedconfigmaps.v1beta2.types.kubefed.io", "settings", "--type=merge", "-p", `{"spec":{"template":{"data":{"level":"2"}}}}`)
	eventually(t, "rz10a gets level 2, rz20a keeps 1", func() (bool, string) {
		a, b := f.memberObject(t, 1, configmaps, "shop", "settings"), f.memberObject(t, 2, configmaps, "shop", "settings")
		if a == nil || b == nil {
			return false, "missing in a member"
		}
		la, _, _ := unstructured.NestedString(a.Object, "data", "level")
		lb, _, _ := unstructured.NestedString(b.Object, "data", "level")
		return la == "2" && lb == "1", "rz10a level " + la + ", rz20a level " + lb
	})
	var status string
	eventually(t, "status of the selector rollout exits 0", func() (bool, string) {
		o, e, code := f.ctl.run(t, "rollout", "status", "federatedconfigmap/settings", "-n", "shop")
		status = o
		return code == 0, fmt.Sprintf("exit %d\n%s%s", code, o, e)
	})
	if r := rowOf(status, "rz10a"); len(r) < 4 || r[1] != "updated" || r[3] != "true" {
		t.Errorf("rz10a row %v\n%s", r, status)
	}
	f.ctl.ok(t, "rollout", "next", "configmap/settings", "-n", "shop", "--batch=1")
	f.ctl.ok(t, "rollout", "finish", "configmaps/settings", "-n", "shop", "--force")
	eventually(t, "rz20a gets level 2 after finish", func() (bool, string) {
		b := f.memberObject(t, 2, configmaps, "shop", "settings")
		lb, _, _ := unstructured.NestedString(b.Object, "data", "level")
		return lb == "2", "rz20a level " + lb
	})
}

// testRolloutConflict makes another writer change the object between
// cellfedctl's read and its write: cellfedctl talks to the plane through
// a proxy that, before passing on the command's first update, changes
// the template with the test's own client.
func testRolloutConflict(t *testing.T, f *federation) {
	f.rolloutObject(t, "race")
	f.ctl.ok(t, "rollout", "start", "deployment/race", "-n", "shop", "--cells=rz00a")
	f.rolloutStatus(t, "race", 0)

	cfg := f.plane.RESTConfig(t)
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var meanwhile func()
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme, r.Out.URL.Host = "https", strings.TrimPrefix(cfg.Host, "https://")
		},
		Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/federateddeployments/race") && meanwhile != nil {
				meanwhile()
				meanwhile = nil
			}
			return transport.RoundTrip(r)
		}),
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: proxy}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	kubeconfig := filepath.Join(t.TempDir(), "proxy.kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: proxy, cluster: {server: "http://`+ln.Addr().String()+`"}}]
contexts: [{name: proxy, context: {cluster: proxy, user: anyone}}]
users: [{name: anyone, user: {}}]
current-context: proxy
`), 0o600); err != nil {
		t.Fatal(err)
	}
	viaProxy := cellfedctl{bin: f.ctl.bin, kubeconfig: kubeconfig}

	// Only the status changes meanwhile (the controllers do that all the
	// time): the command retries and succeeds.
	meanwhile = func() {
		f.patchMemberStatus(t, 0, deployments, "shop", "race", deploymentStatus(1, 2, 2))
		f.touchStatus(t, "race")
	}
	viaProxy.ok(t, "rollout", "pause", "deployment/race", "-n", "shop")
	viaProxy.ok(t, "rollout", "resume", "deployment/race", "-n", "shop")

	// The template changes meanwhile: the command fails, the mask stays.
	meanwhile = func() { f.setImage(t, "race", "app:other") }
	before := f.fedObject(t, "race")
	line := viaProxy.fails(t, "federateddeployment shop/race changed since it was read (its spec changed: generation", "rollout", "next", "deployment/race", "-n", "shop", "--cells=rz10a")
	if !strings.Contains(line, "nothing was written: re-run the command") {
		t.Errorf("conflict message %q does not say what to do", line)
	}
	after := f.fedObject(t, "race")
	if maskOf(after) != "rz00a" || after.GetGeneration() != before.GetGeneration()+1 {
		t.Fatalf("after the refused next: mask %s generation %d (was %d), want rz00a and only the other writer's change", maskOf(after), after.GetGeneration(), before.GetGeneration())
	}
}

// touchStatus writes the object's status (a condition's message), as the
// propagation controller does, moving its resourceVersion.
func (f *federation) touchStatus(t *testing.T, name string) {
	t.Helper()
	obj := f.fedObject(t, name)
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	conds = append(conds, map[string]any{"type": "TestTouched", "status": "True", "message": fmt.Sprint(len(conds))})
	_ = unstructured.SetNestedSlice(obj.Object, conds, "status", "conditions")
	if _, err := f.dyn.Resource(fedDeployV2).Namespace("shop").UpdateStatus(context.Background(), obj, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("writing the status of %s: %v", name, err)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
