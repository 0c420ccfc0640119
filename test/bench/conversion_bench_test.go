package bench

import (
	"bytes"
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/cellfed/cellfed/test/framework"
)

// BenchmarkConversionList lists 1,000 FederatedDeployments through the
// storage version (v1beta2) and through KubeFed's v1beta1, which the plane
// converts with its built-in webhook, and reports the cost ratio.
func BenchmarkConversionList(b *testing.B) {
	for range b.N {
		plane := framework.StartPlane(b, framework.PlaneOptions{})
		framework.Kubectl{Kubeconfig: plane.Kubeconfig}.MustRun(b, framework.Tenancy, "apply", "-f", "-")
		cfg := plane.RESTConfig(b)
		cfg.QPS, cfg.Burst = 1000, 1000
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		v2 := dyn.Resource(fedDeployments).Namespace("shop")
		v1 := dyn.Resource(fedDeploymentsV1).Namespace("shop")
		for i := range objects {
			if _, err := v2.Create(ctx, federatedDeployment(i), metav1.CreateOptions{}); err != nil {
				b.Fatalf("create: %v", err)
			}
		}
		raw, err := rest.UnversionedRESTClientFor(withNegotiation(cfg))
		if err != nil {
			b.Fatal(err)
		}
		// Two measures per version: "decoded" is a client-go dynamic list
		// (what a controller pays, client decoding included); "raw" is the
		// response bytes only (what the server pays, conversion included).
		// Warm both paths, then alternate so drift affects both equally.
		type series struct{ decoded, raw []time.Duration }
		var storage, community series
		for i := range 42 {
			for _, r := range []struct {
				version string
				c       dynamic.ResourceInterface
				out     *series
			}{{"v1beta2", v2, &storage}, {"v1beta1", v1, &community}} {
				t0 := time.Now()
				l, err := r.c.List(ctx, metav1.ListOptions{ResourceVersion: "0"})
				if err != nil {
					b.Fatalf("list: %v", err)
				}
				if len(l.Items) != objects {
					b.Fatalf("list returned %d items, want %d", len(l.Items), objects)
				}
				decoded := time.Since(t0)
				t0 = time.Now()
				body, err := raw.Get().AbsPath("/apis/types.kubefed.io", r.version, "namespaces/shop/federateddeployments").Param("resourceVersion", "0").DoRaw(ctx)
				if err != nil {
					b.Fatalf("raw list: %v", err)
				}
				if !bytes.Contains(body, []byte(`"apiVersion":"types.kubefed.io/`+r.version+`"`)) {
					b.Fatalf("raw %s list is not in %s", r.version, r.version)
				}
				if i >= 2 {
					r.out.decoded = append(r.out.decoded, decoded)
					r.out.raw = append(r.out.raw, time.Since(t0))
				}
			}
		}
		for _, m := range []struct {
			name string
			v2   []time.Duration
			v1   []time.Duration
		}{{"decoded", storage.decoded, community.decoded}, {"raw", storage.raw, community.raw}} {
			p50v2, p50v1 := percentile(m.v2, 50), percentile(m.v1, 50)
			b.ReportMetric(ms(p50v2), "list1000-"+m.name+"-v1beta2-p50-ms")
			b.ReportMetric(ms(p50v1), "list1000-"+m.name+"-v1beta1-p50-ms")
			b.ReportMetric(ms(percentile(m.v1, 99)), "list1000-"+m.name+"-v1beta1-p99-ms")
			b.ReportMetric(float64(p50v1)/float64(p50v2), m.name+"-v1beta1/v1beta2")
		}
	}
}

func withNegotiation(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &schema.GroupVersion{}
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	return c
}
