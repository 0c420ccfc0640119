package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Kubefedctl runs upstream KubeFed v0.10.0's CLI (bin/kubefedctl, built by
// `make kubefed` from hack/kubefed, unmodified) the way a KubeFed user
// does: against one kubeconfig holding a context for the host cluster (the
// plane) and one per member, named by --host-cluster-context and
// --cluster-context.
type Kubefedctl struct {
	Bin        string
	Kubeconfig string
}

// NewKubefedctl finds bin/kubefedctl (or $CELLFED_BIN_DIR/kubefedctl),
// failing the test with the command that builds it when it is missing.
func NewKubefedctl(t testing.TB, kubeconfig string) Kubefedctl {
	t.Helper()
	return Kubefedctl{Bin: kubeFedBinary(t, "kubefedctl"), Kubeconfig: kubeconfig}
}

// KubefedctlResult is what one kubefedctl run printed. kubefedctl reports
// progress and errors through klog on stderr; a failure is klog.Fatalf,
// exit code 255, with goroutine dumps after the "F…] Error: …" line.
type KubefedctlResult struct {
	Args     []string
	Stdout   string
	Stderr   string
	ExitCode int
}

// ErrorLine is the "Error: …" line of a failed run (stderr without the dumps).
func (r KubefedctlResult) ErrorLine() string {
	for _, line := range strings.Split(r.Stderr, "\n") {
		if i := strings.Index(line, "Error: "); i >= 0 && strings.HasPrefix(line, "F") {
			return line[i:]
		}
	}
	lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
	return strings.Join(lines[:min(len(lines), 5)], "\n")
}

func (r KubefedctlResult) String() string {
	return fmt.Sprintf("kubefedctl %s: exit %d: %s", strings.Join(r.Args, " "), r.ExitCode, r.ErrorLine())
}

// Run runs kubefedctl with --kubeconfig and args (2 minutes at most).
func (k Kubefedctl) Run(t testing.TB, args ...string) KubefedctlResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.Bin, append(slices.Clone(args), "--kubeconfig="+k.Kubeconfig)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	r := KubefedctlResult{Args: args}
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.ExitCode = exit.ExitCode()
	case err != nil:
		t.Fatalf("running kubefedctl %s: %v", strings.Join(args, " "), err)
	}
	r.Stdout, r.Stderr = stdout.String(), stderr.String()
	return r
}

// MustRun runs kubefedctl and fails the test unless it exits 0.
func (k Kubefedctl) MustRun(t testing.TB, args ...string) KubefedctlResult {
	t.Helper()
	r := k.Run(t, args...)
	if r.ExitCode != 0 {
		t.Fatal(r.String())
	}
	return r
}

// WriteKubeconfig writes one kubeconfig with a context (and cluster and
// user of the same name) for each named server, credentials embedded, the
// current context being current: what a KubeFed user merges before
// `kubefedctl join`.
func WriteKubeconfig(t testing.TB, current string, servers map[string]*Server) string {
	t.Helper()
	merged := clientcmdapi.NewConfig()
	for name, s := range servers {
		cfg, err := clientcmd.LoadFromFile(s.Kubeconfig)
		if err != nil {
			t.Fatalf("loading %s: %v", s.Kubeconfig, err)
		}
		if err := clientcmd.ResolveLocalPaths(cfg); err != nil {
			t.Fatal(err)
		}
		if err := clientcmdapi.FlattenConfig(cfg); err != nil {
			t.Fatalf("embedding the files of %s: %v", s.Kubeconfig, err)
		}
		ctx, ok := cfg.Contexts[cfg.CurrentContext]
		if !ok || cfg.Clusters[ctx.Cluster] == nil || cfg.AuthInfos[ctx.AuthInfo] == nil {
			t.Fatalf("%s has no complete current context", s.Kubeconfig)
		}
		merged.Clusters[name] = cfg.Clusters[ctx.Cluster]
		merged.AuthInfos[name] = cfg.AuthInfos[ctx.AuthInfo]
		merged.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	if _, ok := merged.Contexts[current]; !ok {
		t.Fatalf("current context %q is none of the servers", current)
	}
	merged.CurrentContext = current
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*merged, p); err != nil {
		t.Fatal(err)
	}
	return p
}
