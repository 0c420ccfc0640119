package e2e

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/pki"
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
	if err := framework.AddCA(cfg, m.ProxyCA); err != nil {
		t.Fatal(err)
	}
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
			"no credentials":           {Scheme: "https", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.ConnectPort))},
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
		// A server dry run cannot create the namespaces the rest goes in:
		// the agent's own and plane-access.yaml's.
		k.MustRun(t, "", "apply", "-f", filepath.Join(dir, "namespace.yaml"))
		k.MustRun(t, "", "create", "namespace", "kube-federation-system")
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
// and the CONNECT frontend like the embedded hub, and admits agents as the
// plane's hub does: it watches ClusterRegistrations through the plane's
// API with a ServiceAccount bound to cellfed:tunnel-hub (which may read
// registrations and nothing else), and drops and refuses the agent of a
// registration that is denied.
func TestTunnelStandaloneProxy(t *testing.T) {
	t.Parallel()
	// Its own hub disabled; it federates nothing.
	plane := framework.StartPlane(t, framework.PlaneOptions{Args: []string{"--default-federated-types="}})
	member := framework.StartMember(t, "solo")
	k := framework.Kubectl{Kubeconfig: plane.Kubeconfig}
	hubKubeconfig := tunnelHubKubeconfig(t, plane, k)
	secret := filepath.Join(t.TempDir(), "connect.secret")
	ports := framework.TunnelPorts{AgentBind: "127.0.0.1", AgentPort: framework.FreePort(t), GRPCPort: framework.FreePort(t), ConnectPort: framework.FreePort(t)}
	f := plane.PKI()
	args := []string{"--tls-cert-file=" + f.ServingCert(), "--tls-private-key-file=" + f.ServingKey(),
		"--agent-ca-file=" + f.AgentCACert(), "--client-ca-file=" + f.CACert(), "--connect-secret-file=" + secret,
		"--tunnel-agent-port=" + strconv.Itoa(ports.AgentPort), "--tunnel-grpc-port=" + strconv.Itoa(ports.GRPCPort),
		"--tunnel-connect-port=" + strconv.Itoa(ports.ConnectPort), "--v=2"}

	t.Run("without registrations or an explicit opt-out it does not start", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, framework.Binary(t, "cellfed-proxy"), args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "give it --plane-kubeconfig") {
			t.Fatalf("cellfed-proxy without --plane-kubeconfig: err %v, output:\n%s", err, out)
		}
	})

	hub := framework.StartProcess(t, "cellfed-proxy", filepath.Join(t.TempDir(), "proxy.log"), framework.Binary(t, "cellfed-proxy"),
		append(args, "--plane-kubeconfig="+hubKubeconfig, "--tunnel-allow-unregistered-agents")...)
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
	tunnelled.ProxyURL = proxy.ConnectProxyURL(raw, net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.ConnectPort)), "solo", 0, false)
	tunnelled.ProxyCA = framework.TunnelProxyCA(t, plane)
	tunnelled.Endpoint = "https://localhost:1"
	if err := tunnelled.WaitReady(context.Background()); err != nil {
		t.Fatalf("member through cellfed-proxy: %v", err)
	}
	d := tunnelDialer(t, plane, ports)
	if _, err := kubernetes.NewForConfigOrDie(memberConfigVia(t, member, d.DialFunc("solo"))).Discovery().ServerVersion(); err != nil {
		t.Fatalf("member through cellfed-proxy's gRPC frontend: %v", err)
	}

	t.Run("the hub's identity reads registrations only", func(t *testing.T) {
		hk := framework.Kubectl{Kubeconfig: hubKubeconfig}
		if out, err := hk.Run(context.Background(), "", "get", "clusterregistrations"); err != nil {
			t.Errorf("the hub's identity cannot list registrations: %v %s", err, out)
		}
		for _, args := range [][]string{{"get", "secrets", "-A"}, {"get", "kubefedclusters", "-A"}, {"delete", "clusterregistration", "solo"}} {
			if _, err := hk.Run(context.Background(), "", args...); err == nil || !strings.Contains(err.Error(), "Forbidden") {
				t.Errorf("kubectl %v as the hub: %v, want Forbidden", args, err)
			}
		}
	})

	t.Run("a denied registration's agent is dropped and refused", func(t *testing.T) {
		_, csr, err := pki.NewAgentKeyAndCSR("solo")
		if err != nil {
			t.Fatal(err)
		}
		cfg := member.RESTConfig(t)
		ca := cfg.CAData
		if len(ca) == 0 {
			if ca, err = os.ReadFile(cfg.CAFile); err != nil {
				t.Fatal(err)
			}
		}
		reg := mustJSON(t, cellv1alpha1.ClusterRegistration{
			TypeMeta:   metav1.TypeMeta{APIVersion: cellv1alpha1.SchemeGroupVersion.String(), Kind: "ClusterRegistration"},
			ObjectMeta: metav1.ObjectMeta{Name: "solo"},
			Spec:       cellv1alpha1.ClusterRegistrationSpec{APIEndpoint: "https://127.0.0.1:6443", CABundle: ca, CSR: csr},
		})
		k.MustRun(t, reg, "create", "-f", "-")
		newCellfedctl(t, plane.Kubeconfig).ok(t, "registration", "deny", "solo", "--reason=unknown site")
		if err := framework.Poll(context.Background(), 100*time.Millisecond, 30*time.Second, func(ctx context.Context) (bool, error) {
			return strings.Contains(hub.Tail(100), "the registration of cluster solo is Denied"), nil
		}); err != nil {
			t.Fatalf("cellfed-proxy did not refuse the agent of a denied registration: %v\n%s", err, hub.Tail(30))
		}
		via := kubernetes.NewForConfigOrDie(memberConfigVia(t, member, d.DialFunc("solo")))
		if err := framework.Poll(context.Background(), 100*time.Millisecond, 30*time.Second, func(ctx context.Context) (bool, error) {
			_, err := via.Discovery().ServerVersion()
			return err != nil, nil
		}); err != nil {
			t.Fatal("the member of a denied registration is still reachable through cellfed-proxy")
		}
	})
}

// tunnelHubKubeconfig is a kubeconfig for the plane with the token of a
// ServiceAccount bound to cellfed:tunnel-hub, as docs/registration.md
// sets up a standalone cellfed-proxy.
func tunnelHubKubeconfig(t *testing.T, plane *framework.Server, k framework.Kubectl) string {
	t.Helper()
	k.MustRun(t, "", "-n", "kube-federation-system", "create", "serviceaccount", "cellfed-proxy")
	k.MustRun(t, "", "create", "clusterrolebinding", "cellfed-proxy", "--clusterrole=cellfed:tunnel-hub", "--serviceaccount=kube-federation-system:cellfed-proxy")
	token := strings.TrimSpace(k.MustRun(t, "", "-n", "kube-federation-system", "create", "token", "cellfed-proxy", "--duration=1h"))
	cfg, err := clientcmd.LoadFromFile(plane.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cfg.AuthInfos {
		a.ClientCertificate, a.ClientKey, a.ClientCertificateData, a.ClientKeyData = "", "", nil, nil
		a.Token = token
	}
	path := filepath.Join(t.TempDir(), "hub.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
