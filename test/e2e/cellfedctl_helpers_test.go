// Running bin/cellfedctl in the e2e tests.

package e2e

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cellfed/cellfed/test/framework"
)

// cellfedctl runs bin/cellfedctl against a kubeconfig.
type cellfedctl struct {
	bin, kubeconfig string
}

// newCellfedctl is bin/cellfedctl against kubeconfig.
func newCellfedctl(t *testing.T, kubeconfig string) cellfedctl {
	t.Helper()
	return cellfedctl{bin: framework.Binary(t, "cellfedctl"), kubeconfig: kubeconfig}
}

// run returns stdout, stderr and the exit code.
func (c cellfedctl) run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, append([]string{"--kubeconfig=" + c.kubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return stdout.String(), stderr.String(), exit.ExitCode()
	case err != nil:
		t.Fatalf("running cellfedctl %s: %v", strings.Join(args, " "), err)
	}
	return stdout.String(), stderr.String(), 0
}

// ok runs a command that must succeed and returns its stdout.
func (c cellfedctl) ok(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := c.run(t, args...)
	if code != 0 {
		t.Fatalf("cellfedctl %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

// fails runs a command that must fail with one line
// `error: <what>; <how to fix>` containing want, and nothing on stdout.
func (c cellfedctl) fails(t *testing.T, want string, args ...string) string {
	t.Helper()
	out, errOut, code := c.run(t, args...)
	if code != 1 {
		t.Fatalf("cellfedctl %s: exit %d, want 1 (stdout %q, stderr %q)", strings.Join(args, " "), code, out, errOut)
	}
	line := strings.TrimSuffix(errOut, "\n")
	if strings.Contains(line, "\n") || !strings.HasPrefix(line, "error: ") || !strings.Contains(line, "; ") {
		t.Errorf("cellfedctl %s: stderr %q, want one line `error: <what>; <how to fix>`", strings.Join(args, " "), errOut)
	}
	if !strings.Contains(line, want) {
		t.Errorf("cellfedctl %s: stderr %q, want it to contain %q", strings.Join(args, " "), errOut, want)
	}
	if out != "" {
		t.Errorf("cellfedctl %s: stdout %q, want nothing", strings.Join(args, " "), out)
	}
	return line
}

// createCell creates a tenant namespace and a cell on cluster, waiting
// until admission sees the cluster.
func createCell(t *testing.T, ctl cellfedctl, kube kubernetes.Interface, ns, name, cluster string) {
	t.Helper()
	_, err := kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{"cellfed.io/tenant": "acme", "cellfed.io/workspace": "prod"}}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	err = framework.Poll(context.Background(), 100*time.Millisecond, 30*time.Second, func(context.Context) (bool, error) {
		_, stderr, code := ctl.run(t, "cell", "create", name, "--cluster="+cluster, "-n", ns)
		if code != 0 {
			return false, errors.New(stderr)
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("cell create %s/%s: %v", ns, name, err)
	}
}
