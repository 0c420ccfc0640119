package cellfedctl

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

func TestCheckDecision(t *testing.T) {
	const (
		pending    = cellv1alpha1.RegistrationPending
		registered = cellv1alpha1.RegistrationRegistered
		failed     = cellv1alpha1.RegistrationFailed
		denied     = cellv1alpha1.RegistrationDenied
		revoked    = cellv1alpha1.RegistrationRevoked
	)
	cases := []struct {
		verb     string
		phase    cellv1alpha1.RegistrationPhase
		wantDone bool
		wantErr  string
	}{
		{"approve", pending, false, ""},
		{"approve", registered, true, ""},
		{"approve", failed, true, ""},
		{"approve", denied, false, "is Denied, which is final; the agent must register again"},
		{"approve", revoked, false, "is Revoked, which is final"},
		{"deny", pending, false, ""},
		{"deny", denied, true, ""},
		{"deny", registered, false, "use `cellfedctl registration revoke edge`"},
		{"revoke", registered, false, ""},
		{"revoke", failed, false, ""},
		{"revoke", revoked, true, ""},
		{"revoke", pending, false, "is still Pending; use `cellfedctl registration deny edge`"},
		{"revoke", denied, false, "which is final"},
	}
	for _, tc := range cases {
		t.Run(tc.verb+" "+string(tc.phase), func(t *testing.T) {
			done, err := checkDecision(tc.verb, "edge", tc.phase, "cellfedctl")
			if done != tc.wantDone {
				t.Errorf("done = %v, want %v", done, tc.wantDone)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

// TestAutoApproveTenantName: a RegistrationPolicy is named after its
// tenant, and object names are DNS subdomains, so a tenant whose name is
// a label value but no DNS subdomain (upper case, '_') cannot have one:
// auto-approve refuses it before reaching the plane, and its registrations
// are approved by an administrator.
func TestAutoApproveTenantName(t *testing.T) {
	// A kubeconfig that does not exist: a tenant the name check passes
	// fails at loading it, before any request.
	kubeconfig := filepath.Join(t.TempDir(), "missing.kubeconfig")
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kubeconfig
	for _, tc := range []struct {
		name, tenant string
		wantErr      string
	}{
		{"a DNS subdomain reaches the plane", "acme", "loading kubeconfig"},
		{"a DNS subdomain with dots reaches the plane", "acme.eu", "loading kubeconfig"},
		{"upper case is refused", "Acme", `tenant "Acme" cannot have a RegistrationPolicy, which is named after the tenant`},
		{"an underscore is refused", "acme_eu", `tenant "acme_eu" cannot have a RegistrationPolicy, which is named after the tenant`},
		{"the refusal says who approves", "ACME", "approve its registrations with `cellfedctl registration approve`"},
		{"not a tenant name at all", "a b", `"a b" is not a tenant name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &autoApproveOptions{options: &options{name: "cellfedctl", config: flags}}
			err := a.run(context.Background(), tc.tenant)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("auto-approve %s: error %v, want one containing %q", tc.tenant, err, tc.wantErr)
			}
		})
	}
}
