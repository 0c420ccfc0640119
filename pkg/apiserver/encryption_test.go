package apiserver

import (
	"strings"
	"testing"
	"time"

	"github.com/cellfed/cellfed/pkg/pki"
)

func TestEncryptionOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*EncryptionOptions)
		want string
	}{
		{"defaults", func(*EncryptionOptions) {}, ""},
		{"external plugin", func(o *EncryptionOptions) { o.Endpoint = "unix:///run/kms.sock" }, ""},
		{"off", func(o *EncryptionOptions) { o.Resources = []string{""} }, ""},
		{"key file and endpoint", func(o *EncryptionOptions) { o.Endpoint, o.KeyFile = "unix:///run/kms.sock", "/k" }, "exclude each other"},
		{"tcp endpoint", func(o *EncryptionOptions) { o.Endpoint = "tcp://10.0.0.1:80" }, "must be unix:///"},
		{"bad resource", func(o *EncryptionOptions) { o.Resources = []string{"Secrets"} }, "is not a resource name"},
		{"zero timeout", func(o *EncryptionOptions) { o.Timeout = 0 }, "--kms-timeout must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewEncryptionOptions()
			tc.edit(o)
			errs := o.Validate()
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Fatalf("unexpected errors: %v", errs)
			case tc.want != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want)):
				t.Fatalf("errors %v, want one containing %q", errs, tc.want)
			}
		})
	}
}

func TestEtcdPrefix(t *testing.T) {
	for in, want := range map[string]string{
		"secrets":             "/registry/secrets/",
		"configmaps":          "/registry/configmaps/",
		"widgets.example.com": "/registry/example.com/widgets/",
	} {
		if got := etcdPrefix(in); got != want {
			t.Errorf("etcdPrefix(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEncryptionEnabled(t *testing.T) {
	o := &EncryptionOptions{Resources: []string{""}, Timeout: time.Second}
	if o.enabled() {
		t.Error(`--encrypted-resources="" must turn encryption off`)
	}
	o.Resources = []string{"secrets"}
	if !o.enabled() {
		t.Error("secrets must be encrypted")
	}
}

func TestCompareIdentity(t *testing.T) {
	base := planeIdentity{CA: "sha256:a", ServiceAccountKey: "sha256:b", AgentCA: "sha256:c"}
	f := pki.Files{Dir: "/data/pki"}
	for _, tc := range []struct {
		name  string
		local planeIdentity
		want  string
	}{
		{"same", base, ""},
		{"other CA", planeIdentity{CA: "sha256:x", ServiceAccountKey: "sha256:b", AgentCA: "sha256:c"}, "this plane's CA (/data/pki/ca.crt, sha256:x) differs from the CA of the plane(s) already using this database (sha256:a)"},
		{"other service-account key", planeIdentity{CA: "sha256:a", ServiceAccountKey: "sha256:x", AgentCA: "sha256:c"}, "service-account key"},
		{"other agent CA", planeIdentity{CA: "sha256:a", ServiceAccountKey: "sha256:b", AgentCA: "sha256:x"}, "agent CA"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := compareIdentity(base, tc.local, f)
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--shared-pki-dir")):
				t.Fatalf("error %v, want one containing %q and the fix", err, tc.want)
			}
		})
	}
}
