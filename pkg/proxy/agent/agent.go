// Package agent is the member side of a reverse tunnel: it connects out
// to the tunnel hub with its cluster's agent certificate, announces only
// its own cluster, and serves the hub's dials by connecting to its local
// API server, refusing every other target.
//
// It imports the ANP agent and client-go only (never k8s.io/kubernetes).
package agent

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	clientproto "sigs.k8s.io/apiserver-network-proxy/konnectivity-client/proto/client"
	anpagent "sigs.k8s.io/apiserver-network-proxy/pkg/agent"
	"sigs.k8s.io/apiserver-network-proxy/proto/header"
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
	// ProbeInterval is how often the agent checks its hub connection.
	ProbeInterval time.Duration
}

// NewOptions returns the defaults: 5 s keepalives with a 5 s timeout (a
// dead link is noticed within 10 s), 2 s connection attempts retried
// every 0.5 s growing to 1 s, so a returning link is used again within
// about 3 s.
func NewOptions() *Options {
	return &Options{
		KeepaliveTime:    5 * time.Second,
		KeepaliveTimeout: 5 * time.Second,
		ConnectTimeout:   2 * time.Second,
		RetryInterval:    500 * time.Millisecond,
		RetryIntervalCap: time.Second,
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
	if o.HubCAFile == "" {
		errs = append(errs, errors.New("--hub-ca-file is required"))
	}
	if o.GetClientCertificate == nil && (o.CertFile == "" || o.KeyFile == "") {
		errs = append(errs, errors.New("--cert-file and --key-file are required"))
	}
	if o.AgentID != "" && !strings.HasPrefix(o.AgentID, o.Cluster+"/") {
		errs = append(errs, fmt.Errorf("--agent-id %q must start with %q", o.AgentID, o.Cluster+"/"))
	}
	for name, d := range map[string]time.Duration{"keepalive-time": o.KeepaliveTime, "keepalive-timeout": o.KeepaliveTimeout, "connect-timeout": o.ConnectTimeout, "retry-interval": o.RetryInterval, "retry-interval-cap": o.RetryIntervalCap, "probe interval": o.ProbeInterval} {
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

// Agent is a running tunnel agent.
type Agent struct {
	opts    Options
	target  string
	clients *anpagent.ClientSet
}

// New resolves the local API server and prepares the agent.
func New(o Options) (*Agent, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	target := o.Target
	if target == "" {
		cfg, err := o.RESTConfig()
		if err != nil {
			return nil, err
		}
		if target, err = TargetFromHost(cfg.Host); err != nil {
			return nil, err
		}
	}
	if o.AgentID == "" {
		b := make([]byte, 8)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("agent ID: %w", err)
		}
		o.AgentID = o.Cluster + "/" + hex.EncodeToString(b)
	}
	return &Agent{opts: o, target: target}, nil
}

// Target is the local API server address dials go to.
func (a *Agent) Target() string { return a.target }

// Connected reports how many hub connections are healthy.
func (a *Agent) Connected() int {
	if a.clients == nil {
		return 0
	}
	return a.clients.HealthyClientsCount()
}

// Run connects to the hub and serves until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	o := a.opts
	roots, err := os.ReadFile(o.HubCAFile)
	if err != nil {
		return fmt.Errorf("reading --hub-ca-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(roots) {
		return fmt.Errorf("--hub-ca-file %s holds no PEM certificate", o.HubCAFile)
	}
	getCert := o.GetClientCertificate
	if getCert == nil {
		fc := &fileCert{certFile: o.CertFile, keyFile: o.KeyFile}
		if _, err := fc.load(); err != nil {
			return err
		}
		getCert = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return fc.load() }
	}
	serverName := o.HubServerName
	if serverName == "" {
		serverName, _, _ = net.SplitHostPort(o.HubAddress)
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, ServerName: serverName, GetClientCertificate: getCert}
	idents := url.Values{string(header.Host): {o.Cluster}}.Encode()
	cfg := &anpagent.ClientSetConfig{
		Address:          o.HubAddress,
		AgentID:          o.AgentID,
		AgentIdentifiers: idents,
		SyncInterval:     o.RetryInterval,
		ProbeInterval:    o.ProbeInterval,
		SyncIntervalCap:  o.RetryIntervalCap,
		XfrChannelSize:   150,
		DialOptions: []grpc.DialOption{
			grpc.WithTransportCredentials(credentials.NewTLS(tlsConfig)),
			grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: o.KeepaliveTime, Timeout: o.KeepaliveTimeout, PermitWithoutStream: true}),
			grpc.WithConnectParams(grpc.ConnectParams{
				MinConnectTimeout: o.ConnectTimeout,
				Backoff:           backoff.Config{BaseDelay: o.RetryInterval, Multiplier: 1.5, Jitter: 0.1, MaxDelay: o.RetryIntervalCap},
			}),
			grpc.WithStreamInterceptor(rewriteDials(o.Cluster, a.target)),
		},
	}
	stop := make(chan struct{})
	drain := make(chan struct{})
	a.clients = cfg.NewAgentClientSet(drain, stop)
	// ANP's agent panics in Serve without a server counter.
	a.clients.SetServerCounter(anpagent.NewResponseBasedCounter(a.clients))
	klog.InfoS("Tunnel agent starting", "cluster", o.Cluster, "agentID", o.AgentID, "hub", o.HubAddress, "target", a.target)
	a.clients.Serve()
	<-ctx.Done()
	close(stop)
	return nil
}

// fileCert reads a certificate pair again when either file changed.
type fileCert struct {
	certFile, keyFile string
	mu                sync.Mutex
	stamp             string
	cert              *tls.Certificate
}

func (f *fileCert) load() (*tls.Certificate, error) {
	stamp := ""
	for _, p := range []string{f.certFile, f.keyFile} {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("agent certificate: %w", err)
		}
		stamp += fmt.Sprintf("%d/%d;", st.ModTime().UnixNano(), st.Size())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cert != nil && stamp == f.stamp {
		return f.cert, nil
	}
	c, err := tls.LoadX509KeyPair(f.certFile, f.keyFile)
	if err != nil {
		if f.cert != nil { // mid-rotation: keep the last good pair
			klog.InfoS("Agent certificate unreadable, keeping the previous one", "err", err)
			return f.cert, nil
		}
		return nil, fmt.Errorf("loading agent certificate: %w", err)
	}
	if f.cert != nil {
		klog.InfoS("Agent certificate reloaded", "file", f.certFile)
	}
	f.cert, f.stamp = &c, stamp
	return f.cert, nil
}

// refusedNetwork makes the ANP agent's dial fail without connecting
// anywhere: its name is the error the hub and the client see.
const refusedNetwork = "refused-target-not-this-cluster"

// rewriteDials intercepts the hub's dial requests on the agent's stream:
// a dial for <cluster>:<any port> goes to target, anything else is
// refused.
func rewriteDials(cluster, target string) grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		s, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			return nil, err
		}
		return &rewriteStream{ClientStream: s, cluster: cluster, target: target}, nil
	}
}

type rewriteStream struct {
	grpc.ClientStream
	cluster, target string
}

func (s *rewriteStream) RecvMsg(m any) error {
	if err := s.ClientStream.RecvMsg(m); err != nil {
		return err
	}
	if pkt, ok := m.(*clientproto.Packet); ok && pkt.Type == clientproto.PacketType_DIAL_REQ {
		rewriteDial(pkt.GetDialRequest(), s.cluster, s.target)
	}
	return nil
}

// rewriteDial points an allowed dial at target and makes any other fail.
func rewriteDial(req *clientproto.DialRequest, cluster, target string) {
	if req == nil {
		return
	}
	host, _, err := net.SplitHostPort(req.Address)
	if err != nil {
		host = req.Address
	}
	if host == cluster && req.Protocol == "tcp" {
		req.Address = target
		return
	}
	klog.InfoS("Refused a dial for another target", "cluster", cluster, "address", req.Address, "protocol", req.Protocol)
	req.Protocol = refusedNetwork
	req.Address = ""
}
