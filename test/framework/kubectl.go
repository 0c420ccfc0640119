package framework

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// kubectlPath is $CELLFED_KUBECTL, else kubectl on PATH, else the
// bin/kubectl that `make kubectl` builds when the machine has none.
var kubectlPath = sync.OnceValue(func() string {
	if p := os.Getenv("CELLFED_KUBECTL"); p != "" {
		return p
	}
	if p, err := exec.LookPath("kubectl"); err == nil {
		return p
	}
	if root, err := findRepoRoot(); err == nil {
		if p := filepath.Join(root, "bin", "kubectl"); isFile(p) {
			return p
		}
	}
	return "kubectl" // fails with a clear "not found"
})

// KubectlBinary is the kubectl the framework runs, for tests that run it
// themselves (as a kubectl plugin host, say); without one it fails the
// test with the command that builds bin/kubectl.
func KubectlBinary(t testing.TB) string {
	t.Helper()
	if p := kubectlPath(); p != "kubectl" {
		return p
	}
	return Binary(t, "kubectl")
}

func isFile(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Kubectl runs the real kubectl binary against a kubeconfig.
type Kubectl struct {
	Kubeconfig string
	// Env is added to the test's environment (KEY=value).
	Env []string
}

// Run runs kubectl with args and stdin, returning stdout, and stderr in the error.
func (k Kubectl) Run(ctx context.Context, stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlPath(), append([]string{"--kubeconfig=" + k.Kubeconfig}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	if len(k.Env) > 0 {
		cmd.Env = append(os.Environ(), k.Env...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// MustRun is Run that fails the test on error.
func (k Kubectl) MustRun(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, err := k.Run(context.Background(), stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// WaitEstablished polls until the CRD's Established condition is True.
// `kubectl wait --for=condition=Established` is not used: it fails at once
// when it reads the CRD before the plane has written any condition
// (status.conditions still null), which happens under load.
func (k Kubectl) WaitEstablished(t testing.TB, crd string) {
	t.Helper()
	err := Poll(context.Background(), 200*time.Millisecond, 60*time.Second, func(ctx context.Context) (bool, error) {
		out, err := k.Run(ctx, "", "get", "crd", crd, "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
		if err != nil {
			return false, err
		}
		if got := strings.TrimSpace(out); got != "True" {
			return false, fmt.Errorf("last read: Established %q", got)
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("CRD %s not Established: %v", crd, err)
	}
}
