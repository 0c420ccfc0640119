package board

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/pkg/apis/types"
	"github.com/cellfed/cellfed/pkg/placement"
	"github.com/cellfed/cellfed/pkg/rollout"
)

// FlushInterval is how often a store sends what changed: changes reach
// the page within it plus the plane's watch latency.
const FlushInterval = 100 * time.Millisecond

// SyncTimeout bounds the first list of a workspace's watches.
const SyncTimeout = 30 * time.Second

// Snapshot is the whole board of a workspace.
type Snapshot struct {
	Namespace string   `json:"namespace"`
	Columns   []string `json:"columns"`
	Types     []Type   `json:"types"`
	Rows      []Row    `json:"rows"`
}

// Delta is what changed since the last flush.
type Delta struct {
	Rows    []Row    `json:"rows,omitempty"`
	Removed []string `json:"removed,omitempty"`
}

// Event is one server-sent event: "snapshot" (a Snapshot) or "delta".
type Event struct {
	Name string
	Data []byte
}

// Store keeps a workspace's board up to date from watches on the plane
// (one informer per federated type, one for cells, one for template
// revisions), made with the signed-in user's credentials.
type Store struct {
	ns    string
	types []Type

	mu      sync.Mutex
	objs    map[string]*unstructured.Unstructured // by row key
	typeOf  map[string]Type                       // by row key
	keyOf   map[string]string                     // row key by object UID
	cells   map[string]placement.Topology
	revs    map[string]map[string]Revision // by owner UID, by revision name
	rows    map[string]Row
	columns []string
	dirty   map[string]bool
	all     bool // cells changed: recompute every row
	subs    map[chan Event]struct{}
}

// NewStore is an empty store for namespace ns showing types.
func NewStore(ns string, typs []Type) *Store {
	return &Store{ns: ns, types: typs, objs: map[string]*unstructured.Unstructured{}, typeOf: map[string]Type{},
		keyOf: map[string]string{}, cells: map[string]placement.Topology{}, revs: map[string]map[string]Revision{},
		rows: map[string]Row{}, dirty: map[string]bool{}, subs: map[chan Event]struct{}{}}
}

// FederatedTypes lists the enabled multi-topology federated types from
// the FederatedTypeConfigs in fedNamespace.
func FederatedTypes(ctx context.Context, client dynamic.Interface, fedNamespace string) ([]Type, error) {
	list, err := client.Resource(kubefed.FederatedTypeConfigsResource).Namespace(fedNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing FederatedTypeConfigs in %s: %w", fedNamespace, err)
	}
	var out []Type
	for _, u := range list.Items {
		s := func(fields ...string) string {
			v, _, _ := unstructured.NestedString(u.Object, append([]string{"spec"}, fields...)...)
			return v
		}
		if s("federatedType", "group") != types.GroupName || s("federatedType", "scope") == "Cluster" {
			continue
		}
		out = append(out, Type{Kind: s("federatedType", "kind"), Resource: s("federatedType", "pluralName")})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out, nil
}

// GVR is the v1beta2 resource of a federated type.
func (t Type) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: types.GroupName, Version: "v1beta2", Resource: t.Resource}
}

// Watch fills the store from the plane and keeps it up to date until ctx
// ends. It first lists each resource once, so a user who may not read
// the workspace gets the plane's refusal (Forbidden) instead of an empty
// board.
func (s *Store) Watch(ctx context.Context, client dynamic.Interface) error {
	for _, gvr := range []schema.GroupVersionResource{cellv1alpha1.CellsResource, cellv1alpha1.TemplateRevisionsResource} {
		if _, err := client.Resource(gvr).Namespace(s.ns).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			if apierrors.IsForbidden(err) {
				return err
			}
			return fmt.Errorf("listing %s in %s: %w", gvr.GroupResource(), s.ns, err)
		}
	}
	// A type the user may not read (FederatedSecrets, for a viewer who
	// may not read Secrets) is left off the board, not the whole board;
	// a user who may read none of them gets the refusal.
	readable := s.types[:0:0]
	var forbidden error
	for _, t := range s.types {
		if _, err := client.Resource(t.GVR()).Namespace(s.ns).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			if apierrors.IsForbidden(err) {
				forbidden = err
				klog.InfoS("Leaving a federated type off the board: the plane refuses to list it", "resource", t.GVR().Resource, "namespace", s.ns, "reason", err.Error())
				continue
			}
			return fmt.Errorf("listing %s in %s: %w", t.GVR().GroupResource(), s.ns, err)
		}
		readable = append(readable, t)
	}
	if len(readable) == 0 && forbidden != nil {
		return forbidden
	}
	s.mu.Lock()
	s.types = readable
	s.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	ok := false
	defer func() {
		if !ok {
			cancel() // the informers stop with a failed Watch
		}
	}()
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, s.ns, nil)
	add := func(gvr schema.GroupVersionResource, on func(u *unstructured.Unstructured, deleted bool)) error {
		_, err := factory.ForResource(gvr).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { on(asUnstructured(o), false) },
			UpdateFunc: func(_, o any) { on(asUnstructured(o), false) },
			DeleteFunc: func(o any) { on(asUnstructured(o), true) },
		})
		if err != nil {
			return fmt.Errorf("watching %s: %w", gvr.GroupResource(), err)
		}
		return nil
	}
	if err := add(cellv1alpha1.CellsResource, s.setCell); err != nil {
		return err
	}
	if err := add(cellv1alpha1.TemplateRevisionsResource, s.setRevision); err != nil {
		return err
	}
	for _, t := range s.types {
		if err := add(t.GVR(), func(u *unstructured.Unstructured, deleted bool) { s.setObject(t, u, deleted) }); err != nil {
			return err
		}
	}
	factory.Start(ctx.Done())
	syncCtx, syncCancel := context.WithTimeout(ctx, SyncTimeout)
	defer syncCancel()
	for gvr, synced := range factory.WaitForCacheSync(syncCtx.Done()) {
		if !synced {
			return fmt.Errorf("watching %s in %s: no complete list within %s; is the plane overloaded, or may you list but not watch it?", gvr.GroupResource(), s.ns, SyncTimeout)
		}
	}
	s.flush()
	ok = true
	go s.run(ctx)
	return nil
}

func asUnstructured(o any) *unstructured.Unstructured {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	u, _ := o.(*unstructured.Unstructured)
	return u
}

func (s *Store) setCell(u *unstructured.Unstructured, deleted bool) {
	if u == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if deleted {
		delete(s.cells, u.GetName())
	} else {
		s.cells[u.GetName()] = placement.Topology{Name: u.GetName(), Labels: u.GetLabels()}
	}
	s.all = true
}

func (s *Store) setRevision(u *unstructured.Unstructured, deleted bool) {
	if u == nil {
		return
	}
	owner := u.GetLabels()[rollout.LabelOwnerUID]
	if owner == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.revs[owner]
	if m == nil {
		m = map[string]Revision{}
		s.revs[owner] = m
	}
	if deleted {
		delete(m, u.GetName())
	} else {
		num, _, _ := unstructured.NestedInt64(u.Object, "spec", "revision")
		gen, _, _ := unstructured.NestedInt64(u.Object, "spec", "generation")
		m[u.GetName()] = Revision{Number: num, Generation: gen}
	}
	if key, ok := s.keyOf[owner]; ok {
		s.dirty[key] = true
	}
}

func (s *Store) setObject(t Type, u *unstructured.Unstructured, deleted bool) {
	if u == nil {
		return
	}
	key := t.Resource + "/" + u.GetName()
	s.mu.Lock()
	defer s.mu.Unlock()
	if deleted {
		delete(s.objs, key)
		delete(s.keyOf, string(u.GetUID()))
	} else {
		s.objs[key] = u
		s.typeOf[key] = t
		s.keyOf[string(u.GetUID())] = key
	}
	s.dirty[key] = true
}

// run flushes what changed every FlushInterval until ctx ends.
func (s *Store) run(ctx context.Context) {
	tick := time.NewTicker(FlushInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			s.mu.Lock()
			for ch := range s.subs {
				close(ch)
				delete(s.subs, ch)
			}
			s.mu.Unlock()
			return
		case <-tick.C:
			s.flush()
		}
	}
}

// rowLocked computes key's row (false: the object is gone).
func (s *Store) rowLocked(key string) (Row, bool) {
	obj, ok := s.objs[key]
	if !ok {
		return Row{}, false
	}
	cells := make([]placement.Topology, 0, len(s.cells))
	for _, c := range s.cells {
		cells = append(cells, c)
	}
	sort.Slice(cells, func(i, j int) bool { return cells[i].Name < cells[j].Name })
	var revs []Revision
	for _, r := range s.revs[string(obj.GetUID())] {
		revs = append(revs, r)
	}
	return RowOf(s.typeOf[key], obj, cells, revs), true
}

// flush recomputes the dirty rows and sends them to the subscribers: a
// delta, or a snapshot when the columns changed.
func (s *Store) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.all && len(s.dirty) == 0 {
		return
	}
	if s.all {
		for k := range s.objs {
			s.dirty[k] = true
		}
	}
	var d Delta
	for key := range s.dirty {
		if row, ok := s.rowLocked(key); ok {
			s.rows[key] = row
			d.Rows = append(d.Rows, row)
		} else if _, had := s.rows[key]; had {
			delete(s.rows, key)
			d.Removed = append(d.Removed, key)
		}
	}
	s.dirty, s.all = map[string]bool{}, false
	cols := Columns(s.cellNamesLocked(), s.rowListLocked())
	var ev Event
	if !equalStrings(cols, s.columns) {
		s.columns = cols
		ev = s.eventLocked("snapshot", s.snapshotLocked())
	} else {
		SortRows(d.Rows)
		sort.Strings(d.Removed)
		ev = s.eventLocked("delta", d)
	}
	for ch := range s.subs {
		select {
		case ch <- ev:
		default:
			// A subscriber that cannot keep up is dropped; the page's
			// EventSource reconnects and starts from a snapshot.
			close(ch)
			delete(s.subs, ch)
		}
	}
}

func (s *Store) eventLocked(name string, v any) Event {
	data, err := json.Marshal(v)
	if err != nil {
		klog.ErrorS(err, "encoding a board event", "namespace", s.ns)
	}
	return Event{Name: name, Data: data}
}

func (s *Store) cellNamesLocked() []string {
	out := make([]string, 0, len(s.cells))
	for n := range s.cells {
		out = append(out, n)
	}
	return out
}

func (s *Store) rowListLocked() []Row {
	out := make([]Row, 0, len(s.rows))
	for _, r := range s.rows {
		out = append(out, r)
	}
	SortRows(out)
	return out
}

func (s *Store) snapshotLocked() Snapshot {
	return Snapshot{Namespace: s.ns, Columns: s.columns, Types: s.types, Rows: s.rowListLocked()}
}

// Subscribe returns the current snapshot as the first event on a new
// channel, then the deltas; cancel ends the subscription.
func (s *Store) Subscribe() (events <-chan Event, cancel func()) {
	ch := make(chan Event, 64)
	s.mu.Lock()
	ch <- s.eventLocked("snapshot", s.snapshotLocked())
	s.subs[ch] = struct{}{}
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, ok := s.subs[ch]; ok {
			close(ch)
			delete(s.subs, ch)
		}
	}
}

// Row is the current row of key (false: none).
func (s *Store) Row(key string) (Row, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.rows[key]; ok {
		return r, true
	}
	return s.rowLocked(key)
}

// Columns are the current columns.
func (s *Store) Columns() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.columns...)
}

// ObjectCounts is how many of the workspace's objects each cell holds
// (placed, held back included).
func (s *Store) ObjectCounts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for _, r := range s.rows {
		for c := range r.Squares {
			out[c]++
		}
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
