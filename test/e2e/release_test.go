package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cellfed/cellfed/test/framework"
)

// Release control runs inside TestPropagation's federation: rz00a is on
// member-0, rz10a on member-1, rz20a on member-2.

// masked is a FederatedDeployment placed on cells with a mask (nil: none).
func masked(name, image string, cells, mask []string) string {
	extra := ""
	if mask != nil {
		var names []string
		for _, c := range mask {
			names = append(names, "{name: "+c+"}")
		}
		extra = "  placementMask: {topologies: [" + strings.Join(names, ", ") + "]}\n"
	}
	return deployment("shop", name, image, cells, extra)
}

func testPlacementMask(t *testing.T, f *federation) {
	cells := []string{"rz00a", "rz10a"}
	f.kubectl.MustRun(t, masked("gray", "app:1", cells, nil), "apply", "-f", "-")
	f.waitSettled(t, fedDeployV2, "shop", "gray", map[string]string{"rz00a": "OK", "rz10a": "OK"})
	for i := range 2 {
		if img, gen, _ := f.memberDeployment(t, i, "gray"); img != "app:1" || gen != 1 {
			t.Fatalf("member-%d: image %q generation %d, want app:1 at generation 1", i, img, gen)
		}
	}

	// The article's figure: mask = {rz00a}, then an update reaches rz00a
	// only.
	f.kubectl.MustRun(t, masked("gray", "app:1", cells, []string{"rz00a"}), "apply", "-f", "-")
	f.waitSettled(t, fedDeployV2, "shop", "gray", map[string]string{"rz00a": "OK", "rz10a": "HeldBack"})
	_, _, rv1 := f.memberDeployment(t, 1, "gray")
	f.kubectl.MustRun(t, masked("gray", "app:2", cells, []string{"rz00a"}), "apply", "-f", "-")
	eventually(t, "rz00a updated", func() (bool, string) {
		img, gen, _ := f.memberDeployment(t, 0, "gray")
		return img == "app:2" && gen == 2, fmt.Sprintf("member-0 image %q generation %d", img, gen)
	})
	tops := f.waitSettled(t, fedDeployV2, "shop", "gray", map[string]string{"rz00a": "OK", "rz10a": "HeldBack"})
	gen, _, _, st := f.fedStatus(t, fedDeployV2, "shop", "gray")
	if tops["rz00a"].Generation != gen || tops["rz10a"].Generation >= gen || tops["rz10a"].Generation == 0 {
		t.Errorf("generations per topology: rz00a %d, rz10a %d; want rz00a at the object's %d and rz10a at the older one it runs",
			tops["rz00a"].Generation, tops["rz10a"].Generation, gen)
	}
	if st["propagated"] != "1/2" {
		t.Errorf("status.propagated = %v, want 1/2", st["propagated"])
	}
	// Drift outside the mask is not corrected either.
	f.kubectl.MustRun(t, "", "--kubeconfig="+f.members[1].Kubeconfig, "scale", "deployment", "-n", "shop", "gray", "--replicas=7")
	f.patchMemberStatus(t, 1, deployments, "shop", "gray", deploymentStatus(2, 7, 7))
	eventually(t, "member-1's own change reflowed", func() (bool, string) {
		_, _, tops, _ := f.fedStatus(t, fedDeployV2, "shop", "gray")
		rs := tops["rz10a"].RemoteStatus
		return fmt.Sprint(rs["readyReplicas"]) == "7", fmt.Sprintf("rz10a remoteStatus %v", rs)
	})
	img, memberGen, _ := f.memberDeployment(t, 1, "gray")
	replicas := f.memberObject(t, 1, deployments, "shop", "gray").Object["spec"].(map[string]any)["replicas"]
	if img != "app:1" || memberGen != 2 || fmt.Sprint(replicas) != "7" {
		t.Fatalf("member-1 outside the mask: image %q generation %d replicas %v; want app:1, its own scale to 7 (generation 2) kept", img, memberGen, replicas)
	}
	if _, _, rv := f.memberDeployment(t, 1, "gray"); rv == rv1 {
		t.Fatalf("member-1's resourceVersion did not move: the test's own writes did not land")
	}
	// kubectl get shows it at a glance.
	out := f.kubectl.MustRun(t, "", "get", "federateddeployments.v1beta2.types.kubefed.io", "-n", "shop", "gray", "--no-headers")
	if fields := strings.Fields(out); len(fields) < 5 || fields[4] != "1/2" {
		t.Errorf("kubectl get: %q; want the PROPAGATED column at 1/2", out)
	}
	// v1beta1 readers see the same, in KubeFed's shape.
	v1 := getJSON(t, f.kubectl, "get", "federateddeployments.v1beta1.types.kubefed.io", "-n", "shop", "gray", "-o", "json")
	clusters, _ := json.Marshal(field(v1, "status", "clusters"))
	if !strings.Contains(string(clusters), `"name":"shop.rz10a"`) || !strings.Contains(string(clusters), `"status":"HeldBack"`) {
		t.Errorf("v1beta1 status.clusters = %s, want shop.rz10a HeldBack", clusters)
	}

	// Widening the mask releases to rz10a.
	f.kubectl.MustRun(t, masked("gray", "app:2", cells, cells), "apply", "-f", "-")
	eventually(t, "rz10a updated once in the mask", func() (bool, string) {
		img, _, _ := f.memberDeployment(t, 1, "gray")
		return img == "app:2", "member-1 image " + img
	})
	f.waitSettled(t, fedDeployV2, "shop", "gray", map[string]string{"rz00a": "OK", "rz10a": "OK"})

	// A cell removed from the placement but outside the mask keeps its
	// object until the mask goes.
	f.kubectl.MustRun(t, masked("gray", "app:2", []string{"rz00a"}, []string{"rz00a"}), "apply", "-f", "-")
	f.waitSettled(t, fedDeployV2, "shop", "gray", map[string]string{"rz00a": "OK", "rz10a": "HeldBack"})
	if img, _, _ := f.memberDeployment(t, 1, "gray"); img != "app:2" {
		t.Fatalf("member-1 lost its object while outside the mask (image %q)", img)
	}
	f.kubectl.MustRun(t, masked("gray", "app:2", []string{"rz00a"}, nil), "apply", "-f", "-")
	eventually(t, "unplaced rz10a cleaned up once the mask is gone", func() (bool, string) {
		return f.memberObject(t, 1, deployments, "shop", "gray") == nil, "still in member-1"
	})

	// Deletion ignores the mask.
	f.kubectl.MustRun(t, masked("gray", "app:2", cells, []string{"rz00a"}), "apply", "-f", "-")
	f.waitSettled(t, fedDeployV2, "shop", "gray", map[string]string{"rz00a": "OK", "rz10a": "HeldBack"})
	f.kubectl.MustRun(t, "", "delete", "federateddeployments.v1beta2.types.kubefed.io", "-n", "shop", "gray", "--timeout=60s")
	for i := range 2 {
		if f.memberObject(t, i, deployments, "shop", "gray") != nil {
			t.Fatalf("member-%d still holds gray after the federated object was deleted", i)
		}
	}

	// Admission: a mask only names placed cells.
	_, err := f.kubectl.Run(context.Background(), masked("bad", "app:1", []string{"rz00a"}, []string{"rz10a"}), "apply", "-f", "-")
	if err == nil || !strings.Contains(err.Error(), `cell "rz10a" is not in spec.placement.topologies`) {
		t.Errorf("a mask naming an unplaced cell: err = %v", err)
	}
}

func testDisasterRecoveryRelease(t *testing.T, f *federation) {
	ctx := context.Background()
	cells := []string{"rz00a", "rz10a"}
	f.kubectl.MustRun(t, masked("dr", "dr:1", cells, nil), "apply", "-f", "-")
	f.waitSettled(t, fedDeployV2, "shop", "dr", map[string]string{"rz00a": "OK", "rz10a": "OK"})

	// rz10a's member is lost: mask it out and release everywhere else.
	f.members[1].Signal(syscall.SIGKILL)
	_ = f.members[1].Wait(ctx)
	restarted := false
	defer func() {
		if !restarted { // the later subtests need the member
			f.members[1].RestartAndWait(t)
		}
	}()
	f.kubectl.MustRun(t, masked("dr", "dr:2", cells, []string{"rz00a"}), "apply", "-f", "-")
	eventually(t, "rz00a released while rz10a is down", func() (bool, string) {
		img, _, _ := f.memberDeployment(t, 0, "dr")
		return img == "dr:2", "member-0 image " + img
	})
	f.waitSettled(t, fedDeployV2, "shop", "dr", map[string]string{"rz00a": "OK", "rz10a": "HeldBack"})
	_, _, _, st := f.fedStatus(t, fedDeployV2, "shop", "dr")
	if cond := conditionOf(st, "Propagation"); cond["status"] != "True" {
		t.Errorf("Propagation condition with the down cell masked out = %v, want True (no error)", cond)
	}

	// The member comes back: nothing changes there while it is masked
	// out. Its status reflowing proves the controller sees it again.
	f.members[1].RestartAndWait(t)
	restarted = true
	f.patchMemberStatus(t, 1, deployments, "shop", "dr", deploymentStatus(1, 2, 1))
	eventually(t, "rz10a seen again after the restart", func() (bool, string) {
		_, _, tops, _ := f.fedStatus(t, fedDeployV2, "shop", "dr")
		rs := tops["rz10a"].RemoteStatus
		return fmt.Sprint(rs["readyReplicas"]) == "1" && tops["rz10a"].Status == "HeldBack", fmt.Sprintf("rz10a %+v", tops["rz10a"])
	})
	if img, gen, _ := f.memberDeployment(t, 1, "dr"); img != "dr:1" || gen != 1 {
		t.Fatalf("member-1 back from the outage: image %q generation %d, want dr:1 untouched at generation 1", img, gen)
	}

	// The operator adds it to the mask: now it is updated.
	f.kubectl.MustRun(t, masked("dr", "dr:2", cells, cells), "apply", "-f", "-")
	eventually(t, "rz10a updated once unmasked", func() (bool, string) {
		img, gen, _ := f.memberDeployment(t, 1, "dr")
		return img == "dr:2" && gen == 2, fmt.Sprintf("member-1 image %q generation %d", img, gen)
	})
	f.waitSettled(t, fedDeployV2, "shop", "dr", map[string]string{"rz00a": "OK", "rz10a": "OK"})
}

func testStatusReflow(t *testing.T, f *federation) {
	cells := []string{"rz00a", "rz10a"}
	// Deployments: readiness per cell and the READY count.
	f.kubectl.MustRun(t, masked("reflow", "app:1", cells, nil), "apply", "-f", "-")
	f.waitSettled(t, fedDeployV2, "shop", "reflow", map[string]string{"rz00a": "OK", "rz10a": "OK"})
	f.patchMemberStatus(t, 0, deployments, "shop", "reflow", deploymentStatus(1, 2, 2))
	f.patchMemberStatus(t, 1, deployments, "shop", "reflow", deploymentStatus(1, 2, 1))
	eventually(t, "deployment status reflowed per cell", func() (bool, string) {
		_, _, tops, st := f.fedStatus(t, fedDeployV2, "shop", "reflow")
		a, b := tops["rz00a"], tops["rz10a"]
		ok := fmt.Sprint(a.RemoteStatus["readyReplicas"]) == "2" && a.Ready != nil && *a.Ready &&
			fmt.Sprint(b.RemoteStatus["readyReplicas"]) == "1" && b.Ready != nil && !*b.Ready && st["ready"] == "1/2"
		return ok, fmt.Sprintf("rz00a %+v rz10a %+v ready %v", a, b, st["ready"])
	})
	out := f.kubectl.MustRun(t, "", "get", "federateddeployments.v1beta2.types.kubefed.io", "-n", "shop", "reflow", "--no-headers")
	if fields := strings.Fields(out); len(fields) < 5 || fields[3] != "1/2" || fields[4] != "2/2" {
		t.Errorf("kubectl get: %q; want READY 1/2 and PROPAGATED 2/2", out)
	}
	f.patchMemberStatus(t, 1, deployments, "shop", "reflow", deploymentStatus(1, 2, 2))
	eventually(t, "the Ready condition turns True", func() (bool, string) {
		_, _, _, st := f.fedStatus(t, fedDeployV2, "shop", "reflow")
		return st["ready"] == "2/2" && conditionOf(st, "Ready")["status"] == "True", fmt.Sprintf("ready %v condition %v", st["ready"], conditionOf(st, "Ready"))
	})
	// v1beta1 (KubeFed's shape) carries the same remote status.
	v1 := getJSON(t, f.kubectl, "get", "federateddeployments.v1beta1.types.kubefed.io", "-n", "shop", "reflow", "-o", "json")
	if raw, _ := json.Marshal(field(v1, "status", "clusters")); !strings.Contains(string(raw), `"remoteStatus":{"availableReplicas":2`) {
		t.Errorf("v1beta1 status.clusters = %s, want remoteStatus", raw)
	}

	// Services: the load balancer a member's cloud controller reports.
	f.kubectl.MustRun(t, `apiVersion: types.kubefed.io/v1beta2
kind: FederatedService
metadata: {name: front, namespace: shop}
spec:
  placement: `+framework.CellPlacement(cells...)+`
  template:
    spec:
      type: LoadBalancer
      selector: {app: front}
      ports: [{port: 80}]
`, "apply", "-f", "-")
	f.waitSettled(t, fedServiceV2, "shop", "front", map[string]string{"rz00a": "OK", "rz10a": "OK"})
	f.patchMemberStatus(t, 0, services, "shop", "front", map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": "192.0.2.10"}}}})
	eventually(t, "service status reflowed", func() (bool, string) {
		_, _, tops, _ := f.fedStatus(t, fedServiceV2, "shop", "front")
		raw, _ := json.Marshal(tops["rz00a"].RemoteStatus)
		return strings.Contains(string(raw), "192.0.2.10"), string(raw)
	})

	// Jobs: ready once complete.
	f.kubectl.MustRun(t, `apiVersion: types.kubefed.io/v1beta2
kind: FederatedJob
metadata: {name: batch, namespace: shop}
spec:
  placement: `+framework.CellPlacement("rz00a")+`
  template:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: run, image: "busybox:1"}]
`, "apply", "-f", "-")
	f.waitSettled(t, fedJobV2, "shop", "batch", map[string]string{"rz00a": "OK"})
	now := metav1.Now().UTC().Format("2006-01-02T15:04:05Z")
	f.patchMemberStatus(t, 0, jobs, "shop", "batch", map[string]any{"startTime": now, "completionTime": now, "succeeded": 1,
		"conditions": []any{
			map[string]any{"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": now},
			map[string]any{"type": "Complete", "status": "True", "lastTransitionTime": now},
		}})
	eventually(t, "job completion reflowed", func() (bool, string) {
		_, _, tops, st := f.fedStatus(t, fedJobV2, "shop", "batch")
		tp := tops["rz00a"]
		return tp.Ready != nil && *tp.Ready && fmt.Sprint(tp.RemoteStatus["succeeded"]) == "1" && st["ready"] == "1/1", fmt.Sprintf("%+v", tp)
	})

	// A CRD-based type enabled with --from-cluster.
	for i := range 2 {
		mk := framework.Kubectl{Kubeconfig: f.members[i].Kubeconfig}
		mk.MustRun(t, ctlMemberCRD, "apply", "-f", "-")
		mk.WaitEstablished(t, "widgets.example.com")
	}
	f.ctl.ok(t, "enable", "widgets.example.com", "--from-cluster="+f.members[0].Kubeconfig)
	f.kubectl.MustRun(t, `apiVersion: types.kubefed.io/v1beta2
kind: FederatedWidget
metadata: {name: gizmo, namespace: shop}
spec:
  placement: `+framework.CellPlacement(cells...)+`
  template:
    spec: {size: 2, color: blue}
`, "apply", "-f", "-")
	f.waitSettled(t, fedWidgetV2, "shop", "gizmo", map[string]string{"rz00a": "OK", "rz10a": "OK"})
	f.patchMemberStatus(t, 1, widgets, "shop", "gizmo", map[string]any{"ready": true})
	eventually(t, "widget status reflowed", func() (bool, string) {
		_, _, tops, _ := f.fedStatus(t, fedWidgetV2, "shop", "gizmo")
		return tops["rz10a"].RemoteStatus["ready"] == true && tops["rz00a"].RemoteStatus == nil, fmt.Sprintf("%+v", tops)
	})
}

func testAnnotationRules(t *testing.T, f *federation, outer *testing.T) {
	f.ctl.ok(t, "enable", "services", "--propagate-annotations=service.beta.kubernetes.io/*")
	got := f.kubectl.MustRun(t, "", "-n", framework.KubeFedNamespace, "get", "federatedtypeconfigs", "services", "-o", "jsonpath={.spec.propagatingAnnotations}")
	if got != `["service.beta.kubernetes.io/*"]` {
		t.Fatalf("FederatedTypeConfig services spec.propagatingAnnotations = %s", got)
	}
	svc := func(protocol string, labels string) string {
		ann := `status.cafe.sofastack.io/loadbalancer: from-template`
		if protocol != "" {
			ann += `, service.beta.kubernetes.io/aws-load-balancer-backend-protocol: ` + protocol
		}
		return `apiVersion: types.kubefed.io/v1beta2
kind: FederatedService
metadata: {name: annot, namespace: shop}
spec:
  placement: ` + framework.CellPlacement("rz00a") + `
  template:
    metadata:
      labels: {` + labels + `}
      annotations: {` + ann + `}
    spec: {selector: {app: annot}, ports: [{port: 80}]}
`
	}
	member := func() (map[string]string, map[string]string) {
		obj := f.memberObject(t, 0, services, "shop", "annot")
		if obj == nil {
			return nil, nil
		}
		return obj.GetLabels(), obj.GetAnnotations()
	}
	const protocol = "service.beta.kubernetes.io/aws-load-balancer-backend-protocol"
	const lb = "status.cafe.sofastack.io/loadbalancer"
	f.kubectl.MustRun(t, svc("http", "app: annot, tier: front"), "apply", "-f", "-")
	eventually(t, "the spec-like annotation arrives, the status-like one does not", func() (bool, string) {
		l, a := member()
		_, lbSet := a[lb]
		return a[protocol] == "http" && !lbSet && l["tier"] == "front", fmt.Sprintf("labels %v annotations %v", l, a)
	})
	// The member's own controllers add a status annotation and a label.
	mk := framework.Kubectl{Kubeconfig: f.members[0].Kubeconfig}
	mk.MustRun(t, "", "-n", "shop", "annotate", "service", "annot", lb+"=ready")
	mk.MustRun(t, "", "-n", "shop", "label", "service", "annot", "member-added=x")

	f.kubectl.MustRun(t, svc("https", "app: annot, tier: front"), "apply", "-f", "-")
	eventually(t, "the spec-like annotation is updated, the member's keys survive", func() (bool, string) {
		l, a := member()
		return a[protocol] == "https" && a[lb] == "ready" && l["member-added"] == "x", fmt.Sprintf("labels %v annotations %v", l, a)
	})
	// Drift: the member edits the spec-like annotation: corrected.
	mk.MustRun(t, "", "-n", "shop", "annotate", "--overwrite", "service", "annot", protocol+"=tcp")
	eventually(t, "a member edit of a spec-like annotation is corrected", func() (bool, string) {
		_, a := member()
		return a[protocol] == "https" && a[lb] == "ready", fmt.Sprintf("annotations %v", a)
	})

	// Keys leaving the template leave the member; the member's own stay.
	f.kubectl.MustRun(t, svc("", "app: annot"), "apply", "-f", "-")
	eventually(t, "dropped keys removed from the member only", func() (bool, string) {
		l, a := member()
		_, p := a[protocol]
		_, tier := l["tier"]
		return !p && !tier && a[lb] == "ready" && l["member-added"] == "x" && l["app"] == "annot", fmt.Sprintf("labels %v annotations %v", l, a)
	})

	// All of it holds across a controller restart.
	f.controller.Stop(10 * time.Second)
	f.controller = framework.StartController(outer, f.plane)
	f.kubectl.MustRun(t, svc("http2", "app: annot, version: v2"), "apply", "-f", "-")
	eventually(t, "after a restart: updated, member keys kept, dropped keys not back", func() (bool, string) {
		l, a := member()
		_, tier := l["tier"]
		return a[protocol] == "http2" && l["version"] == "v2" && !tier && a[lb] == "ready" && l["member-added"] == "x", fmt.Sprintf("labels %v annotations %v", l, a)
	})
	f.kubectl.MustRun(t, svc("", "app: annot"), "apply", "-f", "-")
	eventually(t, "after a restart: keys written before it are removed when dropped", func() (bool, string) {
		l, a := member()
		_, p := a[protocol]
		_, v := l["version"]
		return !p && !v && a[lb] == "ready" && l["member-added"] == "x", fmt.Sprintf("labels %v annotations %v", l, a)
	})

	// Bad patterns are refused before anything is written.
	f.ctl.fails(t, `--propagate-annotations: "Bad Key/*" is not an annotation key pattern`, "enable", "services", "--propagate-annotations=Bad Key/*")
	f.ctl.ok(t, "enable", "services", "--propagate-annotations=")
	if got := f.kubectl.MustRun(t, "", "-n", framework.KubeFedNamespace, "get", "federatedtypeconfigs", "services", "-o", "jsonpath={.spec.propagatingAnnotations}"); got != "" {
		t.Errorf("--propagate-annotations= left %s", got)
	}
}
