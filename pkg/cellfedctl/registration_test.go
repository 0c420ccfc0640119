package cellfedctl

import (
	"strings"
	"testing"

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
