package statemetrics

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/component-base/metrics/testutil"
)

func caBundle(t *testing.T, notAfter time.Time) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "member-ca"}, NotBefore: notAfter.Add(-time.Hour), NotAfter: notAfter, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func withReady(obj map[string]any, status string) map[string]any {
	obj["status"] = map[string]any{"conditions": []any{
		map[string]any{"type": "Offline", "status": "False"},
		map[string]any{"type": "Ready", "status": status},
	}}
	return obj
}

// TestCollector: a KubeFedCluster is ready only with Ready=True (no
// condition reads 0) and gives its CA's expiry when it has a readable
// caBundle; a cell gives its readiness on its cluster and, once counted,
// its objects.
func TestCollector(t *testing.T) {
	clusters := []any{
		&unstructured.Unstructured{Object: withReady(map[string]any{"metadata": map[string]any{"name": "member-1"},
			"spec": map[string]any{"caBundle": caBundle(t, time.Unix(2_000_000_000, 0))}}, "True")},
		&unstructured.Unstructured{Object: withReady(map[string]any{"metadata": map[string]any{"name": "member-2"},
			"spec": map[string]any{"caBundle": "not base64!"}}, "False")},
		&unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "shop.rz00a"}}},
	}
	cellA := withReady(map[string]any{"metadata": map[string]any{"name": "rz00a", "namespace": "shop"}, "spec": map[string]any{"cluster": "member-1"}}, "True")
	cellA["status"].(map[string]any)["objects"] = int64(3)
	cells := []any{
		&unstructured.Unstructured{Object: cellA},
		&unstructured.Unstructured{Object: withReady(map[string]any{"metadata": map[string]any{"name": "rz10a", "namespace": "shop"}, "spec": map[string]any{"cluster": "member-2"}}, "Unknown")},
	}
	c := &collector{clusters: func() []any { return clusters }, cells: func() []any { return cells }}
	want := `
# HELP cellfed_cell_objects [ALPHA] Federated objects a Cell holds or is to hold (held-back ones included), by workspace namespace and cell; absent until counted.
# TYPE cellfed_cell_objects gauge
cellfed_cell_objects{cell="rz00a",namespace="shop"} 3
# HELP cellfed_cell_ready [ALPHA] 1 when a Cell's Ready condition is True, else 0, by workspace namespace, cell and the physical cluster it is on.
# TYPE cellfed_cell_ready gauge
cellfed_cell_ready{cell="rz00a",cluster="member-1",namespace="shop"} 1
cellfed_cell_ready{cell="rz10a",cluster="member-2",namespace="shop"} 0
# HELP cellfed_cluster_ca_expiry_timestamp_seconds [ALPHA] When the first certificate of a KubeFedCluster's caBundle (the member API server's CA) expires (Unix seconds), by cluster.
# TYPE cellfed_cluster_ca_expiry_timestamp_seconds gauge
cellfed_cluster_ca_expiry_timestamp_seconds{cluster="member-1"} 2e+09
# HELP cellfed_cluster_ready [ALPHA] 1 when a KubeFedCluster's Ready condition is True, else 0, by cluster (physical clusters and the per-cell clusters alike).
# TYPE cellfed_cluster_ready gauge
cellfed_cluster_ready{cluster="member-1"} 1
cellfed_cluster_ready{cluster="member-2"} 0
cellfed_cluster_ready{cluster="shop.rz00a"} 0
`
	if err := testutil.CustomCollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if err := testutil.CustomCollectAndCompare(&collector{}, strings.NewReader("")); err != nil {
		t.Errorf("a collector before Register: %v", err)
	}
}
