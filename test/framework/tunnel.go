package framework

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/cellfed/cellfed/pkg/pki"
	"github.com/cellfed/cellfed/pkg/proxy"
)

// TunnelPorts are the tunnel hub listeners of a plane started with
// TunnelPlaneArgs.
type TunnelPorts struct {
	AgentBind                        string
	AgentPort, GRPCPort, ConnectPort int
}

// AllowHandIssuedAgents is the plane flag that admits agents with a
// certificate from IssueAgentCert (no ClusterRegistration).
const AllowHandIssuedAgents = "--tunnel-allow-unregistered-agents"

// TunnelPlaneArgs enables the plane's tunnel hub on free ports: the agent
// listener on agentBind (0.0.0.0 lets agents in a NetNS reach it through
// the veth; "" means loopback), the frontends on loopback.
func TunnelPlaneArgs(t testing.TB, agentBind string) ([]string, TunnelPorts) {
	t.Helper()
	if agentBind == "" {
		agentBind = "127.0.0.1"
	}
	p := TunnelPorts{AgentBind: agentBind, AgentPort: FreePort(t), GRPCPort: FreePort(t), ConnectPort: FreePort(t)}
	return []string{
		"--tunnel-agent-bind-address=" + agentBind,
		"--tunnel-agent-port=" + strconv.Itoa(p.AgentPort),
		"--tunnel-grpc-port=" + strconv.Itoa(p.GRPCPort),
		"--tunnel-connect-port=" + strconv.Itoa(p.ConnectPort),
	}, p
}

// PKI is the plane's certificate files.
func (s *Server) PKI() pki.Files { return pki.Files{Dir: filepath.Join(s.DataDir, "pki")} }

// IssueAgentCert signs a certificate for cluster's agent with the plane's
// agent CA (what registration does after approval) and writes the pair
// to a temporary directory.
func IssueAgentCert(t testing.TB, plane *Server, cluster string, validity time.Duration) (certFile, keyFile string) {
	t.Helper()
	keyPEM, csrPEM, err := pki.NewAgentKeyAndCSR(cluster)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err := pki.SignAgentCSR(plane.PKI(), csrPEM, cluster, validity)
	if err != nil {
		t.Fatalf("signing agent certificate for %s: %v", cluster, err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "agent.crt"), filepath.Join(dir, "agent.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// TunnelProxyURL is the spec.proxyURL of a hand-made tunnelled cluster on
// plane: the TLS CONNECT frontend (verified with TunnelProxyCA) with the
// cluster's credential of generation 0.
func TunnelProxyURL(t testing.TB, plane *Server, ports TunnelPorts, cluster string) string {
	t.Helper()
	secret, err := os.ReadFile(filepath.Join(plane.PKI().Dir, "tunnel-connect.secret"))
	if err != nil {
		t.Fatalf("reading the plane's tunnel CONNECT secret: %v", err)
	}
	return proxy.ConnectProxyURL(secret, net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.ConnectPort)), cluster, 0, false)
}

// TunnelProxyCA is the PEM CA that verifies plane's TLS CONNECT frontend
// (the plane's CA), what the plane appends to a tunnelled cluster's
// caBundle.
func TunnelProxyCA(t testing.TB, plane *Server) []byte {
	t.Helper()
	ca, err := os.ReadFile(plane.PKI().CACert())
	if err != nil {
		t.Fatalf("reading the plane's CA: %v", err)
	}
	return ca
}

// AgentOptions configure StartAgent.
type AgentOptions struct {
	Cluster           string
	CertFile, KeyFile string
	// Kubeconfig of the member the agent serves.
	Kubeconfig string
	// NetNS runs the agent inside a namespace; HubHost is then its host IP.
	NetNS *NetNS
	// Args are extra flags.
	Args []string
}

// StartAgent starts bin/cellfed-agent for a plane's tunnel hub.
func StartAgent(t testing.TB, plane *Server, ports TunnelPorts, o AgentOptions) *Process {
	t.Helper()
	hubHost := "127.0.0.1"
	if o.NetNS != nil {
		hubHost = o.NetNS.HostIP
	}
	args := append([]string{
		"--cluster=" + o.Cluster,
		"--hub-address=" + net.JoinHostPort(hubHost, strconv.Itoa(ports.AgentPort)),
		"--hub-server-name=localhost", // the plane's serving certificate names localhost
		"--hub-ca-file=" + plane.PKI().CACert(),
		"--cert-file=" + o.CertFile,
		"--key-file=" + o.KeyFile,
		"--kubeconfig=" + o.Kubeconfig,
		"--v=2",
	}, o.Args...)
	bin := Binary(t, "cellfed-agent")
	if o.NetNS != nil {
		bin, args = o.NetNS.Command(bin, args...)
	}
	return StartProcess(t, "agent "+o.Cluster, filepath.Join(t.TempDir(), "agent.log"), bin, args...)
}

// StartMemberIn starts a member kube-apiserver inside ns (on the
// namespace's loopback, unreachable from the host) without waiting: its
// readiness can only be seen through a tunnel (WaitReadyVia).
func StartMemberIn(t testing.TB, name string, ns *NetNS) *Server {
	t.Helper()
	dir := t.TempDir()
	port := FreePort(t)
	bin, args := ns.Command(Binary(t, "member-apiserver"), "--data-dir="+dir, "--secure-port="+strconv.Itoa(port), "--v=0",
		"--advertise-address="+ns.NSIP) // the namespace has no default route
	p := StartProcess(t, "member "+name, filepath.Join(dir, "apiserver.log"), bin, args...)
	return &Server{Process: p, DataDir: dir, Port: port, Kubeconfig: filepath.Join(dir, "admin.kubeconfig")}
}

// StartMemberNoWait starts a member kube-apiserver on the host's loopback
// without waiting for it.
func StartMemberNoWait(t testing.TB, name string) *Server {
	t.Helper()
	dir := t.TempDir()
	port := FreePort(t)
	p := StartProcess(t, "member "+name, filepath.Join(dir, "apiserver.log"), Binary(t, "member-apiserver"),
		"--data-dir="+dir, "--secure-port="+strconv.Itoa(port), "--v=0")
	return &Server{Process: p, DataDir: dir, Port: port, Kubeconfig: filepath.Join(dir, "admin.kubeconfig")}
}

// WaitKubeconfig waits until the server has written its admin kubeconfig.
func (s *Server) WaitKubeconfig(ctx context.Context) error {
	return Poll(ctx, 20*time.Millisecond, readyTimeout, func(context.Context) (bool, error) {
		if err := exitedError(s.Process); err != nil {
			return false, err
		}
		_, err := os.Stat(s.Kubeconfig)
		return err == nil, err
	})
}

// proxyFunc is the HTTP proxy for a member reached through a tunnel.
func proxyFunc(proxyURL string) (func(*http.Request) (*url.URL, error), error) {
	u, err := url.Parse(proxyURL)
	if err != nil {
		return nil, fmt.Errorf("proxy URL: %w", err)
	}
	return http.ProxyURL(u), nil
}

// KubeconfigViaProxy writes a copy of the server's admin kubeconfig whose
// cluster goes through ProxyURL (kubeconfig proxy-url), for kubectl.
func (s *Server) KubeconfigViaProxy(t testing.TB) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.ProxyURL = s.ProxyURL
		if len(s.ProxyCA) > 0 {
			ca := c.CertificateAuthorityData
			if len(ca) == 0 && c.CertificateAuthority != "" {
				if ca, err = os.ReadFile(c.CertificateAuthority); err != nil {
					t.Fatal(err)
				}
			}
			c.CertificateAuthorityData = append(append(append([]byte{}, ca...), '\n'), s.ProxyCA...)
			c.CertificateAuthority = ""
		}
	}
	path := filepath.Join(t.TempDir(), "proxied.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
