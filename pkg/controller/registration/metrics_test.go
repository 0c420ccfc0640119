package registration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-base/metrics/testutil"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/pki"
)

func registrationObject(t *testing.T, name string, created time.Time, phase cellv1alpha1.RegistrationPhase, certExpiry time.Time) runtime.Object {
	t.Helper()
	reg := &cellv1alpha1.ClusterRegistration{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)}}
	reg.Status.Phase = phase
	if !certExpiry.IsZero() {
		at := metav1.NewTime(certExpiry)
		reg.Status.CertificateExpiry = &at
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(reg)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func writeCert(t *testing.T, path string, notAfter time.Time) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "plane"}, NotBefore: notAfter.Add(-time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestStateCollector: each registration gives its creation time under
// its phase (no phase yet reads Pending) and, once signed, its agent
// certificate's expiry; the plane's certificate files present give theirs.
func TestStateCollector(t *testing.T) {
	created := time.Unix(1_800_000_000, 0)
	expiry := time.Unix(1_900_000_000, 0)
	files := pki.Files{Dir: t.TempDir()}
	writeCert(t, files.ServingCert(), time.Unix(2_000_000_000, 0))
	writeCert(t, files.CACert(), time.Unix(2_100_000_000, 0)) // agent-ca.crt is absent: no sample
	objs := []runtime.Object{
		registrationObject(t, "edge-1", created, cellv1alpha1.RegistrationRegistered, expiry),
		registrationObject(t, "edge-2", created.Add(time.Minute), "", time.Time{}),
	}
	c := &stateCollector{list: func() ([]runtime.Object, error) { return objs, nil }, files: func() pki.Files { return files }}
	want := `
# HELP cellfed_plane_certificate_expiry_timestamp_seconds [ALPHA] When the plane's certificates in its PKI directory expire (Unix seconds), by certificate (ca, agent-ca, serving).
# TYPE cellfed_plane_certificate_expiry_timestamp_seconds gauge
cellfed_plane_certificate_expiry_timestamp_seconds{certificate="ca"} 2.1e+09
cellfed_plane_certificate_expiry_timestamp_seconds{certificate="serving"} 2e+09
# HELP cellfed_registration_certificate_expiry_timestamp_seconds [ALPHA] When the agent certificate the plane signed for each registration expires (Unix seconds), by registration.
# TYPE cellfed_registration_certificate_expiry_timestamp_seconds gauge
cellfed_registration_certificate_expiry_timestamp_seconds{registration="edge-1"} 1.9e+09
# HELP cellfed_registration_created_timestamp_seconds [ALPHA] When each ClusterRegistration was created (Unix seconds), by registration and phase (Pending, Approved, Registered, Denied, Revoked, Failed); time() minus it is how long a Pending one has waited.
# TYPE cellfed_registration_created_timestamp_seconds gauge
cellfed_registration_created_timestamp_seconds{phase="Pending",registration="edge-2"} 1.80000006e+09
cellfed_registration_created_timestamp_seconds{phase="Registered",registration="edge-1"} 1.8e+09
`
	if err := testutil.CustomCollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
