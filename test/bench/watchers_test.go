// Watching members: when each object reached each member.

package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/cellfed/cellfed/test/framework"
)

// watchers record when each member first saw each key of its managed
// objects of one resource: the object's name for the race's config maps,
// name and image for template updates of deployments.
type watchers struct {
	mu     sync.Mutex
	seen   map[string]map[int]time.Time
	cancel context.CancelFunc
}

func startWatchers(b *testing.B, members []*framework.Server, gvr schema.GroupVersionResource, ns string, key func(*unstructured.Unstructured) string) *watchers {
	ctx, cancel := context.WithCancel(context.Background())
	w := &watchers{seen: map[string]map[int]time.Time{}, cancel: cancel}
	record := func(i int, obj *unstructured.Unstructured) {
		now := time.Now()
		k := key(obj)
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.seen[k] == nil {
			w.seen[k] = map[int]time.Time{}
		}
		if _, ok := w.seen[k][i]; !ok {
			w.seen[k][i] = now
		}
	}
	opts := metav1.ListOptions{LabelSelector: "kubefed.io/managed=true"}
	for i, m := range members {
		c := dynamic.NewForConfigOrDie(m.RESTConfig(b)).Resource(gvr).Namespace(ns)
		wi, err := c.Watch(ctx, opts)
		if err != nil {
			b.Fatalf("watching member-%d: %v", i, err)
		}
		// A member may end a watch (its request timeout, an error
		// event): list what arrived meanwhile (seen late, at the list)
		// and watch on from the list.
		go func() {
			for {
				for ev := range wi.ResultChan() {
					if ev.Type != watch.Added && ev.Type != watch.Modified {
						continue
					}
					if obj, ok := ev.Object.(*unstructured.Unstructured); ok {
						record(i, obj)
					}
				}
				wi.Stop()
				if wi = rewatch(ctx, fmt.Sprintf("member-%d", i), func(ctx context.Context) (string, error) {
					list, err := c.List(ctx, opts)
					if err != nil {
						return "", err
					}
					for j := range list.Items {
						record(i, &list.Items[j])
					}
					return list.GetResourceVersion(), nil
				}, func(ctx context.Context, rv string) (watch.Interface, error) {
					o := opts
					o.ResourceVersion = rv
					return c.Watch(ctx, o)
				}); wi == nil {
					return
				}
			}
		}()
	}
	return w
}

func (w *watchers) stop() { w.cancel() }

// rewatch is what a bench watcher does when a member ends its watch (its
// request timeout, an error event): list what arrived meanwhile (list
// records it, seen late, and returns the list's resourceVersion) and watch
// on from the list, retrying a member that refuses once a second. It
// returns nil once ctx ends.
func rewatch(ctx context.Context, name string, list func(context.Context) (string, error), watchFrom func(context.Context, string) (watch.Interface, error)) watch.Interface {
	for ctx.Err() == nil {
		fmt.Printf("  watch of %s ended: listing and watching again\n", name)
		if rv, err := list(ctx); err == nil {
			if wi, err := watchFrom(ctx, rv); err == nil {
				return wi
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second): // retrying a member that refused
		}
	}
	return nil
}

// lastSeen is when the last of the first n members saw name.
func (w *watchers) lastSeen(name string, n int) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var last time.Time
	for i := range n {
		t, ok := w.seen[name][i]
		if !ok {
			return time.Time{}, false
		}
		if t.After(last) {
			last = t
		}
	}
	return last, true
}

// missing are the first n members that have not seen name.
func (w *watchers) missing(name string, n int) []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	var m []int
	for i := range n {
		if _, ok := w.seen[name][i]; !ok {
			m = append(m, i)
		}
	}
	return m
}

// count is the number of (object, member) pairs seen with the prefix.
func (w *watchers) count(prefix string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for name, ms := range w.seen {
		if strings.HasPrefix(name, prefix) {
			n += len(ms)
		}
	}
	return n
}
