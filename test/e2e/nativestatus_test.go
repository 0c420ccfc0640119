package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cellfed/cellfed/pkg/policy/federate"
	"github.com/cellfed/cellfed/test/framework"
)

// memberRolledOut is a member Deployment's status once generation gen
// rolled out with n replicas.
func memberRolledOut(gen int64, n int) map[string]any {
	st := deploymentStatus(gen, n, n)
	st["conditions"] = []any{
		map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "lastUpdateTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"},
		map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "lastUpdateTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"},
	}
	return st
}

// testNativeStatus: a native Deployment on the plane, placed on rz00a and
// rz10a through the FederatedDeployment it controls (as the policy path
// builds it), gets its status from the cells. Real kubectl reads it:
// rollout status waits while a cell is held back, fails once the
// progress deadline passes, and succeeds once every cell runs the
// current template.
func testNativeStatus(t *testing.T, f *federation) {
	ctx := context.Background()
	if _, err := f.dyn.Resource(deployments).Namespace("shop").List(ctx, metav1.ListOptions{Limit: 1}); apierrors.IsNotFound(err) {
		t.Skip("the plane does not serve apps/v1 Deployments")
	}
	const name = "native-web"
	native := func(image string) string {
		return `apiVersion: apps/v1
kind: Deployment
metadata: {name: ` + name + `, namespace: shop}
spec:
  replicas: 4
  progressDeadlineSeconds: 20
  selector: {matchLabels: {app: ` + name + `}}
  template:
    metadata: {labels: {app: ` + name + `}}
    spec: {containers: [{name: app, image: "` + image + `"}]}
`
	}
	// syncTemplate does the policy path's part: the federated template
	// is the native object's (federate.Template).
	syncTemplate := func() {
		t.Helper()
		nat, err := f.dyn.Resource(deployments).Namespace("shop").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("reading the native Deployment: %v", err)
		}
		body, _ := json.Marshal(map[string]any{"spec": map[string]any{"template": federate.Template(nat)}})
		if _, err := f.dyn.Resource(fedDeployV2).Namespace("shop").Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
			t.Fatalf("writing the federated template: %v", err)
		}
	}
	planeStatus := func() (gen int64, st map[string]any) {
		t.Helper()
		nat, err := f.dyn.Resource(deployments).Namespace("shop").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("reading the native Deployment: %v", err)
		}
		st, _, _ = unstructured.NestedMap(nat.Object, "status")
		return nat.GetGeneration(), st
	}
	rolloutStatus := func(timeout string) (string, error) {
		return f.kubectl.Run(ctx, "", "-n", "shop", "rollout", "status", "deployment/"+name, "--timeout="+timeout)
	}

	f.kubectl.MustRun(t, native("app:1"), "apply", "-f", "-")
	nat, err := f.dyn.Resource(deployments).Namespace("shop").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the native Deployment: %v", err)
	}
	tmpl, _ := json.Marshal(federate.Template(nat))
	f.kubectl.MustRun(t, `apiVersion: types.kubefed.io/v1beta2
kind: FederatedDeployment
metadata:
  name: `+name+`
  namespace: shop
  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: `+name+`, uid: "`+string(nat.GetUID())+`", controller: true}]
spec:
  placement: `+framework.CellPlacement("rz00a", "rz10a")+`
  replicaDivision: {mode: Divide}
  template: `+string(tmpl)+`
`, "apply", "-f", "-")
	f.waitSettled(t, fedDeployV2, "shop", name, map[string]string{"rz00a": "OK", "rz10a": "OK"})

	// Not rolled out in the cells yet: kubectl waits.
	if out, err := rolloutStatus("3s"); err == nil {
		t.Fatalf("kubectl rollout status succeeded before any cell rolled out: %s", out)
	}
	for i := range 2 {
		_, gen, _ := f.memberDeployment(t, i, name)
		f.patchMemberStatus(t, i, deployments, "shop", name, memberRolledOut(gen, 2))
	}
	eventually(t, "the plane's Deployment rolled out", func() (bool, string) {
		gen, st := planeStatus()
		p := conditionOf(st, "Progressing")
		return fmt.Sprint(st["observedGeneration"]) == fmt.Sprint(gen) && fmt.Sprint(st["updatedReplicas"]) == "4" &&
			fmt.Sprint(st["availableReplicas"]) == "4" && p["reason"] == "NewReplicaSetAvailable", fmt.Sprintf("generation %d status %v", gen, st)
	})
	if out, err := rolloutStatus("60s"); err != nil || !strings.Contains(out, "successfully rolled out") {
		t.Errorf("kubectl rollout status: %s %v; want successfully rolled out", out, err)
	}
	if out, err := f.kubectl.Run(ctx, "", "-n", "shop", "wait", "--for=condition=Available", "deployment/"+name, "--timeout=60s"); err != nil {
		t.Errorf("kubectl wait --for=condition=Available: %s %v", out, err)
	}

	// A grayscale release: rz10a held back at app:1.
	if _, err := f.dyn.Resource(fedDeployV2).Namespace("shop").Patch(ctx, name, types.MergePatchType,
		[]byte(`{"spec":{"placementMask":{"topologies":[{"name":"rz00a"}]}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("masking rz10a out: %v", err)
	}
	f.kubectl.MustRun(t, native("app:2"), "apply", "-f", "-")
	syncTemplate()
	eventually(t, "rz00a runs app:2", func() (bool, string) {
		img, _, _ := f.memberDeployment(t, 0, name)
		return img == "app:2", "member-0 runs " + img
	})
	_, gen0, _ := f.memberDeployment(t, 0, name)
	f.patchMemberStatus(t, 0, deployments, "shop", name, memberRolledOut(gen0, 2))
	eventually(t, "the plane's Deployment waits for the held-back cell", func() (bool, string) {
		gen, st := planeStatus()
		p := conditionOf(st, "Progressing")
		held := p["reason"] == "HeldBack" || p["reason"] == "ProgressDeadlineExceeded"
		return fmt.Sprint(st["observedGeneration"]) == fmt.Sprint(gen) && fmt.Sprint(st["updatedReplicas"]) == "2" &&
			fmt.Sprint(st["replicas"]) == "4" && held && strings.Contains(fmt.Sprint(p["message"]), "rz10a"), fmt.Sprintf("generation %d status %v", gen, st)
	})
	// No progress for progressDeadlineSeconds (20 s): kubectl stops
	// waiting with an error instead of hanging.
	eventually(t, "the progress deadline passes", func() (bool, string) {
		_, st := planeStatus()
		p := conditionOf(st, "Progressing")
		return p["reason"] == "ProgressDeadlineExceeded" && p["status"] == "False", fmt.Sprintf("Progressing %v", p)
	})
	if out, err := rolloutStatus("30s"); err == nil || !strings.Contains(err.Error(), "exceeded its progress deadline") {
		t.Errorf("kubectl rollout status with a cell held back past the deadline: %q %v; want an error: exceeded its progress deadline", out, err)
	}

	// The release goes on: rz10a too, and the rollout is done.
	if _, err := f.dyn.Resource(fedDeployV2).Namespace("shop").Patch(ctx, name, types.MergePatchType,
		[]byte(`{"spec":{"placementMask":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("lifting the mask: %v", err)
	}
	eventually(t, "rz10a runs app:2", func() (bool, string) {
		img, _, _ := f.memberDeployment(t, 1, name)
		return img == "app:2", "member-1 runs " + img
	})
	_, gen1, _ := f.memberDeployment(t, 1, name)
	f.patchMemberStatus(t, 1, deployments, "shop", name, memberRolledOut(gen1, 2))
	eventually(t, "the plane's Deployment rolled out everywhere", func() (bool, string) {
		_, st := planeStatus()
		p := conditionOf(st, "Progressing")
		return fmt.Sprint(st["updatedReplicas"]) == "4" && p["reason"] == "NewReplicaSetAvailable", fmt.Sprintf("status %v", st)
	})
	if out, err := rolloutStatus("60s"); err != nil || !strings.Contains(out, "successfully rolled out") {
		t.Errorf("kubectl rollout status after the release: %s %v; want successfully rolled out", out, err)
	}
	// The per-cell detail stays on the federated object.
	_, _, tops, _ := f.fedStatus(t, fedDeployV2, "shop", name)
	if tops["rz00a"].RemoteStatus == nil || tops["rz10a"].RemoteStatus == nil {
		t.Errorf("status.topologies lost the per-cell status: %+v", tops)
	}
}
