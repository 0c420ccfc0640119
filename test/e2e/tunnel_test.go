package e2e

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/cellfed/cellfed/pkg/proxy"
	"github.com/cellfed/cellfed/test/framework"
)

// tunnelDialer is a gRPC tunnel client with the plane's admin certificate.
func tunnelDialer(t *testing.T, plane *framework.Server, ports framework.TunnelPorts) *proxy.Dialer {
	t.Helper()
	o := proxy.NewDialerOptions()
	o.Address = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.GRPCPort))
	o.ServerName = "localhost"
	o.CAFile, o.CertFile, o.KeyFile = plane.PKI().CACert(), plane.PKI().AdminCert(), plane.PKI().AdminKey()
	d, err := proxy.NewDialer(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// memberConfigVia is the member's admin configuration with its traffic
// going through dial (gRPC tunnel) instead of the CONNECT proxy.
func memberConfigVia(t *testing.T, m *framework.Server, dial func(ctx context.Context, network, address string) (net.Conn, error)) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", m.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Dial = dial
	cfg.Timeout = 10 * time.Second
	return cfg
}

// TestTunnelReachesMemberBehindNetNS: a member in its own network
// namespace is reached through its agent, by the CONNECT frontend (the
// KubeFed proxyURL path) and the gRPC frontend, and not directly; a
// cluster without agent fails fast with a clear error; wrong proxy
// credentials are refused; the hub's metrics count it.
func TestTunnelReachesMemberBehindNetNS(t *testing.T) {
	t.Parallel()
	plane, ports := startTunnelPlane(t, "--default-federated-types=") // federates nothing
	tm := startTunnelledMember(t, plane, ports, "edge-1")
	ctx := context.Background()

	t.Run("readyz shows the hub", func(t *testing.T) {
		body, err := plane.Client(t).Discovery().RESTClient().Get().AbsPath("/readyz").Param("verbose", "").DoRaw(ctx)
		if err != nil || !strings.Contains(string(body), "[+]tunnel-hub ok") {
			t.Fatalf("/readyz?verbose: %v\n%s\nwant the check tunnel-hub ok", err, body)
		}
	})
	t.Run("CONNECT proxy", func(t *testing.T) {
		v, err := tm.member.Client(t).Discovery().ServerVersion()
		if err != nil {
			t.Fatalf("version through the CONNECT frontend: %v", err)
		}
		t.Logf("member version through CONNECT: %s", v.GitVersion)
	})
	if tm.ns != nil {
		t.Run("not reachable directly", func(t *testing.T) {
			cfg := tm.member.RESTConfig(t)
			cfg.Proxy, cfg.Timeout = nil, 3*time.Second
			c := kubernetes.NewForConfigOrDie(cfg)
			if _, err := c.Discovery().ServerVersion(); err == nil {
				t.Fatal("the member in its namespace answered directly from the host")
			}
		})
	}
	t.Run("gRPC tunnel", func(t *testing.T) {
		d := tunnelDialer(t, plane, ports)
		c := kubernetes.NewForConfigOrDie(memberConfigVia(t, tm.member, d.DialFunc(tm.name)))
		if _, err := c.Discovery().ServerVersion(); err != nil {
			t.Fatalf("version through the gRPC frontend: %v", err)
		}
	})
	t.Run("no agent fails fast", func(t *testing.T) {
		d := tunnelDialer(t, plane, ports)
		start := time.Now()
		_, err := d.DialCluster(ctx, "nosuch")
		if err == nil || !strings.Contains(err.Error(), "no agent connected for cluster nosuch") {
			t.Fatalf("gRPC dial for a cluster without agent: got %v", err)
		}
		cfg := memberConfigVia(t, tm.member, nil)
		cfg.Dial = nil
		pu, _ := url.Parse(framework.TunnelProxyURL(t, plane, ports, "nosuch"))
		cfg.Proxy = http.ProxyURL(pu)
		_, err = kubernetes.NewForConfigOrDie(cfg).Discovery().ServerVersion()
		if err == nil || !strings.Contains(err.Error(), "no agent connected for cluster nosuch") {
			t.Fatalf("CONNECT for a cluster without agent: got %v", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("failing took %s, want fast", d)
		}
	})
	t.Run("wrong proxy credentials", func(t *testing.T) {
		for name, pu := range map[string]*url.URL{
			"other cluster's password": mustParse(t, strings.Replace(framework.TunnelProxyURL(t, plane, ports, "other"), "other:", tm.name+":", 1)),
			"no credentials":           {Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.ConnectPort))},
		} {
			cfg := memberConfigVia(t, tm.member, nil)
			cfg.Dial, cfg.Proxy = nil, http.ProxyURL(pu)
			_, err := kubernetes.NewForConfigOrDie(cfg).Discovery().ServerVersion()
			if err == nil || !strings.Contains(err.Error(), "Proxy Authentication Required") {
				t.Errorf("%s: got %v, want Proxy Authentication Required", name, err)
			}
		}
	})
	t.Run("agent manifests apply to the member (kubectl, server dry run)", func(t *testing.T) {
		k := framework.Kubectl{Kubeconfig: tm.member.KubeconfigViaProxy(t)}
		dir := filepath.Join(framework.RepoRoot(t), "manifests", "agent")
		// A server dry run cannot create the namespace the rest goes in.
		k.MustRun(t, "", "apply", "-f", filepath.Join(dir, "namespace.yaml"))
		out := k.MustRun(t, "", "apply", "--dry-run=server", "-f", dir)
		for _, want := range []string{"deployment.apps/cellfed-agent", "role.rbac.authorization.k8s.io/cellfed-agent", "rolebinding.rbac.authorization.k8s.io/cellfed-agent", "serviceaccount/cellfed-agent"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl apply --dry-run=server did not report %s:\n%s", want, out)
			}
		}
	})
	t.Run("metrics", func(t *testing.T) {
		body, err := plane.Client(t).CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			`cellfed_tunnel_agents{cluster="edge-1"} 1`,
			`cellfed_tunnel_dials_total{cluster="edge-1",result="success"}`,
			`cellfed_tunnel_dials_total{cluster="nosuch",result="noagent"}`,
			`cellfed_tunnel_bytes_total{cluster="edge-1",direction="in"}`,
			`cellfed_tunnel_failures_total{reason="proxy_auth"}`,
		} {
			if !strings.Contains(string(body), want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})
}

// TestTunnelStandaloneProxy: cellfed-proxy, the hub apart from the plane,
// with the plane's serving certificate, agent CA and CA, serves an agent
// and the CONNECT frontend like the embedded hub.
func TestTunnelStandaloneProxy(t *testing.T) {
	t.Parallel()
	// Its own hub disabled; it federates nothing.
	plane, members := framework.StartPlaneWithMembers(t, framework.PlaneOptions{Args: []string{"--default-federated-types="}}, 1)
	member := members[0]
	secret := filepath.Join(t.TempDir(), "connect.secret")
	ports := framework.TunnelPorts{AgentBind: "127.0.0.1", AgentPort: framework.FreePort(t), GRPCPort: framework.FreePort(t), ConnectPort: framework.FreePort(t)}
	f := plane.PKI()
	framework.StartProcess(t, "cellfed-proxy", filepath.Join(t.TempDir(), "proxy.log"), framework.Binary(t, "cellfed-proxy"),
		"--tls-cert-file="+f.ServingCert(), "--tls-private-key-file="+f.ServingKey(),
		"--agent-ca-file="+f.AgentCACert(), "--client-ca-file="+f.CACert(), "--connect-secret-file="+secret,
		"--tunnel-agent-port="+strconv.Itoa(ports.AgentPort), "--tunnel-grpc-port="+strconv.Itoa(ports.GRPCPort),
		"--tunnel-connect-port="+strconv.Itoa(ports.ConnectPort), "--v=2")
	cert, key := framework.IssueAgentCert(t, plane, "solo", time.Hour)
	framework.StartAgent(t, plane, ports, framework.AgentOptions{Cluster: "solo", CertFile: cert, KeyFile: key, Kubeconfig: member.Kubeconfig})
	var raw []byte
	if err := framework.Poll(context.Background(), 50*time.Millisecond, 30*time.Second, func(context.Context) (bool, error) {
		var err error
		raw, err = os.ReadFile(secret)
		return err == nil && len(raw) > 0, err
	}); err != nil {
		t.Fatalf("cellfed-proxy wrote no CONNECT secret: %v", err)
	}
	tunnelled := *member
	tunnelled.ProxyURL = proxy.ConnectProxyURL(raw, net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.ConnectPort)), "solo")
	tunnelled.Endpoint = "https://localhost:1"
	if err := tunnelled.WaitReady(context.Background()); err != nil {
		t.Fatalf("member through cellfed-proxy: %v", err)
	}
	d := tunnelDialer(t, plane, ports)
	if _, err := kubernetes.NewForConfigOrDie(memberConfigVia(t, member, d.DialFunc("solo"))).Discovery().ServerVersion(); err != nil {
		t.Fatalf("member through cellfed-proxy's gRPC frontend: %v", err)
	}
}
