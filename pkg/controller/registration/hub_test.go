package registration

import (
	"crypto/x509"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/pki"
	"github.com/cellfed/cellfed/pkg/registration"
)

func TestCurrentCertificate(t *testing.T) {
	f := pki.Files{Dir: t.TempDir()}
	if _, _, err := pki.EnsureAgentCA(f); err != nil {
		t.Fatal(err)
	}
	sign := func() ([]byte, *x509.Certificate) {
		t.Helper()
		_, csr, err := pki.NewAgentKeyAndCSR("edge-1")
		if err != nil {
			t.Fatal(err)
		}
		certPEM, err := pki.SignAgentCSR(f, csr, "edge-1", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		c, err := pki.ParseCertificatePEM(certPEM)
		if err != nil {
			t.Fatal(err)
		}
		return certPEM, c
	}
	oldPEM, oldCert := sign()
	newPEM, newCert := sign()
	_, handCert := sign()
	reg := func(statusPEM []byte, ack *x509.Certificate) *cellv1alpha1.ClusterRegistration {
		r := &cellv1alpha1.ClusterRegistration{ObjectMeta: metav1.ObjectMeta{Name: "edge-1"}}
		r.Status.Certificate = statusPEM
		if ack != nil {
			r.Annotations = map[string]string{registration.AnnotationAgentCertificate: ack.SerialNumber.Text(16)}
		}
		return r
	}
	tests := []struct {
		name string
		reg  *cellv1alpha1.ClusterRegistration
		cert *x509.Certificate
		want string // "" = admitted
	}{
		{"the only certificate", reg(oldPEM, oldCert), oldCert, ""},
		{"renewed, not acknowledged yet: the new one", reg(newPEM, oldCert), newCert, ""},
		{"renewed, not acknowledged yet: the old one", reg(newPEM, oldCert), oldCert, ""},
		{"renewed and acknowledged: the old one", reg(newPEM, newCert), oldCert, "is not the registration's current one (superseded by a renewal, or issued by hand)"},
		{"no acknowledgement: the old one", reg(newPEM, nil), oldCert, "superseded by a renewal"},
		{"issued by hand for a registered cluster", reg(newPEM, newCert), handCert, "is not the registration's current one"},
		{"no certificate", reg(newPEM, newCert), nil, "no agent certificate"},
		{"a broken status certificate", reg([]byte("junk"), nil), newCert, "holds no valid certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CurrentCertificate(tt.reg, tt.cert)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want an error with %q", err, tt.want)
			}
		})
	}
}
