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
	"fmt"
	"net"
	"net/url"
	"os"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"k8s.io/klog/v2"
	anpagent "sigs.k8s.io/apiserver-network-proxy/pkg/agent"
	"sigs.k8s.io/apiserver-network-proxy/proto/header"
)

// Agent is a running tunnel agent.
type Agent struct {
	opts     Options
	target   string
	clients  *anpagent.ClientSet
	refusals *refusals
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
	return &Agent{opts: o, target: target, refusals: &refusals{base: o.RetryInterval, limit: o.RefusedRetryCap}}, nil
}

// Refusal is the hub's reason for refusing the agent's latest connection
// attempt, nil when it was accepted (or none was refused yet).
func (a *Agent) Refusal() error { return a.refusals.Last() }

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
	roots, what := o.HubCA, "the plane's CA"
	if len(roots) == 0 {
		var err error
		if roots, err = os.ReadFile(o.HubCAFile); err != nil {
			return fmt.Errorf("reading --hub-ca-file: %w", err)
		}
		what = "--hub-ca-file " + o.HubCAFile
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(roots) {
		return fmt.Errorf("%s holds no PEM certificate", what)
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
			grpc.WithStreamInterceptor(interceptStream(o.Cluster, a.target, a.refusals)),
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
