package propagation

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
)

// state is everything the controller keeps of one federated object
// between reconciles, besides the object itself in the cache: its
// record, and the bookkeeping of writes not yet seen and of metrics. One
// map of them, under one lock, replaces the seven maps each piece kept
// (and forgot) on its own: an object gone is forgotten in one step, and an
// entry with nothing in it is not kept.
type state struct {
	// record: the object's propagation record as last read or written
	// (nil: none loaded).
	record *propagated
	// finalizer: the finalizer patch the cache has not shown yet.
	finalizer finalizerPatch
	// statusAt: the last status write, which the next waits the status
	// interval after.
	statusAt time.Time
	// written: the status last written and the resourceVersion it
	// replaced, until the cache shows a newer object.
	written *lastWrite
	// inFlight: the members whose write of the object outlived its
	// reconcile and goes on (see dispatch).
	inFlight sets.Set[string]
	// statusRV: the resourceVersion of the controller's last status
	// write, or of the object whose status it last found matching the
	// members (a status-only change to any other is somebody else's).
	statusRV string
	// settleSince: when the status write was first held back for the
	// members' caches.
	settleSince time.Time
	// propagating: the generation observed and not yet everywhere;
	// reflowing: the first member event not yet in the status (metrics).
	propagating, reflowing mark
	// unready: the failover clocks of clusters whose divided replicas
	// are not ready (see divide).
	unready map[string]unreadyTimer
}

func (s *state) empty() bool {
	return s.record == nil && s.finalizer.at.IsZero() && s.statusAt.IsZero() && s.written == nil && s.statusRV == "" && s.inFlight.Len() == 0 &&
		s.settleSince.IsZero() && s.propagating.at.IsZero() && s.reflowing.at.IsZero() && len(s.unready) == 0
}

// objects holds the state of every object of one type, by cache key.
type objects struct {
	mu sync.Mutex
	m  map[string]*state
}

func newObjects() *objects { return &objects{m: map[string]*state{}} }

// update runs fn on key's state (a new, empty one when there is none) and
// keeps it only when something is left in it.
func (o *objects) update(key string, fn func(*state)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.m[key]
	if s == nil {
		s = &state{}
	}
	fn(s)
	if s.empty() {
		delete(o.m, key)
	} else {
		o.m[key] = s
	}
}

// read runs fn on key's state (an empty one when there is none) without
// keeping it.
func (o *objects) read(key string, fn func(*state)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.m[key]
	if s == nil {
		s = &state{}
	}
	fn(s)
}

// forget drops all of key's state: the object is gone.
func (o *objects) forget(key string) {
	o.mu.Lock()
	delete(o.m, key)
	o.mu.Unlock()
}

// len is the number of objects with state.
func (o *objects) len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.m)
}
