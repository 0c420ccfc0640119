package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
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
// metadata: the release in VERSION and the commit Go stamped. Packages come from the build cache,
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
	want := "v1.36.4+cellfed." + release(t) + "." + rev[:12]

	// --version, before any server starts.
	if v, err := exec.CommandContext(ctx, bin, "--version").Output(); err != nil || strings.TrimSpace(string(v)) != "Kubernetes "+want {
		t.Errorf("cellfed-apiserver --version printed %q (%v), want Kubernetes %s", v, err, want)
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
	if s.GitVersion != want || s.Major != "1" || s.Minor != "36" || s.GitCommit != rev || s.GitTreeState != tree || s.BuildDate != stamp["vcs.time"] {
		t.Errorf("server version %+v, want %s, 1.36, commit %s (%s) built %s", s, want, rev, tree, stamp["vcs.time"])
	}
}

// release is the VERSION file: the release every binary reports.
func release(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(framework.RepoRoot(t), "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// TestControllerRefusesANewerRelease builds cellfed-controller as the
// next release line would be built (the Makefile's -ldflags with the
// release after VERSION's; the code is this tree's) and starts it against
// a plane of this release: the skew policy has controllers upgraded after
// the plane, so it must refuse at start, saying what to upgrade, and
// exit. bin/cellfed-controller, of the plane's own release, starts in
// every other e2e test. Packages come from the build cache: this links.
func TestControllerRefusesANewerRelease(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go on PATH to build with: %v", err)
	}
	var major, minor int
	if _, err := fmt.Sscanf(release(t), "v%d.%d.", &major, &minor); err != nil {
		t.Fatalf("VERSION %q: %v", release(t), err)
	}
	next := fmt.Sprintf("v%d.%d.0", major, minor+1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "cellfed-controller")
	build := exec.CommandContext(ctx, goBin, "build", "-o", bin,
		"-ldflags", "-X k8s.io/component-base/version.gitVersion=v1.36.4+cellfed."+next+".e2e -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36",
		"./cmd/cellfed-controller")
	build.Dir = framework.RepoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/cellfed-controller: %v\n%s", err, out)
	}
	if v, err := exec.CommandContext(ctx, bin, "--version").Output(); err != nil || !strings.Contains(string(v), "+cellfed."+next+".") {
		t.Fatalf("the built controller's --version printed %q (%v), want release %s", v, err, next)
	}

	plane := framework.StartPlane(t, framework.PlaneOptions{Args: []string{"--default-federated-types="}})
	run, stop := context.WithTimeout(ctx, 3*time.Minute)
	defer stop()
	out, err := exec.CommandContext(run, bin, "--kubeconfig="+plane.Kubeconfig, "--health-address=127.0.0.1:0").CombinedOutput()
	if run.Err() != nil {
		t.Fatalf("cellfed-controller %s against a plane of %s still ran after 3 minutes; want a refusal at start:\n%s", next, release(t), out)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("cellfed-controller %s against a plane of %s: %v, want a non-zero exit:\n%s", next, release(t), err, out)
	}
	for _, want := range []string{
		"cellfed-controller " + next + " cannot work with the plane at https://",
		"the plane runs cellfed " + release(t) + ", older than cellfed-controller " + next + " supports",
		"upgrade the plane first",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the refusal does not say %q:\n%s", want, out)
		}
	}
}

// TestBinariesReportTheRelease runs every binary `make build` leaves in
// bin/ with --version (cellfedctl: version --client): each must report
// the release in VERSION.
func TestBinariesReportTheRelease(t *testing.T) {
	t.Parallel()
	want := "+cellfed." + release(t) + "."
	for _, c := range []struct {
		binary string
		args   []string
	}{
		{"cellfed-apiserver", []string{"--version"}},
		{"cellfed-controller", []string{"--version"}},
		{"cellfed-agent", []string{"--version"}},
		{"cellfed-proxy", []string{"--version"}},
		{"cellfed-kms", []string{"--version"}},
		{"cellfed-webhook", []string{"--version"}},
		{"cellfedctl", []string{"version", "--client"}},
	} {
		out, err := exec.Command(framework.Binary(t, c.binary), c.args...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("%s %s printed %q (%v), want a version with %s", c.binary, strings.Join(c.args, " "), out, err, want)
		}
	}
}
