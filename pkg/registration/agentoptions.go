package registration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/version"
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
	// StateDir keeps the agent's key and certificate across restarts in
	// files; StateSecret ([<namespace>/]<name>) in a Secret of the member
	// instead, so that a rescheduled pod keeps its identity. One of both.
	StateDir, StateSecret string
	// MemberServiceAccount names the plane's ServiceAccount, ClusterRole
	// and ClusterRoleBinding in the member; empty means cellfed-<cluster>.
	MemberServiceAccount string
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
	// VersionWait bounds how long CheckPlaneVersion waits for the plane's
	// /version (read every PollInterval).
	VersionWait time.Duration

	// state is where the State is kept (openState).
	state Store
}

// NewAgentOptions returns the defaults.
func NewAgentOptions() *AgentOptions {
	return &AgentOptions{
		MemberNamespace: DefaultMemberNamespace,
		MemberTokenTTL:  8760 * time.Hour,
		PollInterval:    time.Second,
		RenewAfter:      2.0 / 3.0,
		RetryInterval:   10 * time.Second,
		VersionWait:     time.Minute,
	}
}

// AddFlags registers the registration flags of cellfed-agent. The
// cluster name and the member's kubeconfig are the agent's own --cluster
// and --kubeconfig.
func (o *AgentOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.PlaneKubeconfig, "plane-kubeconfig", o.PlaneKubeconfig, "Kubeconfig with the plane's address and CA (credentials in it are ignored); enables self-registration: the agent registers with --bootstrap-token, then uses and renews the certificate kept in --state-dir. `cellfedctl token create --agent-kubeconfig=<file>` writes one.")
	fs.StringVar(&o.BootstrapToken, "bootstrap-token", o.BootstrapToken, "Single-use bootstrap token from `cellfedctl token create`; needed only until the registration is approved (prefer --bootstrap-token-file: command lines are visible to other users).")
	fs.StringVar(&o.BootstrapTokenFile, "bootstrap-token-file", o.BootstrapTokenFile, "File holding the bootstrap token.")
	fs.StringVar(&o.StateDir, "state-dir", o.StateDir, "Directory where the agent keeps its key and certificate (0600) across restarts. Exclusive with --state-secret.")
	fs.StringVar(&o.StateSecret, "state-secret", o.StateSecret, "Secret [<namespace>/]<name> of this cluster where the agent keeps its key and certificate, so that a rescheduled pod keeps its identity (the namespace defaults to the pod's: $POD_NAMESPACE, else its ServiceAccount's). Needs get, create and update on it. Exclusive with --state-dir.")
	fs.StringVar(&o.MemberServiceAccount, "member-service-account", o.MemberServiceAccount, "Name of the plane's ServiceAccount in --member-namespace, and of its ClusterRole and ClusterRoleBinding (default: cellfed-<cluster>). The agent creates them when they are missing; manifests/agent creates them so the agent needs no right to grant rights.")
	fs.StringVar(&o.MemberEndpoint, "member-endpoint", o.MemberEndpoint, "URL at which the agent reaches its API server, reported to the plane (default: the server of --kubeconfig).")
	fs.StringVar(&o.MemberNamespace, "member-namespace", o.MemberNamespace, "Namespace of the plane's ServiceAccount in this cluster.")
	fs.DurationVar(&o.MemberTokenTTL, "member-token-ttl", o.MemberTokenTTL, "Lifetime asked for the plane's member token (refreshed at every certificate renewal).")
}

// Enabled reports whether self-registration is on.
func (o *AgentOptions) Enabled() bool { return o.PlaneKubeconfig != "" }

// PlaneCA returns the plane's CA from --plane-kubeconfig (it also
// verifies the tunnel hub, which serves the plane's certificate).
func (o *AgentOptions) PlaneCA() ([]byte, error) {
	base, err := o.planeBase()
	if err != nil {
		return nil, err
	}
	if base.CAFile == "" {
		return base.CAData, nil
	}
	b, err := os.ReadFile(base.CAFile)
	if err != nil {
		return nil, fmt.Errorf("reading the plane's CA %s named in --plane-kubeconfig: %w", base.CAFile, err)
	}
	return b, nil
}

// openState opens the store the flags choose.
func (o *AgentOptions) openState() error {
	if o.state != nil {
		return nil
	}
	if o.StateDir != "" {
		s, err := NewDirStore(o.StateDir)
		if err != nil {
			return err
		}
		o.state = s
		return nil
	}
	ns, name, err := ParseStateSecret(o.StateSecret, podNamespace())
	if err != nil {
		return err
	}
	if o.Member == nil {
		return fmt.Errorf("--state-secret needs access to this cluster: pass --kubeconfig (or run in-cluster)")
	}
	c, err := kubernetes.NewForConfig(o.Member)
	if err != nil {
		return fmt.Errorf("client for the member: %w", err)
	}
	o.state = NewSecretStore(c, ns, name, o.ClusterName)
	return nil
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
	switch {
	case o.StateDir == "" && o.StateSecret == "":
		errs = append(errs, errNoStore)
	case o.StateDir != "" && o.StateSecret != "":
		errs = append(errs, errors.New("pass --state-dir or --state-secret, not both"))
	}
	if o.MemberServiceAccount != "" && !isDNSSubdomain(o.MemberServiceAccount) {
		errs = append(errs, fmt.Errorf("--member-service-account=%q is not a ServiceAccount name", o.MemberServiceAccount))
	}
	if o.BootstrapTokenFile != "" {
		if o.BootstrapToken != "" {
			errs = append(errs, errors.New("pass --bootstrap-token or --bootstrap-token-file, not both"))
		} else if b, err := os.ReadFile(o.BootstrapTokenFile); errors.Is(err, os.ErrNotExist) {
			// An optional Secret volume that is gone after approval: the
			// stored certificate is used; without one Bootstrap says so.
			klog.InfoS("No bootstrap token file; using the stored certificate", "path", o.BootstrapTokenFile)
		} else if err != nil {
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

// CheckPlaneVersion applies the skew policy for cellfed-agent: it reads
// the plane's /version without credentials (the public information every
// Kubernetes API server shows) and refuses a plane of a release this agent
// does not support. A plane whose version cannot be read within
// VersionWait (unreachable, or hiding /version from anonymous clients) is
// not checked (logged): an agent with a stored certificate needs only the
// tunnel hub.
func (o *AgentOptions) CheckPlaneVersion(ctx context.Context) error {
	base, err := o.planeBase()
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(base)
	if err != nil {
		return fmt.Errorf("client for the plane at %s: %w", base.Host, err)
	}
	interval := o.PollInterval
	if interval <= 0 {
		interval = time.Second // Validate refuses it later, with the flag's name
	}
	waitCtx, cancel := context.WithTimeout(ctx, o.VersionWait)
	defer cancel()
	planeVersion, err := version.PlaneVersion(waitCtx, dc.RESTClient(), interval)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		klog.InfoS("The plane's version could not be read; its release is not checked", "plane", base.Host, "after", o.VersionWait, "err", err)
		return nil
	}
	return version.CheckPlaneVersion("cellfed-agent", version.ControllerSkew, planeVersion, base.Host)
}
