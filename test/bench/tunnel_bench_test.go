package bench

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/cellfed/cellfed/pkg/proxy"
	"github.com/cellfed/cellfed/test/framework"
)

const (
	tunnelWorkers  = 16
	tunnelDuration = 5 * time.Second
)

// BenchmarkTunnel compares GETs of a small object from a member directly,
// through the hub's CONNECT frontend (spec.proxyURL) and through its gRPC
// frontend, with 16 workers sharing one client (one HTTP/2 connection, as
// the controller does): p50, p99 and requests per second. Everything runs
// on loopback on this machine; the member, plane and agent share its cores.
func BenchmarkTunnel(b *testing.B) {
	args, ports := framework.TunnelPlaneArgs(b, "")
	plane := framework.StartPlane(b, framework.PlaneOptions{Args: append(args, framework.AllowHandIssuedAgents)})
	member := framework.StartMember(b, "bench-1")
	cert, key := framework.IssueAgentCert(b, plane, "bench-1", time.Hour)
	framework.StartAgent(b, plane, ports, framework.AgentOptions{Cluster: "bench-1", CertFile: cert, KeyFile: key, Kubeconfig: member.Kubeconfig})
	ctx := context.Background()
	if _, err := member.Client(b).CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "bench"}, Data: map[string]string{"k": "v"},
	}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}

	base, err := clientcmd.BuildConfigFromFlags("", member.Kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	viaConnect := rest.CopyConfig(base)
	viaConnect.Proxy = proxyFunc(b, framework.TunnelProxyURL(b, plane, ports, "bench-1"))
	if err := framework.AddCA(viaConnect, framework.TunnelProxyCA(b, plane)); err != nil {
		b.Fatal(err)
	}
	do := proxy.NewDialerOptions()
	do.Address, do.ServerName = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.GRPCPort)), "localhost"
	do.CAFile, do.CertFile, do.KeyFile = plane.PKI().CACert(), plane.PKI().AdminCert(), plane.PKI().AdminKey()
	dialer, err := proxy.NewDialer(do)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { go dialer.Close() }()
	viaGRPC := rest.CopyConfig(base)
	viaGRPC.Dial = dialer.DialFunc("bench-1")

	paths := []struct {
		name string
		cfg  *rest.Config
	}{{"direct", base}, {"connect", viaConnect}, {"grpc", viaGRPC}}
	results := map[string]getStats{}
	for _, p := range paths {
		b.Run(p.name, func(b *testing.B) {
			for range b.N {
				s := measureGets(b, p.cfg)
				results[p.name] = s
				b.ReportMetric(float64(s.p50.Microseconds()), "p50-µs")
				b.ReportMetric(float64(s.p99.Microseconds()), "p99-µs")
				b.ReportMetric(s.rps, "req/s")
			}
		})
	}
	d := results["direct"]
	for _, name := range []string{"connect", "grpc"} {
		s := results[name]
		if d.rps > 0 && s.rps > 0 {
			b.Logf("%s vs direct at %d workers: p50 %s vs %s, p99 %s vs %s, %.0f vs %.0f req/s (throughput overhead %.2f×)",
				name, tunnelWorkers, s.p50, d.p50, s.p99, d.p99, s.rps, d.rps, d.rps/s.rps)
		}
	}
}

type getStats struct {
	p50, p99 time.Duration
	rps      float64
}

// measureGets runs tunnelWorkers workers GETting one config map for
// tunnelDuration after a short warm-up.
func measureGets(b *testing.B, cfg *rest.Config) getStats { return measureGetsIn(b, cfg, "default") }

// measureGetsIn is measureGets of the config map "bench" in namespace.
func measureGetsIn(b *testing.B, cfg *rest.Config, namespace string) getStats {
	cfg = rest.CopyConfig(cfg)
	cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	get := func() error {
		_, err := c.CoreV1().ConfigMaps(namespace).Get(ctx, "bench", metav1.GetOptions{})
		return err
	}
	for range 200 { // warm-up: connections and caches
		if err := get(); err != nil {
			b.Fatalf("GET: %v", err)
		}
	}
	var mu sync.Mutex
	var all []time.Duration
	var firstErr error
	stop := time.Now().Add(tunnelDuration)
	start := time.Now()
	var wg sync.WaitGroup
	for range tunnelWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for time.Now().Before(stop) {
				t0 := time.Now()
				if err := get(); err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		b.Fatalf("GET: %v", firstErr)
	}
	slices.Sort(all)
	return getStats{p50: percentile(all, 50), p99: percentile(all, 99), rps: float64(len(all)) / elapsed.Seconds()}
}

func proxyFunc(b *testing.B, raw string) func(*http.Request) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		b.Fatal(err)
	}
	return http.ProxyURL(u)
}
