package agent

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Options configure an agent. NewOptions holds the defaults.
type Options struct {
	// Cluster is the cluster this agent serves; its certificate must
	// name it.
	Cluster string
	// HubAddress is the hub's agent listener, host:port.
	HubAddress string
	// HubServerName is the name the hub's certificate must show; empty
	// means the host of HubAddress.
	HubServerName string
	// HubCAFile verifies the hub's certificate (the plane's CA).
	HubCAFile string
	// HubCA, when set, is the CA bundle (PEM) instead of HubCAFile.
	HubCA []byte
	// CertFile and KeyFile are the agent's client certificate, read again
	// whenever they change (renewal replaces them).
	CertFile, KeyFile string
	// GetClientCertificate, when set, supplies the client certificate
	// instead of CertFile and KeyFile.
	GetClientCertificate func(*tls.CertificateRequestInfo) (*tls.Certificate, error)

	// Kubeconfig is the local API server's kubeconfig; empty means the
	// in-cluster configuration. Only its server address is used.
	Kubeconfig string
	// Target overrides the local API server address (host:port).
	Target string
	// AgentID is announced to the hub; empty means <cluster>/<random>.
	AgentID string

	// KeepaliveTime and KeepaliveTimeout detect a dead hub link.
	KeepaliveTime, KeepaliveTimeout time.Duration
	// ConnectTimeout bounds one connection attempt to the hub.
	ConnectTimeout time.Duration
	// RetryInterval is the first wait between connection attempts, growing
	// by half each failure up to RetryIntervalCap.
	RetryInterval, RetryIntervalCap time.Duration
	// RefusedRetryCap bounds the extra wait after refusals by the hub
	// (growing from RetryInterval by half each refusal in a row): a
	// revoked or superseded agent knocks rarely, not once a second.
	RefusedRetryCap time.Duration
	// ProbeInterval is how often the agent checks its hub connection.
	ProbeInterval time.Duration
}

// NewOptions returns the defaults: 5 s keepalives with a 5 s timeout (a
// dead link is noticed within 10 s), 2 s connection attempts retried
// every 0.5 s growing to 1 s, so a returning link is used again within
// about 3 s; after refusals by the hub the wait grows to a minute.
func NewOptions() *Options {
	return &Options{
		KeepaliveTime:    5 * time.Second,
		KeepaliveTimeout: 5 * time.Second,
		ConnectTimeout:   2 * time.Second,
		RetryInterval:    500 * time.Millisecond,
		RetryIntervalCap: time.Second,
		RefusedRetryCap:  time.Minute,
		ProbeInterval:    500 * time.Millisecond,
	}
}

// AddFlags registers the agent's flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Cluster, "cluster", o.Cluster, "Name of the cluster this agent serves (its certificate must name it).")
	fs.StringVar(&o.HubAddress, "hub-address", o.HubAddress, "The tunnel hub's agent listener, host:port.")
	fs.StringVar(&o.HubServerName, "hub-server-name", o.HubServerName, "Name the hub's certificate must show (default: the host of --hub-address).")
	fs.StringVar(&o.HubCAFile, "hub-ca-file", o.HubCAFile, "CA bundle that verifies the hub (the plane's CA).")
	fs.StringVar(&o.CertFile, "cert-file", o.CertFile, "The agent's client certificate (from the plane's agent CA); re-read when it changes.")
	fs.StringVar(&o.KeyFile, "key-file", o.KeyFile, "The agent's client key.")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Kubeconfig of the local API server (default: in-cluster configuration).")
	fs.StringVar(&o.Target, "target", o.Target, "Local API server address host:port (default: from --kubeconfig or in-cluster configuration).")
	fs.StringVar(&o.AgentID, "agent-id", o.AgentID, "Agent ID announced to the hub, <cluster>/<suffix> (default: <cluster>/<random>).")
	fs.DurationVar(&o.KeepaliveTime, "keepalive-time", o.KeepaliveTime, "Idle time after which the agent pings the hub.")
	fs.DurationVar(&o.KeepaliveTimeout, "keepalive-timeout", o.KeepaliveTimeout, "Time the agent waits for the hub's ping answer.")
	fs.DurationVar(&o.ConnectTimeout, "connect-timeout", o.ConnectTimeout, "Time one connection attempt to the hub may take.")
	fs.DurationVar(&o.RetryInterval, "retry-interval", o.RetryInterval, "First wait between connection attempts.")
	fs.DurationVar(&o.RetryIntervalCap, "retry-interval-cap", o.RetryIntervalCap, "Longest wait between connection attempts.")
	fs.DurationVar(&o.RefusedRetryCap, "refused-retry-interval-cap", o.RefusedRetryCap, "Longest extra wait after the hub refused the agent (growing from --retry-interval by half each refusal in a row).")
}

// Validate checks the options.
func (o *Options) Validate() error {
	var errs []error
	if errs2 := validation.IsDNS1123Subdomain(o.Cluster); len(errs2) > 0 {
		errs = append(errs, fmt.Errorf("--cluster %q: %s", o.Cluster, strings.Join(errs2, "; ")))
	}
	if _, _, err := net.SplitHostPort(o.HubAddress); err != nil {
		errs = append(errs, fmt.Errorf("--hub-address %q is not host:port", o.HubAddress))
	}
	if o.HubCAFile == "" && len(o.HubCA) == 0 {
		errs = append(errs, errors.New("--hub-ca-file is required"))
	}
	if o.GetClientCertificate == nil && (o.CertFile == "" || o.KeyFile == "") {
		errs = append(errs, errors.New("--cert-file and --key-file are required"))
	}
	if o.AgentID != "" && !strings.HasPrefix(o.AgentID, o.Cluster+"/") {
		errs = append(errs, fmt.Errorf("--agent-id %q must start with %q", o.AgentID, o.Cluster+"/"))
	}
	for name, d := range map[string]time.Duration{"keepalive-time": o.KeepaliveTime, "keepalive-timeout": o.KeepaliveTimeout, "connect-timeout": o.ConnectTimeout, "retry-interval": o.RetryInterval, "retry-interval-cap": o.RetryIntervalCap, "refused-retry-interval-cap": o.RefusedRetryCap, "probe interval": o.ProbeInterval} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("--%s must be positive", name))
		}
	}
	return errors.Join(errs...)
}

// RESTConfig is the local API server's configuration: from Kubeconfig,
// or in-cluster.
func (o *Options) RESTConfig() (*rest.Config, error) {
	if o.Kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("loading --kubeconfig: %w", err)
		}
		return cfg, nil
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("in-cluster configuration (pass --kubeconfig outside a cluster): %w", err)
	}
	return cfg, nil
}

// TargetFromHost turns a rest.Config host (URL or host[:port]) into the
// host:port the agent dials.
func TargetFromHost(h string) (string, error) {
	if !strings.Contains(h, "://") {
		h = "https://" + h
	}
	u, err := url.Parse(h)
	if err != nil || u.Hostname() == "" {
		return "", fmt.Errorf("API server address %q is not a URL", h)
	}
	port := u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}
