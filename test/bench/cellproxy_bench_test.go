package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/cellfed/cellfed/test/framework"
)

// BenchmarkCellProxy compares GETs of a small object (16 workers, one
// client each path) from a member directly and through the plane's API
// proxy of a cell on it, for a direct member and a tunnelled one (its
// agent on loopback). The proxy path adds the plane's authentication,
// RBAC, the Cell check, impersonation and a second HTTP/2 hop. Target:
// p50 through a cell on a direct member at most 1.5× direct.
func BenchmarkCellProxy(b *testing.B) {
	args, ports := framework.TunnelPlaneArgs(b, "")
	plane := framework.StartPlane(b, framework.PlaneOptions{Args: append(args, framework.AllowHandIssuedAgents)})
	members := framework.StartMembers(b, 2)
	direct, edge := members[0], members[1]
	cert, key := framework.IssueAgentCert(b, plane, "edge-1", time.Hour)
	framework.StartAgent(b, plane, ports, framework.AgentOptions{Cluster: "edge-1", CertFile: cert, KeyFile: key, Kubeconfig: edge.Kubeconfig})
	framework.JoinMember(b, plane, direct, "direct-1")
	edge.ProxyURL, edge.ProxyCA = framework.TunnelProxyURL(b, plane, ports, "edge-1"), framework.TunnelProxyCA(b, plane)
	framework.JoinMember(b, plane, edge, "edge-1")
	edge.ProxyURL, edge.ProxyCA = "", nil
	ctx := context.Background()
	for _, m := range []*framework.Server{direct, edge} {
		mc := m.Client(b)
		if _, err := mc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		if _, err := mc.CoreV1().ConfigMaps("shop").Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "bench"}, Data: map[string]string{"k": "v"},
		}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	framework.Kubectl{Kubeconfig: plane.Kubeconfig}.MustRun(b, tenantNamespace("shop", "acme")+`
---
apiVersion: core.cellfed.io/v1alpha1
kind: Cell
metadata: {name: rz00a, namespace: shop}
spec: {cluster: direct-1}
---
apiVersion: core.cellfed.io/v1alpha1
kind: Cell
metadata: {name: rz10a, namespace: shop}
spec: {cluster: edge-1}
`, "apply", "-f", "-")

	cellConfig := func(cell string) *rest.Config {
		cfg := plane.RESTConfig(b)
		cfg.Host += "/apis/proxy.cellfed.io/v1alpha1/namespaces/shop/cells/" + cell + "/proxy"
		return cfg
	}
	memberConfig := func(m *framework.Server) *rest.Config {
		cfg, err := clientcmd.BuildConfigFromFlags("", m.Kubeconfig)
		if err != nil {
			b.Fatal(err)
		}
		return cfg
	}
	// The cells' caches and the proxy's member identity are ready once a
	// GET works.
	for _, cell := range []string{"rz00a", "rz10a"} {
		c := kubernetesForBench(b, cellConfig(cell))
		err := framework.Poll(ctx, 100*time.Millisecond, time.Minute, func(ctx context.Context) (bool, error) {
			_, err := c.CoreV1().ConfigMaps("shop").Get(ctx, "bench", metav1.GetOptions{})
			return err == nil, nil
		})
		if err != nil {
			b.Fatalf("cell %s: no GET through the proxy: %v", cell, err)
		}
	}

	paths := []struct {
		name string
		cfg  *rest.Config
	}{
		{"direct-member", memberConfig(direct)},
		{"cell-on-direct-member", cellConfig("rz00a")},
		{"tunnelled-member-direct", memberConfig(edge)},
		{"cell-on-tunnelled-member", cellConfig("rz10a")},
	}
	results := map[string]getStats{}
	profileDir := os.Getenv("CELLFED_BENCH_PROFILE_DIR")
	planeClient := plane.Client(b)
	for _, p := range paths {
		b.Run(p.name, func(b *testing.B) {
			for range b.N {
				var profiled chan string
				if profileDir != "" && strings.HasPrefix(p.name, "cell-") {
					profiled = make(chan string, 1)
					go func() { profiled <- profilePlane(planeClient, filepath.Join(profileDir, "plane-"+p.name+".pb.gz")) }()
				}
				s := measureGetsIn(b, p.cfg, "shop")
				if profiled != nil {
					b.Logf("plane CPU profile while GETting through %s: %s", p.name, <-profiled)
				}
				results[p.name] = s
				b.ReportMetric(float64(s.p50.Microseconds()), "p50-µs")
				b.ReportMetric(float64(s.p99.Microseconds()), "p99-µs")
				b.ReportMetric(s.rps, "req/s")
			}
		})
	}
	for _, pair := range [][2]string{{"cell-on-direct-member", "direct-member"}, {"cell-on-tunnelled-member", "tunnelled-member-direct"}} {
		s, d := results[pair[0]], results[pair[1]]
		if d.rps > 0 && s.rps > 0 {
			b.Logf("%s vs %s at %d workers: p50 %s vs %s (%.2f×), p99 %s vs %s, %.0f vs %.0f req/s",
				pair[0], pair[1], tunnelWorkers, s.p50, d.p50, float64(s.p50)/float64(d.p50), s.p99, d.p99, s.rps, d.rps)
		}
	}
}

// profilePlane writes a 4 s CPU profile of the plane to file (started
// with the measurement, which runs 5 s) and says where it is or why not.
func profilePlane(plane kubernetes.Interface, file string) string {
	raw, err := plane.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
		Param("seconds", "4").DoRaw(context.Background())
	if err != nil {
		return err.Error()
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err.Error()
	}
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		return err.Error()
	}
	return file
}

func kubernetesForBench(b *testing.B, cfg *rest.Config) kubernetes.Interface {
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return c
}
