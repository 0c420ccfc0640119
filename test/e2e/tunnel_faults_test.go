package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/cellfed/cellfed/test/framework"
)

// freshClient is a client with its own connections and a short timeout:
// it never reuses a connection that died with the link.
func freshClient(t *testing.T, s *framework.Server) kubernetes.Interface {
	t.Helper()
	cfg := s.RESTConfig(t)
	cfg.Timeout = 2 * time.Second
	return kubernetes.NewForConfigOrDie(cfg)
}

// deploymentsIn lists shop's deployments as name=image×replicas.
func deploymentsIn(ctx context.Context, c kubernetes.Interface) ([]string, error) {
	l, err := c.AppsV1().Deployments("shop").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range l.Items {
		out = append(out, fmt.Sprintf("%s=%s×%d", d.Name, d.Spec.Template.Spec.Containers[0].Image, *d.Spec.Replicas))
	}
	slices.Sort(out)
	return out, nil
}

func fedDeploymentYAML(name, image string) string {
	return `
apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata: {name: ` + name + `, namespace: shop}
spec:
  template:
    spec:
      replicas: 2
      selector: {matchLabels: {app: ` + name + `}}
      template:
        metadata: {labels: {app: ` + name + `}}
        spec: {containers: [{name: app, image: "` + image + `"}]}
  placement:
    clusters: [{name: edge-1}, {name: direct-1}]
`
}

// TestTunnelPropagationAndFaults: cellfed-controller releases to a member
// it reaches only through its agent's tunnel (spec.proxyURL, KubeFed's
// path), next to a directly reached member. A silent drop of the
// member's link (veth down inside its namespace: no RST, no ICMP) and a
// cut (the agent killed) make the cluster Offline within 20 s while the
// other member keeps being released to; after the link returns the
// changes made meanwhile reach the member within 5 s, nothing lost and
// nothing twice. The controller runs with the default probe settings.
func TestTunnelPropagationAndFaults(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"proxyURL", "gRPC"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			tunnelPropagationAndFaults(t, mode == "gRPC")
		})
	}
}

// tunnelPropagationAndFaults runs the test with cellfed-controller using
// the KubeFedCluster's proxyURL (CONNECT frontend), or the gRPC frontend.
func tunnelPropagationAndFaults(t *testing.T, viaGRPC bool) {
	ctx := context.Background()
	plane, ports := startTunnelPlane(t)
	directCh := make(chan *framework.Server, 1)
	go func() { directCh <- framework.StartMembers(t, 1)[0] }()
	edge := startTunnelledMember(t, plane, ports, "edge-1")
	direct := <-directCh
	if direct == nil {
		t.Fatal("direct member did not start")
	}
	framework.JoinMember(t, plane, edge.member, "edge-1")
	framework.JoinMember(t, plane, direct, "direct-1")
	k := framework.Kubectl{Kubeconfig: plane.Kubeconfig}
	k.MustRun(t, `
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: types.kubefed.io/v1beta1
kind: FederatedNamespace
metadata: {name: shop, namespace: shop}
spec:
  placement: {clusters: [{name: edge-1}, {name: direct-1}]}
`, "apply", "-f", "-")
	// The defaults of cellfed-controller, not the framework's fast ones.
	args := []string{"--cluster-probe-period=2s", "--cluster-probe-timeout=3s",
		"--cluster-failure-threshold=3", "--cluster-unready-probe-period=1s"}
	if viaGRPC {
		// The proxyURL still names the cluster, but its credential is
		// wrong: only the gRPC frontend can reach the member.
		k.MustRun(t, "", "-n", framework.KubeFedNamespace, "patch", "kubefedcluster", "edge-1", "--type=merge", "-p",
			fmt.Sprintf(`{"spec":{"proxyURL":"http://edge-1:not-the-credential@127.0.0.1:%d"}}`, ports.ConnectPort))
		args = append(args, "--tunnel-grpc-address=127.0.0.1:"+strconv.Itoa(ports.GRPCPort), "--tunnel-server-name=localhost")
	}
	framework.StartController(t, plane, args...)
	framework.WaitKubeFedClustersReady(t, plane, "edge-1", "direct-1")
	dyn := dynamic.NewForConfigOrDie(plane.RESTConfig(t))

	k.MustRun(t, fedDeploymentYAML("web", "nginx:1.27"), "apply", "-f", "-")
	released := map[string]string{"web": "nginx:1.27×2"}
	want := sortedPairs(released)
	waitDeployments(t, edge.member, want)
	waitDeployments(t, direct, want)

	faults := []struct {
		name        string
		break_, fix func(t *testing.T)
	}{
		{"silent drop", func(t *testing.T) { silentDrop(t, edge, true) }, func(t *testing.T) { silentDrop(t, edge, false) }},
		{"link cut", func(t *testing.T) { edge.agent.Kill() }, func(t *testing.T) {
			if err := edge.agent.Restart(); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for i, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			start := time.Now()
			f.break_(t)
			err := framework.Poll(ctx, 100*time.Millisecond, 30*time.Second, func(ctx context.Context) (bool, error) {
				if s, err := clusterCondition(ctx, dyn, "direct-1", "Ready"); err != nil || s != "True" {
					return false, fmt.Errorf("direct-1 affected: Ready=%q (%v)", s, err)
				}
				s, err := clusterCondition(ctx, dyn, "edge-1", "Offline")
				return s == "True", err
			})
			offline := time.Since(start)
			if err != nil {
				t.Fatalf("edge-1 not Offline: %v", err)
			}
			t.Logf("%s: edge-1 Offline after %s", f.name, offline.Round(100*time.Millisecond))
			if offline > 20*time.Second {
				t.Errorf("%s: Offline after %s, want ≤ 20s", f.name, offline)
			}
			if f.name == "silent drop" {
				// The hub notices the dead agent by its keepalives alone.
				planeKube := plane.Client(t)
				err := framework.Poll(ctx, 200*time.Millisecond, 30*time.Second, func(ctx context.Context) (bool, error) {
					body, err := planeKube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
					return strings.Contains(string(body), `cellfed_tunnel_agents{cluster="edge-1"} 0`), err
				})
				if err != nil {
					t.Fatalf("the hub still counts edge-1's agent: %v", err)
				}
				dropped := time.Since(start)
				t.Logf("%s: the hub dropped edge-1's dead agent after %s", f.name, dropped.Round(100*time.Millisecond))
				if dropped > 21*time.Second { // keepalive 10 s + timeout 10 s, polled
					t.Errorf("the hub dropped the dead agent after %s, want ≤ 20s", dropped)
				}
			}
			// Meanwhile the other member is released to as usual.
			image := fmt.Sprintf("nginx:1.%d", 28+i)
			k.MustRun(t, "", "-n", "shop", "patch", "federateddeployments.v1beta1.types.kubefed.io", "web", "--type=merge", "-p",
				`{"spec":{"template":{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"`+image+`"}]}}}}}}`)
			extra := fmt.Sprintf("api%d", i)
			k.MustRun(t, fedDeploymentYAML(extra, "busybox:1"), "apply", "-f", "-")
			released["web"], released[extra] = image+"×2", "busybox:1×2"
			want = sortedPairs(released)
			waitDeployments(t, direct, want)
			if s, _ := clusterCondition(ctx, dyn, "edge-1", "Offline"); s != "True" {
				t.Fatalf("edge-1 came back while its link was broken (Offline=%q)", s)
			}

			back := time.Now()
			f.fix(t)
			var got []string
			err = framework.Poll(ctx, 100*time.Millisecond, 30*time.Second, func(ctx context.Context) (bool, error) {
				var err error
				got, err = deploymentsIn(ctx, freshClient(t, edge.member))
				return slices.Equal(got, want), err
			})
			resumed := time.Since(back)
			if err != nil {
				t.Fatalf("edge-1 after the link returned: %v; has %v, want %v", err, got, want)
			}
			t.Logf("%s: changes made while away reached edge-1 %s after the link returned", f.name, resumed.Round(100*time.Millisecond))
			if resumed > 5*time.Second {
				t.Errorf("%s: release resumed after %s, want ≤ 5s", f.name, resumed)
			}
			framework.WaitKubeFedClustersReady(t, plane, "edge-1")
		})
	}
	// Nothing twice: each member holds exactly the released deployments.
	for _, m := range []*framework.Server{edge.member, direct} {
		got, err := deploymentsIn(ctx, freshClient(t, m))
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("member %s holds %v (%v), want %v", m.Name, got, err, want)
		}
	}
}

// silentDrop breaks (or restores) the tunnelled member's link without a
// word: the veth inside its namespace goes down; on loopback, the agent
// is stopped (SIGSTOP), which keeps its TCP connection open unanswered.
func silentDrop(t *testing.T, tm *tunnelled, down bool) {
	t.Helper()
	if tm.ns != nil {
		tm.ns.SetLink(t, !down)
		return
	}
	if down {
		tm.agent.Signal(syscall.SIGSTOP)
	} else {
		tm.agent.Signal(syscall.SIGCONT)
	}
}

func sortedPairs(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

func waitDeployments(t *testing.T, m *framework.Server, want []string) {
	t.Helper()
	var got []string
	waitFor(t, fmt.Sprintf("deployments %v in %s", want, m.Name), func(ctx context.Context) (bool, error) {
		var err error
		got, err = deploymentsIn(ctx, freshClient(t, m))
		return slices.Equal(got, want), fmt.Errorf("has %v (%v)", got, err)
	})
}

// TestTunnelUpstreamKubeFed: unmodified KubeFed v0.10.0 releases to a
// member it can reach only through the tunnel, using nothing but the
// KubeFedCluster's spec.proxyURL (the CONNECT frontend).
func TestTunnelUpstreamKubeFed(t *testing.T) {
	t.Parallel()
	framework.KubeFedBinary(t) // fail before starting servers if it is not built
	plane, ports := startTunnelPlane(t)
	edge := startTunnelledMember(t, plane, ports, "edge-1")
	framework.JoinMember(t, plane, edge.member, "edge-1")
	k := framework.Kubectl{Kubeconfig: plane.Kubeconfig}
	k.MustRun(t, `
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: types.kubefed.io/v1beta1
kind: FederatedNamespace
metadata: {name: shop, namespace: shop}
spec:
  placement: {clusters: [{name: edge-1}]}
---
apiVersion: types.kubefed.io/v1beta1
kind: FederatedConfigMap
metadata: {name: settings, namespace: shop}
spec:
  template: {data: {color: blue}}
  placement: {clusters: [{name: edge-1}]}
`, "apply", "-f", "-")
	framework.StartKubeFed(t, plane, framework.KubeFedOptions{})
	framework.WaitKubeFedClustersReady(t, plane, "edge-1")
	waitFor(t, "config map shop/settings in edge-1, released by KubeFed", func(ctx context.Context) (bool, error) {
		cm, err := freshClient(t, edge.member).CoreV1().ConfigMaps("shop").Get(ctx, "settings", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return cm.Data["color"] == "blue" && cm.Labels["kubefed.io/managed"] == "true", fmt.Errorf("has %v %v", cm.Data, cm.Labels)
	})
}
