package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
	clientproto "sigs.k8s.io/apiserver-network-proxy/konnectivity-client/proto/client"
	"sigs.k8s.io/apiserver-network-proxy/pkg/server"
	agentproto "sigs.k8s.io/apiserver-network-proxy/proto/agent"
)

// noAgentFormat is the error of a dial for a cluster without a connected agent.
const noAgentFormat = "no agent connected for cluster %s"

// Hub is the tunnel hub: ANP's proxy server behind an agent listener that
// binds agents to their clusters, a gRPC frontend and a CONNECT frontend.
type Hub struct {
	opts      Options
	ps        *server.ProxyServer
	tunnel    *server.Tunnel
	secret    []byte
	serving   tls.Certificate
	agentCAs  *x509.CertPool
	clientCAs *x509.CertPool
	// connectCA verifies the serving certificate on the TLS CONNECT
	// frontend (nil when it speaks plain HTTP).
	connectCA []byte

	agentLn, grpcLn, connectLn net.Listener

	mu     sync.Mutex
	agents map[string]map[*agentConn]struct{} // by cluster

	// health is nil while Run serves, else why the hub does not.
	health atomic.Pointer[error]
}

// agentConn is one agent stream; cancel ends it. routable is set once
// ANP has registered the stream as a backend, so dials can use it.
type agentConn struct {
	id       string
	cancel   context.CancelCauseFunc
	routable atomic.Bool
}

// New loads the hub's certificates and secret and builds the proxy server.
// Listeners open in Listen.
func New(o Options) (*Hub, error) {
	if errs := o.Validate(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	serving, err := tls.LoadX509KeyPair(o.ServingCertFile, o.ServingKeyFile)
	if err != nil {
		return nil, fmt.Errorf("loading the tunnel hub's serving certificate: %w", err)
	}
	agentCAs, err := loadPool(o.AgentCAFile)
	if err != nil {
		return nil, fmt.Errorf("tunnel agent CA: %w", err)
	}
	clientCAs, err := loadPool(o.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("tunnel client CA: %w", err)
	}
	secret, err := LoadOrCreateSecret(o.ConnectSecretFile)
	if err != nil {
		return nil, err
	}
	var connectCA []byte
	if o.ConnectPort != 0 && o.ConnectTLS {
		if connectCA, err = checkConnectServing(serving, o.ConnectCAFile, connectHost(&o)); err != nil {
			return nil, err
		}
	}
	registerMetrics()
	id, _ := os.Hostname()
	// A non-nil, disabled token authentication: agents authenticate with
	// certificates, checked by the interceptor.
	ps := server.NewProxyServer("cellfed-hub-"+id+"-"+strconv.Itoa(os.Getpid()), routingStrategies, o.ServerCount, &server.AgentTokenAuthenticationOptions{}, o.ChannelSize)
	ps.SetBackendDialTimeout(o.DialTimeout)
	return &Hub{
		opts:      o,
		ps:        ps,
		tunnel:    &server.Tunnel{Server: ps},
		secret:    secret,
		serving:   serving,
		agentCAs:  agentCAs,
		clientCAs: clientCAs,
		connectCA: connectCA,
		agents:    map[string]map[*agentConn]struct{}{},
	}, nil
}

// checkConnectServing makes sure clients of the TLS CONNECT frontend can
// verify it: the serving certificate must chain to the CA in caFile and
// name host, the host of the proxy URLs. It returns the CA's PEM.
func checkConnectServing(serving tls.Certificate, caFile, host string) ([]byte, error) {
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("tunnel CONNECT frontend CA: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("tunnel CONNECT frontend CA %s holds no PEM certificate", caFile)
	}
	leaf, err := x509.ParseCertificate(serving.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("parsing the tunnel hub's serving certificate: %w", err)
	}
	inter := x509.NewCertPool()
	for _, der := range serving.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			inter.AddCert(c)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, DNSName: host}); err != nil {
		return nil, fmt.Errorf("the TLS CONNECT frontend's proxy URLs name %s, but clients could not verify the hub's serving certificate for it (%w): "+
			"set --tunnel-connect-advertise-host to a name the certificate holds, or re-issue the certificate with that name (the plane's --tls-san), or serve plain HTTP with --tunnel-connect-tls=false", host, err)
	}
	return caPEM, nil
}

func loadPool(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

// Listen opens the enabled listeners, so that a port in use fails early.
func (h *Hub) Listen(ctx context.Context) error {
	var lc net.ListenConfig
	open := func(name, addr string, port int) (net.Listener, error) {
		if port == 0 {
			return nil, nil
		}
		hp := net.JoinHostPort(addr, strconv.Itoa(port))
		ln, err := lc.Listen(ctx, "tcp", hp)
		if err != nil {
			return nil, fmt.Errorf("tunnel hub %s listener on %s: %w", name, hp, err)
		}
		return ln, nil
	}
	var err error
	if h.agentLn, err = open("agent", h.opts.AgentBindAddress, h.opts.AgentPort); err != nil {
		return err
	}
	if h.grpcLn, err = open("gRPC", h.opts.GRPCBindAddress, h.opts.GRPCPort); err != nil {
		h.closeListeners()
		return err
	}
	if h.connectLn, err = open("CONNECT", h.opts.ConnectBindAddress, h.opts.ConnectPort); err != nil {
		h.closeListeners()
		return err
	}
	return nil
}

func (h *Hub) closeListeners() {
	for _, ln := range []net.Listener{h.agentLn, h.grpcLn, h.connectLn} {
		if ln != nil {
			ln.Close()
		}
	}
}

// Run serves until ctx ends. Listen must have succeeded.
func (h *Hub) Run(ctx context.Context) (err error) {
	if h.agentLn == nil {
		return errors.New("tunnel hub: Listen was not called or the agent listener is disabled")
	}
	h.setHealth(nil)
	defer func() {
		why := err
		if why == nil {
			why = context.Cause(ctx)
		}
		h.setHealth(fmt.Errorf("the tunnel hub stopped: %w", why))
	}()
	agentSrv := grpc.NewServer(
		grpc.Creds(credentials.NewTLS(&tls.Config{
			MinVersion:   tls.VersionTLS12,
			Certificates: []tls.Certificate{h.serving},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    h.agentCAs,
		})),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: h.opts.KeepaliveTime, Timeout: h.opts.KeepaliveTimeout}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: time.Second, PermitWithoutStream: true}),
		grpc.StreamInterceptor(h.interceptAgent),
	)
	agentproto.RegisterAgentServiceServer(agentSrv, h.ps)

	errs := make(chan error, 3)
	var wg sync.WaitGroup
	serve := func(name string, f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, grpc.ErrServerStopped) {
				errs <- fmt.Errorf("tunnel hub %s: %w", name, err)
			}
		}()
	}
	serve("agent listener", func() error { return agentSrv.Serve(h.agentLn) })
	klog.InfoS("Tunnel hub listening for agents", "address", h.agentLn.Addr().String())

	var frontSrv *grpc.Server
	if h.grpcLn != nil {
		frontSrv = grpc.NewServer(
			grpc.Creds(credentials.NewTLS(&tls.Config{
				MinVersion:   tls.VersionTLS12,
				Certificates: []tls.Certificate{h.serving},
				ClientAuth:   tls.RequireAndVerifyClientCert,
				ClientCAs:    h.clientCAs,
			})),
			grpc.KeepaliveParams(keepalive.ServerParameters{Time: h.opts.KeepaliveTime, Timeout: h.opts.KeepaliveTimeout}),
			grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: time.Second, PermitWithoutStream: true}),
			grpc.StreamInterceptor(h.interceptClient),
		)
		clientproto.RegisterProxyServiceServer(frontSrv, h.ps)
		serve("gRPC frontend", func() error { return frontSrv.Serve(h.grpcLn) })
		klog.InfoS("Tunnel hub gRPC frontend listening", "address", h.grpcLn.Addr().String())
	}
	var connectSrv *http.Server
	if h.connectLn != nil {
		connectSrv = &http.Server{
			Handler:           http.HandlerFunc(h.serveConnect),
			ReadHeaderTimeout: 10 * time.Second,
		}
		ln := h.connectLn
		if h.connectCA != nil {
			// HTTP/1.1 only: CONNECT hands the connection over (hijack),
			// which HTTP/2 does not do.
			ln = tls.NewListener(ln, &tls.Config{
				MinVersion:   tls.VersionTLS12,
				Certificates: []tls.Certificate{h.serving},
				NextProtos:   []string{"http/1.1"},
			})
		}
		serve("CONNECT frontend", func() error { return connectSrv.Serve(ln) })
		klog.InfoS("Tunnel hub CONNECT frontend listening", "address", h.connectLn.Addr().String(), "tls", h.connectCA != nil)
	}

	select {
	case <-ctx.Done():
	case err = <-errs:
		klog.ErrorS(err, "Tunnel hub failed; the plane reports not ready")
	}
	// Tunnels are long-lived streams: stop, do not drain.
	agentSrv.Stop()
	if frontSrv != nil {
		frontSrv.Stop()
	}
	if connectSrv != nil {
		connectSrv.Close()
	}
	wg.Wait()
	return err
}

func (h *Hub) setHealth(err error) { h.health.Store(&err) }

// Healthy is nil while the hub serves agents and clients; otherwise it
// says why not (not started yet, or which listener failed). The plane's
// /readyz reports it as the check "tunnel-hub".
func (h *Hub) Healthy() error {
	p := h.health.Load()
	if p == nil {
		return errors.New("the tunnel hub has not started yet")
	}
	return *p
}

// AgentAddr, GRPCAddr and ConnectAddr are the listeners' addresses (nil
// when disabled or before Listen).
func (h *Hub) AgentAddr() net.Addr   { return addr(h.agentLn) }
func (h *Hub) GRPCAddr() net.Addr    { return addr(h.grpcLn) }
func (h *Hub) ConnectAddr() net.Addr { return addr(h.connectLn) }

func addr(ln net.Listener) net.Addr {
	if ln == nil {
		return nil
	}
	return ln.Addr()
}

// connectHost is the host proxy URLs name: the advertised host, else the
// bind address (127.0.0.1 when unspecified).
func connectHost(o *Options) string {
	if o.ConnectAdvertiseHost != "" {
		return o.ConnectAdvertiseHost
	}
	if ip := net.ParseIP(o.ConnectBindAddress); ip != nil && !ip.IsUnspecified() {
		return o.ConnectBindAddress
	}
	return "127.0.0.1"
}

// ConnectURL is the spec.proxyURL for cluster: the CONNECT frontend
// (https:// unless it speaks plain HTTP) with the cluster as proxy user
// and its credential of generation as password.
func (h *Hub) ConnectURL(cluster string, generation int64) (string, error) {
	if h.connectLn == nil {
		return "", errors.New("the tunnel hub's CONNECT frontend is disabled")
	}
	port := strconv.Itoa(h.connectLn.Addr().(*net.TCPAddr).Port)
	return ConnectProxyURL(h.secret, net.JoinHostPort(connectHost(&h.opts), port), cluster, generation, h.connectCA == nil), nil
}

// ConnectCA is the PEM CA that verifies the TLS CONNECT frontend, for a
// tunnelled cluster's caBundle (clients verify an https proxy with the
// CA they verify the member with); nil when the frontend speaks plain
// HTTP.
func (h *Hub) ConnectCA() []byte { return h.connectCA }

// Connected is the number of agents connected for cluster that dials can
// use now (ANP registers a stream as a backend a moment after it opens).
func (h *Hub) Connected(cluster string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for c := range h.agents[cluster] {
		if c.routable.Load() {
			n++
		}
	}
	return n
}

// Disconnect drops every agent of cluster now (revocation); agents
// reconnecting later are asked Options.Admit again. It returns how many
// were dropped.
func (h *Hub) Disconnect(cluster string) int {
	h.mu.Lock()
	conns := make([]*agentConn, 0, len(h.agents[cluster]))
	for c := range h.agents[cluster] {
		conns = append(conns, c)
	}
	h.mu.Unlock()
	for _, c := range conns {
		c.cancel(fmt.Errorf("agent for cluster %s disconnected by the hub", cluster))
	}
	if len(conns) > 0 {
		klog.InfoS("Disconnected tunnel agents", "cluster", cluster, "agents", len(conns))
	}
	return len(conns)
}

// add registers an agent stream.
func (h *Hub) add(cluster string, c *agentConn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.agents[cluster]
	if m == nil {
		m = map[*agentConn]struct{}{}
		h.agents[cluster] = m
	}
	m[c] = struct{}{}
	agentsGauge.WithLabelValues(cluster).Set(float64(len(m)))
}

// supersede ends the streams of c's agent other than c (the same agent
// reconnected after its link died: the old stream would otherwise keep
// receiving dials until keepalives fail).
func (h *Hub) supersede(cluster string, c *agentConn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.agents[cluster]
	for old := range m {
		if old != c && old.id == c.id {
			old.cancel(fmt.Errorf("agent %s reconnected", c.id))
			delete(m, old)
		}
	}
	agentsGauge.WithLabelValues(cluster).Set(float64(len(m)))
}

func (h *Hub) remove(cluster string, c *agentConn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.agents[cluster]
	delete(m, c)
	if len(m) == 0 {
		delete(h.agents, cluster)
	}
	agentsGauge.WithLabelValues(cluster).Set(float64(len(m)))
}

// interceptAgent authenticates an agent stream and binds it to the
// cluster its certificate names before ANP sees it.
func (h *Hub) interceptAgent(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx := ss.Context()
	cluster, cert, err := agentFromCert(ctx)
	if err != nil {
		rejectedCounter.WithLabelValues("agent_certificate").Inc()
		klog.InfoS("Refused tunnel agent", "reason", err.Error())
		return status.Errorf(codes.Unauthenticated, "tunnel agent certificate: %v", err)
	}
	md, _ := metadata.FromIncomingContext(ctx)
	agentID, err := checkAgentMetadata(cluster, md)
	if err != nil {
		rejectedCounter.WithLabelValues("agent_identity").Inc()
		klog.InfoS("Refused tunnel agent", "cluster", cluster, "reason", err.Error())
		return status.Errorf(codes.PermissionDenied, "tunnel agent for cluster %s: %v", cluster, err)
	}
	if h.opts.Admit != nil {
		if err := h.opts.Admit(ctx, cluster, cert); err != nil {
			rejectedCounter.WithLabelValues("agent_admission").Inc()
			klog.InfoS("Refused tunnel agent", "cluster", cluster, "agentID", agentID, "reason", err.Error())
			return status.Errorf(codes.PermissionDenied, "tunnel agent for cluster %s not admitted: %v", cluster, err)
		}
	}
	connCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	c := &agentConn{id: agentID, cancel: cancel}
	h.add(cluster, c)
	defer h.remove(cluster, c)
	klog.InfoS("Tunnel agent connected", "cluster", cluster, "agentID", agentID)

	done := make(chan error, 1)
	go func() { done <- handler(srv, newCountingStream(ss, cluster, c)) }()
	settled := time.NewTimer(supersedeAfter)
	defer settled.Stop()
	for {
		select {
		case err := <-done:
			klog.InfoS("Tunnel agent disconnected", "cluster", cluster, "agentID", agentID, "err", err)
			return err
		case <-connCtx.Done():
			// Returning ends the stream: ANP's handler sees its stream fail
			// and removes the backend and its connections.
			cause := context.Cause(connCtx)
			klog.InfoS("Tunnel agent stream ended by the hub", "cluster", cluster, "agentID", agentID, "reason", cause)
			return status.Error(codes.Unavailable, cause.Error())
		case <-settled.C:
			h.supersede(cluster, c)
		}
	}
}

// supersedeAfter is how long a new stream of an agent must last before
// it replaces the agent's older streams on this hub. An agent that finds
// every hub through one load balancer (--tunnel-server-count above 1)
// dials this hub again while it looks for the others, and closes the new
// stream itself at once when the hub's server ID is one it has: replacing
// the old stream on arrival cut the agent's working connection every
// time (TestTunnelAcrossReplicas). A stream that lasts is the agent
// reconnecting after its link died, and the old one is dead weight.
const supersedeAfter = 2 * time.Second

// countingStream counts an agent stream's dials and payload bytes, and
// marks its agent routable on the first read: ANP's handler adds the
// backend before it starts reading the stream.
type countingStream struct {
	grpc.ServerStream
	cluster                            string
	conn                               *agentConn
	bytesIn, bytesOut, dialOK, dialErr interface{ Add(float64) }
}

func newCountingStream(ss grpc.ServerStream, cluster string, conn *agentConn) *countingStream {
	return &countingStream{
		ServerStream: ss,
		cluster:      cluster,
		conn:         conn,
		bytesIn:      bytesCounter.WithLabelValues(cluster, "in"),
		bytesOut:     bytesCounter.WithLabelValues(cluster, "out"),
		dialOK:       dialsCounter.WithLabelValues(cluster, dialSuccess),
		dialErr:      dialsCounter.WithLabelValues(cluster, dialError),
	}
}

// RecvMsg sees packets from the agent.
func (s *countingStream) RecvMsg(m any) error {
	if s.conn != nil && !s.conn.routable.Load() {
		s.conn.routable.Store(true)
	}
	err := s.ServerStream.RecvMsg(m)
	if err != nil {
		return err
	}
	if pkt, ok := m.(*clientproto.Packet); ok {
		switch pkt.Type {
		case clientproto.PacketType_DATA:
			s.bytesIn.Add(float64(len(pkt.GetData().GetData())))
		case clientproto.PacketType_DIAL_RSP:
			if pkt.GetDialResponse().GetError() != "" {
				s.dialErr.Add(1)
			} else {
				s.dialOK.Add(1)
			}
		}
	}
	return nil
}

// SendMsg sees packets to the agent.
func (s *countingStream) SendMsg(m any) error {
	if pkt, ok := m.(*clientproto.Packet); ok && pkt.Type == clientproto.PacketType_DATA {
		s.bytesOut.Add(float64(len(pkt.GetData().GetData())))
	}
	return s.ServerStream.SendMsg(m)
}

// interceptClient admits gRPC frontend clients whose plane-CA
// certificate is in an allowed group (plane administrators and
// controllers), and counts dials for clusters without an agent.
func (h *Hub) interceptClient(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	cert, err := verifiedPeerCert(ss.Context())
	if err != nil {
		rejectedCounter.WithLabelValues("client_certificate").Inc()
		return status.Errorf(codes.Unauthenticated, "tunnel client certificate: %v", err)
	}
	if !slices.ContainsFunc(cert.Subject.Organization, func(g string) bool { return slices.Contains(h.opts.ClientGroups, g) }) {
		rejectedCounter.WithLabelValues("client_certificate").Inc()
		return status.Errorf(codes.PermissionDenied, "tunnel client %q is in none of the groups %v", cert.Subject.CommonName, h.opts.ClientGroups)
	}
	return handler(srv, &clientStream{ServerStream: ss, hub: h})
}

type clientStream struct {
	grpc.ServerStream
	hub *Hub
}

func (s *clientStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if err == nil {
		if pkt, ok := m.(*clientproto.Packet); ok && pkt.Type == clientproto.PacketType_DIAL_REQ {
			host, _, splitErr := net.SplitHostPort(pkt.GetDialRequest().GetAddress())
			if splitErr != nil {
				host = pkt.GetDialRequest().GetAddress()
			}
			if s.hub.Connected(host) == 0 {
				dialsCounter.WithLabelValues(host, dialNoAgent).Inc()
			}
		}
	}
	return err
}

// serveConnect is the CONNECT frontend: it checks the proxy credential,
// fails fast for a cluster without an agent, and hands the request to
// ANP with the target rewritten to <cluster>:<port>, the key ANP routes on
// (the agent then dials its own API server whatever the port).
func (h *Hub) serveConnect(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "this proxy only supports CONNECT", http.StatusMethodNotAllowed)
		return
	}
	cluster, password, ok := parseProxyAuthorization(r.Header.Get("Proxy-Authorization"))
	var generation int64
	if ok && h.opts.ConnectGeneration != nil {
		g, err := h.opts.ConnectGeneration(cluster)
		if err != nil {
			writeRawStatus(w, http.StatusServiceUnavailable, fmt.Sprintf("checking the proxy credential of cluster %s: %v", cluster, err))
			return
		}
		generation = g
	}
	if !ok || !checkConnectCredential(h.secret, cluster, generation, password) {
		rejectedCounter.WithLabelValues("proxy_auth").Inc()
		if ok && staleConnectCredential(h.secret, cluster, generation, password) {
			klog.InfoS("Refused CONNECT request with a rotated proxy credential", "remote", r.RemoteAddr, "cluster", cluster, "currentGeneration", generation)
		} else {
			klog.V(2).InfoS("Refused CONNECT request", "remote", r.RemoteAddr, "user", cluster, "reason", "bad or missing proxy credentials")
		}
		w.Header().Set("Proxy-Authenticate", `Basic realm="cellfed-tunnel"`)
		http.Error(w, "tunnel proxy credentials missing or wrong", http.StatusProxyAuthRequired)
		return
	}
	r.Header.Del("Proxy-Authorization")
	if h.Connected(cluster) == 0 {
		dialsCounter.WithLabelValues(cluster, dialNoAgent).Inc()
		writeRawStatus(w, http.StatusServiceUnavailable, fmt.Sprintf(noAgentFormat, cluster))
		return
	}
	port := "443"
	if _, p, err := net.SplitHostPort(r.Host); err == nil && p != "" {
		port = p
	}
	r.Host = net.JoinHostPort(cluster, port)
	h.tunnel.ServeHTTP(w, r)
}

// writeRawStatus answers with reason as the status line's text, which is
// what Go's HTTP client reports as the error of a failed CONNECT.
func writeRawStatus(w http.ResponseWriter, code int, reason string) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, reason, code)
		return
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		http.Error(w, reason, code)
		return
	}
	defer conn.Close()
	writeStatus(rw, code, reason)
}

func writeStatus(rw *bufio.ReadWriter, code int, reason string) {
	fmt.Fprintf(rw, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", code, reason, len(reason), reason)
	rw.Flush()
}
