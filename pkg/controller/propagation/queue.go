package propagation

import (
	"strings"
	"sync"
	"time"

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

// fairQueue is the propagation queue: one pendingFirst sub-queue per
// workspace (the namespace of the key; cluster-scoped objects are the
// workspace ""), served by weighted fair queueing, so one workspace's
// flood or expensive objects cannot hold back another's.
//
// Each workspace has a virtual time: the reconcile time it has been
// served. Pop serves the workspace with keys queued and the least
// virtual time (the one that became busy first on a tie) and charges it
// up front its recent cost per reconcile (an average, at least
// minReconcileCost); Charge later replaces that estimate with what the
// reconcile took. A workspace that becomes busy starts at the virtual
// time of the last key served, so an idle spell earns no credit, and is
// never behind a busy one. Hence the bound: a key of a workspace with
// nothing else queued is served after at most one key of each other
// busy workspace, and a workspace whose reconciles are slow gets
// proportionally fewer turns while others have work.
//
// It is the workqueue's Queue, so the workqueue keeps its guarantees: a
// key queued twice is queued once, a key is never processed by two
// workers at once, rate-limited requeues, metrics. The workqueue calls
// Push, Touch, Len and Pop under its own lock; Charge is called by the
// workers, hence fairQueue's own lock.
type fairQueue struct {
	pending func(key string) bool

	mu         sync.Mutex
	workspaces map[string]*workspaceQueue
	// busy are the workspaces with keys queued.
	busy map[string]*workspaceQueue
	n    int
	// now is the virtual time: the start of the last key served.
	now time.Duration
	seq uint64
	// charged is what Pop charged each key taken and not yet Charged.
	charged map[string]time.Duration
}

// minReconcileCost is the least a reconcile is charged, so a workspace
// of cheap reconciles still takes its turn.
const minReconcileCost = time.Millisecond

type workspaceQueue struct {
	keys *pendingFirst
	// vt is the workspace's virtual time; cost its recent cost per
	// reconcile; since orders workspaces of equal vt.
	vt, cost time.Duration
	since    uint64
	inFlight int
}

func newFairQueue(pending func(key string) bool) *fairQueue {
	return &fairQueue{
		pending:    pending,
		workspaces: map[string]*workspaceQueue{},
		busy:       map[string]*workspaceQueue{},
		charged:    map[string]time.Duration{},
	}
}

// workspaceOf is the namespace of a queue key ("" for a cluster-scoped
// object). A FederatedNamespace's key is ns/ns: its own workspace.
func workspaceOf(key string) string {
	ns, _, found := strings.Cut(key, "/")
	if !found {
		return ""
	}
	return ns
}

// Push queues key in its workspace's sub-queue.
func (q *fairQueue) Push(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	name := workspaceOf(key)
	w := q.workspaces[name]
	if w == nil {
		w = &workspaceQueue{keys: newPendingFirst(q.pending), cost: minReconcileCost}
		q.workspaces[name] = w
	}
	if w.keys.Len() == 0 {
		q.seq++
		w.since = q.seq
		w.vt = max(w.vt, q.now)
		q.busy[name] = w
	}
	w.keys.Push(key)
	q.n++
}

// Touch is a key added again while queued (see pendingFirst.Touch).
func (q *fairQueue) Touch(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if w := q.workspaces[workspaceOf(key)]; w != nil {
		w.keys.Touch(key)
	}
}

// Len is the number of keys queued.
func (q *fairQueue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}

// Pop takes the next key of the busy workspace least served; the
// workqueue calls it only when Len > 0.
func (q *fairQueue) Pop() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var name string
	var next *workspaceQueue
	for n, w := range q.busy {
		if next == nil || w.vt < next.vt || (w.vt == next.vt && w.since < next.since) {
			name, next = n, w
		}
	}
	if next == nil {
		return ""
	}
	key := next.keys.Pop()
	q.n--
	if next.keys.Len() == 0 {
		delete(q.busy, name)
	}
	q.now = max(q.now, next.vt)
	next.vt += next.cost
	next.inFlight++
	q.charged[key] = next.cost
	return key
}

// Charge tells the queue that the reconcile of key, taken by Pop, took
// d: its workspace is charged d instead of the estimate Pop charged.
func (q *fairQueue) Charge(key string, d time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	name := workspaceOf(key)
	w := q.workspaces[name]
	est, ok := q.charged[key]
	if w == nil || !ok {
		return
	}
	delete(q.charged, key)
	d = max(d, minReconcileCost)
	// Never behind the virtual time: a refund must not let the
	// workspace jump ahead of one that just became busy.
	w.vt = max(w.vt+d-est, q.now)
	w.cost = max(w.cost+(d-w.cost)/4, minReconcileCost)
	w.inFlight--
	if w.inFlight == 0 && w.keys.Len() == 0 && w.vt <= q.now {
		// Idle and owing nothing: forget it (a deleted namespace).
		delete(q.workspaces, name)
	}
}
