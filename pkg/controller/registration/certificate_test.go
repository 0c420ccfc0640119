package registration

import (
	"testing"
	"time"

	"github.com/cellfed/cellfed/pkg/pki"
)

func TestNeedsCertificate(t *testing.T) {
	files := pki.Files{Dir: t.TempDir()}
	if _, _, err := pki.EnsureAgentCA(files); err != nil {
		t.Fatal(err)
	}
	_, csr1, err := pki.NewAgentKeyAndCSR("edge-1")
	if err != nil {
		t.Fatal(err)
	}
	_, csr2, err := pki.NewAgentKeyAndCSR("edge-1")
	if err != nil {
		t.Fatal(err)
	}
	cert1, err := pki.SignAgentCSR(files, csr1, "edge-1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		csr, cert []byte
		want      bool
		wantErr   bool
	}{
		{"no certificate yet", csr1, nil, true, false},
		{"certificate for this request", csr1, cert1, false, false},
		{"renewal: a new key", csr2, cert1, true, false},
		{"unreadable certificate is replaced", csr1, []byte("junk"), true, false},
		{"unreadable request", []byte("junk"), cert1, false, true},
	} {
		got, err := needsCertificate(tc.csr, tc.cert)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%s: needsCertificate = %v, %v; want %v (error %v)", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}
