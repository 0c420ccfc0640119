// Package registration is agent self-registration: the names, labels and
// rules shared by the plane (admission, the registration controller in
// pkg/controller/registration), cellfedctl and the agent (Bootstrap, Renew).
//
// The flow: `cellfedctl token create --tenant t` writes a Kubernetes
// bootstrap token (a Secret of type bootstrap.kubernetes.io/token in
// kube-system, expiry enforced by the plane's bootstrap-token
// authenticator) labelled with the tenant and workspace. The agent
// authenticates with it as system:bootstrap:<id> in the group
// BootstrapGroup, which may only create ClusterRegistrations; admission
// sets the tenancy from the token and refuses a token used before. Once
// approved, the plane signs the agent's certificate (pki.SignAgentCSR), and
// from then on the agent authenticates as cellfed:agent:<cluster> and may
// only read and renew its own registration.
//
// This package imports client-go and apimachinery only (the agent must
// not depend on k8s.io/kubernetes).
package registration

import (
	"crypto/rand"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/roles"
)

// Labels and annotations.
const (
	// LabelBootstrapTokenID is on a ClusterRegistration created with a
	// bootstrap token: the token's ID (never its secret).
	LabelBootstrapTokenID = "cellfed.io/bootstrap-token-id"
	// LabelRegistration is on every object the plane creates for a
	// registration (Secret, KubeFedCluster, RBAC): its name.
	LabelRegistration = "cellfed.io/registration"
	// LabelTunnelled is "true" on KubeFedClusters reached through the
	// tunnel hub (registered by an agent).
	LabelTunnelled = "cellfed.io/tunnelled"
	// AnnotationTokenUsedBy and AnnotationTokenUsedAt are set on a
	// bootstrap token's Secret when a registration used it.
	AnnotationTokenUsedBy = "cellfed.io/used-by-registration"
	AnnotationTokenUsedAt = "cellfed.io/used-at"
	// LabelCreatedBy marks bootstrap tokens cellfedctl made.
	LabelCreatedBy = "cellfed.io/bootstrap-token"
)

// Identities.
const (
	// BootstrapGroup is the extra group of cellfed's bootstrap tokens; it
	// may create ClusterRegistrations and nothing else.
	BootstrapGroup = roles.BootstrapperGroup
	// BootstrapUserPrefix is the user name prefix of bootstrap tokens
	// (system:bootstrap:<token-id>), set by Kubernetes' authenticator.
	BootstrapUserPrefix = "system:bootstrap:"
	// BootstrapTokenNamespace holds bootstrap token Secrets.
	BootstrapTokenNamespace = metav1.NamespaceSystem
	// BootstrapTokenSecretPrefix starts a bootstrap token Secret's name.
	BootstrapTokenSecretPrefix = "bootstrap-token-"
	// BootstrapRole is the ClusterRole (and binding) of BootstrapGroup.
	BootstrapRole = roles.RegistrationBootstrapper
)

// PolicyConfigMap is the ConfigMap in the federation namespace that held
// the auto-approve policy before it became the cluster-scoped
// RegistrationPolicy (anyone with ConfigMap rights in that namespace could
// edit it). The plane ignores it, and admission refuses to write it,
// saying what replaced it.
const PolicyConfigMap = "cellfed-registration-policy"

// DefaultMemberNamespace is where the agent puts the plane's
// ServiceAccount in its member cluster.
const DefaultMemberNamespace = "kube-federation-system"

// TokenSecretName is the name of the Secret holding bootstrap token id.
func TokenSecretName(id string) string { return BootstrapTokenSecretPrefix + id }

// CredentialsSecretName is the Secret in the federation namespace that
// holds the member's service-account token for registration name.
func CredentialsSecretName(name string) string { return name + "-token" }

// AccessRoleName is the ClusterRole and ClusterRoleBinding that let a
// registration's bootstrap token and agent read (and the agent renew) it.
func AccessRoleName(name string) string { return "cellfed:registration:" + name }

// TokenIDOfUser returns the token ID of a bootstrap token's user name.
func TokenIDOfUser(user string) (string, bool) {
	id, ok := strings.CutPrefix(user, BootstrapUserPrefix)
	return id, ok && id != ""
}

// Token is a bootstrap token: "<id>.<secret>", 6 and 16 characters of
// [a-z0-9].
type Token struct{ ID, Secret string }

func (t Token) String() string { return t.ID + "." + t.Secret }

// ParseToken checks a bootstrap token's shape. The error says what is
// wrong without repeating the secret part.
func ParseToken(s string) (Token, error) {
	id, secret, ok := strings.Cut(strings.TrimSpace(s), ".")
	if !ok || !isTokenPart(id, 6) || !isTokenPart(secret, 16) {
		return Token{}, fmt.Errorf("a bootstrap token has the form <6 characters>.<16 characters> of lowercase letters and digits (as `cellfedctl token create` prints it); the one given does not")
	}
	return Token{ID: id, Secret: secret}, nil
}

func isTokenPart(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

const tokenAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// NewToken makes a random bootstrap token.
func NewToken() (Token, error) {
	part := func(n int) (string, error) {
		b := make([]byte, n)
		for i := range b {
			v, err := rand.Int(rand.Reader, big.NewInt(int64(len(tokenAlphabet))))
			if err != nil {
				return "", fmt.Errorf("generating a bootstrap token: %w", err)
			}
			b[i] = tokenAlphabet[v.Int64()]
		}
		return string(b), nil
	}
	id, err := part(6)
	if err != nil {
		return Token{}, err
	}
	secret, err := part(16)
	if err != nil {
		return Token{}, err
	}
	return Token{ID: id, Secret: secret}, nil
}

// TokenSecret is the bootstrap-token Secret for t: usable for
// authentication only, in BootstrapGroup, expiring at expiry, labelled with
// the tenancy the registration gets.
func TokenSecret(t Token, tenant, workspace string, expiry time.Time) *corev1.Secret {
	labels := map[string]string{LabelCreatedBy: "true", cellv1alpha1.LabelTenant: tenant}
	if workspace != "" {
		labels[cellv1alpha1.LabelWorkspace] = workspace
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: TokenSecretName(t.ID), Namespace: BootstrapTokenNamespace, Labels: labels},
		Type:       corev1.SecretType("bootstrap.kubernetes.io/token"),
		StringData: map[string]string{
			"description":                    "cellfed agent registration for tenant " + tenant,
			"token-id":                       t.ID,
			"token-secret":                   t.Secret,
			"expiration":                     expiry.UTC().Format(time.RFC3339),
			"usage-bootstrap-authentication": "true",
			"auth-extra-groups":              BootstrapGroup,
		},
	}
}

// TokenTenancy reads the tenancy a bootstrap token's Secret grants.
func TokenTenancy(s *corev1.Secret) (tenant, workspace string) {
	return s.Labels[cellv1alpha1.LabelTenant], s.Labels[cellv1alpha1.LabelWorkspace]
}

// Phase summarises a registration's conditions. Decisions win in the
// order Revoked, Denied, Approved; an approval is Registered once Ready.
func Phase(conds []metav1.Condition) cellv1alpha1.RegistrationPhase {
	is := func(t string) bool { return meta.IsStatusConditionTrue(conds, t) }
	switch {
	case is(cellv1alpha1.RegistrationConditionRevoked):
		return cellv1alpha1.RegistrationRevoked
	case is(cellv1alpha1.RegistrationConditionDenied):
		return cellv1alpha1.RegistrationDenied
	case is(cellv1alpha1.RegistrationConditionApproved) && is(cellv1alpha1.RegistrationConditionReady):
		return cellv1alpha1.RegistrationRegistered
	case is(cellv1alpha1.RegistrationConditionApproved):
		if c := meta.FindStatusCondition(conds, cellv1alpha1.RegistrationConditionReady); c != nil && c.Status == metav1.ConditionFalse && c.Reason != ReasonSigning {
			return cellv1alpha1.RegistrationFailed
		}
		return cellv1alpha1.RegistrationApproved
	}
	return cellv1alpha1.RegistrationPending
}

// Reasons of the Ready condition.
const (
	ReasonSigning       = "Signing"
	ReasonRegistered    = "Registered"
	ReasonClusterExists = "ClusterExists"
	ReasonInvalid       = "Invalid"
	ReasonError         = "Error"
	ReasonAutoApproved  = "AutoApproved"
)

// TunnelEndpoint is the apiEndpoint of a tunnelled cluster's
// KubeFedCluster: the agent's APIEndpoint, with its host replaced by
// TLSServerName when the agent reported one. Through the tunnel the host
// is never dialled (the hub routes by cluster), it is only the name the
// member's serving certificate is verified against.
func TunnelEndpoint(spec cellv1alpha1.ClusterRegistrationSpec) (string, error) {
	if spec.TLSServerName == "" {
		return spec.APIEndpoint, nil
	}
	u, err := url.Parse(spec.APIEndpoint)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("apiEndpoint %q is not a URL", spec.APIEndpoint)
	}
	if errs := validation.IsDNS1123Subdomain(spec.TLSServerName); len(errs) > 0 {
		return "", fmt.Errorf("tlsServerName %q is not a DNS name: %s", spec.TLSServerName, strings.Join(errs, "; "))
	}
	if port := u.Port(); port != "" {
		u.Host = net.JoinHostPort(spec.TLSServerName, port)
	} else {
		u.Host = spec.TLSServerName
	}
	return u.String(), nil
}
