package clusters

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/workqueue"
)

// TestStatusChangedQueuesAWrite: a KubeFedCluster whose status another
// write changed (the controller's own NotProbedYet landing in the cache
// after its Ready write was skipped, or an older controller's) is queued
// for a status write; an update that leaves the status alone, or names a
// cluster the registry does not know, is not.
func TestStatusChangedQueuesAWrite(t *testing.T) {
	kfc := func(name, ready string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": name}}}
		if ready != "" {
			u.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": ready}}}
		}
		return u
	}
	for _, tc := range []struct {
		name     string
		old, new *unstructured.Unstructured
		want     int
	}{
		{"status changed", kfc("m", "True"), kfc("m", "Unknown"), 1},
		{"status set", kfc("m", ""), kfc("m", "True"), 1},
		{"status unchanged (a spec or label update)", kfc("m", "True"), kfc("m", "True"), 0},
		{"a cluster the registry does not know", kfc("other", "True"), kfc("other", "Unknown"), 0},
		{"a tombstone, not an object", kfc("m", "True"), nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
			defer q.ShutDown()
			r := &Registry{status: q, clusters: map[string]*Cluster{"m": {Name: "m"}}}
			var newObj any = tc.new
			if tc.new == nil {
				newObj = "not an object"
			}
			r.statusChanged(tc.old, newObj)
			if got := q.Len(); got != tc.want {
				t.Errorf("queued %d status writes, want %d", got, tc.want)
			}
		})
	}
}
