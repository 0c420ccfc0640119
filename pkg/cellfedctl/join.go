package cellfedctl

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	fedv1beta1 "sigs.k8s.io/kubefed/pkg/apis/core/v1beta1"

	"github.com/cellfed/cellfed/pkg/apis"
	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/pkg/federatedtypes"
	"github.com/cellfed/cellfed/pkg/memberaccess"
	"github.com/cellfed/cellfed/pkg/tenancy"
)

// kubefed.KubeFedClustersResource is core.kubefed.io/v1beta1 kubefedclusters.

// Labels and annotations join writes.
const (
	// LabelJoinedCluster is on every object join writes (the plane's
	// Secret; the member's ServiceAccount, ClusterRole and
	// ClusterRoleBinding): the name the member is joined as.
	LabelJoinedCluster = "cellfed.io/joined-cluster"
	labelManagedBy     = "app.kubernetes.io/managed-by"
	managedBy          = "cellfedctl"
	// AnnotationMemberNamespace and AnnotationMemberServiceAccount on the
	// KubeFedCluster say where the member's ServiceAccount is, for unjoin.
	AnnotationMemberNamespace      = "cellfed.io/member-namespace"
	AnnotationMemberServiceAccount = "cellfed.io/member-service-account"
)

// minTokenTTL is the shortest expiration the TokenRequest API accepts.
const minTokenTTL = 10 * time.Minute

// MemberObjectName is the name of the member's ServiceAccount, ClusterRole
// and ClusterRoleBinding for a cluster joined as name.
func MemberObjectName(name string) string { return "cellfed-" + name }

// TokenSecretName is the name of the plane's Secret holding the member's
// token, for a cluster that has none yet.
func TokenSecretName(name string) string { return name + "-token" }

type joinOptions struct {
	*options
	member       memberFlags
	apiEndpoint  string
	fedNamespace string
	tokenTTL     time.Duration
	overwrite    bool
	rotateToken  bool
	// tenant dedicates the cluster to one tenant (label cellfed.io/tenant).
	tenant string
}

// memberFlags reach a member cluster.
type memberFlags struct {
	kubeconfig, context, namespace string
}

func (m *memberFlags) addFlags(cmd *cobra.Command, what string) {
	cmd.Flags().StringVar(&m.kubeconfig, "kubeconfig-member", "", "kubeconfig of the member cluster, with admin rights there"+what)
	cmd.Flags().StringVar(&m.context, "member-context", "", "context of the --kubeconfig-member kubeconfig (default: its current context)")
	cmd.Flags().StringVar(&m.namespace, "member-namespace", federatedtypes.DefaultNamespace, "namespace of the plane's ServiceAccount in the member cluster")
}

// describe names the member for messages.
func (m *memberFlags) describe() string {
	s := "member cluster " + m.kubeconfig
	if m.context != "" {
		s += " (context " + m.context + ")"
	}
	return s
}

// memberConfig is the member's admin client configuration and what the
// plane needs to reach it.
type memberConfig struct {
	admin    *rest.Config
	server   string // the kubeconfig's server URL
	caBundle []byte // PEM; empty means the system's roots
}

func (m *memberFlags) load() (*memberConfig, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: m.kubeconfig},
		&clientcmd.ConfigOverrides{CurrentContext: m.context},
	).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig of %s: %v; pass --kubeconfig-member=<kubeconfig of the member cluster> (and --member-context=<context>)", m.describe(), oneLine(err.Error()))
	}
	if cfg.Insecure {
		return nil, fmt.Errorf("the kubeconfig of %s skips TLS verification (insecure-skip-tls-verify), so there is no CA to give the plane; set the cluster's certificate-authority(-data) in that kubeconfig", m.describe())
	}
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			return nil, fmt.Errorf("reading the CA of %s: %v; fix certificate-authority in that kubeconfig", m.describe(), err)
		}
	}
	cfg.QPS, cfg.Burst = 50, 100
	return &memberConfig{admin: cfg, server: cfg.Host, caBundle: ca}, nil
}

func newJoinCommand(o *options) *cobra.Command {
	j := &joinOptions{options: o}
	cmd := &cobra.Command{
		Use:   "join <name> --kubeconfig-member=<kubeconfig>",
		Short: "Register a member cluster with the plane (a KubeFedCluster and its token)",
		Long: `Register a member cluster with the plane as the physical cluster <name>.

In the member (reached with --kubeconfig-member, which needs admin rights)
it creates, or keeps when they exist: the namespace --member-namespace, the
ServiceAccount cellfed-<name> there, and the ClusterRole and
ClusterRoleBinding cellfed-<name> that grant it every verb on every
resource (as KubeFed's join does: the plane propagates any federated type).
It then mints a token for that ServiceAccount with the TokenRequest API,
valid for --token-ttl (members need no token controller), and prints the
expiry the member granted.

In the plane (reached with --kubeconfig/--context) it writes the Secret
<name>-token (key "token") and the KubeFedCluster <name> in
--federation-namespace, with the member's API endpoint (the kubeconfig's
server, or --api-endpoint) and CA bundle.

Everything is checked first: the name (a DNS label; names with a dot are
reserved for per-cell clusters), that both clusters answer, and that no
KubeFedCluster <name> points elsewhere (--overwrite replaces it). A failure
leaves nothing behind that this run created.

Running it again is safe: it changes nothing when the cluster is joined
already, and keeps the token while it works and more than half of its
lifetime remains (--rotate-token mints a new one, e.g. after changing
--token-ttl). Tokens are never printed.`,
		Example: examples(o.name,
			"join member1 --kubeconfig-member=member1.kubeconfig",
			"join member1 --kubeconfig-member=$HOME/.kube/config --member-context=prod-1 --api-endpoint=https://10.0.0.1:6443",
			"join member1 --kubeconfig-member=member1.kubeconfig --rotate-token",
		),
		Args: exactArgs(1, "one cluster name"),
		RunE: func(c *cobra.Command, args []string) error { return j.run(c.Context(), args[0]) },
	}
	j.member.addFlags(cmd, " (required)")
	cmd.Flags().StringVar(&j.apiEndpoint, "api-endpoint", "", "URL the plane reaches the member at (default: the server of --kubeconfig-member)")
	cmd.Flags().StringVar(&j.fedNamespace, "federation-namespace", federatedtypes.DefaultNamespace, "namespace of the KubeFedClusters in the plane")
	cmd.Flags().DurationVar(&j.tokenTTL, "token-ttl", 8760*time.Hour, "how long the member's token is valid (the member may grant less; at least 10m)")
	cmd.Flags().BoolVar(&j.overwrite, "overwrite", false, "replace a KubeFedCluster <name> that points at another endpoint")
	cmd.Flags().BoolVar(&j.rotateToken, "rotate-token", false, "mint a new token even when the stored one still works")
	cmd.Flags().StringVar(&j.tenant, "tenant", "", "dedicate the cluster to this tenant (label cellfed.io/tenant): only that tenant's cells and objects may use it; without it the cluster is shared")
	return cmd
}

// ClusterNameError says why name cannot be a physical cluster's name, or
// is nil.
func ClusterNameError(name string) error {
	if cellv1alpha1.IsDNSLabel(name) {
		return nil
	}
	if _, _, ok := cellv1alpha1.ParseCellClusterName(name); ok {
		return fmt.Errorf("%q is not a physical cluster name: names with a dot are reserved for per-cell clusters (<namespace>.<cell>); choose a DNS label such as %q", name, strings.ReplaceAll(name, ".", "-"))
	}
	return fmt.Errorf("%q is not a valid cluster name; cluster names are DNS labels: lowercase letters, digits and '-', at most 63 characters, no dots", name)
}

// checkEndpoint checks an API endpoint the way the plane's admission does.
func checkEndpoint(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "socks5") || u.Host == "" {
		return fmt.Errorf("--api-endpoint=%q is not an absolute URL; use a scheme and host, e.g. https://10.0.0.1:6443", s)
	}
	return nil
}

// checkArgs checks what needs no cluster.
func (j *joinOptions) checkArgs(name string) error {
	if err := ClusterNameError(name); err != nil {
		return err
	}
	if j.member.kubeconfig == "" {
		return fmt.Errorf("--kubeconfig-member is required; pass the kubeconfig of the member cluster (with admin rights there)")
	}
	if j.apiEndpoint != "" {
		if err := checkEndpoint(j.apiEndpoint); err != nil {
			return err
		}
	}
	for flag, ns := range map[string]string{"--federation-namespace": j.fedNamespace, "--member-namespace": j.member.namespace} {
		if !cellv1alpha1.IsDNSLabel(ns) {
			return fmt.Errorf("%s=%q is not a namespace name; namespaces are DNS labels", flag, ns)
		}
	}
	if j.tokenTTL < minTokenTTL {
		return fmt.Errorf("--token-ttl=%v is too short; the TokenRequest API grants at least %v", j.tokenTTL, minTokenTTL)
	}
	return nil
}

// undoList runs what reverts this run's writes when it fails.
type undoList []undo

type undo struct {
	what string
	fn   func(context.Context) error
}

func (u *undoList) add(what string, fn func(context.Context) error) {
	*u = append(*u, undo{what, fn})
}

// run reverts in reverse order, on a context of its own: the command's
// may be cancelled (Ctrl-C) already. It returns err with what could not
// be reverted.
func (u undoList) run(err error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var left []string
	for i := len(u) - 1; i >= 0; i-- {
		if uerr := u[i].fn(ctx); uerr != nil && !apierrors.IsNotFound(uerr) {
			left = append(left, fmt.Sprintf("%s (%v)", u[i].what, oneLine(uerr.Error())))
		}
	}
	if len(left) == 0 {
		return err
	}
	return fmt.Errorf("%w; also could not remove what this run wrote, delete it by hand: %s", err, strings.Join(left, ", "))
}

func (j *joinOptions) run(ctx context.Context, name string) (err error) {
	if err := j.checkArgs(name); err != nil {
		return err
	}
	if j.tenant != "" {
		if err := tenancy.TenantNameError(j.tenant); err != nil {
			return fmt.Errorf("--tenant: %w", err)
		}
	}
	mc, err := j.member.load()
	if err != nil {
		return err
	}
	endpoint := j.apiEndpoint
	if endpoint == "" {
		endpoint = mc.server
		if err := checkEndpoint(endpoint); err != nil {
			return fmt.Errorf("the server %q of %s is not an absolute URL; pass --api-endpoint=<URL the plane reaches the member at>", endpoint, j.member.describe())
		}
	}
	member, err := kubernetes.NewForConfig(mc.admin)
	if err != nil {
		return withFix(fmt.Errorf("client for %s: %w", j.member.describe(), err), "check the server and credentials of that kubeconfig")
	}
	plane, err := j.planeClients()
	if err != nil {
		return err
	}

	// Checks: the plane, the existing registration, the member.
	clusters := plane.Dynamic.Resource(kubefed.KubeFedClustersResource).Namespace(j.fedNamespace)
	if _, err := plane.kube.CoreV1().Namespaces().Get(ctx, j.fedNamespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return fmt.Errorf("the plane at %s has no namespace %s; check --federation-namespace, and that --kubeconfig/--context point at a cellfed plane", plane.host, j.fedNamespace)
	} else if err != nil {
		return apiError(err, "reading the plane's federation namespace "+j.fedNamespace)
	}
	reg, err := registrationOf(ctx, plane.Dynamic, name)
	if err != nil {
		return err
	}
	if err := RegisteredNameError(j.name, j.fedNamespace, reg); err != nil {
		return err
	}
	ref := j.fedNamespace + "/" + name
	existing, err := clusters.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		existing = nil
	} else if err != nil {
		return apiError(err, "reading KubeFedCluster "+ref)
	}
	secretName := TokenSecretName(name)
	if existing != nil {
		old, err := decodeCluster(existing)
		if err != nil {
			return err
		}
		if old.Spec.APIEndpoint != endpoint && !j.overwrite {
			return fmt.Errorf("KubeFedCluster %s exists with endpoint %s, not %s; pass --overwrite to point it at %s, or choose another name", ref, old.Spec.APIEndpoint, endpoint, endpoint)
		}
		if old.Spec.SecretRef.Name != "" {
			secretName = old.Spec.SecretRef.Name
		}
	}
	if _, err := member.Discovery().ServerVersion(); err != nil {
		return withFix(fmt.Errorf("%s does not answer: %w", j.member.describe(), err), "is it running? check --kubeconfig-member and --member-context")
	}

	var undos undoList
	defer func() {
		if err != nil {
			err = undos.run(err)
		}
	}()
	sa, memberChange, err := j.ensureMemberObjects(ctx, member, name, &undos)
	if err != nil {
		return err
	}

	// The token: the stored one while it works, else a new one.
	secrets := plane.kube.CoreV1().Secrets(j.fedNamespace)
	oldSecret, err := secrets.Get(ctx, secretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		oldSecret = nil
	} else if err != nil {
		return apiError(err, "reading Secret "+j.fedNamespace+"/"+secretName)
	}
	username := serviceAccountUser(j.member.namespace, sa)
	var token string
	var expiry time.Time
	if oldSecret != nil && !j.rotateToken {
		old := string(oldSecret.Data["token"])
		if claims, ok := parseToken(old); ok && claims.Subject == username && KeepToken(claims.issued(), claims.expiry(), time.Now(), j.tokenTTL) {
			if who, err := whoAmI(ctx, mc, old); err == nil && who == username {
				token, expiry = old, claims.expiry()
			}
		}
	}
	tokenNote := "kept"
	if token == "" {
		tokenNote = "minted"
		token, expiry, err = memberaccess.MintToken(ctx, member, j.member.namespace, sa, j.tokenTTL)
		if err != nil {
			return memberError(err, fmt.Sprintf("requesting a token for ServiceAccount %s/%s in %s", j.member.namespace, sa, j.member.describe()))
		}
		if err := waitAuthorized(ctx, mc, token, username); err != nil {
			return err
		}
	}

	// The plane: Secret, then KubeFedCluster.
	secretChange, err := j.writeSecret(ctx, secrets, oldSecret, secretName, name, token, &undos)
	if err != nil {
		return err
	}
	want := &fedv1beta1.KubeFedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: j.fedNamespace, Annotations: map[string]string{
			AnnotationMemberNamespace:      j.member.namespace,
			AnnotationMemberServiceAccount: sa,
		}},
		Spec: fedv1beta1.KubeFedClusterSpec{APIEndpoint: endpoint, CABundle: mc.caBundle, SecretRef: fedv1beta1.LocalSecretReference{Name: secretName}},
	}
	if j.tenant != "" {
		want.Labels = map[string]string{cellv1alpha1.LabelTenant: j.tenant}
	}
	clusterChange, err := writeCluster(ctx, clusters, existing, want, &undos)
	if err != nil {
		return err
	}

	out := j.streams.Out
	printf(out, "member: ServiceAccount %s/%s, ClusterRole and ClusterRoleBinding %s (every verb on every resource) %s\n", j.member.namespace, sa, sa, memberChange)
	printf(out, "token: %s, expires %s (in %s)\n", tokenNote, expiry.UTC().Format(time.RFC3339), time.Until(expiry).Round(time.Minute))
	printf(out, "plane: Secret %s/%s %s, KubeFedCluster %s %s\n", j.fedNamespace, secretName, secretChange, ref, clusterChange)
	printf(out, "joined %s at %s\n", name, endpoint)
	if tokenNote == "minted" && expiry.Before(time.Now().Add(j.tokenTTL-time.Minute)) {
		fmt.Fprintf(j.streams.ErrOut, "warning: the member granted the token for %s, less than --token-ttl=%v (its --service-account-max-token-expiration); run join again before %s\n",
			time.Until(expiry).Round(time.Minute), j.tokenTTL, expiry.UTC().Format(time.RFC3339))
	}
	return nil
}

// memberError is apiError with fixes that name the member's flags.
func memberError(err error, doing string) error {
	wrapped := fmt.Errorf("%s: %w", doing, err)
	switch {
	case isConnectionError(err):
		return withFix(wrapped, "is the member running? check --kubeconfig-member and --member-context")
	case apierrors.IsUnauthorized(err), apierrors.IsForbidden(err):
		return withFix(wrapped, "use a --kubeconfig-member with admin rights in the member (granting every verb on every resource needs them)")
	}
	return withFix(wrapped, "")
}

func serviceAccountUser(namespace, name string) string {
	return memberaccess.ServiceAccountUser(namespace, name)
}

// ensureMemberObjects creates or updates the namespace, ServiceAccount,
// ClusterRole and ClusterRoleBinding (memberaccess.Ensure, which agents
// use too). It returns the ServiceAccount's name and "(created)",
// "(updated)" or "(unchanged)".
func (j *joinOptions) ensureMemberObjects(ctx context.Context, member kubernetes.Interface, name string, undos *undoList) (string, string, error) {
	g := memberaccess.Grant{
		Namespace:      j.member.namespace,
		ServiceAccount: MemberObjectName(name),
		Labels:         map[string]string{LabelJoinedCluster: name, labelManagedBy: managedBy},
		Where:          " in " + j.member.describe(),
	}
	created, updated, err := memberaccess.Ensure(ctx, member, g, undos.add, memberError)
	if err != nil {
		return "", "", err
	}
	return g.ServiceAccount, changeWord(created, updated), nil
}

// changeWord summarises writes to objects that existed (updated) or not
// (created).
func changeWord(created, updated int) string {
	switch {
	case created > 0 && updated == 0:
		return "(created)"
	case created == 0 && updated == 0:
		return "(unchanged)"
	}
	return "(updated)"
}

// writeSecret stores the token in the plane.
func (j *joinOptions) writeSecret(ctx context.Context, secrets typedcorev1.SecretInterface, old *corev1.Secret, secretName, name, token string, undos *undoList) (string, error) {
	ref := j.fedNamespace + "/" + secretName
	if old == nil {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: j.fedNamespace, Labels: map[string]string{LabelJoinedCluster: name, labelManagedBy: managedBy}},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{"token": []byte(token)},
		}
		if _, err := secrets.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return "", apiError(err, "creating Secret "+ref)
		}
		undos.add("Secret "+ref+" in the plane", func(ctx context.Context) error { return secrets.Delete(ctx, secretName, metav1.DeleteOptions{}) })
		return "(created)", nil
	}
	if bytes.Equal(old.Data["token"], []byte(token)) {
		return "(unchanged)", nil
	}
	s := old.DeepCopy()
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	s.Data["token"] = []byte(token)
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		return "", apiError(err, "updating Secret "+ref)
	}
	undos.add("the previous token in Secret "+ref+" of the plane", func(ctx context.Context) error {
		cur, err := secrets.Get(ctx, secretName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Data = old.Data
		_, err = secrets.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	return "(updated)", nil
}

// writeCluster creates the KubeFedCluster, or sets its spec and join
// annotations.
func writeCluster(ctx context.Context, clusters dynamic.ResourceInterface, existing *unstructured.Unstructured, want *fedv1beta1.KubeFedCluster, undos *undoList) (string, error) {
	ref := want.Namespace + "/" + want.Name
	spec := clusterSpecContent(want.Spec)
	if existing == nil {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": fedv1beta1.SchemeGroupVersion.String(),
			"kind":       "KubeFedCluster",
			"metadata":   map[string]any{"name": want.Name, "namespace": want.Namespace},
			"spec":       spec,
		}}
		obj.SetAnnotations(want.Annotations)
		obj.SetLabels(want.Labels)
		if _, err := clusters.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return "", apiError(err, "creating KubeFedCluster "+ref)
		}
		undos.add("KubeFedCluster "+ref+" in the plane", func(ctx context.Context) error {
			return clusters.Delete(ctx, want.Name, metav1.DeleteOptions{})
		})
		return "(created)", nil
	}
	obj := existing.DeepCopy()
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	changed := false
	for k, v := range want.Annotations {
		if annotations[k] != v {
			annotations[k], changed = v, true
		}
	}
	labels := obj.GetLabels()
	for k, v := range want.Labels {
		if labels == nil {
			labels = map[string]string{}
		}
		if labels[k] != v {
			labels[k], changed = v, true
		}
	}
	oldSpec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	if !reflect.DeepEqual(oldSpec, spec) {
		changed = true
	}
	if !changed {
		return "(unchanged)", nil
	}
	obj.SetLabels(labels)
	obj.SetAnnotations(annotations)
	obj.Object["spec"] = spec
	if _, err := clusters.Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
		return "", apiError(err, "updating KubeFedCluster "+ref)
	}
	return "(updated)", nil
}

// clusterSpecContent is the spec as stored: caBundle base64, empty fields
// left out.
func clusterSpecContent(s fedv1beta1.KubeFedClusterSpec) map[string]any {
	spec := map[string]any{
		"apiEndpoint": s.APIEndpoint,
		"secretRef":   map[string]any{"name": s.SecretRef.Name},
	}
	if len(s.CABundle) > 0 {
		spec["caBundle"] = base64.StdEncoding.EncodeToString(s.CABundle)
	}
	return spec
}

func decodeCluster(u *unstructured.Unstructured) (*fedv1beta1.KubeFedCluster, error) {
	var c fedv1beta1.KubeFedCluster
	if err := apis.Decode(u.Object, &c); err != nil {
		return nil, fmt.Errorf("KubeFedCluster %s/%s is malformed: %v; fix it with `kubectl -n %s edit kubefedcluster %s`", u.GetNamespace(), u.GetName(), err, u.GetNamespace(), u.GetName())
	}
	return &c, nil
}

// tokenClaims are the JWT claims join reads, unverified: the member checks
// the token itself (whoAmI).
type tokenClaims struct {
	Subject  string `json:"sub"`
	Expiry   int64  `json:"exp"`
	IssuedAt int64  `json:"iat"`
}

func (c tokenClaims) expiry() time.Time { return time.Unix(c.Expiry, 0) }

func (c tokenClaims) issued() time.Time {
	if c.IssuedAt == 0 {
		return time.Time{}
	}
	return time.Unix(c.IssuedAt, 0)
}

// parseToken reads the claims of a JWT without verifying it.
func parseToken(token string) (tokenClaims, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return tokenClaims{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return tokenClaims{}, false
	}
	var c tokenClaims
	if err := json.Unmarshal(payload, &c); err != nil || c.Subject == "" || c.Expiry == 0 {
		return tokenClaims{}, false
	}
	return c, true
}

// KeepToken says whether a stored token issued at issued (zero when
// unknown) and expiring at expiry is kept: while more than half of its
// lifetime remains, the lifetime being --token-ttl or what the member
// granted when that was less.
func KeepToken(issued, expiry, now time.Time, ttl time.Duration) bool {
	lifetime := ttl
	if !issued.IsZero() && expiry.Sub(issued) < lifetime {
		lifetime = expiry.Sub(issued)
	}
	return expiry.Sub(now) > lifetime/2
}

// tokenConfig reaches the member as the plane will: the kubeconfig's
// server with the CA bundle and the token only.
func tokenConfig(mc *memberConfig, token string) *rest.Config {
	return &rest.Config{
		Host:            mc.server,
		TLSClientConfig: rest.TLSClientConfig{CAData: mc.caBundle, ServerName: mc.admin.ServerName},
		BearerToken:     token,
		Timeout:         10 * time.Second,
	}
}

// whoAmI is the user token authenticates as in the member.
func whoAmI(ctx context.Context, mc *memberConfig, token string) (string, error) {
	c, err := kubernetes.NewForConfig(tokenConfig(mc, token))
	if err != nil {
		return "", err
	}
	r, err := c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return r.Status.UserInfo.Username, nil
}

// waitAuthorized waits until a new token authenticates as username and may
// do everything: the member's authenticator and RBAC caches see new
// objects a moment later.
func waitAuthorized(ctx context.Context, mc *memberConfig, token, username string) error {
	return memberaccess.WaitAuthorized(ctx, tokenConfig(mc, token), username, 30*time.Second)
}
