package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoKubernetesDependency keeps the agent small: nothing from
// k8s.io/kubernetes may enter its dependency graph.
func TestNoKubernetesDependency(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) < 10 {
		t.Fatalf("go list -deps listed only %d packages: %s", len(pkgs), out)
	}
	var bad []string
	for _, p := range pkgs {
		if p == "k8s.io/kubernetes" || strings.HasPrefix(p, "k8s.io/kubernetes/") {
			bad = append(bad, p)
		}
	}
	if len(bad) > 0 {
		t.Errorf("cellfed-agent depends on k8s.io/kubernetes: %s", strings.Join(bad, ", "))
	}
	for _, want := range []string{"sigs.k8s.io/apiserver-network-proxy/pkg/agent", "k8s.io/client-go/rest"} {
		if !strings.Contains(string(out), want+"\n") {
			t.Errorf("the dependency list lacks %s: the check looks at the wrong thing", want)
		}
	}
}
