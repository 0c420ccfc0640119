package propagation

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// pendingFirst orders the propagation queue: keys whose object has work
// of its own (a generation its status has not observed, a deletion, an
// object gone from the cache) come before keys queued only to re-check an
// object whose status is current (a member's event, a cluster change, a
// restart's first pass over every object), each group in arrival order.
// A restarted controller thus propagates what was released while it was
// down before it re-checks the thousands of objects that are right.
//
// It is the workqueue's Queue: the workqueue calls it under its own lock,
// and has already dropped keys that are queued.
type pendingFirst struct {
	pending     func(key string) bool
	first, rest []string
	// queued are the keys in the queue, each true when in first. A key
	// moved to first by Touch leaves a stale entry in rest, skipped by Pop.
	queued map[string]bool
}

func newPendingFirst(pending func(key string) bool) *pendingFirst {
	return &pendingFirst{pending: pending, queued: map[string]bool{}}
}

// Push queues key in its group.
func (q *pendingFirst) Push(key string) {
	p := q.pending(key)
	q.queued[key] = p
	if p {
		q.first = append(q.first, key)
	} else {
		q.rest = append(q.rest, key)
	}
}

// Touch is a key added again while queued: it moves to the first group
// once its object has work of its own.
func (q *pendingFirst) Touch(key string) {
	if inFirst, ok := q.queued[key]; ok && !inFirst && q.pending(key) {
		q.queued[key] = true
		q.first = append(q.first, key)
	}
}

// Len is the number of keys queued.
func (q *pendingFirst) Len() int { return len(q.queued) }

// Pop takes the next key; the workqueue calls it only when Len > 0.
func (q *pendingFirst) Pop() string {
	for len(q.first) > 0 {
		key := q.first[0]
		q.first[0], q.first = "", q.first[1:]
		if inFirst, ok := q.queued[key]; ok && inFirst {
			delete(q.queued, key)
			return key
		}
	}
	for len(q.rest) > 0 {
		key := q.rest[0]
		q.rest[0], q.rest = "", q.rest[1:]
		if inFirst, ok := q.queued[key]; ok && !inFirst {
			delete(q.queued, key)
			return key
		}
	}
	return ""
}

// hasOwnWork reports whether a federated object needs propagating for
// its own sake: nil (gone from the cache, so its members' copies may need
// removing), being deleted, or at a generation its status has not
// observed (new, or changed since the status was written).
func hasOwnWork(obj *unstructured.Unstructured) bool {
	if obj == nil || obj.GetDeletionTimestamp() != nil {
		return true
	}
	gen, found, err := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	return !found || err != nil || gen != obj.GetGeneration()
}
