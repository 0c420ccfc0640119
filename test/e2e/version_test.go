package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cellfed/cellfed/test/framework"
)

// TestPlainGoBuildVersion builds cellfed-apiserver with plain `go build`
// (no Makefile -ldflags; stamped with the VCS state as `go build` in a
// checkout is by default) and runs `kubectl version` against it: the
// server's version must parse, and be the Kubernetes line with cellfed's
// metadata and the commit Go stamped. Packages come from the build cache,
// so this mostly links.
func TestPlainGoBuildVersion(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go on PATH to build with: %v", err)
	}
	root := framework.RepoRoot(t)
	bin := filepath.Join(t.TempDir(), "cellfed-apiserver")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, goBin, "build", "-buildvcs=true", "-o", bin, "./cmd/cellfed-apiserver")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/cellfed-apiserver: %v\n%s", err, out)
	}
	// What Go stamped (vcs.revision, vcs.modified) is what the binary
	// must report.
	out, err := exec.CommandContext(ctx, goBin, "version", "-m", bin).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	stamp := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\s*build\s+(vcs\.\w+)=(\S*)$`).FindAllStringSubmatch(string(out), -1) {
		stamp[m[1]] = m[2]
	}
	rev := stamp["vcs.revision"]
	if len(rev) != 40 {
		t.Fatalf("go build -buildvcs=true stamped no revision:\n%s", out)
	}
	if typ, err := exec.CommandContext(ctx, "git", "-C", root, "cat-file", "-t", rev).Output(); err != nil || strings.TrimSpace(string(typ)) != "commit" {
		t.Fatalf("stamped revision %s is not a commit of %s: %v", rev, root, err)
	}
	tree := map[string]string{"true": "dirty", "false": "clean"}[stamp["vcs.modified"]]

	// --version, before any server starts.
	if v, err := exec.CommandContext(ctx, bin, "--version").Output(); err != nil || strings.TrimSpace(string(v)) != "Kubernetes v1.36.4+cellfed."+rev[:12] {
		t.Errorf("cellfed-apiserver --version printed %q (%v), want Kubernetes v1.36.4+cellfed.%s", v, err, rev[:12])
	}

	dir := t.TempDir()
	port := framework.FreePort(t)
	p := framework.StartProcess(t, "plain cellfed-apiserver", filepath.Join(dir, "apiserver.log"), bin,
		framework.PlaneArgs(dir, port, framework.PlaneOptions{Args: []string{"--default-federated-types="}})...)
	plane := &framework.Server{Process: p, DataDir: dir, Port: port, Kubeconfig: filepath.Join(dir, "admin.kubeconfig")}
	if err := plane.WaitReady(ctx); err != nil {
		t.Fatalf("the plain build did not become ready: %v", err)
	}
	k := framework.Kubectl{Kubeconfig: plane.Kubeconfig}
	stdout, err := k.Run(ctx, "", "version", "-o", "json")
	if err != nil {
		t.Fatalf("kubectl version against the plain build: %v", err)
	}
	var v struct {
		ServerVersion struct {
			Major, Minor, GitVersion, GitCommit, GitTreeState, BuildDate string
		} `json:"serverVersion"`
	}
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatalf("kubectl version -o json: %v\n%s", err, stdout)
	}
	s := v.ServerVersion
	if s.GitVersion != "v1.36.4+cellfed."+rev[:12] || s.Major != "1" || s.Minor != "36" || s.GitCommit != rev || s.GitTreeState != tree || s.BuildDate != stamp["vcs.time"] {
		t.Errorf("server version %+v, want v1.36.4+cellfed.%s, 1.36, commit %s (%s) built %s", s, rev[:12], rev, tree, stamp["vcs.time"])
	}
}
