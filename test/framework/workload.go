package framework

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// ConfigMapWriter creates config maps <prefix>-0, <prefix>-1, … one after
// another, retrying a name until it is acknowledged, and records which
// writes were acknowledged and how many attempts failed.
type ConfigMapWriter struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	acked    []string
	failures int
}

// StartConfigMapWriter starts the writer; Stop ends it.
func StartConfigMapWriter(ctx context.Context, t testing.TB, c kubernetes.Interface, namespace, prefix string) *ConfigMapWriter {
	ctx, cancel := context.WithCancel(ctx)
	w := &ConfigMapWriter{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for i := 0; ctx.Err() == nil; {
			name := fmt.Sprintf("%s-%d", prefix, i)
			reqCtx, reqCancel := context.WithTimeout(ctx, 10*time.Second)
			_, err := c.CoreV1().ConfigMaps(namespace).Create(reqCtx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Data:       map[string]string{"i": fmt.Sprint(i)},
			}, metav1.CreateOptions{})
			reqCancel()
			w.mu.Lock()
			switch {
			case err == nil || apierrors.IsAlreadyExists(err):
				// AlreadyExists: an earlier attempt was applied but its
				// answer was lost; the write is durable either way.
				w.acked = append(w.acked, name)
				i++
			default:
				w.failures++
			}
			w.mu.Unlock()
			if err != nil && ctx.Err() == nil {
				time.Sleep(50 * time.Millisecond) // back off while the database is down
			}
		}
	}()
	return w
}

// Acked is the number of acknowledged writes so far.
func (w *ConfigMapWriter) Acked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// Failures is the number of failed attempts so far.
func (w *ConfigMapWriter) Failures() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failures
}

// WaitAcked waits until at least n writes were acknowledged.
func (w *ConfigMapWriter) WaitAcked(t testing.TB, n int) {
	t.Helper()
	if err := Poll(context.Background(), 20*time.Millisecond, 2*time.Minute, func(context.Context) (bool, error) {
		return w.Acked() >= n, nil
	}); err != nil {
		t.Fatalf("waiting for %d acknowledged writes (have %d, %d failures): %v", n, w.Acked(), w.Failures(), err)
	}
}

// WaitFailures waits until at least n attempts failed.
func (w *ConfigMapWriter) WaitFailures(t testing.TB, n int) {
	t.Helper()
	if err := Poll(context.Background(), 20*time.Millisecond, time.Minute, func(context.Context) (bool, error) {
		return w.Failures() >= n, nil
	}); err != nil {
		t.Fatalf("waiting for %d failed writes: %v", n, err)
	}
}

// Stop ends the writer and returns the acknowledged names.
func (w *ConfigMapWriter) Stop() []string {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.acked...)
}

// SeenNames records the config maps a watch has seen added.
type SeenNames struct {
	mu   sync.Mutex
	seen map[string]bool
}

// HasAll reports whether every name was seen.
func (s *SeenNames) HasAll(names []string) bool { return len(s.Missing(names)) == 0 }

// Missing returns the names not seen.
func (s *SeenNames) Missing(names []string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, n := range names {
		if !s.seen[n] {
			out = append(out, n)
		}
	}
	return out
}

// WatchConfigMaps lists, then watches from the list's resourceVersion
// with client-go's RetryWatcher, which resumes after errors from the
// last seen resourceVersion: an event missed across a reconnect is lost.
func WatchConfigMaps(ctx context.Context, t testing.TB, c kubernetes.Interface, namespace string) *SeenNames {
	t.Helper()
	list, err := c.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing config maps: %v", err)
	}
	s := &SeenNames{seen: map[string]bool{}}
	for _, cm := range list.Items {
		s.seen[cm.Name] = true
	}
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.CoreV1().ConfigMaps(namespace).Watch(ctx, o)
		},
	})
	if err != nil {
		t.Fatalf("starting watch: %v", err)
	}
	go func() {
		defer rw.Stop()
		for ev := range rw.ResultChan() {
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok || ev.Type != watch.Added {
				continue
			}
			s.mu.Lock()
			s.seen[cm.Name] = true
			s.mu.Unlock()
		}
	}()
	return s
}

// ListConfigMapNames returns the names of the config maps in namespace.
func ListConfigMapNames(ctx context.Context, t testing.TB, c kubernetes.Interface, namespace string) map[string]bool {
	t.Helper()
	list, err := c.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing config maps: %v", err)
	}
	out := map[string]bool{}
	for _, cm := range list.Items {
		out[cm.Name] = true
	}
	return out
}
