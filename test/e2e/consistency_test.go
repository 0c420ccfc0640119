package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/cellfed/cellfed/test/framework"
)

// TestInformersConvergeUnderWriteStorm is the end-to-end form of the
// list-then-watch check: real client-go informers, each started at a
// random moment of a create/update/delete storm through the plane, must
// each hold exactly the server's final list once the writers stop.
// (The sharper check of kine's lost-event failure mode, which does catch
// innodb_autoinc_lock_mode=2, is pkg/storage's TestListThenWatchConsistency:
// here the watch cache's single list hides most of that window.)
func TestInformersConvergeUnderWriteStorm(t *testing.T) {
	t.Parallel()
	const writers, perWriter, informerCount = 8, 60, 10
	for _, b := range framework.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			// Config maps only: no federated types to install.
			plane := framework.StartPlane(t, framework.PlaneOptions{Endpoint: b.Endpoint(t), Args: []string{"--default-federated-types="}})
			c := plane.Client(t)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			const ns = "storm"
			if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}

			var wg sync.WaitGroup
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := storm(ctx, c, ns, w, perWriter); err != nil {
						t.Errorf("writer %d: %v", w, err)
					}
				}()
			}
			stores := make([]cache.Store, informerCount)
			for i := range informerCount {
				wg.Add(1)
				go func() {
					defer wg.Done()
					time.Sleep(time.Duration(rand.IntN(2000)) * time.Millisecond) // join at a random point of the storm
					f := informers.NewSharedInformerFactoryWithOptions(plane.Client(t), 0, informers.WithNamespace(ns))
					inf := f.Core().V1().ConfigMaps().Informer()
					f.Start(ctx.Done())
					stores[i] = inf.GetStore()
				}()
			}
			wg.Wait()
			if t.Failed() {
				return
			}

			list, err := c.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{}
			for _, cm := range list.Items {
				want[cm.Name] = cm.Data["v"]
			}
			if n := writers * (perWriter - (perWriter+2)/3); len(want) < n {
				t.Fatalf("server lists %d storm objects, want at least %d", len(want), n)
			}
			for i, s := range stores {
				var diff string
				err := framework.Poll(ctx, 100*time.Millisecond, 30*time.Second, func(context.Context) (bool, error) {
					diff = framework.DiffViews(storeView(s), want)
					return diff == "", nil
				})
				if err != nil {
					t.Errorf("informer %d never matched the server: %s", i, diff)
				}
			}
		})
	}
}

// storm creates perWriter config maps, updates every second one and
// deletes every third.
func storm(ctx context.Context, c kubernetes.Interface, ns string, w, perWriter int) error {
	cms := c.CoreV1().ConfigMaps(ns)
	for i := range perWriter {
		name := fmt.Sprintf("w%d-%d", w, i)
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create %s: %w", name, err)
		}
		if i%2 == 0 {
			cm.Data["v"] = "2"
			if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("update %s: %w", name, err)
			}
		}
		if i%3 == 0 {
			if err := cms.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				return fmt.Errorf("delete %s: %w", name, err)
			}
		}
	}
	return nil
}

func storeView(s cache.Store) map[string]string {
	view := map[string]string{}
	for _, o := range s.List() {
		cm := o.(*corev1.ConfigMap)
		view[cm.Name] = cm.Data["v"]
	}
	return view
}
