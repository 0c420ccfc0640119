package e2e

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cellfed/cellfed/test/framework"
)

// TestTunnelAcrossReplicas: two plane replicas on one MariaDB database,
// each with its own tunnel hub, started with --tunnel-server-count=2; one
// agent reaches them through a round-robin balancer (the Service of the
// manifests) and keeps a connection to each. The member stays reachable
// through the surviving replica's CONNECT frontend, and through a
// balancer over both frontends, when either replica is SIGKILLed: A
// first, then, once A is back and the agent reconnected to it, B.
func TestTunnelAcrossReplicas(t *testing.T) {
	t.Parallel()
	dsn := framework.NewDatabase(t)
	common := []string{"--tunnel-server-count=2", framework.AllowHandIssuedAgents, "--default-federated-types="}
	argsA, portsA := framework.TunnelPlaneArgs(t, "")
	argsB, portsB := framework.TunnelPlaneArgs(t, "")
	a := framework.StartPlane(t, framework.PlaneOptions{Endpoint: dsn, Args: append(argsA, common...)})
	b := framework.StartPlaneReplica(t, a, framework.PlaneOptions{Endpoint: dsn, Args: append(argsB, common...)})
	member := framework.StartMember(t, "edge-1")

	local := func(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
	agentLB := framework.StartRoundRobin(t, local(portsA.AgentPort), local(portsB.AgentPort))
	connectLB := framework.StartRoundRobin(t, local(portsA.ConnectPort), local(portsB.ConnectPort))
	cert, key := framework.IssueAgentCert(t, a, "edge-1", time.Hour)
	agent := framework.StartAgent(t, a, portsA, framework.AgentOptions{Cluster: "edge-1", CertFile: cert, KeyFile: key,
		Kubeconfig: member.Kubeconfig, Args: []string{"--hub-address=" + agentLB}})

	// via is the member reached through one CONNECT frontend (the shared
	// secret and CA make one proxy URL valid at every replica).
	via := func(ports framework.TunnelPorts) *framework.Server {
		m := *member
		m.ProxyURL, m.ProxyCA = framework.TunnelProxyURL(t, a, ports, "edge-1"), framework.TunnelProxyCA(t, a)
		return &m
	}
	viaA, viaB := via(portsA), via(portsB)
	viaLB := via(framework.TunnelPorts{ConnectPort: mustPort(t, connectLB)})
	get := func(ctx context.Context, s *framework.Server) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := s.Client(t).CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		return err
	}
	waitReachable := func(name string, s *framework.Server) {
		t.Helper()
		if err := framework.Poll(context.Background(), 100*time.Millisecond, 60*time.Second, func(ctx context.Context) (bool, error) {
			return get(ctx, s) == nil, nil
		}); err != nil {
			t.Fatalf("member not reachable %s: %v\nagent log:\n%s", name, err, agent.Tail(20))
		}
	}
	// Every request must succeed: the survivor's hub holds its own
	// connection to the agent, nothing has to reconnect.
	allSucceed := func(name string, s *framework.Server, n int) {
		t.Helper()
		for i := range n {
			if err := get(context.Background(), s); err != nil {
				t.Fatalf("request %d of %d %s failed: %v\nagent log:\n%s", i+1, n, name, err, agent.Tail(20))
			}
		}
	}

	waitReachable("through replica A", viaA)
	waitReachable("through replica B", viaB)
	t.Logf("agent connected to both hubs")

	a.Kill()
	allSucceed("through replica B after A was killed", viaB, 20)
	allSucceed("through the balancer after A was killed", viaLB, 20)

	a.RestartAndWait(t)
	waitReachable("through restarted replica A", viaA)
	b.Kill()
	allSucceed("through replica A after B was killed", viaA, 20)
	allSucceed("through the balancer after B was killed", viaLB, 20)
}

func mustPort(t *testing.T, hostPort string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(hostPort)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(fmt.Errorf("port of %s: %w", hostPort, err))
	}
	return n
}
