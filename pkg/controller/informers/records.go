package informers

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/util/sets"
)

// Records indexes the propagation records the process's propagation
// controllers hold (they keep them in the federated objects' status, so
// no PropagatedVersion is stored or watched for them) by the clusters
// they list: the cell controller counts each cell's objects from it and
// from the stored PropagatedVersions. A record is known by its
// PropagatedVersion key (<namespace>/<kind>-<name>, or <kind>-<name>), so
// an object with both a stored record and one in its status counts once.
// Each record has an owner (the type's controller), whose records all go
// when it stops.
type Records struct {
	mu        sync.Mutex
	byKey     map[string]entry
	byCluster map[string]sets.Set[string]
	listeners []func(clusters []string)

	// admitted are, by moving cell's cluster, the record keys its move
	// takes now (the cell controller decides, the propagation
	// controllers read); admitListeners are told the keys that changed.
	admitted       map[string]sets.Set[string]
	admitListeners map[int]func(keys []string)
	nextListener   int
}

type entry struct {
	owner    string
	clusters []string
}

// NewRecords returns an empty index.
func NewRecords() *Records {
	return &Records{byKey: map[string]entry{}, byCluster: map[string]sets.Set[string]{},
		admitted: map[string]sets.Set[string]{}, admitListeners: map[int]func([]string){}}
}

// OnChange registers fn, told the clusters a record listed before or
// after each change.
func (r *Records) OnChange(fn func(clusters []string)) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.listeners = append(r.listeners, fn)
}

// Set records that the record key of owner lists clusters (none: it is
// forgotten). A nil Records ignores it.
func (r *Records) Set(owner, key string, clusters []string) {
	if r == nil {
		return
	}
	clusters = slices.Sorted(slices.Values(clusters))
	r.mu.Lock()
	old, had := r.byKey[key]
	if had && old.owner == owner && slices.Equal(old.clusters, clusters) {
		r.mu.Unlock()
		return
	}
	if !had && len(clusters) == 0 {
		r.mu.Unlock()
		return
	}
	changed := r.setLocked(key, old, entry{owner: owner, clusters: clusters})
	fns := slices.Clone(r.listeners)
	r.mu.Unlock()
	for _, fn := range fns {
		fn(changed)
	}
}

func (r *Records) setLocked(key string, old, next entry) (changed []string) {
	for _, c := range old.clusters {
		if s := r.byCluster[c]; s != nil {
			s.Delete(key)
			if s.Len() == 0 {
				delete(r.byCluster, c)
			}
		}
	}
	if len(next.clusters) == 0 {
		delete(r.byKey, key)
	} else {
		r.byKey[key] = next
	}
	for _, c := range next.clusters {
		s := r.byCluster[c]
		if s == nil {
			s = sets.New[string]()
			r.byCluster[c] = s
		}
		s.Insert(key)
	}
	return sets.List(sets.New(old.clusters...).Insert(next.clusters...))
}

// DropOwner forgets every record of owner (its controller stopped).
func (r *Records) DropOwner(owner string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	changed := sets.New[string]()
	for key, e := range r.byKey {
		if e.owner == owner {
			changed.Insert(r.setLocked(key, e, entry{})...)
		}
	}
	fns := slices.Clone(r.listeners)
	r.mu.Unlock()
	if changed.Len() > 0 {
		for _, fn := range fns {
			fn(sets.List(changed))
		}
	}
}

// Keys are the keys of the records listing cluster.
func (r *Records) Keys(cluster string) sets.Set[string] {
	if r == nil {
		return sets.New[string]()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byCluster[cluster].Clone()
}

// Admit sets the record keys the move of cell (a per-cell cluster) takes
// now; none ends its admissions. Listeners are told the keys admitted or
// no longer admitted.
func (r *Records) Admit(cell string, keys sets.Set[string]) {
	if r == nil {
		return
	}
	r.mu.Lock()
	old := r.admitted[cell]
	if keys.Len() == 0 {
		delete(r.admitted, cell)
	} else {
		r.admitted[cell] = keys.Clone()
	}
	changed := sets.List(old.Difference(keys).Union(keys.Difference(old)))
	fns := make([]func([]string), 0, len(r.admitListeners))
	for _, fn := range r.admitListeners {
		fns = append(fns, fn)
	}
	r.mu.Unlock()
	if len(changed) == 0 {
		return
	}
	for _, fn := range fns {
		fn(changed)
	}
}

// MoveAdmitted reports whether the move of cell takes the record key now.
func (r *Records) MoveAdmitted(cell, key string) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.admitted[cell].Has(key)
}

// AdmittedKeys are the record keys the move of cell takes now.
func (r *Records) AdmittedKeys(cell string) sets.Set[string] {
	if r == nil {
		return sets.New[string]()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.admitted[cell].Clone()
}

// OnAdmit registers fn, told the record keys whose admission changed;
// the returned func unregisters it.
func (r *Records) OnAdmit(fn func(keys []string)) (unregister func()) {
	if r == nil {
		return func() {}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	id := r.nextListener
	r.nextListener++
	r.admitListeners[id] = fn
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.admitListeners, id)
	}
}
