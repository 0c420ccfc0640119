package cellproxy

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	fedv1b1 "sigs.k8s.io/kubefed/pkg/apis/core/v1beta1"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

// noTunnel is a tunnel dialer that is never reached: building a member
// connection does not dial.
type noTunnel struct{}

func (noTunnel) DialCluster(context.Context, string) (net.Conn, error) {
	return nil, errors.New("not dialled in this test")
}

// oneCluster is a Lookup holding one KubeFedCluster and no Cells.
type oneCluster struct{ c *fedv1b1.KubeFedCluster }

func (l oneCluster) Cell(namespace, name string) (*cellv1alpha1.Cell, error) {
	return nil, errors.New("no cells in this test")
}

func (l oneCluster) Cluster(name string) (*fedv1b1.KubeFedCluster, error) {
	if name != l.c.Name {
		return nil, errors.New("no such cluster in this test")
	}
	return l.c, nil
}

// TestMemberRoutes: the API proxy reaches a member only directly or
// through the plane's tunnel. A member behind another HTTP proxy, or one
// whose KubeFedCluster disables TLS validation, gets no connection, and a
// request for it is answered 503 saying why.
func TestMemberRoutes(t *testing.T) {
	cluster := func(proxyURL string, disabled ...fedv1b1.TLSValidation) *fedv1b1.KubeFedCluster {
		return &fedv1b1.KubeFedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "member-1", Namespace: "kube-federation-system"},
			Spec: fedv1b1.KubeFedClusterSpec{
				APIEndpoint:            "https://member-1.example:6443",
				SecretRef:              fedv1b1.LocalSecretReference{Name: "member-1-token"},
				ProxyURL:               proxyURL,
				DisabledTLSValidations: disabled,
			},
		}
	}
	for _, tc := range []struct {
		name       string
		cluster    *fedv1b1.KubeFedCluster
		wantTunnel bool
		refused    string // "": a connection is built
	}{
		{name: "a direct route is used", cluster: cluster("")},
		{name: "the plane's tunnel is used", cluster: cluster("https://member-1:credential@hub.example:8133"), wantTunnel: true},
		{name: "another HTTP proxy is not used", cluster: cluster("http://squid.example:3128"),
			refused: "cluster member-1 is reached through the HTTP proxy http://squid.example:3128, which the API proxy does not use"},
		{name: "another HTTPS proxy is not used", cluster: cluster("https://proxy.example:443"),
			refused: "which the API proxy does not use"},
		{name: "disabled TLS validation is not used", cluster: cluster("", fedv1b1.TLSAll),
			refused: "cluster member-1 disables TLS validation (spec.disabledTLSValidations); the API proxy only reaches members whose certificate it verifies"},
		{name: "disabled subject name validation is not used", cluster: cluster("", fedv1b1.TLSSubjectName),
			refused: "disables TLS validation (spec.disabledTLSValidations)"},
		{name: "disabled TLS validation through the tunnel is not used", cluster: cluster("https://member-1:credential@hub.example:8133", fedv1b1.TLSAll),
			refused: "disables TLS validation (spec.disabledTLSValidations)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := NewMembers(NewOptions(), noTunnel{}, nil)
			m, err := ms.get(tc.cluster)
			if tc.refused == "" {
				if err != nil {
					t.Fatalf("no member connection: %v; want one", err)
				}
				if m.tunnel != tc.wantTunnel {
					t.Errorf("through the tunnel: %v, want %v", m.tunnel, tc.wantTunnel)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.refused) {
				t.Fatalf("member connection error %v, want one containing %q", err, tc.refused)
			}

			// The caller of the cluster proxy gets 503 with that message.
			var h Handler
			h.Start(oneCluster{tc.cluster}, ms)
			req := httptest.NewRequest(http.MethodGet, Prefix+"clusters/member-1/proxy/api/v1/namespaces", nil)
			req = req.WithContext(request.WithUser(req.Context(), &user.DefaultInfo{Name: "admin", Groups: []string{"system:masters"}}))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			var st metav1.Status
			if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
				t.Fatalf("answer %d %q is not a Status: %v", rec.Code, rec.Body.String(), err)
			}
			if rec.Code != http.StatusServiceUnavailable || !strings.Contains(st.Message, tc.refused) {
				t.Errorf("answer %d %q, want 503 containing %q", rec.Code, st.Message, tc.refused)
			}
		})
	}
}
