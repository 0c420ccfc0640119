package propagation

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"

	typesv1b1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
	"github.com/cellfed/cellfed/pkg/propagatedversion"
)

// failure is a reason the whole object is not propagated as asked, with
// KubeFed's aggregate reasons (InvalidObject, ComputePlacementFailed,
// NamespaceNotFederated).
type failure struct {
	reason, message string
}

// ReadyCondition summarises the readiness of the placed topologies.
const ReadyCondition = "Ready"

// report is what a reconcile found, for the object's status.
type report struct {
	clusters []typesv1b1.ClusterStatus
	// placed are the clusters the placement selects (held back or not),
	// the ones the propagated and ready counts are about.
	placed sets.Set[string]
	// details explain some clusters' statuses in the condition message.
	details map[string]string
	fail    failure
	// cur is the object's status as read, when the reconcile decoded it
	// already.
	cur *typesv1b1.Status
}

// writeStatus sets status.clusters, the Propagation and Ready conditions,
// the propagated and ready counts and observedGeneration, and writes them
// only when they changed. The status is computed in KubeFed's terms from
// fed, the view, and written to stored, the object as the plane stores it.
func (c *Controller) writeStatus(ctx context.Context, stored, fed *unstructured.Unstructured, rep report) error {
	var cur typesv1b1.Status
	if rep.cur != nil {
		cur = *rep.cur
	} else {
		cur = statusOf(fed)
	}
	next := nextStatus(cur, fed.GetGeneration(), rep, c.policy.Ready != nil, metav1.Now())
	key := c.statusWrites.key(fed)
	// The propagation record goes in the same write, for the types that
	// keep it in the status.
	rec, inStatus := c.records.inStatusRecord(key, stored)
	curRec, _ := propagatedversion.InStatus(stored.Object)
	if sameStatus(cur, next) && (!inStatus || curRec.Equal(rec)) {
		c.reflowing.forget(key) // nothing a member reported changes it
		// What the object says is what the members show: confirmed.
		c.objs.update(key, func(st *state) { st.statusRV = stored.GetResourceVersion() })
		return c.records.superseded(ctx, key, fed, curRec)
	}
	if last, ok := c.written.get(key); ok && last.over == fed.GetResourceVersion() {
		// The cache still shows the object our last status write
		// replaced: a write now would conflict. Nothing to do when it
		// wrote this status already; otherwise look again shortly (the
		// write's own watch event requeues nothing: it changes only the
		// status).
		if sameStatus(last.status, next) && last.record.Equal(rec) {
			c.reflowing.forget(key)
			return nil
		}
		c.queue.AddAfter(key, staleCacheRetry)
		return nil
	}
	if wait := c.statusWrites.wait(fed); wait > 0 {
		// Written a moment ago: write again once the interval is over,
		// with whatever the object's status is then.
		c.queue.AddAfter(key, wait)
		return nil
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&next)
	if err != nil {
		return err
	}
	if rc := rec.Content(); rc != nil {
		content["record"] = rc
	}
	planeWrites.WithLabelValues(c.typ.Name, WriteStatus).Inc()
	sctx, span := c.startStatusWrite(ctx)
	updated, err := c.updateStatus(sctx, stored, content)
	endSpan(span, err)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("writing status: %w", err)
	}
	if _, kept := propagatedversion.InStatus(updated.Object); inStatus && !rec.Empty() && !kept {
		// The type's CRD predates status.record and drops it: keep
		// the records as stored PropagatedVersions instead.
		c.records.statusDropsRecords(ctx)
		c.queue.Add(key)
	}
	rv := updated.GetResourceVersion()
	c.objs.update(key, func(st *state) { st.statusRV = rv })
	c.statusWrites.wrote(fed)
	c.written.set(key, fed.GetResourceVersion(), next, rec)
	if d, ok := c.reflowing.finish(key, -1, time.Now()); ok {
		reflowDelay.WithLabelValues(c.typ.Name).Observe(d.Seconds())
	}
	return c.records.superseded(ctx, key, fed, rec)
}

// nextStatus is the status a reconcile's report asks for: status.clusters
// in name order (KubeFed's OK said as no status), the Propagation and
// Ready conditions (times kept from cur while they hold), the released,
// propagated and (for types with readiness) ready counts over the placed
// clusters, observedGeneration, and cur's other conditions after ours. A
// pure function of its arguments, so every rule is a table test.
func nextStatus(cur typesv1b1.Status, generation int64, rep report, readiness bool, now metav1.Time) typesv1b1.Status {
	clusters, details, fail := slices.Clone(rep.clusters), rep.details, rep.fail
	sort.Slice(clusters, func(i, j int) bool { return clusters[i].Name < clusters[j].Name })
	cond := typesv1b1.Condition{Type: PropagationCondition, Status: "True"}
	var bad, held, notReady []string
	placed, released, propagated, ready := 0, 0, 0, 0
	for _, cs := range clusters {
		switch cs.Status {
		case StatusOK:
		case StatusHeldBack:
			held = append(held, cs.Name)
		default:
			s := cs.Name + ": " + cs.Status
			if d := details[cs.Name]; d != "" {
				s += " (" + d + ")"
			}
			bad = append(bad, s)
		}
		if !rep.placed.Has(cs.Name) {
			continue
		}
		placed++
		if cs.Status != StatusHeldBack {
			released++
		}
		if cs.Status == StatusOK && cs.Generation == generation {
			propagated++
		}
		if cs.Ready != nil && *cs.Ready {
			ready++
		} else {
			notReady = append(notReady, cs.Name)
		}
	}
	switch {
	case fail.reason != "" && len(bad) > 0:
		cond.Status, cond.Reason = "False", fail.reason
		cond.Message = fmt.Sprintf("%s; %d of %d clusters not propagated: %s", fail.message, len(bad), len(clusters), strings.Join(bad, ", "))
	case fail.reason != "":
		cond.Status, cond.Reason, cond.Message = "False", fail.reason, fail.message
	case len(bad) > 0:
		cond.Status, cond.Reason = "False", "CheckClusters"
		cond.Message = fmt.Sprintf("%d of %d clusters not propagated: %s", len(bad), len(clusters), strings.Join(bad, ", "))
	case len(held) > 0:
		cond.Reason = "PlacementMask"
		cond.Message = fmt.Sprintf("%d of %d clusters held back by the placement mask: %s", len(held), len(clusters), strings.Join(held, ", "))
	}
	readyCond := typesv1b1.Condition{Type: ReadyCondition, Status: "True"}
	switch {
	case fail.reason != "":
		readyCond.Status, readyCond.Reason, readyCond.Message = "Unknown", fail.reason, "the object is not propagated as asked"
	case len(notReady) > 0:
		readyCond.Status, readyCond.Reason = "False", "NotReady"
		readyCond.Message = fmt.Sprintf("%d of %d placed clusters not ready: %s", len(notReady), placed, strings.Join(notReady, ", "))
	}
	conds := []typesv1b1.Condition{stamp(cond, cur.Conditions, now), stamp(readyCond, cur.Conditions, now)}
	// KubeFed reports a cluster that is OK with no status (its
	// ClusterPropagationOK is ""); v1beta2 readers see "OK".
	reported := make([]typesv1b1.ClusterStatus, len(clusters))
	for i, cs := range clusters {
		reported[i] = cs
		if cs.Status == StatusOK {
			reported[i].Status = ""
		}
	}
	next := typesv1b1.Status{
		ObservedGeneration: generation, Conditions: conds, Clusters: reported,
		Released: fmt.Sprintf("%d/%d", released, placed), Propagated: fmt.Sprintf("%d/%d", propagated, placed),
	}
	if readiness {
		next.Ready = fmt.Sprintf("%d/%d", ready, placed)
	}
	for _, old := range cur.Conditions {
		if old.Type != PropagationCondition && old.Type != ReadyCondition {
			next.Conditions = append(next.Conditions, old)
		}
	}
	return next
}

// writeLimiter spaces the status writes of each object by an interval,
// keeping the last write's time in the object's state. A nil limiter
// never waits.
type writeLimiter struct {
	interval time.Duration
	objs     *objects
}

func newWriteLimiter(objs *objects, interval time.Duration) *writeLimiter {
	if interval <= 0 {
		return nil
	}
	return &writeLimiter{interval: interval, objs: objs}
}

func (l *writeLimiter) key(fed *unstructured.Unstructured) string {
	if fed.GetNamespace() == "" {
		return fed.GetName()
	}
	return fed.GetNamespace() + "/" + fed.GetName()
}

// wait is how long the object's next status write has to wait.
func (l *writeLimiter) wait(fed *unstructured.Unstructured) (wait time.Duration) {
	if l == nil {
		return 0
	}
	l.objs.update(l.key(fed), func(st *state) {
		if st.statusAt.IsZero() {
			return
		}
		if wait = l.interval - time.Since(st.statusAt); wait <= 0 {
			wait, st.statusAt = 0, time.Time{} // long ago: nothing to keep
		}
	})
	return wait
}

func (l *writeLimiter) wrote(fed *unstructured.Unstructured) {
	if l == nil {
		return
	}
	l.objs.update(l.key(fed), func(st *state) { st.statusAt = time.Now() })
}

// StatusConfirmed reports whether obj's status, at obj's resourceVersion,
// is one the controller wrote or found to match the members: the rollout
// controller acts on no other. A status somebody else wrote stays
// unconfirmed until a reconcile has checked (and, where it lies,
// rewritten) it.
func (c *Controller) StatusConfirmed(obj *unstructured.Unstructured) (ok bool) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return false
	}
	rv := obj.GetResourceVersion()
	c.objs.read(key, func(st *state) { ok = rv != "" && st.statusRV == rv })
	return ok
}

// foreignStatus reports whether a status-only change of key, to
// resourceVersion rv, is not the controller's own last status write:
// somebody else wrote the status (an app team patching /status "ready"),
// or the controller has not written it since it started. The object is
// then reconciled again, which rewrites a status that is not what the
// members show; its own writes cost nothing.
func (c *Controller) foreignStatus(key, rv string) (foreign bool) {
	c.objs.read(key, func(st *state) { foreign = st.statusRV != rv })
	return foreign
}

// staleCacheRetry is how soon a status write waiting for the cache to show
// the previous one is tried again.
const staleCacheRetry = 100 * time.Millisecond

// lastWrites remembers, per object, the status last written and the
// resourceVersion it replaced, until the cache shows a newer object: a
// reconcile reading the cache before that would otherwise write the same
// status again, or a different one bound to conflict. A nil lastWrites
// remembers nothing.
type lastWrites struct {
	objs *objects
}

type lastWrite struct {
	over   string
	status typesv1b1.Status
	record propagatedversion.Versions
}

func newLastWrites(objs *objects) *lastWrites { return &lastWrites{objs: objs} }

func (l *lastWrites) set(key, over string, st typesv1b1.Status, rec propagatedversion.Versions) {
	if l == nil {
		return
	}
	l.objs.update(key, func(s *state) { s.written = &lastWrite{over: over, status: st, record: rec} })
}

func (l *lastWrites) get(key string) (w lastWrite, ok bool) {
	if l == nil {
		return lastWrite{}, false
	}
	l.objs.read(key, func(s *state) {
		if s.written != nil {
			w, ok = *s.written, true
		}
	})
	return w, ok
}

// seen drops key's write once the cache holds another version than the
// one it replaced (or the object is gone: rv "").
func (l *lastWrites) seen(key, rv string) {
	if l == nil {
		return
	}
	l.objs.update(key, func(s *state) {
		if s.written != nil && s.written.over != rv {
			s.written = nil
		}
	})
}

// settler holds back the status write of an object while a member it was
// written to has not shown the write in its cache: the member's watch
// event requeues the object moments later, and one status write then
// carries the generation written and the readiness together, where two
// (not ready, then ready) were written before. An object is held at most
// max from its first hold, so a watch that never delivers delays its
// status by max and no more. A nil settler never holds.
type settler struct {
	max  time.Duration
	now  func() time.Time
	objs *objects
}

func newSettler(objs *objects, max time.Duration) *settler {
	if max <= 0 {
		return nil
	}
	return &settler{max: max, now: time.Now, objs: objs}
}

// hold returns how much longer key's status write may wait, 0 when it is
// to be written now.
func (s *settler) hold(key string) (wait time.Duration) {
	if s == nil {
		return 0
	}
	now := s.now()
	s.objs.update(key, func(st *state) {
		if st.settleSince.IsZero() {
			st.settleSince, wait = now, s.max
			return
		}
		wait = max(0, s.max-now.Sub(st.settleSince))
	})
	return wait
}

// done forgets key's hold: its status is written (or needs no write).
func (s *settler) done(key string) {
	if s == nil {
		return
	}
	s.objs.update(key, func(st *state) { st.settleSince = time.Time{} })
}

// stamp sets cond's times from the condition of its type in old: the
// transition time moves only when the status changes, the update time
// only when anything does.
func stamp(cond typesv1b1.Condition, old []typesv1b1.Condition, now metav1.Time) typesv1b1.Condition {
	cond.LastUpdateTime, cond.LastTransitionTime = now, now
	for _, o := range old {
		if o.Type != cond.Type || o.Status != cond.Status {
			continue
		}
		cond.LastTransitionTime = o.LastTransitionTime
		if o.Reason == cond.Reason && o.Message == cond.Message {
			cond.LastUpdateTime = o.LastUpdateTime
		}
	}
	return cond
}

// statusOf decodes the object's status (empty when it has none or it
// does not decode).
func statusOf(fed *unstructured.Unstructured) typesv1b1.Status {
	var st typesv1b1.Status
	if raw, ok, _ := unstructured.NestedMap(fed.Object, "status"); ok {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &st)
	}
	return st
}

func sameStatus(a, b typesv1b1.Status) bool {
	if a.ObservedGeneration != b.ObservedGeneration || len(a.Conditions) != len(b.Conditions) || len(a.Clusters) != len(b.Clusters) ||
		a.Released != b.Released || a.Propagated != b.Propagated || a.Ready != b.Ready {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message {
			return false
		}
	}
	for i := range a.Clusters {
		x, y := a.Clusters[i], b.Clusters[i]
		if x.Name != y.Name || x.Status != y.Status || x.Generation != y.Generation || x.Message != y.Message ||
			!equalPtr(x.Ready, y.Ready) || !sameRaw(x.RemoteStatus, y.RemoteStatus) {
			return false
		}
	}
	return true
}

func equalPtr[T comparable](a, b *T) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// sameRaw compares two remote statuses by content.
func sameRaw(a, b *runtime.RawExtension) bool {
	if a == nil || b == nil {
		return a == b
	}
	var x, y any
	if json.Unmarshal(a.Raw, &x) != nil || json.Unmarshal(b.Raw, &y) != nil {
		return bytes.Equal(a.Raw, b.Raw)
	}
	return equality.Semantic.DeepEqual(x, y)
}
