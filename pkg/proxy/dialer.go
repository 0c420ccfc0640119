package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"k8s.io/klog/v2"
	konnectivity "sigs.k8s.io/apiserver-network-proxy/konnectivity-client/pkg/client"
)

// DialerOptions configure a client of the hub's gRPC tunnel frontend.
type DialerOptions struct {
	// Address is the gRPC frontend, host:port.
	Address string
	// ServerName is the name the hub's certificate must show; empty means
	// the host of Address.
	ServerName string
	// CAFile verifies the hub (the plane's CA); CertFile and KeyFile are
	// the client's plane-CA certificate.
	CAFile, CertFile, KeyFile string
	// CAData, CertData and KeyData are PEM used when the files are empty.
	CAData, CertData, KeyData []byte
	// KeepaliveTime and KeepaliveTimeout detect a dead hub connection.
	KeepaliveTime, KeepaliveTimeout time.Duration
	// Port is the port put in dial targets (<cluster>:<port>); the agent
	// dials its own API server whatever it is.
	Port int
}

// NewDialerOptions returns the defaults.
func NewDialerOptions() DialerOptions {
	return DialerOptions{KeepaliveTime: 10 * time.Second, KeepaliveTimeout: 10 * time.Second, Port: 443}
}

// Dialer opens connections to member API servers through the hub's gRPC
// frontend: one gRPC connection, one stream per connection.
type Dialer struct {
	tunnel konnectivity.ReusableTunnel
	port   string
}

// NewDialer connects (lazily) to the hub's gRPC frontend.
func NewDialer(o DialerOptions) (*Dialer, error) {
	if o.CAFile != "" {
		b, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tunnel hub CA: %w", err)
		}
		o.CAData = b
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(o.CAData) {
		return nil, errors.New("tunnel hub CA: no PEM certificate")
	}
	if o.CertFile != "" || o.KeyFile != "" {
		var err error
		if o.CertData, err = os.ReadFile(o.CertFile); err != nil {
			return nil, fmt.Errorf("tunnel client certificate: %w", err)
		}
		if o.KeyData, err = os.ReadFile(o.KeyFile); err != nil {
			return nil, fmt.Errorf("tunnel client key: %w", err)
		}
	}
	cert, err := tls.X509KeyPair(o.CertData, o.KeyData)
	if err != nil {
		return nil, fmt.Errorf("tunnel client certificate: %w", err)
	}
	serverName := o.ServerName
	if serverName == "" {
		if h, _, err := net.SplitHostPort(o.Address); err == nil {
			serverName = h
		}
	}
	creds := credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, Certificates: []tls.Certificate{cert}, ServerName: serverName})
	t, err := konnectivity.CreateGRPCTunnel(context.Background(), o.Address,
		grpc.WithTransportCredentials(creds),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: o.KeepaliveTime, Timeout: o.KeepaliveTimeout, PermitWithoutStream: true}),
	)
	if err != nil {
		return nil, fmt.Errorf("tunnel hub %s: %w", o.Address, err)
	}
	port := o.Port
	if port == 0 {
		port = 443
	}
	return &Dialer{tunnel: t, port: fmt.Sprint(port)}, nil
}

// DialCluster opens a connection to cluster's API server. The returned
// connection's Close never blocks the caller.
func (d *Dialer) DialCluster(ctx context.Context, cluster string) (net.Conn, error) {
	c, err := d.tunnel.DialContext(ctx, "tcp", net.JoinHostPort(cluster, d.port))
	if err != nil {
		if strings.Contains(err.Error(), "No agent available") {
			return nil, fmt.Errorf(noAgentFormat, cluster)
		}
		return nil, fmt.Errorf("dialing cluster %s through the tunnel hub: %w", cluster, err)
	}
	return &asyncCloseConn{Conn: c}, nil
}

// DialFunc dials cluster whatever address it is asked for, for
// rest.Config.Dial.
func (d *Dialer) DialFunc(cluster string) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, _, _ string) (net.Conn, error) {
		return d.DialCluster(ctx, cluster)
	}
}

// Close closes the tunnel (it may block while streams drain).
func (d *Dialer) Close() error { return d.tunnel.Close() }

// asyncCloseConn closes in the background: konnectivity's Close waits up
// to 10 s for the hub's answer, which must not hold a controller worker.
type asyncCloseConn struct {
	net.Conn
	once sync.Once
}

func (c *asyncCloseConn) Close() error {
	c.once.Do(func() {
		go func() {
			if err := c.Conn.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
				klog.V(4).InfoS("Closing tunnel connection", "err", err)
			}
		}()
	})
	return nil
}
