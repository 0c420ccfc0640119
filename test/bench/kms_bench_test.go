package bench

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cellfed/cellfed/test/framework"
)

const secrets = 500

// BenchmarkSecretsAtRest measures what KMS v2 encryption at rest costs on
// each backend: create/get latency and a consistent list of 500 Secrets
// with encryption on (the default) and off, and, with it on, the time
// `cellfedctl rotate-key` takes to move all of them to a new key (its wait
// for the API server to pick the key up included).
func BenchmarkSecretsAtRest(b *testing.B) {
	for _, be := range framework.Backends {
		for _, mode := range []struct {
			name string
			args []string
		}{{"kms", nil}, {"plaintext", []string{"--encrypted-resources="}}} {
			b.Run(be.Name+"/"+mode.name, func(b *testing.B) {
				for range b.N {
					benchSecrets(b, be.Endpoint(b), mode.args, mode.name == "kms")
				}
			})
		}
	}
}

func benchSecrets(b *testing.B, endpoint string, args []string, rotate bool) {
	dir := b.TempDir()
	plane := framework.StartPlane(b, framework.PlaneOptions{DataDir: dir, Endpoint: endpoint, Args: args})
	c := plane.Client(b)
	ctx := context.Background()
	data := map[string][]byte{"token": []byte("bench-token-0123456789abcdef0123456789abcdef")}
	create := make([]time.Duration, 0, secrets)
	for i := range secrets {
		t0 := time.Now()
		if _, err := c.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%04d", i)}, Data: data,
		}, metav1.CreateOptions{}); err != nil {
			b.Fatalf("create: %v", err)
		}
		create = append(create, time.Since(t0))
	}
	get := make([]time.Duration, 0, secrets)
	for i := range secrets {
		t0 := time.Now()
		if _, err := c.CoreV1().Secrets("default").Get(ctx, fmt.Sprintf("bench-%04d", i), metav1.GetOptions{}); err != nil {
			b.Fatalf("get: %v", err)
		}
		get = append(get, time.Since(t0))
	}
	var list []time.Duration
	for range 10 {
		t0 := time.Now()
		l, err := c.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
		if err != nil || len(l.Items) < secrets {
			b.Fatalf("list: %d items, %v", len(l.Items), err)
		}
		list = append(list, time.Since(t0))
	}
	b.ReportMetric(ms(percentile(create, 50)), "create-p50-ms")
	b.ReportMetric(ms(percentile(create, 99)), "create-p99-ms")
	b.ReportMetric(ms(percentile(get, 50)), "get-p50-ms")
	b.ReportMetric(ms(percentile(list, 50)), "list500-p50-ms")
	if !rotate {
		return
	}
	t0 := time.Now()
	out, err := exec.Command(framework.Binary(b, "cellfedctl"), "--kubeconfig="+plane.Kubeconfig, "rotate-key",
		"--key-file="+filepath.Join(dir, "kms", "keys")).CombinedOutput()
	if err != nil {
		b.Fatalf("rotate-key: %v\n%s", err, out)
	}
	total := time.Since(t0)
	b.ReportMetric(total.Seconds(), "rotate-s")
	// rotate-key prints how long the API server took to pick the key up
	// ("(after 12s)"); the rest is the rewrite.
	if i := strings.Index(string(out), "(after "); i >= 0 {
		if end := strings.Index(string(out[i:]), ")"); end > 0 {
			if wait, err := time.ParseDuration(string(out[i+len("(after ") : i+end])); err == nil {
				b.ReportMetric(wait.Seconds(), "rotate-wait-s")
				b.ReportMetric((total - wait).Seconds(), "rewrite500-s")
			}
		}
	}
}
