package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cellfed/cellfed/test/framework"
)

const tunnelReleases = 30

// BenchmarkTunnelRelease measures release latency — a FederatedConfigMap
// created on the plane until its config map is seen in the member — for a
// member cellfed-controller reaches directly and one it reaches only
// through the tunnel (spec.proxyURL, the member's address withheld).
func BenchmarkTunnelRelease(b *testing.B) {
	args, ports := framework.TunnelPlaneArgs(b, "")
	plane := framework.StartPlane(b, framework.PlaneOptions{Args: append(args, framework.AllowHandIssuedAgents)})
	members := framework.StartMembers(b, 2)
	direct, tunnelled := members[0], members[1]
	cert, key := framework.IssueAgentCert(b, plane, "edge", time.Hour)
	framework.StartAgent(b, plane, ports, framework.AgentOptions{Cluster: "edge", CertFile: cert, KeyFile: key, Kubeconfig: tunnelled.Kubeconfig})
	viaTunnel := *tunnelled
	viaTunnel.ProxyURL, viaTunnel.ProxyCA = framework.TunnelProxyURL(b, plane, ports, "edge"), framework.TunnelProxyCA(b, plane)
	viaTunnel.Endpoint = "https://localhost:1" // withheld: only the tunnel leads there
	if err := viaTunnel.WaitReady(context.Background()); err != nil {
		b.Fatal(err)
	}
	framework.JoinMember(b, plane, direct, "direct")
	framework.JoinMember(b, plane, &viaTunnel, "edge")
	k := framework.Kubectl{Kubeconfig: plane.Kubeconfig}
	k.MustRun(b, `
apiVersion: v1
kind: Namespace
metadata: {name: bench}
---
apiVersion: types.kubefed.io/v1beta1
kind: FederatedNamespace
metadata: {name: bench, namespace: bench}
spec:
  placement: {clusters: [{name: direct}, {name: edge}]}
`, "apply", "-f", "-")
	framework.StartController(b, plane)
	framework.WaitKubeFedClustersReady(b, plane, "direct", "edge")

	for _, target := range []struct {
		cluster string
		member  *framework.Server
	}{{"direct", direct}, {"edge", tunnelled}} {
		b.Run(target.cluster, func(b *testing.B) {
			for range b.N {
				d := releaseLatencies(b, k, target.member, target.cluster)
				b.ReportMetric(ms(percentile(d, 50)), "p50-ms")
				b.ReportMetric(ms(percentile(d, 99)), "p99-ms")
			}
		})
	}
}

// releaseLatencies creates tunnelReleases federated config maps placed on
// cluster one after another and times each until a direct client of the
// member (not through the tunnel) sees it, polling every 5 ms.
func releaseLatencies(b *testing.B, k framework.Kubectl, member *framework.Server, cluster string) []time.Duration {
	ctx := context.Background()
	c := member.Client(b)
	var out []time.Duration
	for i := range tunnelReleases {
		name := fmt.Sprintf("%s-%d", cluster, i)
		start := time.Now()
		k.MustRun(b, `
apiVersion: types.kubefed.io/v1beta1
kind: FederatedConfigMap
metadata: {name: `+name+`, namespace: bench}
spec:
  template: {data: {k: v}}
  placement: {clusters: [{name: `+cluster+`}]}
`, "apply", "-f", "-")
		err := framework.Poll(ctx, 5*time.Millisecond, 30*time.Second, func(ctx context.Context) (bool, error) {
			_, err := c.CoreV1().ConfigMaps("bench").Get(ctx, name, metav1.GetOptions{})
			return err == nil, err
		})
		if err != nil {
			b.Fatalf("config map %s in %s: %v", name, cluster, err)
		}
		out = append(out, time.Since(start))
	}
	slices.Sort(out)
	return out
}
