package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cellfed/cellfed/test/framework"
)

// TestDemo runs `make demo`'s script as CI does (DEMO_EXIT=1 hack/demo.sh,
// after `make build`) and checks that it exits 0 having told the whole
// story: every step of hack/demo.sh checks its own expectation and exits
// non-zero on a miss; this test checks the lines a newcomer reads.
func TestDemo(t *testing.T) {
	t.Parallel()
	root := framework.RepoRoot(t)
	framework.Binary(t, "member-apiserver") // fails with `make build` when missing
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "demo.sh"))
	cmd.Dir = root
	tmp := t.TempDir()
	cmd.Env = append(os.Environ(), "DEMO_EXIT=1", "DEMO_STEP=0", "DEMO_TIMEOUT=240", "TMPDIR="+tmp)
	if dir := os.Getenv("CELLFED_BIN_DIR"); dir != "" {
		cmd.Env = append(cmd.Env, "BIN="+dir)
	}
	// On the deadline the script gets SIGTERM, so its trap stops what it
	// started and removes its temp dir.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = time.Minute
	began := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(began)
	if err != nil {
		t.Fatalf("DEMO_EXIT=1 hack/demo.sh: %v after %s\n%s", err, took.Round(time.Second), out)
	}
	t.Logf("the demo took %s", took.Round(time.Second))
	// The demo's clean-up stops every process it started (the board
	// included): none may still name its temp dir on its command line.
	if left := processesNaming(t, tmp); len(left) > 0 {
		t.Errorf("after DEMO_EXIT=1 hack/demo.sh exited, these processes it started are still running:\n%s", strings.Join(left, "\n"))
	}
	text := string(out)
	// In this order: the native path (plain manifests, a policy, kubectl
	// rollout status against the plane), the wrappers and their
	// readiness, the app team (and its Forbidden), grayscale, disaster
	// recovery, undo.
	want := []string{
		`(?m)Open the release board in a browser and watch every cell change as the steps run:\n  http://127\.0\.0\.1:\d+/\?token=[0-9a-f]{64}\n`,
		"==== 1. Plain manifests and one policy",
		"deployment.apps/api created",
		"propagationpolicy.policy.cellfed.io/api created",
		"api placed on three cells",
		`(?m)^api\s+(0\s+)?cell\s+2\s+0\s`,
		`deployment "api" successfully rolled out`,
		`(?m)^api\s+2/2\s+2\s+2\s`,
		`(?m)^rz20a\s+updated\s+\d+\s+true\s+2/2\s+OK`,
		"member-3: nginx:1.27 envFrom api-env ready 2/2",
		"==== 2. The same with KubeFed's wrapper types",
		"federateddeployment.types.kubefed.io/web created",
		"Propagated to all three cells",
		`(?m)^NAME\s+CLUSTER\s+KUBEFEDCLUSTER\s+READY\s+OBJECTS\s+AGE$`,
		`(?m)^rz00a\s+member-1\s+shop.rz00a\s+True\s+5\s`,
		`(?m)^rz01a\s+member-1\s+shop.rz01a\s+True\s+0\s`,
		`(?m)^NAME\s+TOPOLOGY\s+RELEASED\s+READY\s+UPDATED\s+PROPAGATION\s+AGE$`,
		`(?m)^federateddeployment\.types\.kubefed\.io/web\s+cell\s+3/3\s+3/3\s+3/3\s+True`,
		"member-2: deployment shop/web rolled out, 5/5 ready",
		"==== 3. An app team's identity",
		"granted app-team in shop",
		`Error from server (Forbidden): federateddeployments.types.kubefed.io is forbidden: User "system:serviceaccount:shop:release-bot" cannot list resource "federateddeployments" in API group "types.kubefed.io" in the namespace "billing"`,
		"==== 4. Grayscale: one cell first",
		"released rz00a (1 of 3 placed cells); held back: rz10a, rz20a",
		`(?m)^web\s+cell\s+1/3\s+3/3\s+1/3\s+True`,
		`(?m)^rz10a\s+held back\s+`,
		"member-1: nginx:1.28 ready 2/2\nmember-2: nginx:1.27 ready 5/5\nmember-3: nginx:1.27 ready 2/2",
		"released rz10a (2 of 3 placed cells); held back: rz20a",
		"mask removed, every placed cell is released (newly released: rz20a)",
		"==== 5. Disaster recovery",
		`(?m)^NAME\s+CLUSTER\s+KUBEFEDCLUSTER\s+READY\s+OBJECTS\s+AGE$`,
		`(?m)^rz10a\s+member-2\s+shop.rz10a\s+False`,
		"released rz00a, rz20a (2 of 3 placed cells); held back: rz10a",
		`(?m)^rz10a\s+member-2\s+shop.rz10a\s+True`,
		"member-1: nginx:1.29 ready 2/2\nmember-2: nginx:1.28 ready 5/5\nmember-3: nginx:1.29 ready 2/2",
		"(newly released: rz10a)",
		"member-1: nginx:1.29 ready 2/2\nmember-2: nginx:1.29 ready 5/5\nmember-3: nginx:1.29 ready 2/2",
		"==== 6. Roll back",
		"template restored to revision 2",
		"member-1: nginx:1.28 ready 2/2\nmember-2: nginx:1.28 ready 5/5\nmember-3: nginx:1.28 ready 2/2",
		"every step's expectation held",
	}
	rest := text
	for _, w := range want {
		var re *regexp.Regexp
		if strings.HasPrefix(w, "(?m)") {
			re = regexp.MustCompile(w)
		} else {
			re = regexp.MustCompile(regexp.QuoteMeta(w))
		}
		loc := re.FindStringIndex(rest)
		if loc == nil {
			t.Fatalf("the demo's output lacks %q (after the lines checked before it):\n%s", w, text)
		}
		rest = rest[loc[1]:]
	}
}

// TestExplain starts a plane (its default federated types enabled) and
// checks that `kubectl explain` describes cellfed's fields from the Go
// types' doc comments — the v1beta2 federated shape, its v1beta1 shape,
// Cells, TemplateRevisions and KubeFed's CRDs — and that `kubectl get`
// prints the federated types' columns (Cells' columns are in TestDemo's
// output: admission refuses a Cell without a member cluster).
func TestExplain(t *testing.T) {
	t.Parallel()
	plane := framework.StartPlane(t, framework.PlaneOptions{})
	k := framework.Kubectl{Kubeconfig: plane.Kubeconfig}
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"federateddeployments"}, []string{"FederatedObject is any federated type (FederatedDeployment, FederatedService, ...) in its multi-topology shape"}},
		{[]string{"federateddeployments.spec.placement"}, []string{"Placement selects the cells (or clusters) the template is written to", "topologyType", "topologySelector"}},
		{[]string{"federateddeployments.spec.placement.topologyType"}, []string{`"cell" (the default), Cells in the object's namespace; or "cluster"`}},
		{[]string{"federateddeployments.spec.placement.topologies"}, []string{"Topologies names the placed cells (or clusters)", "Rollout batches follow its order"}},
		{[]string{"federateddeployments.spec.placement.topologySelector"}, []string{"TopologySelector places on every Cell (or KubeFedCluster) whose labels it matches"}},
		{[]string{"federateddeployments.spec.placementMask"}, []string{"cellfed-controller acts only on placement ∩ mask", "HeldBack", "`cellfedctl rollout` moves it"}},
		{[]string{"federateddeployments.spec.overrides.clusterOverrides.path"}, []string{"Path is a JSON pointer into the template, e.g. /spec/replicas"}},
		{[]string{"federateddeployments.spec.retainReplicas"}, []string{"RetainReplicas keeps the member's spec.replicas"}},
		{[]string{"federateddeployments.spec.template"}, []string{"Template is the whole target object"}},
		{[]string{"federateddeployments.status.topologies"}, []string{"Topologies is the status in each placed cell (or cluster)", "remoteStatus"}},
		{[]string{"federateddeployments.status.topologies.status"}, []string{"Status is OK, HeldBack (outside the placement mask)"}},
		{[]string{"federateddeployments.status.released"}, []string{`Released is "n/m": of the m placed topologies, n are in the placement mask`}},
		{[]string{"federatedservices.spec.placementMask.topologies"}, []string{"Topologies are the placed cells (or clusters) the release reaches"}},
		{[]string{"federateddeployments.spec.placement.clusters", "--api-version=types.kubefed.io/v1beta1"}, []string{"Clusters names the placed KubeFedClusters (a cell as <namespace>.<cell>)"}},
		{[]string{"cells.spec"}, []string{"CellSpec says where the cell runs", "Cluster is the name of the physical KubeFedCluster that hosts this cell"}},
		{[]string{"cells.status.conditions"}, []string{"ClusterFound (the physical cluster exists) and Ready"}},
		{[]string{"templaterevisions.spec.revision"}, []string{"Revision orders the revisions of one object"}},
		{[]string{"kubefedclusters.spec.apiEndpoint"}, []string{"The API endpoint of the member cluster"}},
	} {
		out := flat(k.MustRun(t, "", append([]string{"explain"}, c.args...)...))
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("kubectl explain %s: no %q in\n%s", strings.Join(c.args, " "), w, out)
			}
		}
		// The template's body is the target's schema, undescribed (memory).
		if c.args[0] != "federateddeployments.spec.template" && strings.Contains(out, "<no description>") {
			t.Errorf("kubectl explain %s: a field without a description:\n%s", strings.Join(c.args, " "), out)
		}
	}

	// Columns at a glance (their values are the demo's, TestDemo).
	ctl := newCellfedctl(t, plane.Kubeconfig)
	ctl.ok(t, "tenant", "create", "shop", "--tenant=acme", "--workspace=prod")
	k.MustRun(t, `apiVersion: types.kubefed.io/v1beta2
kind: FederatedDeployment
metadata: {name: web, namespace: shop}
spec:
  placement: {topologies: []}
  template: {spec: {replicas: 1, selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: web, image: nginx}]}}}}
`, "apply", "-f", "-")
	for _, c := range []struct {
		args   []string
		header string
	}{
		{[]string{"get", "federateddeployments", "-n", "shop"}, "NAME TOPOLOGY RELEASED READY UPDATED PROPAGATION AGE"},
		{[]string{"get", "federateddeployments", "-n", "shop", "-o", "wide"}, "NAME TOPOLOGY RELEASED READY UPDATED PROPAGATION REASON AGE"},
		{[]string{"get", "federateddeployments.v1beta1.types.kubefed.io", "-n", "shop"}, "NAME RELEASED READY UPDATED PROPAGATION AGE"},
	} {
		out := k.MustRun(t, "", c.args...)
		if got := flat(strings.SplitN(out, "\n", 2)[0]); got != c.header {
			t.Errorf("kubectl %s: header %q, want %q\n%s", strings.Join(c.args, " "), got, c.header, out)
		}
		if strings.Contains(out, "[") {
			t.Errorf("kubectl %s prints a list:\n%s", strings.Join(c.args, " "), out)
		}
	}
}

// processesNaming lists "PID: command line" of every running process whose
// command line contains s, killing each (so a leak fails the test once
// and is not left behind for the next one).
func processesNaming(t *testing.T, s string) []string {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatalf("listing /proc: %v", err)
	}
	var left []string
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(b), s) {
			continue // gone already, or not ours
		}
		pid := filepath.Base(filepath.Dir(f))
		left = append(left, pid+": "+strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " "))
		if p, err := strconv.Atoi(pid); err == nil {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}
	return left
}
