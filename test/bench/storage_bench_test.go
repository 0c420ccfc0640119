package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cellfed/cellfed/test/framework"
)

// BenchmarkConsistentListAfterIdle measures what every `kubectl get` and
// every informer start pays: a list without resourceVersion (a consistent
// read, which the API server serves from its watch cache only after
// storage has confirmed the cache is fresh) issued after the plane has
// had no request from this client for at least a second. Each of the
// tries (30, or CELLFED_BENCH_IDLE_TRIES) lists a namespace of 100 config
// maps (or CELLFED_BENCH_IDLE_OBJECTS) that way, then once with resourceVersion=0 (served from the cache
// as it is, no storage round trip) for comparison, then once more right
// after a write to another resource (a Secret): the config map cache has
// no event to catch up with and needs storage's progress notification,
// which kine v0.16.4 sent only at its poll loop's next 1 s tick. That
// write comes 200 ms after the first list, because the API server asks
// storage for progress at most every 100 ms: closer, the list would also
// measure the API server's wait for its next turn.
//
// Each backend runs twice: as the plane runs (it repeats an unanswered
// progress request to kine every 10 ms) and with
// --datastore-progress-retry-interval=0 (only the API server's requests,
// 100 ms apart), the difference being what the repeats buy.
func BenchmarkConsistentListAfterIdle(b *testing.B) {
	for _, be := range framework.Backends {
		for _, v := range []struct {
			name string
			args []string
		}{{"retry", []string{"--datastore-progress-retry-interval=10ms"}}, {"no-retry", []string{"--datastore-progress-retry-interval=0"}}} {
			b.Run(be.Name+"/"+v.name, func(b *testing.B) {
				for range b.N {
					benchConsistentListAfterIdle(b, be.Endpoint(b), v.args)
				}
			})
		}
	}
}

func benchConsistentListAfterIdle(b *testing.B, endpoint string, args []string) {
	const ns = "idle-list"
	count := envInt("CELLFED_BENCH_IDLE_OBJECTS", 100)
	plane := framework.StartPlane(b, framework.PlaneOptions{Endpoint: endpoint, Args: args})
	c := plane.Client(b)
	ctx := context.Background()
	createNamespaceWith(b, c, ns, count, 0)

	secret, err := c.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}, StringData: map[string]string{"n": "0"},
	}, metav1.CreateOptions{})
	if err != nil {
		b.Fatalf("creating secret: %v", err)
	}

	tries := envInt("CELLFED_BENCH_IDLE_TRIES", 30)
	consistent := make([]time.Duration, 0, tries)
	cached := make([]time.Duration, 0, tries)
	afterWrite := make([]time.Duration, 0, tries)
	for i := range tries {
		// The idle second is the condition measured, not a wait for
		// anything: kine's poll loop ticks every second, so a random
		// 1–2 s pause samples every phase of it.
		time.Sleep(time.Second + rand.N(time.Second))
		t0 := time.Now()
		l, err := c.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatalf("consistent list: %v", err)
		}
		consistent = append(consistent, time.Since(t0))
		if len(l.Items) < count {
			b.Fatalf("consistent list returned %d config maps, want ≥ %d", len(l.Items), count)
		}
		t0 = time.Now()
		if _, err := c.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"}); err != nil {
			b.Fatalf("resourceVersion=0 list: %v", err)
		}
		cached = append(cached, time.Since(t0))

		time.Sleep(200 * time.Millisecond) // a condition, as above: past the API server's progress-request period
		secret.StringData = map[string]string{"n": fmt.Sprint(i + 1)}
		if secret, err = c.CoreV1().Secrets(ns).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
			b.Fatalf("updating secret: %v", err)
		}
		t0 = time.Now()
		if _, err := c.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err != nil {
			b.Fatalf("consistent list after a write: %v", err)
		}
		afterWrite = append(afterWrite, time.Since(t0))
	}
	b.ReportMetric(ms(percentile(consistent, 50)), "consistent-p50-ms")
	b.ReportMetric(ms(percentile(consistent, 99)), "consistent-p99-ms")
	b.ReportMetric(ms(percentile(cached, 50)), "rv0-p50-ms")
	b.ReportMetric(ms(percentile(cached, 99)), "rv0-p99-ms")
	b.ReportMetric(ms(percentile(afterWrite, 50)), "after-write-p50-ms")
	b.ReportMetric(ms(percentile(afterWrite, 99)), "after-write-p99-ms")
}

// BenchmarkNamespaceDeletion deletes a namespace holding 100 objects (50
// config maps, 50 secrets) and times it until the namespace is gone: the
// in-process namespace controller's DeleteCollection call per resource,
// each of which starts with a consistent read. Rounds: 5, or
// CELLFED_BENCH_NS_ROUNDS.
func BenchmarkNamespaceDeletion(b *testing.B) {
	for _, be := range framework.Backends {
		b.Run(be.Name, func(b *testing.B) {
			for range b.N {
				benchNamespaceDeletion(b, be.Endpoint(b))
			}
		})
	}
}

func benchNamespaceDeletion(b *testing.B, endpoint string) {
	plane := framework.StartPlane(b, framework.PlaneOptions{Endpoint: endpoint})
	c := plane.Client(b)
	ctx := context.Background()
	rounds := envInt("CELLFED_BENCH_NS_ROUNDS", 5)
	took := make([]time.Duration, 0, rounds)
	for r := range rounds {
		ns := fmt.Sprintf("doomed-%d", r)
		createNamespaceWith(b, c, ns, 50, 50)
		t0 := time.Now()
		if err := c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			b.Fatalf("deleting namespace %s: %v", ns, err)
		}
		err := framework.Poll(ctx, 10*time.Millisecond, 5*time.Minute, func(ctx context.Context) (bool, error) {
			_, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		})
		if err != nil {
			b.Fatalf("namespace %s still there: %v", ns, err)
		}
		took = append(took, time.Since(t0))
	}
	b.ReportMetric(percentile(took, 50).Seconds(), "ns-delete-p50-s")
	b.ReportMetric(percentile(took, 100).Seconds(), "ns-delete-max-s")
}

// createNamespaceWith creates namespace ns holding configMaps config maps
// and secrets secrets of 1 KiB each.
func createNamespaceWith(b *testing.B, c kubernetes.Interface, ns string, configMaps, secrets int) {
	b.Helper()
	ctx := context.Background()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatalf("creating namespace %s: %v", ns, err)
	}
	payload := strings.Repeat("x", 1024)
	for i := range configMaps {
		if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i)}, Data: map[string]string{"payload": payload},
		}, metav1.CreateOptions{}); err != nil {
			b.Fatalf("creating config map: %v", err)
		}
	}
	for i := range secrets {
		if _, err := c.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("secret-%03d", i)}, StringData: map[string]string{"payload": payload},
		}, metav1.CreateOptions{}); err != nil {
			b.Fatalf("creating secret: %v", err)
		}
	}
}
