// The soak's federation: a private MariaDB, two plane replicas behind a
// round-robin balancer, cellfed-controller, three members on loopback
// and one in a network namespace reached through its agent's tunnel.

package soak

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/cellfed/cellfed/test/framework"
)

// Tenants: each has a workspace namespace t-<tenant>, a cell rz00a on the
// shared member-0 and a cell rz10a on its dedicated cluster.
var tenants = []struct{ name, dedicated string }{
	{"acme", "member-1"},
	{"beta", "member-2"},
	{"gamma", edgeName},
}

const (
	edgeName     = "edge-1" // the tunnelled member
	sharedMember = "member-0"
)

func workspace(tenant string) string { return "t-" + tenant }

// soakFederation is every process of the soak.
type soakFederation struct {
	db         *framework.MariaDB
	planes     []*framework.Server // replicas A and B
	plane      *framework.Server   // the balancer in front of both (kubeconfig)
	controller *framework.Controller
	members    map[string]*framework.Server
	agent      *framework.Process
	ns         *framework.NetNS
	cellfedctl string
}

// startSoakFederation starts and wires everything, and waits until every
// cluster is Ready.
func startSoakFederation(t *testing.T) *soakFederation {
	t.Helper()
	f := &soakFederation{members: map[string]*framework.Server{}, cellfedctl: framework.Binary(t, "cellfedctl")}
	ns, why := framework.NewNetNS(t)
	if ns == nil {
		t.Fatalf("the soak needs a network namespace for its tunnelled member: %s", why)
	}
	f.ns = ns
	f.db = framework.StartMariaDB(t)
	dsn := f.db.NewDatabase(t)

	var wg sync.WaitGroup
	var direct []*framework.Server
	wg.Add(1)
	go func() {
		defer wg.Done()
		direct = framework.StartMembers(t, 3)
	}()
	common := []string{"--tunnel-server-count=2", framework.AllowHandIssuedAgents}
	argsA, portsA := framework.TunnelPlaneArgs(t, "0.0.0.0")
	argsB, portsB := framework.TunnelPlaneArgs(t, "0.0.0.0")
	a := framework.StartPlane(t, framework.PlaneOptions{Endpoint: dsn, Args: append(argsA, common...)})
	b := framework.StartPlaneReplica(t, a, framework.PlaneOptions{Endpoint: dsn, Args: append(argsB, common...)})
	f.planes = []*framework.Server{a, b}
	wg.Wait()
	for i, m := range direct {
		f.members[fmt.Sprintf("member-%d", i)] = m
	}

	local := func(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
	apiLB := framework.StartRoundRobin(t, local(a.Port), local(b.Port))
	f.plane = &framework.Server{Process: a.Process, DataDir: a.DataDir, Port: a.Port, Kubeconfig: kubeconfigAt(t, a.Kubeconfig, apiLB)}
	agentLB := framework.StartRoundRobinOn(t, ns.HostIP, local(portsA.AgentPort), local(portsB.AgentPort))
	connectLB := framework.StartRoundRobin(t, local(portsA.ConnectPort), local(portsB.ConnectPort))
	_, connectPort, _ := net.SplitHostPort(connectLB)
	cport, _ := strconv.Atoi(connectPort)

	edge := framework.StartMemberIn(t, edgeName, ns)
	if err := edge.WaitKubeconfig(context.Background()); err != nil {
		t.Fatalf("member %s: %v", edgeName, err)
	}
	cert, key := framework.IssueAgentCert(t, a, edgeName, 24*time.Hour)
	f.agent = framework.StartAgent(t, a, portsA, framework.AgentOptions{Cluster: edgeName, CertFile: cert, KeyFile: key,
		Kubeconfig: edge.Kubeconfig, NetNS: ns, Args: []string{"--hub-address=" + agentLB}})
	// The agent connects to each hub in turn (through the balancer): wait
	// until the member answers through both, then use the balancer.
	for _, ports := range []framework.TunnelPorts{portsA, portsB, {ConnectPort: cport}} {
		edge.ProxyURL = framework.TunnelProxyURL(t, a, ports, edgeName)
		edge.ProxyCA = framework.TunnelProxyCA(t, a)
		if err := edge.WaitReady(context.Background()); err != nil {
			t.Fatalf("member %s not ready through its tunnel (CONNECT port %d): %v\nagent log:\n%s", edgeName, ports.ConnectPort, err, f.agent.Tail(20))
		}
	}
	f.members[edgeName] = edge

	k := framework.Kubectl{Kubeconfig: f.plane.Kubeconfig}
	for _, name := range sortedKeys(f.members) {
		framework.JoinMember(t, f.plane, f.members[name], name)
	}
	for _, tn := range tenants {
		f.ctl(t, "tenant", "create", workspace(tn.name), "--tenant="+tn.name, "--workspace=prod")
		k.MustRun(t, "", "-n", framework.KubeFedNamespace, "label", "kubefedcluster", tn.dedicated, "cellfed.io/tenant="+tn.name)
		f.ctl(t, "cell", "create", "rz00a", "-n", workspace(tn.name), "--cluster="+sharedMember)
		f.ctl(t, "cell", "create", "rz10a", "-n", workspace(tn.name), "--cluster="+tn.dedicated)
	}
	// cellfed-controller's own leader-election and probe defaults, not
	// the framework's fast ones; a stable identity lets a restarted
	// controller take its Lease back at once.
	f.controller = framework.StartController(t, f.plane,
		"--leader-elect-lease-duration=15s", "--leader-elect-renew-deadline=10s", "--leader-elect-retry-period=2s",
		"--leader-elect-identity=soak-controller",
		"--cluster-probe-period=2s", "--cluster-probe-timeout=3s", "--cluster-failure-threshold=3", "--cluster-unready-probe-period=1s", "--cluster-timeout=30s")
	var names []string
	for _, tn := range tenants {
		names = append(names, tn.dedicated, workspace(tn.name)+".rz00a", workspace(tn.name)+".rz10a")
	}
	framework.WaitKubeFedClustersReady(t, f.plane, append(names, sharedMember)...)
	return f
}

// kubeconfigAt is a copy of kubeconfig whose server is https://addr.
func kubeconfigAt(t *testing.T, kubeconfig, addr string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://" + addr
	}
	p := filepath.Join(t.TempDir(), "balanced.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// ctl runs cellfedctl against the balancer, failing the test on error.
func (f *soakFederation) ctl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := f.runCtl(context.Background(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runCtl runs cellfedctl against the balancer.
func (f *soakFederation) runCtl(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, f.cellfedctl, append([]string{"--kubeconfig=" + f.plane.Kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("cellfedctl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
