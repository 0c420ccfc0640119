package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/pkg/registration"
	"github.com/cellfed/cellfed/test/framework"
)

// regClusterCondition is the status of a KubeFedCluster's condition, ""
// when absent or unreadable.
func regClusterCondition(t *testing.T, f *regFixture, name, condType string) string {
	t.Helper()
	s, err := clusterCondition(context.Background(), f.dyn, name, condType)
	if err != nil {
		return ""
	}
	return s
}

// TestRegistrationBehindNetNS: a member kube-apiserver and the real
// cellfed-agent run in a network namespace of their own; the plane cannot
// reach the member. The agent registers with a bootstrap token from
// `cellfedctl token create`, an administrator approves with `cellfedctl
// registration approve`, and the plane makes a tunnelled KubeFedCluster.
// cellfed-controller releases a FederatedDeployment to a cell on it, then
// unmodified upstream KubeFed releases one through the cluster's proxyURL.
// The agent's 30 s certificate is renewed while requests flow through the
// tunnel without a failure; a used token is refused by the agent binary;
// revocation disconnects the agent and the cluster goes Offline while a
// directly joined cluster stays Ready.
func TestRegistrationBehindNetNS(t *testing.T) {
	t.Parallel()
	framework.KubeFedBinary(t) // fail before starting servers if it is not built
	ns, why := framework.NewNetNS(t)
	planeHost := "127.0.0.1"
	if ns == nil {
		t.Logf("no network namespace (%s): the member and its agent run on loopback and the member's address is withheld (--member-endpoint)", why)
	} else {
		planeHost = ns.HostIP // the agent must reach the plane's API and hub
	}
	tunnelArgs, ports := framework.TunnelPlaneArgs(t, planeHost)
	// Both members start while the plane does: the one behind the
	// namespace (edge-1) and one the plane reaches directly (direct-1).
	var member *framework.Server
	var agentArgs []string
	if ns != nil {
		member = framework.StartMemberIn(t, "edge-1", ns)
	} else {
		member = framework.StartMemberNoWait(t, "edge-1")
		agentArgs = append(agentArgs, "--member-endpoint=https://localhost:1")
	}
	direct := framework.StartMemberNoWait(t, "direct-1")
	f := startRegistrationPlane(t, append(tunnelArgs, "--bind-address="+planeHost, "--agent-cert-validity=30s")...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// direct-1, joined with cellfedctl join: revocation of the other must
	// not disturb it.
	if err := direct.WaitReady(ctx); err != nil {
		t.Fatalf("member direct-1 did not become ready: %v", err)
	}
	f.ctl.ok(t, "join", "direct-1", "--kubeconfig-member="+direct.Kubeconfig)

	// An agent with a certificate issued by hand (no registration) is
	// refused: this plane does not run with
	// --tunnel-allow-unregistered-agents.
	strayCert, strayKey := framework.IssueAgentCert(t, f.plane, "stray", time.Hour)
	stray := framework.StartAgent(t, f.plane, ports, framework.AgentOptions{Cluster: "stray", CertFile: strayCert, KeyFile: strayKey, Kubeconfig: direct.Kubeconfig, NetNS: ns})
	if err := framework.Poll(ctx, 100*time.Millisecond, 30*time.Second, func(context.Context) (bool, error) {
		return strings.Contains(stray.Tail(50), "cluster stray has no ClusterRegistration; register it"), nil
	}); err != nil {
		t.Errorf("the hand-issued agent was not refused for want of a registration: %v\nagent log:\n%s", err, stray.Tail(20))
	}
	stray.Stop(5 * time.Second)

	if err := member.WaitKubeconfig(ctx); err != nil {
		t.Fatal(err)
	}

	token := f.token(t, "--tenant=acme", "--workspace=prod", "--ttl=10m")
	tokenFile := framework.WriteTempFile(t, token)
	stateDir := filepath.Join(t.TempDir(), "agent-state")
	agentArgs = append(agentArgs, "--plane-kubeconfig="+f.agentKubeconfig, "--bootstrap-token-file="+tokenFile,
		"--state-dir="+stateDir, "--member-namespace=kube-federation-system")
	agent := framework.StartAgent(t, f.plane, ports, framework.AgentOptions{Cluster: "edge-1", Kubeconfig: member.Kubeconfig, NetNS: ns, Args: agentArgs})

	start := time.Now()
	f.waitPhase(t, "edge-1", cellv1alpha1.RegistrationPending)
	t.Logf("agent registered %v after start", time.Since(start).Round(time.Millisecond))
	list := f.ctl.ok(t, "registration", "list")
	if !strings.Contains(list, "edge-1") || !strings.Contains(list, "Pending") {
		t.Fatalf("registration list:\n%s", list)
	}
	approveAt := time.Now()
	out := f.ctl.ok(t, "registration", "approve", "edge-1")
	if !strings.Contains(out, "registration edge-1 approved: KubeFedCluster kube-federation-system/edge-1") {
		t.Fatalf("approve printed %q\nagent log:\n%s", out, agent.Tail(20))
	}

	// The tunnelled KubeFedCluster: dedicated to the tenant, CA pinned,
	// reached through the hub's CONNECT frontend.
	kc, err := f.dyn.Resource(kubefed.KubeFedClustersResource).Namespace(framework.KubeFedNamespace).Get(ctx, "edge-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	labels := kc.GetLabels()
	if labels[registration.LabelTunnelled] != "true" || labels[cellv1alpha1.LabelTenant] != "acme" {
		t.Errorf("KubeFedCluster edge-1 labels %v, want tunnelled and tenant acme", labels)
	}
	proxyURL, _, _ := unstructured.NestedString(kc.Object, "spec", "proxyURL")
	ca, _, _ := unstructured.NestedString(kc.Object, "spec", "caBundle")
	endpoint, _, _ := unstructured.NestedString(kc.Object, "spec", "apiEndpoint")
	if !strings.Contains(proxyURL, "127.0.0.1:"+strconv.Itoa(ports.ConnectPort)) || ca == "" {
		t.Errorf("KubeFedCluster edge-1: proxyURL %q caBundle set %v", proxyURL, ca != "")
	}
	// The CONNECT frontend speaks TLS (the proxy credential never travels
	// in clear), and the caBundle, the one CA pool KubeFed verifies the
	// proxy and the member with, holds the member's CA and the plane's.
	caBundle, err := base64.StdEncoding.DecodeString(ca)
	if err != nil {
		t.Fatalf("KubeFedCluster edge-1 caBundle: %v", err)
	}
	planeCA := framework.TunnelProxyCA(t, f.plane)
	if !strings.HasPrefix(proxyURL, "https://") || !bytes.Contains(caBundle, bytes.TrimSpace(planeCA)) {
		t.Errorf("KubeFedCluster edge-1: proxyURL %q, want https://; caBundle holds the plane CA: %v", proxyURL, bytes.Contains(caBundle, bytes.TrimSpace(planeCA)))
	}
	if ns != nil {
		// The plane cannot reach the member's address itself.
		if code, _ := framework.RunToExit(t, framework.KubectlBinary(t), "--kubeconfig="+member.Kubeconfig, "--request-timeout=2s", "get", "--raw=/readyz"); code == 0 {
			t.Fatalf("the member at %s answers from the host: it is not behind its namespace", endpoint)
		}
	}
	member.ProxyURL, member.ProxyCA = proxyURL, caBundle
	if err := member.WaitReady(ctx); err != nil {
		t.Fatalf("member not ready through the tunnel: %v\nagent log:\n%s", err, agent.Tail(30))
	}
	t.Logf("member reachable through the tunnel %v after approval", time.Since(approveAt).Round(time.Millisecond))
	memberClient := member.Client(t)

	// Requests flow through the tunnel from here on; renewal must not
	// interrupt them.
	var gets, failures atomic.Int64
	var lastFailure atomic.Value
	loopCtx, stopLoop := context.WithCancel(ctx)
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		for loopCtx.Err() == nil {
			_, err := memberClient.CoreV1().Namespaces().Get(loopCtx, "default", metav1.GetOptions{})
			if loopCtx.Err() != nil {
				return
			}
			gets.Add(1)
			if err != nil {
				failures.Add(1)
				lastFailure.Store(err.Error())
			}
			time.Sleep(50 * time.Millisecond) // the request rate (20/s) through the tunnel, not a sync
		}
	}()

	// A used token is refused by the agent binary, with what to do.
	code, line := framework.RunToExit(t, framework.Binary(t, "cellfed-agent"), "--cluster=edge-9", "--hub-address=127.0.0.1:1",
		"--plane-kubeconfig="+f.agentKubeconfig, "--bootstrap-token="+token, "--state-dir="+t.TempDir(), "--kubeconfig="+direct.Kubeconfig)
	if code == 0 || !strings.Contains(line, "bootstrap token "+strings.Split(token, ".")[0]) || !strings.Contains(line, "cellfedctl token create") {
		t.Errorf("agent with a used token: exit %d, %q", code, line)
	}

	// cellfed-controller releases a FederatedDeployment to a cell on the
	// tunnelled cluster.
	// cellfed-controller reaches the tunnelled cluster through the hub's gRPC
	// frontend; upstream KubeFed below through spec.proxyURL (CONNECT).
	ctrl := framework.StartController(t, f.plane, "--tunnel-grpc-address=127.0.0.1:"+strconv.Itoa(ports.GRPCPort), "--tunnel-server-name=localhost")
	framework.WaitKubeFedClustersReady(t, f.plane, "edge-1", "direct-1")
	createCell(t, f.ctl, f.plane.Client(t), "shop", "rz00a", "edge-1")
	k := framework.Kubectl{Kubeconfig: f.plane.Kubeconfig}
	k.MustRun(t, `
apiVersion: types.kubefed.io/v1beta2
kind: FederatedNamespace
metadata: {name: shop, namespace: shop}
spec:
  placement: {topologies: [{name: rz00a}]}
---`+webDeploymentOn("rz00a"), "apply", "-f", "-")
	waitDeployment(t, memberClient, "nginx:1.27", 2)

	// Renewal: the 30 s certificate is replaced at two thirds of its
	// lifetime, on disk and in the plane, with no failed request.
	first := f.registration(t, "edge-1")
	firstCert := string(first.Status.Certificate)
	// Keep the pair the renewal will supersede.
	oldPair := t.TempDir()
	for _, name := range []string{"agent.crt", "agent.key"} {
		b, err := os.ReadFile(filepath.Join(stateDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(oldPair, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the agent certificate to be renewed", func(ctx context.Context) (bool, error) {
		r := f.registration(t, "edge-1")
		onDisk, err := os.ReadFile(filepath.Join(stateDir, "agent.crt"))
		if err != nil {
			return false, err
		}
		return string(r.Status.Certificate) != firstCert && string(onDisk) == string(r.Status.Certificate) &&
			r.Annotations[registration.AnnotationAgentCertificate] != first.Annotations[registration.AnnotationAgentCertificate], nil
	})
	if n := failures.Load(); n != 0 {
		t.Errorf("%d of %d requests through the tunnel failed around the renewal; last: %v", n, gets.Load(), lastFailure.Load())
	}
	t.Logf("renewal: %d requests through the tunnel, %d failed", gets.Load(), failures.Load())
	waitFor(t, "the agent to log the renewal", func(context.Context) (bool, error) {
		return strings.Contains(agent.Log(), "Renewed the agent certificate"), nil
	})
	// The superseded certificate has not expired, yet the hub refuses it.
	oldAgent := framework.StartAgent(t, f.plane, ports, framework.AgentOptions{Cluster: "edge-1",
		CertFile: filepath.Join(oldPair, "agent.crt"), KeyFile: filepath.Join(oldPair, "agent.key"), Kubeconfig: member.Kubeconfig, NetNS: ns})
	waitFor(t, "the hub to refuse the superseded certificate", func(context.Context) (bool, error) {
		return strings.Contains(oldAgent.Tail(50), "is not the registration's current one (superseded by a renewal"), nil
	})
	oldAgent.Stop(5 * time.Second)

	// Upstream KubeFed through spec.proxyURL. First the namespace is placed
	// on the physical cluster (so no controller removes it from the
	// member: a bare kube-apiserver never finishes deleting a namespace),
	// then the cell is drained and goes (KubeFed would see the member
	// twice, through the physical and the per-cell cluster; the web
	// deployment still places it, so a plain delete is refused),
	// cellfed-controller stops, and KubeFed places a deployment on the
	// tunnelled cluster.
	k.MustRun(t, `
apiVersion: types.kubefed.io/v1beta1
kind: FederatedNamespace
metadata: {name: shop, namespace: shop}
spec:
  placement: {clusters: [{name: edge-1}]}
`, "apply", "-f", "-")
	waitTopologyStatus(t, k, "federatednamespaces.v1beta2.types.kubefed.io", "shop", []string{"edge-1"})
	f.ctl.ok(t, "cell", "delete", "rz00a", "-n", "shop", "--drain", "--timeout=90s")
	waitFor(t, "per-cell cluster shop.rz00a to go", func(ctx context.Context) (bool, error) {
		_, err := f.dyn.Resource(kubefed.KubeFedClustersResource).Namespace(framework.KubeFedNamespace).Get(ctx, "shop.rz00a", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	ctrl.Stop(5 * time.Second)
	if nsObj, err := memberClient.CoreV1().Namespaces().Get(ctx, "shop", metav1.GetOptions{}); err != nil || nsObj.DeletionTimestamp != nil {
		t.Fatalf("namespace shop in the member before KubeFed starts: %v (deleting: %v)", err, err == nil && nsObj.DeletionTimestamp != nil)
	}
	framework.StartKubeFed(t, f.plane, framework.KubeFedOptions{})
	k.MustRun(t, `
apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata: {name: api, namespace: shop}
spec:
  template:
    spec:
      replicas: 1
      selector: {matchLabels: {app: api}}
      template:
        metadata: {labels: {app: api}}
        spec: {containers: [{name: api, image: "nginx:1.28"}]}
  placement:
    clusters: [{name: edge-1}]
`, "apply", "-f", "-")
	if err := framework.Poll(ctx, 100*time.Millisecond, controllerTimeout, func(ctx context.Context) (bool, error) {
		d, err := memberClient.AppsV1().Deployments("shop").Get(ctx, "api", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return d.Labels["kubefed.io/managed"] == "true" && d.Spec.Template.Spec.Containers[0].Image == "nginx:1.28", nil
	}); err != nil {
		fd, _ := k.Run(ctx, "", "-n", "shop", "get", fdV1beta1, "api", "-o", "yaml")
		fns, _ := k.Run(ctx, "", "-n", "shop", "get", "federatednamespaces.v1beta1.types.kubefed.io", "shop", "-o", "yaml")
		events, _ := k.Run(ctx, "", "-n", "shop", "get", "events", "-o", "custom-columns=OBJ:.involvedObject.name,REASON:.reason,MSG:.message")
		t.Fatalf("deployment shop/api from upstream KubeFed in the tunnelled member: %v\nFederatedDeployment:\n%s\nFederatedNamespace:\n%s\nevents:\n%s", err, fd, fns, events)
	}
	stopLoop()
	<-loopDone

	// Rotation: the cluster's proxy credential alone is revoked. The
	// plane rewrites the KubeFedCluster's proxyURL, the hub refuses the
	// previous one at once, and upstream KubeFed goes on through the new
	// one.
	out = f.ctl.ok(t, "registration", "rotate-proxy-credential", "edge-1")
	if !strings.Contains(out, "proxy credential generation 1; the hubs refuse the previous credential, KubeFedCluster kube-federation-system/edge-1 has the new proxyURL") {
		t.Errorf("rotate-proxy-credential printed %q", out)
	}
	kc, err = f.dyn.Resource(kubefed.KubeFedClustersResource).Namespace(framework.KubeFedNamespace).Get(ctx, "edge-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rotatedURL, _, _ := unstructured.NestedString(kc.Object, "spec", "proxyURL")
	if rotatedURL == proxyURL || !strings.HasPrefix(rotatedURL, "https://") {
		t.Fatalf("proxyURL after rotation %q (before %q)", rotatedURL, proxyURL)
	}
	stale := *member
	if _, err := stale.Client(t).CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err == nil || !strings.Contains(err.Error(), "Proxy Authentication Required") {
		t.Errorf("the rotated-out proxy credential: %v, want Proxy Authentication Required", err)
	}
	member.ProxyURL = rotatedURL
	memberClient = member.Client(t)
	if _, err := memberClient.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Errorf("through the rotated proxy credential: %v", err)
	}
	k.MustRun(t, "", "-n", "shop", "patch", fdV1beta1, "api", "--type=merge", "-p",
		`{"spec":{"template":{"spec":{"template":{"spec":{"containers":[{"name":"api","image":"nginx:1.29"}]}}}}}}`)
	if err := framework.Poll(ctx, 100*time.Millisecond, controllerTimeout, func(ctx context.Context) (bool, error) {
		d, err := memberClient.AppsV1().Deployments("shop").Get(ctx, "api", metav1.GetOptions{})
		return err == nil && d.Spec.Template.Spec.Containers[0].Image == "nginx:1.29", nil
	}); err != nil {
		t.Errorf("upstream KubeFed after the rotation did not update deployment shop/api: %v", err)
	}

	// Revocation: the agent is disconnected and refused, the cluster goes
	// Offline, the directly joined cluster stays Ready.
	revokeAt := time.Now()
	f.ctl.ok(t, "registration", "revoke", "edge-1", "--reason=decommissioned")
	waitFor(t, "the tunnel to refuse edge-1", func(ctx context.Context) (bool, error) {
		_, err := memberClient.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		return err != nil, nil
	})
	waitFor(t, "KubeFedCluster edge-1 to go Offline", func(context.Context) (bool, error) {
		return regClusterCondition(t, f, "edge-1", "Offline") == "True", nil
	})
	t.Logf("revoked cluster Offline %v after revoke", time.Since(revokeAt).Round(time.Millisecond))
	if got := regClusterCondition(t, f, "direct-1", "Ready"); got != "True" {
		t.Errorf("direct-1 Ready=%q after edge-1 was revoked, want True", got)
	}
	waitFor(t, "the hub to refuse the revoked agent", func(context.Context) (bool, error) {
		log := f.plane.Log()
		return strings.Contains(log, "Refused tunnel agent") && strings.Contains(log, "the registration of cluster edge-1 is Revoked"), nil
	})
	// At its next renewal the agent finds its access gone and stops.
	waitFor(t, "the revoked agent to stop", func(context.Context) (bool, error) {
		exited, _ := agent.Exited()
		return exited, nil
	})
	if !strings.Contains(agent.Log(), "no longer lets the agent of cluster edge-1 read its registration") {
		t.Errorf("the revoked agent stopped without saying why:\n%s", agent.Tail(5))
	}
	if _, err := direct.Client(t).CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Errorf("direct-1 unreachable after edge-1 was revoked: %v", err)
	}
}
