package framework

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Kubectl runs the real kubectl binary against a kubeconfig.
type Kubectl struct {
	Kubeconfig string
}

// Run runs kubectl with args and stdin, returning stdout, and stderr in the error.
func (k Kubectl) Run(ctx context.Context, stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig=" + k.Kubeconfig}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
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
