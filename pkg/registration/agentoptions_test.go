package registration

import (
	"strings"
	"testing"
	"time"
)

func TestAgentOptionsValidate(t *testing.T) {
	valid := func() *AgentOptions {
		o := NewAgentOptions()
		o.ClusterName, o.PlaneKubeconfig, o.StateDir = "edge-1", "plane.kubeconfig", t.TempDir()
		return o
	}
	for _, tc := range []struct {
		name    string
		change  func(*AgentOptions)
		wantErr string
	}{
		{"valid", func(*AgentOptions) {}, ""},
		{"no cluster", func(o *AgentOptions) { o.ClusterName = "" }, "--cluster is required"},
		{"dotted cluster", func(o *AgentOptions) { o.ClusterName = "ns.cell" }, "is not a cluster name"},
		{"no plane kubeconfig", func(o *AgentOptions) { o.PlaneKubeconfig = "" }, "--plane-kubeconfig is required"},
		{"no state", func(o *AgentOptions) { o.StateDir = "" }, "pass --state-dir or --state-secret"},
		{"state secret", func(o *AgentOptions) { o.StateDir, o.StateSecret = "", "cellfed-agent/state" }, ""},
		{"both states", func(o *AgentOptions) { o.StateSecret = "cellfed-agent/state" }, "not both"},
		{"member service account", func(o *AgentOptions) { o.MemberServiceAccount = "cellfed-plane" }, ""},
		{"bad member service account", func(o *AgentOptions) { o.MemberServiceAccount = "Plane" }, "is not a ServiceAccount name"},
		{"bad token", func(o *AgentOptions) { o.BootstrapToken = "nope" }, "--bootstrap-token: a bootstrap token has the form"},
		{"token and file", func(o *AgentOptions) { o.BootstrapToken, o.BootstrapTokenFile = "abcdef.0123456789abcdef", "x" }, "not both"},
		{"missing token file: the stored certificate is used", func(o *AgentOptions) { o.BootstrapTokenFile = "/nonexistent/token" }, ""},
		{"unreadable token file", func(o *AgentOptions) { o.BootstrapTokenFile = t.TempDir() }, "reading --bootstrap-token-file"},
		{"short member token", func(o *AgentOptions) { o.MemberTokenTTL = time.Minute }, "--member-token-ttl=1m0s is too short"},
		{"renewal point", func(o *AgentOptions) { o.RenewAfter = 1 }, "between 0 and 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := valid()
			tc.change(o)
			err := o.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}
