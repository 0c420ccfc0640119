package e2e

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/cellfed/cellfed/test/framework"
)

// TestTunnelAcrossReplicas: two plane replicas on one MariaDB database,
// each with its own tunnel hub, started with --tunnel-server-count=2; one
// agent reaches them through a round-robin balancer (the Service of the
// manifests) and keeps a connection to each. The member stays reachable
// through the surviving replica's CONNECT frontend, and through a
// balancer over both frontends, when either replica is SIGKILLed: A
// first, then, once A is back and the agent reconnected to it, B.
// Before the tunnel, a CRD created through A is Established at once (the
// establishing controller assumes one API server) and served by B.
func TestTunnelAcrossReplicas(t *testing.T) {
	t.Parallel()
	dsn := framework.NewDatabase(t)
	common := []string{"--tunnel-server-count=2", framework.AllowHandIssuedAgents, "--default-federated-types="}
	argsA, portsA := framework.TunnelPlaneArgs(t, "")
	argsB, portsB := framework.TunnelPlaneArgs(t, "")
	a := framework.StartPlane(t, framework.PlaneOptions{Endpoint: dsn, Args: append(argsA, common...)})
	b := framework.StartPlaneReplica(t, a, framework.PlaneOptions{Endpoint: dsn, Args: append(argsB, common...)})
	t.Run("a new CRD is Established at once and served by the other replica", func(t *testing.T) {
		checkCRDEstablishedAcrossReplicas(t, a, b)
	})
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

// establishingPeerWait is how long the upstream CRD establishing
// controller waits for other API servers before it marks a new CRD
// Established when it is told there are several (masterCount > 1).
const establishingPeerWait = 5 * time.Second

// checkCRDEstablishedAcrossReplicas shows the limitation "the CRD
// establishing controller assumes one API server" (docs/limitations.md):
// a CRD created through first is Established there well within
// establishingPeerWait, and second, on the same database, serves it once
// its informer sees the CRD: an object created through second reads back
// through first.
func checkCRDEstablishedAcrossReplicas(t *testing.T, first, second *framework.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	crds, err := apiextensionsclient.NewForConfig(first.RESTConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	const group, plural, ns = "establishing.e2e.cellfed.io", "probes", "default"
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: "probe", Kind: "Probe", ListKind: "ProbeList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}},
			}},
		},
	}
	sent := time.Now()
	if _, err := crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CRD %s through replica A: %v", crd.Name, err)
	}
	// The clock starts when the create is acknowledged: the CRD is stored,
	// and an establishing controller that waited for peers would only
	// begin its wait after that.
	created := time.Now()
	t.Logf("CRD %s created through replica A in %s", crd.Name, created.Sub(sent).Round(time.Millisecond))

	var established time.Duration
	last := "not read yet"
	if err := framework.Poll(ctx, 50*time.Millisecond, 60*time.Second, func(ctx context.Context) (bool, error) {
		got, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = "no Established condition"
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established {
				last = fmt.Sprintf("Established %s (%s: %s)", c.Status, c.Reason, c.Message)
				if c.Status == apiextensionsv1.ConditionTrue {
					established = time.Since(created)
					return true, nil
				}
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("CRD %s not Established through replica A: %v (last read: %s)", crd.Name, err, last)
	}
	t.Logf("replica A reports CRD %s Established %s after the create", crd.Name, established.Round(time.Millisecond))
	// Well below the peer wait, with room for a loaded machine: a wait
	// for peers would put it at 5 s or more.
	if limit := establishingPeerWait - time.Second; established >= limit {
		t.Errorf("CRD %s Established through replica A after %s, want < %s (the establishing controller waiting %s for peers would explain >= %s)",
			crd.Name, established.Round(time.Millisecond), limit, establishingPeerWait, establishingPeerWait)
	}

	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}
	probesA, probesB := dynamicClient(t, first).Resource(gvr).Namespace(ns), dynamicClient(t, second).Resource(gvr).Namespace(ns)
	if err := framework.Poll(ctx, 50*time.Millisecond, 60*time.Second, func(ctx context.Context) (bool, error) {
		_, err := probesB.List(ctx, metav1.ListOptions{})
		return err == nil, err
	}); err != nil {
		t.Fatalf("replica B does not serve %s 60 s after replica A created the CRD: %v", gvr, err)
	}
	t.Logf("replica B serves %s %s after the create", gvr, time.Since(created).Round(time.Millisecond))

	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1", "kind": "Probe",
		"metadata": map[string]any{"name": "through-b"},
		"spec":     map[string]any{"written": "through replica B"},
	}}
	if _, err := probesB.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Probe %s/through-b through replica B: %v", ns, err)
	}
	got, err := probesA.Get(ctx, "through-b", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading Probe %s/through-b (created through replica B) through replica A: %v", ns, err)
	}
	if w, _, _ := unstructured.NestedString(got.Object, "spec", "written"); w != "through replica B" {
		t.Errorf("Probe %s/through-b through replica A has spec.written %q, want %q", ns, w, "through replica B")
	}
}
