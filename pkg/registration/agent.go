package registration

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/memberaccess"
	"github.com/cellfed/cellfed/pkg/pki"
)

// AnnotationAgentCertificate is set by the agent, authenticated with its
// new certificate, to the serial number of the certificate it now uses:
// proof that it received it. The plane then deletes the bootstrap token.
const AnnotationAgentCertificate = "cellfed.io/agent-certificate-serial"

// Files in the agent's state dir. The key files are 0600.
const (
	certFile       = "agent.crt"
	keyFile        = "agent.key"
	pendingKeyFile = "pending.key"
)

// AgentOptions configure Bootstrap and Renew. NewAgentOptions holds the
// defaults.
type AgentOptions struct {
	// ClusterName is the name the cluster registers as (a DNS label).
	ClusterName string
	// PlaneKubeconfig holds the plane's address and CA; credentials in it
	// are ignored (the agent uses the bootstrap token, then its
	// certificate).
	PlaneKubeconfig string
	// BootstrapToken is needed only for the first registration;
	// BootstrapTokenFile holds it instead.
	BootstrapToken, BootstrapTokenFile string
	// StateDir keeps the agent's key and certificate across restarts.
	StateDir string
	// Member is the agent's admin access to its own cluster.
	Member *rest.Config
	// MemberEndpoint is the URL at which the agent reaches its API server
	// (default: Member.Host).
	MemberEndpoint string
	// MemberNamespace holds the plane's ServiceAccount in the member.
	MemberNamespace string
	// MemberTokenTTL is the lifetime asked for the plane's member token; it
	// is refreshed at every certificate renewal.
	MemberTokenTTL time.Duration
	// PollInterval spaces reads of the registration while waiting.
	PollInterval time.Duration
	// RenewAfter is the fraction of the certificate's lifetime after which
	// Renew asks for a new one.
	RenewAfter float64
	// RetryInterval spaces retries of a failed renewal.
	RetryInterval time.Duration
}

// NewAgentOptions returns the defaults.
func NewAgentOptions() *AgentOptions {
	return &AgentOptions{
		MemberNamespace: DefaultMemberNamespace,
		MemberTokenTTL:  8760 * time.Hour,
		PollInterval:    time.Second,
		RenewAfter:      2.0 / 3.0,
		RetryInterval:   10 * time.Second,
	}
}

// AddFlags registers the registration flags of cellfed-agent. The
// cluster name and the member's kubeconfig are the agent's own --cluster
// and --kubeconfig.
func (o *AgentOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.PlaneKubeconfig, "plane-kubeconfig", o.PlaneKubeconfig, "Kubeconfig with the plane's address and CA (credentials in it are ignored); enables self-registration: the agent registers with --bootstrap-token, then uses and renews the certificate kept in --state-dir. `cellfedctl token create --agent-kubeconfig=<file>` writes one.")
	fs.StringVar(&o.BootstrapToken, "bootstrap-token", o.BootstrapToken, "Single-use bootstrap token from `cellfedctl token create`; needed only until the registration is approved (prefer --bootstrap-token-file: command lines are visible to other users).")
	fs.StringVar(&o.BootstrapTokenFile, "bootstrap-token-file", o.BootstrapTokenFile, "File holding the bootstrap token.")
	fs.StringVar(&o.StateDir, "state-dir", o.StateDir, "Directory where the agent keeps its key and certificate (0600) across restarts.")
	fs.StringVar(&o.MemberEndpoint, "member-endpoint", o.MemberEndpoint, "URL at which the agent reaches its API server, reported to the plane (default: the server of --kubeconfig).")
	fs.StringVar(&o.MemberNamespace, "member-namespace", o.MemberNamespace, "Namespace of the plane's ServiceAccount in this cluster.")
	fs.DurationVar(&o.MemberTokenTTL, "member-token-ttl", o.MemberTokenTTL, "Lifetime asked for the plane's member token (refreshed at every certificate renewal).")
}

// Enabled reports whether self-registration is on.
func (o *AgentOptions) Enabled() bool { return o.PlaneKubeconfig != "" }

// PlaneCAFile writes the plane's CA from --plane-kubeconfig into the state
// dir (it also verifies the tunnel hub, which serves the plane's
// certificate) and returns its path.
func (o *AgentOptions) PlaneCAFile() (string, error) {
	base, err := o.planeBase()
	if err != nil {
		return "", err
	}
	if base.CAFile != "" {
		return base.CAFile, nil
	}
	path := filepath.Join(o.StateDir, "plane-ca.crt")
	if err := writeFileAtomic(path, base.CAData); err != nil {
		return "", err
	}
	return path, nil
}

// Validate checks the options; errors name the agent's flags.
func (o *AgentOptions) Validate() error {
	var errs []error
	if o.ClusterName == "" {
		errs = append(errs, errors.New("--cluster is required: the name this cluster registers as (a DNS label)"))
	} else if !cellv1alpha1.IsDNSLabel(o.ClusterName) {
		errs = append(errs, fmt.Errorf("--cluster=%q is not a cluster name; cluster names are DNS labels: lowercase letters, digits and '-', at most 63 characters, no dots", o.ClusterName))
	}
	if o.PlaneKubeconfig == "" {
		errs = append(errs, errors.New("--plane-kubeconfig is required: a kubeconfig with the plane's address and CA (`cellfedctl token create --agent-kubeconfig=<file>` writes one)"))
	}
	if o.StateDir == "" {
		errs = append(errs, errors.New("--state-dir is required: where the agent keeps its key and certificate"))
	}
	if o.BootstrapTokenFile != "" {
		if o.BootstrapToken != "" {
			errs = append(errs, errors.New("pass --bootstrap-token or --bootstrap-token-file, not both"))
		} else if b, err := os.ReadFile(o.BootstrapTokenFile); err != nil {
			errs = append(errs, fmt.Errorf("reading --bootstrap-token-file: %w", err))
		} else {
			o.BootstrapToken = strings.TrimSpace(string(b))
		}
	}
	if o.BootstrapToken != "" {
		if _, err := ParseToken(o.BootstrapToken); err != nil {
			errs = append(errs, fmt.Errorf("--bootstrap-token: %w", err))
		}
	}
	if !cellv1alpha1.IsDNSLabel(o.MemberNamespace) {
		errs = append(errs, fmt.Errorf("--member-namespace=%q is not a namespace name", o.MemberNamespace))
	}
	if o.MemberTokenTTL < 10*time.Minute {
		errs = append(errs, fmt.Errorf("--member-token-ttl=%v is too short; the TokenRequest API grants at least 10m", o.MemberTokenTTL))
	}
	if o.RenewAfter <= 0 || o.RenewAfter >= 1 {
		errs = append(errs, fmt.Errorf("the renewal point %v must be between 0 and 1 (a fraction of the certificate's lifetime)", o.RenewAfter))
	}
	if o.PollInterval <= 0 || o.RetryInterval <= 0 {
		errs = append(errs, errors.New("poll and retry intervals must be positive"))
	}
	return errors.Join(errs...)
}

// Identity is the agent's current key and certificate; the tunnel reads
// it on every new connection, so a renewal takes effect without dropping
// the connections that are open.
type Identity struct {
	mu   sync.RWMutex
	cert *tls.Certificate
	leaf *x509.Certificate
	// since is when the agent got the certificate: its lifetime counts
	// from there (the plane backdates notBefore for clock skew).
	since time.Time
}

// GetClientCertificate is a tls.Config hook.
func (i *Identity) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return i.cert, nil
}

// Leaf is the current certificate.
func (i *Identity) Leaf() *x509.Certificate {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return i.leaf
}

// renewAt is when the current certificate should be renewed: after
// fraction of the time from its receipt (or notBefore, if later) to its
// expiry.
func (i *Identity) renewAt(fraction float64) time.Time {
	i.mu.RLock()
	defer i.mu.RUnlock()
	start := i.since
	if i.leaf.NotBefore.After(start) {
		start = i.leaf.NotBefore
	}
	return start.Add(time.Duration(float64(i.leaf.NotAfter.Sub(start)) * fraction))
}

func (i *Identity) set(certPEM, keyPEM []byte, since time.Time) error {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("the signed certificate does not match the agent's key: %w", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return fmt.Errorf("parsing the agent certificate: %w", err)
	}
	pair.Leaf = leaf
	i.mu.Lock()
	i.cert, i.leaf, i.since = &pair, leaf, since
	i.mu.Unlock()
	return nil
}

// CertFile and KeyFile are where the current pair is kept.
func (o *AgentOptions) CertFile() string { return filepath.Join(o.StateDir, certFile) }
func (o *AgentOptions) KeyFile() string  { return filepath.Join(o.StateDir, keyFile) }

// planeBase is the plane's address and CA from PlaneKubeconfig, without
// credentials.
func (o *AgentOptions) planeBase() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.PlaneKubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading --plane-kubeconfig %s: %w; `cellfedctl token create --agent-kubeconfig=<file>` writes a usable one", o.PlaneKubeconfig, err)
	}
	if cfg.Insecure {
		return nil, fmt.Errorf("--plane-kubeconfig %s skips TLS verification; give it the plane's CA (certificate-authority-data)", o.PlaneKubeconfig)
	}
	if len(cfg.CAData) == 0 && cfg.CAFile == "" {
		return nil, fmt.Errorf("--plane-kubeconfig %s has no CA for the plane; give it the plane's CA (certificate-authority-data)", o.PlaneKubeconfig)
	}
	return &rest.Config{Host: cfg.Host, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData, CAFile: cfg.CAFile, ServerName: cfg.ServerName},
		Timeout: 15 * time.Second, UserAgent: "cellfed-agent/" + o.ClusterName}, nil
}

// Bootstrap returns the agent's identity: the one kept in the state dir
// when it is valid for this cluster, else a new one from a registration
// made with the bootstrap token, once the plane approved it. It blocks
// while the registration is pending (ctx bounds the wait).
func Bootstrap(ctx context.Context, o *AgentOptions) (*Identity, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating --state-dir %s: %w", o.StateDir, err)
	}
	id, err := o.loadIdentity()
	if err != nil {
		return nil, err
	}
	if id != nil {
		klog.InfoS("Using the agent certificate from the state dir", "cluster", o.ClusterName, "notAfter", id.Leaf().NotAfter.UTC().Format(time.RFC3339))
		return id, nil
	}
	if o.BootstrapToken == "" {
		return nil, fmt.Errorf("there is no valid agent certificate in --state-dir %s and no --bootstrap-token to register with; create a token with `cellfedctl token create --tenant=<tenant>` on the plane", o.StateDir)
	}
	token, _ := ParseToken(o.BootstrapToken)
	base, err := o.planeBase()
	if err != nil {
		return nil, err
	}
	bootCfg := rest.CopyConfig(base)
	bootCfg.BearerToken = token.String()
	plane, err := dynamic.NewForConfig(bootCfg)
	if err != nil {
		return nil, fmt.Errorf("client for the plane: %w", err)
	}
	// The token first: a refused token changes nothing in the member.
	if err := checkToken(ctx, bootCfg); err != nil {
		return nil, o.bootstrapError(err, token, "authenticating to the plane")
	}
	keyPEM, csrPEM, err := o.pendingKey()
	if err != nil {
		return nil, err
	}
	// The local API server may not answer yet (the agent starts with it):
	// transient errors are retried, permission errors are not.
	var spec *cellv1alpha1.ClusterRegistrationSpec
	err = wait.PollUntilContextCancel(ctx, o.RetryInterval, true, func(ctx context.Context) (bool, error) {
		s, err := o.memberSpec(ctx, csrPEM)
		switch {
		case err == nil:
			spec = s
			return true, nil
		case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err), errors.Is(err, errMemberConfig):
			return false, err
		}
		klog.ErrorS(err, "Preparing the plane's access to this cluster; retrying", "cluster", o.ClusterName, "after", o.RetryInterval)
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	regs := plane.Resource(cellv1alpha1.ClusterRegistrationsResource)
	reg := &cellv1alpha1.ClusterRegistration{
		TypeMeta:   metav1.TypeMeta{APIVersion: cellv1alpha1.SchemeGroupVersion.String(), Kind: "ClusterRegistration"},
		ObjectMeta: metav1.ObjectMeta{Name: o.ClusterName},
		Spec:       *spec,
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(reg)
	if err != nil {
		return nil, fmt.Errorf("encoding the registration: %w", err)
	}
	_, err = regs.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	switch {
	case err == nil:
		klog.InfoS("Registered with the plane; waiting for approval", "cluster", o.ClusterName, "tokenID", token.ID, "plane", base.Host)
	case apierrors.IsAlreadyExists(err):
		// A restart while pending: the registration is ours if our token
		// made it (the bootstrap token may read only its own).
		got, gerr := regs.Get(ctx, o.ClusterName, metav1.GetOptions{})
		if gerr != nil || got.GetLabels()[LabelBootstrapTokenID] != token.ID {
			return nil, fmt.Errorf("the plane already has a registration for cluster %s that this token did not make; choose another --cluster, or ask the plane's administrator to delete ClusterRegistration %s", o.ClusterName, o.ClusterName)
		}
		klog.InfoS("Registration exists already (made by this token); waiting for approval", "cluster", o.ClusterName, "tokenID", token.ID)
	default:
		return nil, o.bootstrapError(err, token, "registering cluster "+o.ClusterName)
	}

	certPEM, err := o.waitCertificate(ctx, regs, csrPEM, func(err error) error { return o.bootstrapError(err, token, "waiting for approval") })
	if errors.Is(err, errDenied) {
		// Nothing is left behind in the member either.
		if cerr := o.removeMemberAccess(context.WithoutCancel(ctx)); cerr != nil {
			return nil, fmt.Errorf("%w; also: %v", err, cerr)
		}
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	id = &Identity{}
	if err := id.set(certPEM, keyPEM, time.Now()); err != nil {
		return nil, err
	}
	if err := o.store(certPEM, keyPEM); err != nil {
		return nil, err
	}
	if err := o.acknowledge(ctx, base, id); err != nil {
		// The plane keeps the bootstrap token until it expires; nothing
		// else depends on the acknowledgement.
		klog.ErrorS(err, "Could not acknowledge the certificate to the plane", "cluster", o.ClusterName)
	}
	klog.InfoS("Registration approved; agent certificate stored", "cluster", o.ClusterName, "notAfter", id.Leaf().NotAfter.UTC().Format(time.RFC3339), "stateDir", o.StateDir)
	return id, nil
}

// bootstrapError translates what the plane answers a bootstrap token.
// The API only says 401 for an unknown or expired token.
func (o *AgentOptions) bootstrapError(err error, token Token, doing string) error {
	switch {
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%s: the plane refused bootstrap token %s (401 Unauthorized): it is unknown, has expired, or was deleted after its registration was approved or denied; create a new one with `cellfedctl token create --tenant=<tenant>` and pass it with --bootstrap-token", doing, token.ID)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s: %w", doing, err) // admission says what and how to fix
	}
	return fmt.Errorf("%s at %s: %w; check --plane-kubeconfig and that the plane is reachable", doing, o.PlaneKubeconfig, err)
}

// memberSpec prepares the member: the plane's ServiceAccount and RBAC,
// a token for it, and what the registration reports.
func (o *AgentOptions) memberSpec(ctx context.Context, csrPEM []byte) (*cellv1alpha1.ClusterRegistrationSpec, error) {
	if o.Member == nil {
		return nil, fmt.Errorf("%w: no access to the member cluster: pass --kubeconfig (or run in-cluster)", errMemberConfig)
	}
	if o.Member.Insecure {
		return nil, fmt.Errorf("%w: the member kubeconfig skips TLS verification, so there is no CA to give the plane; set its certificate-authority", errMemberConfig)
	}
	ca := o.Member.CAData
	if len(ca) == 0 && o.Member.CAFile != "" {
		var err error
		if ca, err = os.ReadFile(o.Member.CAFile); err != nil {
			return nil, fmt.Errorf("%w: reading the member's CA %s: %v", errMemberConfig, o.Member.CAFile, err)
		}
	}
	if len(ca) == 0 {
		return nil, fmt.Errorf("%w: the member kubeconfig names no CA for its API server; set its certificate-authority (the plane pins it)", errMemberConfig)
	}
	endpoint := o.MemberEndpoint
	if endpoint == "" {
		endpoint = o.Member.Host
	}
	member, err := kubernetes.NewForConfig(o.Member)
	if err != nil {
		return nil, fmt.Errorf("client for the member: %w", err)
	}
	g := memberaccess.Grant{
		Namespace:      o.MemberNamespace,
		ServiceAccount: "cellfed-" + o.ClusterName,
		Labels:         map[string]string{"cellfed.io/registered-cluster": o.ClusterName, "app.kubernetes.io/managed-by": "cellfed-agent"},
		Where:          " in the member cluster",
	}
	wrap := func(err error, doing string) error {
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			return fmt.Errorf("%s: %w; the agent's --kubeconfig needs admin rights in the member (it grants the plane every verb on every resource)", doing, err)
		}
		return fmt.Errorf("%s: %w", doing, err)
	}
	if _, _, err := memberaccess.Ensure(ctx, member, g, func(string, func(context.Context) error) {}, wrap); err != nil {
		return nil, err
	}
	token, err := o.memberToken(ctx, member, g.ServiceAccount, ca)
	if err != nil {
		return nil, err
	}
	return &cellv1alpha1.ClusterRegistrationSpec{
		APIEndpoint:          endpoint,
		CABundle:             ca,
		TLSServerName:        o.Member.ServerName,
		ServiceAccountToken:  token,
		MemberServiceAccount: g.Namespace + "/" + g.ServiceAccount,
		CSR:                  csrPEM,
	}, nil
}

// memberToken mints a token for the plane's ServiceAccount and waits
// until the member accepts it with every right.
func (o *AgentOptions) memberToken(ctx context.Context, member kubernetes.Interface, sa string, ca []byte) (string, error) {
	token, expiry, err := memberaccess.MintToken(ctx, member, o.MemberNamespace, sa, o.MemberTokenTTL)
	if err != nil {
		return "", fmt.Errorf("requesting a token for ServiceAccount %s/%s in the member: %w", o.MemberNamespace, sa, err)
	}
	cfg := &rest.Config{Host: o.Member.Host, TLSClientConfig: rest.TLSClientConfig{CAData: ca, ServerName: o.Member.ServerName}, BearerToken: token, Timeout: 10 * time.Second}
	if err := memberaccess.WaitAuthorized(ctx, cfg, memberaccess.ServiceAccountUser(o.MemberNamespace, sa), 30*time.Second); err != nil {
		return "", err
	}
	klog.InfoS("Minted the plane's member token", "serviceAccount", o.MemberNamespace+"/"+sa, "expires", expiry.UTC().Format(time.RFC3339))
	return token, nil
}

// waitCertificate polls the registration until its certificate is for
// csrPEM's key, or it was denied, revoked or failed.
func (o *AgentOptions) waitCertificate(ctx context.Context, regs dynamic.ResourceInterface, csrPEM []byte, translate func(error) error) ([]byte, error) {
	want, err := csrPublicKey(csrPEM)
	if err != nil {
		return nil, err
	}
	var lastPhase cellv1alpha1.RegistrationPhase
	ticker := time.NewTicker(o.PollInterval)
	defer ticker.Stop()
	for {
		u, err := regs.Get(ctx, o.ClusterName, metav1.GetOptions{})
		switch {
		case err == nil:
			reg := &cellv1alpha1.ClusterRegistration{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, reg); err != nil {
				return nil, fmt.Errorf("decoding ClusterRegistration %s: %w", o.ClusterName, err)
			}
			phase := Phase(reg.Status.Conditions)
			if phase != lastPhase {
				klog.InfoS("Registration phase", "cluster", o.ClusterName, "phase", phase)
				lastPhase = phase
			}
			switch phase {
			case cellv1alpha1.RegistrationDenied, cellv1alpha1.RegistrationRevoked:
				return nil, fmt.Errorf("%w: the plane's administrator %s the registration of cluster %s (%s); nothing was set up in the plane. Ask them why; registering again needs a new bootstrap token after they delete ClusterRegistration %s", errDenied,
					map[cellv1alpha1.RegistrationPhase]string{cellv1alpha1.RegistrationDenied: "denied", cellv1alpha1.RegistrationRevoked: "revoked"}[phase], o.ClusterName, decisionMessage(reg), o.ClusterName)
			}
			if len(reg.Status.Certificate) > 0 {
				if got, err := certPublicKey(reg.Status.Certificate); err == nil && bytes.Equal(got, want) {
					return reg.Status.Certificate, nil
				}
			}
		case apierrors.IsForbidden(err), apierrors.IsNotFound(err):
			// The plane grants read access to the registration a moment
			// after it was created.
		case apierrors.IsUnauthorized(err):
			return nil, translate(err)
		default:
			klog.ErrorS(err, "Reading the registration; retrying", "cluster", o.ClusterName)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("stopped waiting for the plane to sign the certificate of cluster %s (phase %s): %w", o.ClusterName, lastPhase, ctx.Err())
		case <-ticker.C:
		}
	}
}

func decisionMessage(reg *cellv1alpha1.ClusterRegistration) string {
	for _, c := range reg.Status.Conditions {
		if (c.Type == cellv1alpha1.RegistrationConditionDenied || c.Type == cellv1alpha1.RegistrationConditionRevoked) && c.Status == metav1.ConditionTrue {
			return c.Message
		}
	}
	return "no reason given"
}

// agentClient reaches the plane as the agent identity id.
func (o *AgentOptions) agentClient(base *rest.Config, id *Identity) (dynamic.ResourceInterface, error) {
	cfg := rest.CopyConfig(base)
	leafPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: id.Leaf().Raw})
	cur, _ := id.GetClientCertificate(nil)
	keyDER, err := x509.MarshalPKCS8PrivateKey(cur.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("encoding the agent key: %w", err)
	}
	cfg.CertData = leafPEM
	cfg.KeyData = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for the plane: %w", err)
	}
	return c.Resource(cellv1alpha1.ClusterRegistrationsResource), nil
}

// acknowledge records, authenticated with the new certificate, that the
// agent uses it.
func (o *AgentOptions) acknowledge(ctx context.Context, base *rest.Config, id *Identity) error {
	regs, err := o.agentClient(base, id)
	if err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, AnnotationAgentCertificate, id.Leaf().SerialNumber.Text(16))
	if _, err := regs.Patch(ctx, o.ClusterName, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("acknowledging the certificate on ClusterRegistration %s: %w", o.ClusterName, err)
	}
	return nil
}

// Renew keeps id fresh until ctx is done: at RenewAfter of the
// certificate's lifetime it sends a new certificate request (and a fresh
// member token) on its registration, authenticated with the current
// certificate, waits for the plane to sign it, stores the new pair and
// switches id to it. Failures are retried every RetryInterval; a revoked
// registration ends it with an error.
func Renew(ctx context.Context, o *AgentOptions, id *Identity) error {
	base, err := o.planeBase()
	if err != nil {
		return err
	}
	for {
		leaf := id.Leaf()
		at := id.renewAt(o.RenewAfter)
		klog.V(2).InfoS("Next certificate renewal", "cluster", o.ClusterName, "at", at.UTC().Format(time.RFC3339))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Until(at)):
		}
		for {
			err := o.renewOnce(ctx, base, id)
			if err == nil {
				break
			}
			if errors.Is(err, errRevoked) {
				return err
			}
			klog.ErrorS(err, "Renewing the agent certificate; retrying", "cluster", o.ClusterName, "after", o.RetryInterval, "notAfter", leaf.NotAfter.UTC().Format(time.RFC3339))
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(o.RetryInterval):
			}
		}
	}
}

var (
	errMemberConfig = errors.New("member configuration")
	errRevoked      = errors.New("registration revoked")
	errDenied       = errors.New("registration refused")
)

// removeMemberAccess deletes the plane's ServiceAccount, ClusterRole and
// ClusterRoleBinding the agent created in its cluster (after a denial);
// the namespace stays.
func (o *AgentOptions) removeMemberAccess(ctx context.Context) error {
	member, err := kubernetes.NewForConfig(o.Member)
	if err != nil {
		return err
	}
	name := "cellfed-" + o.ClusterName
	var errs []error
	for what, del := range map[string]func() error{
		"ClusterRoleBinding " + name: func() error { return member.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{}) },
		"ClusterRole " + name:        func() error { return member.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{}) },
		"ServiceAccount " + o.MemberNamespace + "/" + name: func() error {
			return member.CoreV1().ServiceAccounts(o.MemberNamespace).Delete(ctx, name, metav1.DeleteOptions{})
		},
	} {
		if err := del(); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("could not delete %s in the member (delete it by hand): %w", what, err))
		}
	}
	if len(errs) == 0 {
		klog.InfoS("Removed the plane's access to this cluster after the registration was refused", "serviceAccount", o.MemberNamespace+"/"+name)
	}
	return errors.Join(errs...)
}

func (o *AgentOptions) renewOnce(ctx context.Context, base *rest.Config, id *Identity) error {
	regs, err := o.agentClient(base, id)
	if err != nil {
		return err
	}
	u, err := regs.Get(ctx, o.ClusterName, metav1.GetOptions{})
	if apierrors.IsForbidden(err) {
		// The plane removes an agent's access to its registration when it
		// is revoked, denied or deleted.
		return fmt.Errorf("%w: the plane no longer lets the agent of cluster %s read its registration (revoked or deleted by an administrator); the agent stops. Register again with a new bootstrap token once the old registration is deleted", errRevoked, o.ClusterName)
	}
	if err != nil {
		return fmt.Errorf("reading ClusterRegistration %s as the agent: %w", o.ClusterName, err)
	}
	reg := &cellv1alpha1.ClusterRegistration{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, reg); err != nil {
		return fmt.Errorf("decoding ClusterRegistration %s: %w", o.ClusterName, err)
	}
	if Phase(reg.Status.Conditions) == cellv1alpha1.RegistrationRevoked {
		return fmt.Errorf("%w: the registration of cluster %s was revoked (%s); the agent stops renewing", errRevoked, o.ClusterName, decisionMessage(reg))
	}
	keyPEM, csrPEM, err := o.pendingKey()
	if err != nil {
		return err
	}
	reg.Spec.CSR = csrPEM
	if o.Member != nil {
		// A fresh member token with every renewal; failure to mint one
		// does not block the certificate.
		if member, err := kubernetes.NewForConfig(o.Member); err == nil {
			ca := reg.Spec.CABundle
			if tok, err := o.memberToken(ctx, member, "cellfed-"+o.ClusterName, ca); err == nil {
				reg.Spec.ServiceAccountToken = tok
			} else {
				klog.ErrorS(err, "Could not refresh the plane's member token; keeping the old one", "cluster", o.ClusterName)
			}
		}
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(reg)
	if err != nil {
		return err
	}
	if _, err := regs.Update(ctx, &unstructured.Unstructured{Object: obj}, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("sending the renewal request on ClusterRegistration %s: %w", o.ClusterName, err)
	}
	waitCtx, cancel := context.WithDeadline(ctx, id.Leaf().NotAfter)
	defer cancel()
	certPEM, err := o.waitCertificate(waitCtx, regs, csrPEM, func(err error) error { return err })
	if err != nil {
		return err
	}
	if err := o.store(certPEM, keyPEM); err != nil {
		return err
	}
	if err := id.set(certPEM, keyPEM, time.Now()); err != nil {
		return err
	}
	if err := o.acknowledge(ctx, base, id); err != nil {
		klog.ErrorS(err, "Could not acknowledge the renewed certificate", "cluster", o.ClusterName)
	}
	klog.InfoS("Renewed the agent certificate", "cluster", o.ClusterName, "notAfter", id.Leaf().NotAfter.UTC().Format(time.RFC3339))
	return nil
}

// loadIdentity returns the stored pair when it names this cluster and has
// not expired, else nil.
func (o *AgentOptions) loadIdentity() (*Identity, error) {
	certPEM, err := os.ReadFile(o.CertFile())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", o.CertFile(), err)
	}
	keyPEM, err := os.ReadFile(o.KeyFile())
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w; delete %s to register again", o.KeyFile(), err, o.CertFile())
	}
	since := time.Now()
	if st, err := os.Stat(o.CertFile()); err == nil {
		since = st.ModTime()
	}
	id := &Identity{}
	if err := id.set(certPEM, keyPEM, since); err != nil {
		return nil, fmt.Errorf("%s and %s: %w; delete both to register again", o.CertFile(), o.KeyFile(), err)
	}
	cluster, err := pki.ClusterFromAgentCert(id.Leaf())
	if err != nil {
		return nil, fmt.Errorf("%s: %w; delete it and %s to register again", o.CertFile(), err, o.KeyFile())
	}
	if cluster != o.ClusterName {
		return nil, fmt.Errorf("the certificate in --state-dir %s is for cluster %s, not --cluster=%s; use another --state-dir, or the same name", o.StateDir, cluster, o.ClusterName)
	}
	if time.Now().After(id.Leaf().NotAfter) {
		klog.InfoS("The stored agent certificate has expired; registering again", "cluster", o.ClusterName, "notAfter", id.Leaf().NotAfter.UTC().Format(time.RFC3339))
		return nil, nil
	}
	return id, nil
}

// pendingKey returns the key and request for the next certificate: kept
// in the state dir so a restart while waiting reuses them.
func (o *AgentOptions) pendingKey() (keyPEM, csrPEM []byte, err error) {
	path := filepath.Join(o.StateDir, pendingKeyFile)
	if keyPEM, err = os.ReadFile(path); err == nil {
		csrPEM, err = csrForKey(keyPEM, o.ClusterName)
		if err == nil {
			return keyPEM, csrPEM, nil
		}
		klog.InfoS("Replacing an unusable pending key", "path", path, "err", err)
	}
	keyPEM, csrPEM, err = pki.NewAgentKeyAndCSR(o.ClusterName)
	if err != nil {
		return nil, nil, err
	}
	if err := writeFileAtomic(path, keyPEM); err != nil {
		return nil, nil, err
	}
	return keyPEM, csrPEM, nil
}

// store writes the new pair and drops the pending key.
func (o *AgentOptions) store(certPEM, keyPEM []byte) error {
	if err := writeFileAtomic(o.KeyFile(), keyPEM); err != nil {
		return err
	}
	if err := writeFileAtomic(o.CertFile(), certPEM); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(o.StateDir, pendingKeyFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the pending key: %w", err)
	}
	return nil
}

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	return nil
}

// checkToken asks the plane who the bootstrap token is (every
// authenticated user may).
func checkToken(ctx context.Context, cfg *rest.Config) error {
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	return err
}
