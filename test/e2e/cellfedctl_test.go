package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cellfed/cellfed/test/framework"
)

// federationState lists what enable, disable and cell commands write, to
// check that a failing command wrote nothing.
func federationState(t *testing.T, k framework.Kubectl) string {
	t.Helper()
	return k.MustRun(t, "", "get", "crd,federatedtypeconfigs,kubefedclusters,cells", "-A", "-o", "name")
}

func ctlFederatedWidget(name string, size any) string {
	return fmt.Sprintf(`apiVersion: types.kubefed.io/v1beta2
kind: FederatedWidget
metadata: {name: %s, namespace: gadgets}
spec:
  template:
    metadata: {labels: {app: gadget}}
    spec: {size: %v, color: red}
`, name, size)
}

// TestCellfedctl drives bin/cellfedctl (and bin/kubectl-cellfed as the
// kubectl plugin) against a real plane started without default federated
// types, and a real member kube-apiserver that has a CRD.
func TestCellfedctl(t *testing.T) {
	t.Parallel()
	plane, members := framework.StartPlaneWithMembers(t, framework.PlaneOptions{Args: []string{"--default-federated-types="}}, 1)
	member := members[0]
	k := framework.Kubectl{Kubeconfig: plane.Kubeconfig}
	ctl := newCellfedctl(t, plane.Kubeconfig)
	mk := framework.Kubectl{Kubeconfig: member.Kubeconfig}

	t.Run("version", func(t *testing.T) {
		out := ctl.ok(t, "version")
		if !strings.Contains(out, "Client Version: v1.36.4+cellfed.") || !strings.Contains(out, "Server Version: v1.36.4+cellfed.") {
			t.Errorf("version printed %q, want client and server v1.36.4+cellfed.<release>.<commit>", out)
		}
	})

	t.Run("enable a built-in type", func(t *testing.T) {
		if out := k.MustRun(t, "", "get", "federatedtypeconfigs", "-A", "-o", "name"); out != "" {
			t.Fatalf("the plane started with --default-federated-types= has federated types: %s", out)
		}
		want := "enabled deployments.apps: FederatedTypeConfig kube-federation-system/deployments.apps, CRD federateddeployments.types.kubefed.io (v1beta1, v1beta2)"
		if out := ctl.ok(t, "enable", "deployments.apps"); strings.TrimSpace(out) != want {
			t.Errorf("enable printed %q, want %q", out, want)
		}
		got := k.MustRun(t, "", "get", "crd", "federateddeployments.types.kubefed.io", "-o", "jsonpath={.spec.versions[*].name} {.status.conditions[?(@.type==\"Established\")].status}")
		if got != "v1beta1 v1beta2 True" {
			t.Errorf("CRD versions and Established = %q, want \"v1beta1 v1beta2 True\"", got)
		}
		got = k.MustRun(t, "", "-n", "kube-federation-system", "get", "federatedtypeconfigs", "deployments.apps", "-o",
			"jsonpath={.spec.targetType.group}/{.spec.targetType.version}/{.spec.targetType.kind} {.spec.federatedType.kind} {.spec.propagation}")
		if got != "apps/v1/Deployment FederatedDeployment Enabled" {
			t.Errorf("FederatedTypeConfig = %q", got)
		}
		// Again: nothing to change.
		before := federationState(t, k)
		if out := ctl.ok(t, "enable", "deployments.apps"); strings.TrimSpace(out) != want+" (unchanged)" {
			t.Errorf("second enable printed %q, want %q", out, want+" (unchanged)")
		}
		if after := federationState(t, k); after != before {
			t.Errorf("second enable changed the objects:\n%s\nthen\n%s", before, after)
		}
	})

	t.Run("bad input writes nothing", func(t *testing.T) {
		before := federationState(t, k)
		ctl.fails(t, `"deployment" is not a built-in Kubernetes type (did you mean "deployments.apps"?); for a CRD use --from-cluster=<member kubeconfig>`, "enable", "deployment")
		ctl.fails(t, "unknown flag: --bogus", "enable", "services", "--bogus")
		ctl.fails(t, "--force only applies to --delete-crd", "disable", "deployments.apps", "--force")
		ctl.fails(t, `type "services" is not enabled`, "disable", "services")
		ctl.fails(t, "has no CRD gadgets.example.com", "enable", "gadgets.example.com", "--from-cluster="+member.Kubeconfig)
		if after := federationState(t, k); after != before {
			t.Errorf("failed commands changed the plane:\n%s\nthen\n%s", before, after)
		}
		// The member is no plane: nothing is written to it either.
		memberBefore := mk.MustRun(t, "", "get", "crd", "-o", "name")
		ctl.fails(t, "has no ConfigMap kube-federation-system/cellfed-webhook: it is not a cellfed-apiserver, or not ready yet",
			"--kubeconfig="+member.Kubeconfig, "enable", "deployments.apps")
		if after := mk.MustRun(t, "", "get", "crd", "-o", "name"); after != memberBefore {
			t.Errorf("enable against a member changed its CRDs:\n%s\nthen\n%s", memberBefore, after)
		}
	})

	t.Run("enable a CRD from a member cluster", func(t *testing.T) {
		mk.MustRun(t, ctlMemberCRD, "apply", "-f", "-")
		mk.WaitEstablished(t, "widgets.example.com")
		want := "enabled widgets.example.com: FederatedTypeConfig kube-federation-system/widgets.example.com, CRD federatedwidgets.types.kubefed.io (v1beta1, v1beta2)"
		if out := ctl.ok(t, "enable", "widgets.example.com", "--from-cluster="+member.Kubeconfig); strings.TrimSpace(out) != want {
			t.Errorf("enable printed %q, want %q", out, want)
		}
		got := k.MustRun(t, "", "-n", "kube-federation-system", "get", "federatedtypeconfigs", "widgets.example.com", "-o",
			"jsonpath={.spec.targetType.group}/{.spec.targetType.version}/{.spec.targetType.kind} {.spec.targetType.scope} {.spec.federatedType.kind}")
		if got != "example.com/v1/Widget Namespaced FederatedWidget" {
			t.Errorf("FederatedTypeConfig = %q", got)
		}

		k.MustRun(t, "", "create", "namespace", "gadgets")
		k.MustRun(t, ctlFederatedWidget("w1", 3), "apply", "-f", "-")
		got = k.MustRun(t, "", "-n", "gadgets", "get", "federatedwidgets.v1beta2.types.kubefed.io", "w1", "-o",
			"jsonpath={.spec.template.spec.size} {.spec.template.spec.color} {.spec.template.metadata.labels.app}")
		if got != "3 red gadget" {
			t.Errorf("FederatedWidget w1 read back (v1beta2) = %q, want \"3 red gadget\"", got)
		}
		got = k.MustRun(t, "", "-n", "gadgets", "get", "federatedwidgets.v1beta1.types.kubefed.io", "w1", "-o", "jsonpath={.spec.template.spec.size}")
		if got != "3" {
			t.Errorf("FederatedWidget w1 read back (v1beta1) = %q, want 3", got)
		}
		// The template is validated with the member CRD's schema.
		for _, size := range []any{`"big"`, 0} {
			if _, err := k.Run(context.Background(), ctlFederatedWidget("w2", size), "apply", "-f", "-"); err == nil || !strings.Contains(err.Error(), "spec.template.spec.size") {
				t.Errorf("FederatedWidget with size %v: err = %v, want the template's schema to reject spec.template.spec.size", size, err)
			}
		}
	})

	t.Run("disable refuses to delete a CRD with objects unless forced", func(t *testing.T) {
		before := federationState(t, k)
		ctl.fails(t, "refusing to delete CRD federatedwidgets.types.kubefed.io: federated objects of this type exist (e.g. gadgets/w1)",
			"disable", "widgets.example.com", "--delete-crd")
		if after := federationState(t, k); after != before {
			t.Errorf("refused disable changed the plane:\n%s\nthen\n%s", before, after)
		}
		want := "disabled widgets.example.com: deleted FederatedTypeConfig kube-federation-system/widgets.example.com, deleted CRD federatedwidgets.types.kubefed.io"
		if out := ctl.ok(t, "disable", "widgets.example.com", "--delete-crd", "--force"); strings.TrimSpace(out) != want {
			t.Errorf("disable printed %q, want %q", out, want)
		}
		// disable waited for the CRD to go.
		state := federationState(t, k)
		for _, gone := range []string{"federatedwidgets.types.kubefed.io", "widgets.example.com"} {
			if strings.Contains(state, gone) {
				t.Errorf("%s still exists after disable --delete-crd --force:\n%s", gone, state)
			}
		}
		if !strings.Contains(state, "federateddeployments.types.kubefed.io") {
			t.Errorf("disabling widgets removed deployments:\n%s", state)
		}
	})

	t.Run("cells", func(t *testing.T) {
		k.MustRun(t, "", "create", "namespace", "team")
		before := federationState(t, k)
		// The plane's admission message, relayed as it is.
		line := ctl.fails(t, "cells live in tenant workspaces",
			"cell", "create", "rz00a", "--cluster=member1", "-l", "zone=z1", "-n", "team")
		if !strings.HasPrefix(line, "error: creating cell team/rz00a: ") || !strings.Contains(line, "cellfed.io/tenant") {
			t.Errorf("error line %q does not say what was being done and how to label the namespace", line)
		}
		if after := federationState(t, k); after != before {
			t.Errorf("refused cell create changed the plane:\n%s\nthen\n%s", before, after)
		}

		k.MustRun(t, "", "label", "namespace", "team", "cellfed.io/tenant=t", "cellfed.io/workspace=w")
		k.MustRun(t, fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: member1-token, namespace: kube-federation-system}
stringData: {token: not-a-real-token}
---
apiVersion: core.kubefed.io/v1beta1
kind: KubeFedCluster
metadata: {name: member1, namespace: kube-federation-system}
spec: {apiEndpoint: "https://127.0.0.1:%d", secretRef: {name: member1-token}}
`, member.Port), "apply", "-f", "-")
		// Admission reads namespaces and clusters from its caches, which
		// see the label and the cluster a moment later.
		var out string
		err := framework.Poll(context.Background(), 100*time.Millisecond, 30*time.Second, func(context.Context) (bool, error) {
			stdout, stderr, code := ctl.run(t, "cell", "create", "rz00a", "--cluster=member1", "-l", "zone=z1", "-n", "team")
			out = stdout
			if code != 0 {
				return false, errors.New(stderr)
			}
			return true, nil
		})
		if err != nil {
			t.Fatalf("cell create in a tenant workspace: %v", err)
		}
		if want := "cell team/rz00a created on cluster member1 (KubeFedCluster team.rz00a)"; strings.TrimSpace(out) != want {
			t.Errorf("cell create printed %q, want %q", out, want)
		}
		if got := k.MustRun(t, "", "-n", "team", "get", "cell", "rz00a", "-o", "jsonpath={.spec.cluster} {.metadata.labels.zone} {.metadata.labels.cellfed\\.io/tenant}"); got != "member1 z1 t" {
			t.Errorf("cell rz00a = %q, want \"member1 z1 t\"", got)
		}
		ctl.fails(t, "it exists already", "cell", "create", "rz00a", "--cluster=member1", "-n", "team")

		list := ctl.ok(t, "cell", "list", "-n", "team")
		wantRow := []string{"rz00a", "member1", "team.rz00a", "zone=z1"}
		checkCellTable(t, "cell list -n team", list, []string{"NAME", "CLUSTER", "KUBEFEDCLUSTER", "LABELS", "AGE"}, wantRow)
		checkCellTable(t, "cell list -A", ctl.ok(t, "cell", "list", "-A"),
			[]string{"NAMESPACE", "NAME", "CLUSTER", "KUBEFEDCLUSTER", "LABELS", "AGE"}, append([]string{"team"}, wantRow...))

		// The kubectl plugin: bin/kubectl-cellfed found on PATH.
		binDir := filepath.Dir(framework.Binary(t, "kubectl-cellfed"))
		plugin := func(args ...string) string {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, framework.KubectlBinary(t), append([]string{"cellfed"}, args...)...)
			cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+plane.Kubeconfig)
			out, err := cmd.Output()
			if err != nil {
				var exit *exec.ExitError
				if errors.As(err, &exit) {
					t.Fatalf("kubectl cellfed %s: %v: %s", strings.Join(args, " "), err, exit.Stderr)
				}
				t.Fatalf("kubectl cellfed %s: %v", strings.Join(args, " "), err)
			}
			return string(out)
		}
		checkCellTable(t, "kubectl cellfed cell list -n team", plugin("cell", "list", "-n", "team"),
			[]string{"NAME", "CLUSTER", "KUBEFEDCLUSTER", "LABELS", "AGE"}, wantRow)
		if help := plugin("cell", "--help"); !strings.Contains(help, "kubectl cellfed cell [command]") || strings.Contains(help, "cellfedctl") {
			t.Errorf("kubectl cellfed cell --help does not name itself kubectl cellfed:\n%s", help)
		}

		if out := ctl.ok(t, "cell", "delete", "rz00a", "-n", "team"); strings.TrimSpace(out) != "cell team/rz00a deleted" {
			t.Errorf("cell delete printed %q", out)
		}
		err = framework.Poll(context.Background(), 100*time.Millisecond, 30*time.Second, func(ctx context.Context) (bool, error) {
			out, err := k.Run(ctx, "", "-n", "team", "get", "cells", "-o", "name")
			return err == nil && out == "", err
		})
		if err != nil {
			t.Errorf("cell rz00a is still listed after cell delete: %v", err)
		}
		ctl.fails(t, "cell team/rz00a not found", "cell", "delete", "rz00a", "-n", "team")
		if _, errOut, code := ctl.run(t, "cell", "list", "-n", "team"); code != 0 || strings.TrimSpace(errOut) != "No cells found in namespace team." {
			t.Errorf("cell list of an empty namespace: exit %d, stderr %q", code, errOut)
		}
	})
}

// checkCellTable checks a cell table with one row: its header, and its
// columns but the last (AGE).
func checkCellTable(t *testing.T, what, table string, header, row []string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 2 {
		t.Errorf("%s printed %d lines, want a header and one row:\n%s", what, len(lines), table)
		return
	}
	if got := strings.Fields(lines[0]); strings.Join(got, " ") != strings.Join(header, " ") {
		t.Errorf("%s header = %q, want %q", what, got, header)
	}
	got := strings.Fields(lines[1])
	if len(got) != len(row)+1 || strings.Join(got[:len(row)], " ") != strings.Join(row, " ") {
		t.Errorf("%s row = %q, want %q followed by the age", what, got, row)
	}
}
