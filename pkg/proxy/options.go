package proxy

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/spf13/pflag"

	"github.com/cellfed/cellfed/pkg/pki"
)

// Options configure the hub. NewOptions holds the defaults; a port of 0
// disables its listener (tests pass listeners or pick free ports).
type Options struct {
	// AgentBindAddress and AgentPort are where agents connect (gRPC, mTLS
	// with agent-CA client certificates). This listener faces the
	// members' networks.
	AgentBindAddress string
	AgentPort        int
	// GRPCBindAddress and GRPCPort are the gRPC tunnel frontend for
	// clients with plane-CA client certificates (cellfed-controller).
	GRPCBindAddress string
	GRPCPort        int
	// ConnectBindAddress and ConnectPort are the HTTP CONNECT frontend,
	// the proxy of KubeFedClusters' spec.proxyURL.
	ConnectBindAddress string
	ConnectPort        int
	// ConnectTLS serves the CONNECT frontend over TLS with the serving
	// certificate (proxy URLs https://): the per-cluster credential never
	// travels in clear. Go's HTTP client verifies an https proxy with the
	// REST config's CA, which for KubeFed is the KubeFedCluster's
	// caBundle, so the plane appends ConnectCAFile to it. Off, the
	// frontend speaks plain HTTP (proxy URLs http://).
	ConnectTLS bool
	// ConnectCAFile is the CA that verifies the serving certificate; it
	// goes into tunnelled clusters' caBundle (ConnectCA).
	ConnectCAFile string
	// ConnectAdvertiseHost is the host ConnectURL puts in proxy URLs;
	// empty means the bind address (127.0.0.1 when unspecified).
	ConnectAdvertiseHost string

	// ServingCertFile and ServingKeyFile are the hub's TLS certificate,
	// shown to agents and gRPC clients.
	ServingCertFile, ServingKeyFile string
	// AgentCAFile verifies agents' client certificates.
	AgentCAFile string
	// ClientCAFile verifies gRPC frontend clients' certificates.
	ClientCAFile string
	// ConnectSecretFile holds the secret the CONNECT frontend derives
	// per-cluster proxy credentials from; created when missing.
	ConnectSecretFile string

	// KeepaliveTime is the idle time after which the hub pings an agent,
	// and KeepaliveTimeout how long it waits for the answer: an agent
	// whose link silently died is dropped after at most their sum.
	KeepaliveTime    time.Duration
	KeepaliveTimeout time.Duration
	// DialTimeout bounds an agent's answer to a dial.
	DialTimeout time.Duration
	// ChannelSize is ANP's per-stream packet buffer.
	ChannelSize int
	// ServerCount is how many hubs serve the plane (its replicas); agents
	// keep a connection to each, so any replica reaches every cluster.
	ServerCount int

	// ClientGroups are the certificate groups (organizations) of plane-CA
	// certificates the gRPC frontend accepts.
	ClientGroups []string

	// Admit, when set, is asked before an agent for cluster is accepted
	// (after its certificate verified); an error refuses the agent, and
	// its message is sent to the agent. Registration uses it to refuse
	// revoked clusters.
	Admit func(ctx context.Context, cluster string, cert *x509.Certificate) error

	// ConnectGeneration, when set, is cluster's current proxy credential
	// generation (its registration's spec.proxyCredentialGeneration; 0
	// without a registration): the CONNECT frontend accepts only the
	// credential of that generation. An error answers 503 with it.
	ConnectGeneration func(cluster string) (int64, error)
}

// NewOptions returns the defaults: every listener on loopback, agents on
// 8132, the gRPC frontend on 8131 and CONNECT on 8133; 10 s keepalives.
func NewOptions() *Options {
	return &Options{
		AgentBindAddress:   "127.0.0.1",
		AgentPort:          8132,
		GRPCBindAddress:    "127.0.0.1",
		GRPCPort:           8131,
		ConnectBindAddress: "127.0.0.1",
		ConnectPort:        8133,
		ConnectTLS:         true,
		KeepaliveTime:      10 * time.Second,
		KeepaliveTimeout:   10 * time.Second,
		DialTimeout:        10 * time.Second,
		ChannelSize:        150,
		ServerCount:        1,
		ClientGroups:       []string{pki.AdminGroup},
	}
}

// AddFlags registers the listener and timing flags. Files are the
// caller's: the plane takes them from its data dir, cellfed-proxy adds
// its own flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.AgentBindAddress, "tunnel-agent-bind-address", o.AgentBindAddress, "Address the tunnel hub listens on for agents (members' networks must reach it).")
	fs.IntVar(&o.AgentPort, "tunnel-agent-port", o.AgentPort, "Port for tunnel agents (gRPC, mTLS with agent certificates); 0 disables the tunnel hub's agent listener.")
	fs.StringVar(&o.GRPCBindAddress, "tunnel-grpc-bind-address", o.GRPCBindAddress, "Address of the tunnel hub's gRPC frontend for controllers.")
	fs.IntVar(&o.GRPCPort, "tunnel-grpc-port", o.GRPCPort, "Port of the gRPC tunnel frontend (mTLS with plane-CA client certificates); 0 disables it.")
	fs.StringVar(&o.ConnectBindAddress, "tunnel-connect-bind-address", o.ConnectBindAddress, "Address of the tunnel hub's HTTP CONNECT frontend (per-cluster proxy credentials; keep it on a network only controllers reach).")
	fs.BoolVar(&o.ConnectTLS, "tunnel-connect-tls", o.ConnectTLS, "Serve the CONNECT frontend over TLS (proxy URLs https://, the hub's serving certificate, its CA appended to tunnelled clusters' caBundle), so proxy credentials never travel in clear; false serves plain HTTP.")
	fs.IntVar(&o.ConnectPort, "tunnel-connect-port", o.ConnectPort, "Port of the HTTP CONNECT frontend used by KubeFedCluster spec.proxyURL; 0 disables it.")
	fs.StringVar(&o.ConnectAdvertiseHost, "tunnel-connect-advertise-host", o.ConnectAdvertiseHost, "Host put in the proxy URLs of tunnelled clusters (default: the CONNECT bind address).")
	fs.IntVar(&o.ServerCount, "tunnel-server-count", o.ServerCount, "Number of tunnel hubs (plane replicas) behind the agents' address; each agent keeps a connection to every one of them, so any replica reaches every tunnelled cluster.")
	fs.DurationVar(&o.KeepaliveTime, "tunnel-keepalive-time", o.KeepaliveTime, "Idle time after which the hub pings an agent.")
	fs.DurationVar(&o.KeepaliveTimeout, "tunnel-keepalive-timeout", o.KeepaliveTimeout, "Time the hub waits for an agent's ping answer before dropping it.")
	fs.DurationVar(&o.DialTimeout, "tunnel-dial-timeout", o.DialTimeout, "Time the hub waits for an agent to answer a dial.")
}

// Enabled reports whether any listener is on.
func (o *Options) Enabled() bool { return o.AgentPort != 0 }

// Validate checks the options.
func (o *Options) Validate() []error {
	var errs []error
	for _, p := range []struct {
		name string
		port int
		addr string
	}{{"agent", o.AgentPort, o.AgentBindAddress}, {"grpc", o.GRPCPort, o.GRPCBindAddress}, {"connect", o.ConnectPort, o.ConnectBindAddress}} {
		if p.port < 0 || p.port > 65535 {
			errs = append(errs, fmt.Errorf("--tunnel-%s-port %d is out of range", p.name, p.port))
		}
		if p.port != 0 && net.ParseIP(p.addr) == nil {
			errs = append(errs, fmt.Errorf("--tunnel-%s-bind-address %q is not an IP address", p.name, p.addr))
		}
	}
	if o.AgentPort != 0 && (o.GRPCPort == 0 && o.ConnectPort == 0) {
		errs = append(errs, errors.New("the tunnel hub needs a client frontend: set --tunnel-grpc-port or --tunnel-connect-port"))
	}
	if o.KeepaliveTime < time.Second || o.KeepaliveTimeout < time.Second {
		errs = append(errs, errors.New("--tunnel-keepalive-time and --tunnel-keepalive-timeout must be at least 1s"))
	}
	if o.DialTimeout <= 0 {
		errs = append(errs, errors.New("--tunnel-dial-timeout must be positive"))
	}
	if o.ServerCount < 1 {
		errs = append(errs, fmt.Errorf("--tunnel-server-count must be at least 1 (the number of plane replicas running a hub), got %d", o.ServerCount))
	}
	if o.ChannelSize < 1 {
		errs = append(errs, errors.New("tunnel channel size must be at least 1"))
	}
	if o.AgentPort != 0 {
		for name, f := range map[string]string{"serving certificate": o.ServingCertFile, "serving key": o.ServingKeyFile, "agent CA": o.AgentCAFile, "client CA": o.ClientCAFile, "CONNECT secret": o.ConnectSecretFile} {
			if f == "" {
				errs = append(errs, fmt.Errorf("tunnel hub: no %s file", name))
			}
		}
		if o.ConnectPort != 0 && o.ConnectTLS && o.ConnectCAFile == "" {
			errs = append(errs, errors.New("tunnel hub: the TLS CONNECT frontend needs the CA of its serving certificate (for tunnelled clusters' caBundle)"))
		}
	}
	return errs
}
