// The soak's flood: one tenant (beta) floods the controller the way
// issue 40's probe did, besides its ordinary releases: FederatedDeployments
// with huge replica divisions created and deleted in cycles, and a
// FederatedConfigMap with a template of about 900 kB updated in a loop.
// The other tenants' releases must still reach their members within
// heldBackBound (HeldBackReleases).

package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
)

var federatedDeployments = schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta2", Resource: "federateddeployments"}

const (
	// flooder is the tenant that floods.
	flooder = "beta"
	// floodPrefix names the flood's objects; the other invariants look
	// only at the workload's (namePrefix).
	floodPrefix = "flood-"
	// floodDivisions objects with a huge division are created each
	// cycle, kept floodCycle, then deleted.
	floodDivisions = 13
	floodCycle     = 20 * time.Second
	// floodTemplateBytes is the size of the large template's data (a
	// member ConfigMap holds at most 1 MiB).
	floodTemplateBytes = 900_000
	// floodUpdateGap is the pause between two updates of the large
	// template.
	floodUpdateGap = 500 * time.Millisecond
	// heldBackBound is how long another tenant's create may take to
	// reach a member, outages apart.
	heldBackBound = 60 * time.Second
	// floodBounded is the division used when admission refuses
	// 2147483647 replicas and weights (its bound).
	floodBounded = 1_000_000
)

// floodStats counts the flood's writes for the summary.
type floodStats struct {
	mu                          sync.Mutex
	divisions, updates, refused int
}

func (s *floodStats) add(divisions, updates, refused int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.divisions += divisions
	s.updates += updates
	s.refused += refused
}

// String is the summary's line.
func (s *floodStats) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("tenant %s flooded: %d FederatedDeployments of huge divisions created (%d refused by admission: then the largest it accepts), %d updates of a %d kB template",
		flooder, s.divisions, s.refused, s.updates, floodTemplateBytes/1000)
}

// flood runs until ctx ends, then deletes what it created (best effort,
// until cleanup ends).
func flood(ctx, cleanup context.Context, dyn dynamic.Interface, stats *floodStats) {
	ns := workspace(flooder)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		big := floodPrefix + "template"
		for n := 0; ctx.Err() == nil; n++ {
			var err error
			if n == 0 {
				_, err = dyn.Resource(federatedConfigMaps).Namespace(ns).Create(ctx, largeConfigMap(ns, big, n), metav1.CreateOptions{})
				if apierrors.IsAlreadyExists(err) {
					err = nil
				}
			} else {
				body, _ := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"data": map[string]any{"payload": payload(n)}}}})
				_, err = dyn.Resource(federatedConfigMaps).Namespace(ns).Patch(ctx, big, types.MergePatchType, body, metav1.PatchOptions{})
			}
			if err != nil {
				klog.V(2).Infof("soak flood: %s: %v", big, err)
				if n == 0 {
					n-- // create again
				}
			} else {
				stats.add(0, 1, 0)
			}
			sleepCtx(ctx, floodUpdateGap)
		}
		_ = dyn.Resource(federatedConfigMaps).Namespace(ns).Delete(cleanup, big, metav1.DeleteOptions{})
	}()
	go func() {
		defer wg.Done()
		for cycle := 0; ctx.Err() == nil; cycle++ {
			var names []string
			for i := range floodDivisions {
				name := fmt.Sprintf("%sdivision-%d-%02d", floodPrefix, cycle, i)
				replicas, weight := int64(1<<31-1), int64(1<<31-1)
				for ctx.Err() == nil {
					_, err := dyn.Resource(federatedDeployments).Namespace(ns).Create(ctx, divisionDeployment(ns, name, replicas, weight), metav1.CreateOptions{})
					if apierrors.IsInvalid(err) && replicas != floodBounded {
						replicas, weight = floodBounded, floodBounded
						stats.add(0, 0, 1)
						continue
					}
					if err == nil || apierrors.IsAlreadyExists(err) {
						names = append(names, name)
						stats.add(1, 0, 0)
						break
					}
					klog.V(2).Infof("soak flood: %s: %v", name, err)
					sleepCtx(ctx, time.Second)
				}
			}
			sleepCtx(ctx, floodCycle)
			for _, name := range names {
				_ = dyn.Resource(federatedDeployments).Namespace(ns).Delete(cleanup, name, metav1.DeleteOptions{})
			}
		}
	}()
	wg.Wait()
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// payload is floodTemplateBytes of data that differ for each n.
func payload(n int) string {
	head := fmt.Sprintf("%010d", n)
	return head + strings.Repeat("x", floodTemplateBytes-len(head))
}

// largeConfigMap is the flood's FederatedConfigMap on both of the
// flooder's cells.
func largeConfigMap(ns, name string, n int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta2",
		"kind":       "FederatedConfigMap",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"placement": map[string]any{"topologies": []any{map[string]any{"name": "rz00a"}, map[string]any{"name": "rz10a"}}},
			"template":  map[string]any{"data": map[string]any{"payload": payload(n)}},
		},
	}}
}

// divisionDeployment is a FederatedDeployment of replicas divided
// between the flooder's two cells by weights [weight, 1].
func divisionDeployment(ns, name string, replicas, weight int64) *unstructured.Unstructured {
	labels := map[string]any{"app": name}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta2",
		"kind":       "FederatedDeployment",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"placement": map[string]any{"topologies": []any{map[string]any{"name": "rz00a"}, map[string]any{"name": "rz10a"}}},
			"replicaDivision": map[string]any{"mode": "Divide", "topologies": []any{
				map[string]any{"name": "rz00a", "weight": weight}, map[string]any{"name": "rz10a", "weight": int64(1)},
			}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{
					"replicas": replicas,
					"selector": map[string]any{"matchLabels": labels},
					"template": map[string]any{
						"metadata": map[string]any{"labels": labels},
						"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "soak:1"}}},
					},
				},
			},
		},
	}}
}
