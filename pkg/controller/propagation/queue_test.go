package propagation

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/workqueue"
)

func TestPendingFirst(t *testing.T) {
	// Keys named p… have work of their own, the others not; "late" gets
	// work while queued.
	for _, tc := range []struct {
		name  string
		ops   []string // "+k": add k; "late": "late" gets work, added again
		want  []string
		owned map[string]bool
	}{
		{"arrival order within each group", []string{"+a", "+p1", "+b", "+p2"}, []string{"p1", "p2", "a", "b"}, nil},
		{"a key queued twice is taken once", []string{"+a", "+a", "+p1", "+p1"}, []string{"p1", "a"}, nil},
		{"a key that gets work moves ahead", []string{"+a", "+late", "+p1", "late"}, []string{"p1", "late", "a"}, nil},
		{"nothing with work: FIFO", []string{"+c", "+b", "+a"}, []string{"c", "b", "a"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work := map[string]bool{}
			q := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Queue: newPendingFirst(func(k string) bool {
				return k[0] == 'p' || work[k]
			})})
			for _, op := range tc.ops {
				if op[0] == '+' {
					q.Add(op[1:])
					continue
				}
				work[op] = true
				q.Add(op)
			}
			if q.Len() != len(tc.want) {
				t.Errorf("Len = %d, want %d", q.Len(), len(tc.want))
			}
			var got []string
			for q.Len() > 0 {
				k, _ := q.Get()
				got = append(got, k)
				q.Done(k)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("order %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHasOwnWork(t *testing.T) {
	obj := func(gen int64, status map[string]any, deleting bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "x"}}}
		u.SetGeneration(gen)
		if status != nil {
			u.Object["status"] = status
		}
		if deleting {
			now := metav1.Now()
			u.SetDeletionTimestamp(&now)
		}
		return u
	}
	for _, tc := range []struct {
		name string
		obj  *unstructured.Unstructured
		want bool
	}{
		{"gone", nil, true},
		{"new, no status", obj(1, nil, false), true},
		{"status of an older generation", obj(3, map[string]any{"observedGeneration": int64(2)}, false), true},
		{"status current", obj(3, map[string]any{"observedGeneration": int64(3)}, false), false},
		{"being deleted", obj(3, map[string]any{"observedGeneration": int64(3)}, true), true},
		{"unreadable status", obj(3, map[string]any{"observedGeneration": "3"}, false), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := hasOwnWork(tc.obj); got != tc.want {
				t.Errorf("hasOwnWork = %v, want %v", got, tc.want)
			}
		})
	}
}
