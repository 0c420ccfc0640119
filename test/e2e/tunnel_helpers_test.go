// Members reachable only through their agent's tunnel, and clients that
// go through it.

package e2e

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cellfed/cellfed/test/framework"
)

// tunnelled is a member reachable only through its agent's tunnel.
type tunnelled struct {
	name   string
	member *framework.Server // ProxyURL set: clients go through the hub
	agent  *framework.Process
	ns     *framework.NetNS // nil on the loopback fallback
	cert   string
	key    string
}

// startTunnelPlane starts a plane with the tunnel hub on free ports and
// extraArgs; the agent listener on all addresses, so agents in a NetNS
// reach it.
func startTunnelPlane(t *testing.T, extraArgs ...string) (*framework.Server, framework.TunnelPorts) {
	t.Helper()
	args, ports := framework.TunnelPlaneArgs(t, "0.0.0.0")
	return framework.StartPlane(t, framework.PlaneOptions{Args: append(append(args, framework.AllowHandIssuedAgents), extraArgs...)}), ports
}

// startTunnelledMember starts a member kube-apiserver and its agent in a
// network namespace of their own. Without netns support it says so and
// runs both on loopback; the member's address is then withheld from
// clients (they get an endpoint that does not answer).
func startTunnelledMember(t *testing.T, plane *framework.Server, ports framework.TunnelPorts, name string, agentArgs ...string) *tunnelled {
	t.Helper()
	tm := &tunnelled{name: name}
	ns, why := framework.NewNetNS(t)
	if ns == nil {
		t.Logf("no network namespace (%s): member %s and its agent run on loopback, its address withheld", why, name)
		tm.member = framework.StartMemberNoWait(t, name)
	} else {
		tm.ns = ns
		tm.member = framework.StartMemberIn(t, name, ns)
	}
	if err := tm.member.WaitKubeconfig(context.Background()); err != nil {
		t.Fatalf("member %s: %v", name, err)
	}
	tm.cert, tm.key = framework.IssueAgentCert(t, plane, name, time.Hour)
	tm.agent = framework.StartAgent(t, plane, ports, framework.AgentOptions{
		Cluster: name, CertFile: tm.cert, KeyFile: tm.key, Kubeconfig: tm.member.Kubeconfig, NetNS: ns, Args: agentArgs,
	})
	tm.member.ProxyURL = framework.TunnelProxyURL(t, plane, ports, name)
	tm.member.ProxyCA = framework.TunnelProxyCA(t, plane)
	if ns == nil {
		tm.member.Endpoint = "https://localhost:1" // withheld: nothing answers there
	}
	if err := tm.member.WaitReady(context.Background()); err != nil {
		t.Fatalf("member %s not ready through its tunnel: %v\nagent log:\n%s", name, err, tm.agent.Tail(20))
	}
	return tm
}

// proxyForCluster is an HTTP proxy function for cluster's tunnel.
func proxyForCluster(t *testing.T, plane *framework.Server, ports framework.TunnelPorts, cluster string) func(*http.Request) (*url.URL, error) {
	t.Helper()
	return http.ProxyURL(mustParse(t, framework.TunnelProxyURL(t, plane, ports, cluster)))
}

// mustParse parses a URL, failing the test when it cannot.
func mustParse(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// kubernetesFor is a clientset for cfg, failing the test when it cannot.
func kubernetesFor(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
