package admission

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	certutil "k8s.io/client-go/util/cert"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/pki"
	"github.com/cellfed/cellfed/pkg/registration"
)

// testCA is a real self-signed CA certificate (PEM).
var testCA = func() []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "member-ca"}, key)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
}()

func testRegistration(t *testing.T, name string) *cellv1alpha1.ClusterRegistration {
	t.Helper()
	_, csr, err := pki.NewAgentKeyAndCSR(name)
	if err != nil {
		t.Fatal(err)
	}
	return &cellv1alpha1.ClusterRegistration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: cellv1alpha1.ClusterRegistrationSpec{
			APIEndpoint: "https://127.0.0.1:6443",
			CABundle:    testCA,
			CSR:         csr,
			Tenant:      "acme",
		},
	}
}

func TestValidateRegistration(t *testing.T) {
	agentGroups := []string{pki.AgentGroup, "system:authenticated"}
	bootGroups := []string{registration.BootstrapGroup, "system:bootstrappers", "system:authenticated"}
	revoked := func(r *cellv1alpha1.ClusterRegistration) *cellv1alpha1.ClusterRegistration {
		r = r.DeepCopy()
		r.Status.Conditions = []metav1.Condition{{Type: cellv1alpha1.RegistrationConditionRevoked, Status: metav1.ConditionTrue}}
		return r
	}
	cases := []struct {
		name    string
		req     func(*testing.T) RegistrationRequest
		wantErr string
	}{
		{"admin creates a valid registration", func(t *testing.T) RegistrationRequest {
			return RegistrationRequest{Operation: Create, User: "cellfed-admin", Groups: []string{"system:masters"}, Object: testRegistration(t, "edge-1")}
		}, ""},
		{"bootstrap user creates", func(t *testing.T) RegistrationRequest {
			return RegistrationRequest{Operation: Create, User: "system:bootstrap:abcdef", Groups: bootGroups, Object: testRegistration(t, "edge-1")}
		}, ""},
		{"bootstrap user may not update", func(t *testing.T) RegistrationRequest {
			r := testRegistration(t, "edge-1")
			return RegistrationRequest{Operation: Update, User: "system:bootstrap:abcdef", Groups: bootGroups, Object: r, OldObject: r}
		}, "a bootstrap token may only create a registration"},
		{"bootstrap user may not write status", func(t *testing.T) RegistrationRequest {
			r := testRegistration(t, "edge-1")
			return RegistrationRequest{Operation: Update, SubResource: "status", User: "system:bootstrap:abcdef", Groups: bootGroups, Object: r, OldObject: r}
		}, "a bootstrap token may only create"},
		{"agent renews its own csr", func(t *testing.T) RegistrationRequest {
			old := testRegistration(t, "edge-1")
			r := testRegistration(t, "edge-1")
			r.Spec.ServiceAccountToken = "fresh"
			r.Annotations = map[string]string{registration.AnnotationAgentCertificate: "abc"}
			return RegistrationRequest{Operation: Update, User: pki.AgentUser("edge-1"), Groups: agentGroups, Object: r, OldObject: old}
		}, ""},
		{"agent may not touch another cluster's registration", func(t *testing.T) RegistrationRequest {
			r := testRegistration(t, "edge-2")
			return RegistrationRequest{Operation: Update, User: pki.AgentUser("edge-1"), Groups: agentGroups, Object: r, OldObject: r}
		}, "the agent of cluster edge-1 may not change the registration of cluster edge-2"},
		{"agent may not change its endpoint", func(t *testing.T) RegistrationRequest {
			old := testRegistration(t, "edge-1")
			r := old.DeepCopy()
			r.Spec.APIEndpoint = "https://10.0.0.1:6443"
			return RegistrationRequest{Operation: Update, User: pki.AgentUser("edge-1"), Groups: agentGroups, Object: r, OldObject: old}
		}, "may only change spec.csr, spec.serviceAccountToken"},
		{"agent may not change its tenant", func(t *testing.T) RegistrationRequest {
			old := testRegistration(t, "edge-1")
			r := old.DeepCopy()
			r.Spec.Tenant = "other"
			return RegistrationRequest{Operation: Update, User: pki.AgentUser("edge-1"), Groups: agentGroups, Object: r, OldObject: old}
		}, "may only change spec.csr"},
		{"agent may not create", func(t *testing.T) RegistrationRequest {
			return RegistrationRequest{Operation: Create, User: pki.AgentUser("edge-1"), Groups: agentGroups, Object: testRegistration(t, "edge-1")}
		}, "may only update its own registration"},
		{"agent may not write status (approve itself)", func(t *testing.T) RegistrationRequest {
			r := testRegistration(t, "edge-1")
			return RegistrationRequest{Operation: Update, SubResource: "status", User: pki.AgentUser("edge-1"), Groups: agentGroups, Object: r, OldObject: r}
		}, "may only update its own registration"},
		{"revoked agent may not renew", func(t *testing.T) RegistrationRequest {
			old := revoked(testRegistration(t, "edge-1"))
			r := old.DeepCopy()
			_, r.Spec.CSR, _ = pki.NewAgentKeyAndCSR("edge-1")
			return RegistrationRequest{Operation: Update, User: pki.AgentUser("edge-1"), Groups: agentGroups, Object: r, OldObject: old}
		}, "was revoked"},
		{"name with a dot", func(t *testing.T) RegistrationRequest {
			return RegistrationRequest{Operation: Create, User: "admin", Object: testRegistration(t, "ns.cell")}
		}, "DNS label"},
		{"http endpoint", func(t *testing.T) RegistrationRequest {
			r := testRegistration(t, "edge-1")
			r.Spec.APIEndpoint = "http://127.0.0.1:8080"
			return RegistrationRequest{Operation: Create, User: "admin", Object: r}
		}, "spec.apiEndpoint"},
		{"endpoint with an upper-case scheme", func(t *testing.T) RegistrationRequest {
			// Found by FuzzValidateRegistration: url.Parse lowers the
			// scheme, so "Https://" passed as https.
			r := testRegistration(t, "edge-1")
			r.Spec.APIEndpoint = "Https://127.0.0.1:6443"
			return RegistrationRequest{Operation: Create, User: "admin", Object: r}
		}, "spec.apiEndpoint"},
		{"no CA", func(t *testing.T) RegistrationRequest {
			r := testRegistration(t, "edge-1")
			r.Spec.CABundle = nil
			return RegistrationRequest{Operation: Create, User: "admin", Object: r}
		}, "spec.caBundle: Required"},
		{"garbage CSR", func(t *testing.T) RegistrationRequest {
			r := testRegistration(t, "edge-1")
			r.Spec.CSR = []byte("hello")
			return RegistrationRequest{Operation: Create, User: "admin", Object: r}
		}, "CERTIFICATE REQUEST"},
		{"RSA-1024 CSR", func(t *testing.T) RegistrationRequest {
			r := testRegistration(t, "edge-1")
			key, err := rsa.GenerateKey(rand.Reader, 1024)
			if err != nil {
				t.Fatal(err)
			}
			der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "edge-1"}}, key)
			if err != nil {
				t.Fatal(err)
			}
			r.Spec.CSR = pem.EncodeToMemory(&pem.Block{Type: pki.BlockCertificateRequest, Bytes: der})
			return RegistrationRequest{Operation: Create, User: "admin", Object: r}
		}, "1024-bit RSA key; use at least 2048 bits"},
		{"bad tenant", func(t *testing.T) RegistrationRequest {
			r := testRegistration(t, "edge-1")
			r.Spec.Tenant = "no spaces"
			return RegistrationRequest{Operation: Create, User: "admin", Object: r}
		}, "not a tenant name"},
		{"workspace without tenant", func(t *testing.T) RegistrationRequest {
			r := testRegistration(t, "edge-1")
			r.Spec.Tenant, r.Spec.Workspace = "", "prod"
			return RegistrationRequest{Operation: Create, User: "admin", Object: r}
		}, "a workspace belongs to a tenant"},
		{"tenancy is immutable", func(t *testing.T) RegistrationRequest {
			old := testRegistration(t, "edge-1")
			r := old.DeepCopy()
			r.Spec.Tenant = "other"
			return RegistrationRequest{Operation: Update, User: "admin", Object: r, OldObject: old}
		}, "tenancy of a registration cannot change"},
		{"admin rotates the proxy credential", func(t *testing.T) RegistrationRequest {
			old := testRegistration(t, "edge-1")
			r := old.DeepCopy()
			r.Spec.ProxyCredentialGeneration = 1
			return RegistrationRequest{Operation: Update, User: "admin", Object: r, OldObject: old}
		}, ""},
		{"proxy credential generation may not go back", func(t *testing.T) RegistrationRequest {
			old := testRegistration(t, "edge-1")
			old.Spec.ProxyCredentialGeneration = 3
			r := old.DeepCopy()
			r.Spec.ProxyCredentialGeneration = 2
			return RegistrationRequest{Operation: Update, User: "admin", Object: r, OldObject: old}
		}, "may only increase (it is 3): a lower generation would bring back a revoked proxy credential"},
		{"agent may not rotate its proxy credential", func(t *testing.T) RegistrationRequest {
			old := testRegistration(t, "edge-1")
			r := old.DeepCopy()
			r.Spec.ProxyCredentialGeneration = 1
			return RegistrationRequest{Operation: Update, User: pki.AgentUser("edge-1"), Groups: agentGroups, Object: r, OldObject: old}
		}, "may only change spec.csr"},
		{"negative proxy credential generation", func(t *testing.T) RegistrationRequest {
			r := testRegistration(t, "edge-1")
			r.Spec.ProxyCredentialGeneration = -1
			return RegistrationRequest{Operation: Create, User: "admin", Object: r}
		}, "spec.proxyCredentialGeneration: Invalid value: -1: must not be negative"},
		{"token label is immutable", func(t *testing.T) RegistrationRequest {
			old := testRegistration(t, "edge-1")
			r := old.DeepCopy()
			r.Labels = map[string]string{registration.LabelBootstrapTokenID: "zzzzzz"}
			return RegistrationRequest{Operation: Update, User: "admin", Object: r, OldObject: old}
		}, "cannot change"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateRegistration(tc.req(t))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("allowed, want an error containing %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("error %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

type fakeTokens struct {
	secrets map[string]*corev1.Secret
	usedBy  map[string]string
}

func (f fakeTokens) Token(_ context.Context, id string) (*corev1.Secret, error) {
	return f.secrets[id], nil
}

func (f fakeTokens) UsedBy(_ context.Context, id string) (string, time.Time, error) {
	return f.usedBy[id], time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC), nil
}

func TestBootstrapTenancy(t *testing.T) {
	tok := registration.Token{ID: "abcdef", Secret: "0123456789abcdef"}
	fresh := registration.TokenSecret(tok, "acme", "prod", time.Now().Add(time.Hour))
	used := fresh.DeepCopy()
	used.Annotations = map[string]string{registration.AnnotationTokenUsedBy: "edge-0", registration.AnnotationTokenUsedAt: "2026-11-23T12:00:00Z"}
	noTenant := fresh.DeepCopy()
	noTenant.Labels = nil
	cases := []struct {
		name               string
		tokens             fakeTokens
		tenant, workspace  string
		wantTenant, wantWS string
		wantErr            string
	}{
		{name: "tenancy from the token", tokens: fakeTokens{secrets: map[string]*corev1.Secret{"abcdef": fresh}}, wantTenant: "acme", wantWS: "prod"},
		{name: "same tenancy claimed", tokens: fakeTokens{secrets: map[string]*corev1.Secret{"abcdef": fresh}}, tenant: "acme", workspace: "prod", wantTenant: "acme", wantWS: "prod"},
		{name: "other tenant claimed", tokens: fakeTokens{secrets: map[string]*corev1.Secret{"abcdef": fresh}}, tenant: "evil", wantErr: `bootstrap token abcdef is for tenant "acme", but the registration asks for tenant "evil"`},
		{name: "other workspace claimed", tokens: fakeTokens{secrets: map[string]*corev1.Secret{"abcdef": fresh}}, workspace: "dev", wantErr: `is for workspace "prod"`},
		{name: "token gone", tokens: fakeTokens{}, wantErr: "bootstrap token abcdef no longer exists; create a new one with `cellfedctl token create`"},
		{name: "token marked used", tokens: fakeTokens{secrets: map[string]*corev1.Secret{"abcdef": used}}, wantErr: "bootstrap token abcdef was already used to register cluster edge-0 at 2026-11-23T12:00:00Z"},
		{name: "token used by a registration", tokens: fakeTokens{secrets: map[string]*corev1.Secret{"abcdef": fresh}, usedBy: map[string]string{"abcdef": "edge-9"}}, wantErr: "was already used to register cluster edge-9 at 2026-11-23T12:00:00Z; a token registers one cluster only"},
		{name: "token without tenant", tokens: fakeTokens{secrets: map[string]*corev1.Secret{"abcdef": noTenant}}, wantErr: "names no tenant"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := testRegistration(t, "edge-1")
			reg.Spec.Tenant, reg.Spec.Workspace = tc.tenant, tc.workspace
			tenant, ws, err := bootstrapTenancy(context.Background(), tc.tokens, "abcdef", reg)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("allowed, want an error containing %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("error %q, want it to contain %q", err, tc.wantErr)
			case tc.wantErr == "" && (tenant != tc.wantTenant || ws != tc.wantWS):
				t.Fatalf("tenancy %q/%q, want %q/%q", tenant, ws, tc.wantTenant, tc.wantWS)
			}
		})
	}
}

func TestValidateRegistrationPolicy(t *testing.T) {
	cases := []struct {
		name, policy string
		approval     cellv1alpha1.RegistrationApproval
		wantErr      string
	}{
		{"automatic", "acme", cellv1alpha1.RegistrationApprovalAutomatic, ""},
		{"manual", "acme", cellv1alpha1.RegistrationApprovalManual, ""},
		{"no approval", "acme", "", "spec.approval: Required value: Manual (an administrator approves each registration) or Automatic"},
		{"unknown approval", "acme", "Sometimes", `spec.approval: Unsupported value: "Sometimes": supported values: "Manual", "Automatic"`},
		{"not a tenant name", "no spaces", cellv1alpha1.RegistrationApprovalAutomatic, "a RegistrationPolicy is named after the tenant it applies to"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &cellv1alpha1.RegistrationPolicy{ObjectMeta: metav1.ObjectMeta{Name: tc.policy}, Spec: cellv1alpha1.RegistrationPolicySpec{Approval: tc.approval}}
			err := ValidateRegistrationPolicy(p)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestLegacyPolicyConfigMapRefused: the ConfigMap that held the
// auto-approve policy (editable by anyone with ConfigMap rights in the
// federation namespace) cannot be written any more; the refusal says what
// replaced it. Other ConfigMaps pass.
func TestLegacyPolicyConfigMapRefused(t *testing.T) {
	cm := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	kind := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	for _, tc := range []struct {
		name, namespace, cmName string
		op                      admission.Operation
		wantErr                 string
	}{
		{"create the policy ConfigMap", "kube-federation-system", registration.PolicyConfigMap, admission.Create, "use `cellfedctl registration auto-approve <tenant>`"},
		{"update the policy ConfigMap", "kube-federation-system", registration.PolicyConfigMap, admission.Update, "it is the cluster-scoped RegistrationPolicy named after the tenant"},
		{"another ConfigMap", "kube-federation-system", "settings", admission.Create, ""},
		{"same name in another namespace", "shop", registration.PolicyConfigMap, admission.Create, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := admission.NewAttributesRecord(&unstructured.Unstructured{}, nil, kind, tc.namespace, tc.cmName, cm, "", tc.op, nil, false, nil)
			handled, err := validatePolicyWrite(a, "kube-federation-system")
			if tc.wantErr == "" {
				if handled || err != nil {
					t.Fatalf("handled %v, err %v; want it left alone", handled, err)
				}
				return
			}
			if !handled || err == nil || !strings.Contains(err.Error(), tc.wantErr) || !apierrors.IsForbidden(err) {
				t.Fatalf("handled %v, err %v; want Forbidden containing %q", handled, err, tc.wantErr)
			}
		})
	}
}
