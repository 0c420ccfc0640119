package cells

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	fedv1b1 "sigs.k8s.io/kubefed/pkg/apis/core/v1beta1"

	corev1a1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/tenancy"
)

// A cell moves to another physical cluster through its move cluster
// (corev1a1.MoveClusterName): the new cluster's access under the cell's
// labels, labelled LabelMove. The propagation controllers copy each
// object the move admits there and remove the cell's own copy once the
// new one is ready (propagation.Plan); this controller admits objects
// batch by batch, counts, and ends the move: when no record lists the
// cell's cluster any more, the Cell's spec.cluster becomes the new
// cluster. Everything it decides from is on the plane (the Cell, the
// records), so a restarted controller goes on where the last one was.

// moveCounts are a move's objects by where their records say they are.
type moveCounts struct {
	// onCell and onMove are the record keys listing the cell's cluster
	// and the move cluster.
	onCell, onMove sets.Set[string]
}

func (m moveCounts) all() sets.Set[string]      { return m.onCell.Union(m.onMove) }
func (m moveCounts) inFlight() sets.Set[string] { return m.onCell.Intersection(m.onMove) }
func (m moveCounts) pending() sets.Set[string]  { return m.onCell.Difference(m.onMove) }
func (m moveCounts) moved() sets.Set[string]    { return m.onMove.Difference(m.onCell) }

// window is what a move admits now: the objects in flight, and pending
// ones in key order up to batch in flight. Admitted objects not copied
// after stuckAfter (stale) stay admitted but leave their place to others.
func window(m moveCounts, batch int, paused bool, stale sets.Set[string]) sets.Set[string] {
	admit := m.inFlight()
	if paused {
		return admit
	}
	room := batch - admit.Len()
	for _, k := range sets.List(m.pending()) {
		if stale.Has(k) {
			admit.Insert(k)
			continue
		}
		if room <= 0 {
			continue
		}
		admit.Insert(k)
		room--
	}
	return admit
}

// move carries a cell's move on: its move cluster and the objects
// admitted; it returns the move's status (status.move) to write. When the
// move is done it switches the cell (stored is the Cell as cached), and
// cell becomes what the plane now stores.
//
// A move whose target is gone or dedicated to another tenant is blocked:
// the returned condition (MoveBlocked) says why, nothing more is admitted,
// the move cluster is never created towards another tenant's cluster
// (an existing one gets its dedication, so the objects' plans leave it
// alone), and the move never ends there.
func (c *Controller) move(ctx context.Context, cell *corev1a1.Cell, stored *unstructured.Unstructured) (*corev1a1.CellMoveStatus, *metav1.Condition, error) {
	cellCluster := corev1a1.CellClusterName(cell.Namespace, cell.Name)
	moveCluster := corev1a1.MoveClusterName(cell.Namespace, cell.Name)
	mv := cell.Spec.Move
	if mv == nil {
		st := cell.Status.Move.DeepCopy()
		if st != nil && st.CompletionTime == nil {
			// Ended without its status written, or called off by hand
			// (spec.move removed).
			st.Phase, st.Message = corev1a1.MovePhaseCompleted, ""
			if cell.Spec.Cluster != st.To {
				st.Phase, st.Message = corev1a1.MovePhaseRolledBack, "spec.move was removed"
			}
			st.CompletionTime = ptrTime(time.Now())
		}
		return st, nil, c.noMove(ctx, cell)
	}
	st := &corev1a1.CellMoveStatus{From: cell.Spec.Cluster, To: mv.To, Phase: corev1a1.MovePhaseMoving}
	if prev := cell.Status.Move; prev != nil && prev.To == mv.To && prev.From == cell.Spec.Cluster && prev.StartTime != nil && prev.CompletionTime == nil {
		st.StartTime = prev.StartTime
	} else {
		st.StartTime = ptrTime(time.Now())
		c.event(cell, corev1.EventTypeNormal, "MoveStarted", "moving the cell from cluster %s to %s", cell.Spec.Cluster, mv.To)
	}

	target := c.cluster(mv.To)
	blocked := moveBlock(cell, target, c.tenantOf(cell.Namespace), c.namespace)
	if blocked != nil {
		st.Message = blocked.Message
		c.records.Admit(cellCluster, nil)
		if prev := apimeta.FindStatusCondition(cell.Status.Conditions, corev1a1.CellMoveBlocked); prev == nil || prev.Reason != blocked.Reason {
			c.event(cell, corev1.EventTypeWarning, "MoveBlocked", "%s", blocked.Message)
		}
	}
	if target == nil {
		if blocked == nil { // an undo: what was copied stays where it is
			st.Phase = corev1a1.MovePhaseRollingBack
			st.Message = fmt.Sprintf("KubeFedCluster %s/%s does not exist; what was copied there stays; join it again to bring it back", c.namespace, mv.To)
		}
		c.records.Admit(cellCluster, nil)
		return st, blocked, nil
	}
	want := c.desired(cell, target)
	want.Name = moveCluster
	want.Labels[corev1a1.LabelMove] = corev1a1.MoveCopy
	if mv.Undo {
		want.Labels[corev1a1.LabelMove] = corev1a1.MoveUndo
	}
	if blocked == nil || c.cluster(moveCluster) != nil {
		if err := c.apply(ctx, want); err != nil {
			return nil, nil, err
		}
	}
	if blocked != nil {
		return st, blocked, nil
	}

	counts := moveCounts{onCell: c.records.Keys(cellCluster), onMove: c.records.Keys(moveCluster)}
	primed := c.primed()
	klog.FromContext(ctx).V(4).Info("Cell move", "cell", cell.Namespace+"/"+cell.Name, "onCell", counts.onCell.Len(), "onMove", counts.onMove.Len(), "primed", primed, "undo", mv.Undo, "paused", mv.Paused)
	st.Objects = int32(counts.all().Len())
	st.Copied = int32(counts.onMove.Len())
	st.Moved = int32(counts.moved().Len())

	if mv.Undo {
		st.Phase = corev1a1.MovePhaseRollingBack
		c.records.Admit(cellCluster, nil)
		c.forgetAdmissions(cellCluster)
		if !primed || counts.onMove.Len() > 0 {
			st.Message = fmt.Sprintf("%d objects still on cluster %s", counts.onMove.Len(), mv.To)
			if !tenancy.MayUse(c.tenantOf(cell.Namespace), target.Labels) {
				st.Message += fmt.Sprintf(", dedicated to tenant %q: they are left there untouched, and the undo ends once the dedication is removed (or they are deleted)", tenancy.TenantOf(target.Labels))
			}
			return st, nil, nil
		}
		return st, nil, c.endMove(ctx, cell, stored, st, false)
	}

	batch := int(mv.Batch)
	if batch <= 0 {
		batch = corev1a1.DefaultMoveBatch
	}
	stale := c.stale(cellCluster, counts)
	c.records.Admit(cellCluster, window(counts, batch, mv.Paused, stale))
	if mv.Paused {
		st.Phase = corev1a1.MovePhasePaused
	}
	switch {
	case !primed:
		st.Message = "waiting for every federated type's records to load"
	case counts.onCell.Len() > 0:
		if stuck := stale.Len(); stuck > 0 {
			st.Message = fmt.Sprintf("%d objects not copied after %v: held back by a placement mask or rollout, refused by cluster %s, or not ready there (see the objects' status)", stuck, stuckAfter, mv.To)
		}
	default:
		st.Phase = corev1a1.MovePhaseFinishing
		return st, nil, c.endMove(ctx, cell, stored, st, true)
	}
	return st, nil, nil
}

// noMove tidies up after a cell's move: its admissions go, and its move
// cluster once no record lists it.
func (c *Controller) noMove(ctx context.Context, cell *corev1a1.Cell) error {
	cellCluster := corev1a1.CellClusterName(cell.Namespace, cell.Name)
	moveCluster := corev1a1.MoveClusterName(cell.Namespace, cell.Name)
	c.records.Admit(cellCluster, nil)
	c.forgetAdmissions(cellCluster)
	cur := c.cluster(moveCluster)
	// The move cluster goes once no record lists it (which only means
	// something once every record is indexed).
	if cur == nil || !c.primed() {
		return nil
	}
	if c.records.Keys(moveCluster).Len() == 0 {
		return c.deleteCellCluster(ctx, moveCluster)
	}
	// After a completed move it reaches the cell's own cluster, and the
	// objects' next reconciles drop it from their records. A move called
	// off by hand (spec.move removed) is undone: what was copied but not
	// moved comes back.
	if own := c.cluster(cell.Spec.Cluster); own != nil && own.Spec.APIEndpoint == cur.Spec.APIEndpoint {
		return nil
	}
	if cur.Labels[corev1a1.LabelMove] != corev1a1.MoveUndo {
		undo := cur.DeepCopy()
		undo.Labels[corev1a1.LabelMove] = corev1a1.MoveUndo
		undo.Status = fedv1b1.KubeFedClusterStatus{}
		return c.apply(ctx, undo)
	}
	return nil
}

// endMove ends a move: done, the cell's cluster becomes the new one; undone,
// it stays. spec.move is cleared either way, and cell becomes the stored
// Cell after the write.
func (c *Controller) endMove(ctx context.Context, cell *corev1a1.Cell, stored *unstructured.Unstructured, st *corev1a1.CellMoveStatus, done bool) error {
	u := stored.DeepCopy()
	unstructured.RemoveNestedField(u.Object, "spec", "move")
	if done {
		if err := unstructured.SetNestedField(u.Object, st.To, "spec", "cluster"); err != nil {
			return err
		}
	}
	updated, err := c.plane.Resource(CellResource).Namespace(cell.Namespace).Update(ctx, u, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("ending the move of cell %s/%s: %w", cell.Namespace, cell.Name, err)
	}
	status := cell.Status
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(updated.Object, cell); err != nil {
		return fmt.Errorf("decoding cell: %w", err)
	}
	cell.Status = status
	st.CompletionTime = ptrTime(time.Now())
	st.Message = ""
	cellCluster := corev1a1.CellClusterName(cell.Namespace, cell.Name)
	c.records.Admit(cellCluster, nil)
	c.forgetAdmissions(cellCluster)
	if done {
		st.Phase = corev1a1.MovePhaseCompleted
		c.event(cell, corev1.EventTypeNormal, "MoveCompleted", "moved %d objects from cluster %s to %s in %v", st.Moved, st.From, st.To, time.Since(st.StartTime.Time).Round(time.Second))
	} else {
		st.Phase = corev1a1.MovePhaseRolledBack
		c.event(cell, corev1.EventTypeNormal, "MoveRolledBack", "the move to cluster %s is undone; the cell stays on %s", st.To, st.From)
	}
	klog.FromContext(ctx).Info("Cell move ended", "cell", cell.Namespace+"/"+cell.Name, "phase", st.Phase, "from", st.From, "to", st.To, "objects", st.Objects)
	return nil
}

// stale are the objects a move admitted over stuckAfter ago that are
// still not copied; it remembers when it first admitted the others.
func (c *Controller) stale(cellCluster string, m moveCounts) sets.Set[string] {
	c.mu.Lock()
	defer c.mu.Unlock()
	at := c.admittedAt[cellCluster]
	if at == nil {
		at = map[string]time.Time{}
		c.admittedAt[cellCluster] = at
	}
	out := sets.New[string]()
	pending := m.pending()
	now := time.Now()
	for k, t := range at {
		switch {
		case !pending.Has(k):
			delete(at, k)
		case now.Sub(t) > stuckAfter:
			out.Insert(k)
		}
	}
	for _, k := range sets.List(c.records.AdmittedKeys(cellCluster)) {
		if _, ok := at[k]; !ok && pending.Has(k) {
			at[k] = now
		}
	}
	if len(at) > 0 {
		c.queue.AddAfter(cellKey(cellCluster), stuckAfter)
	}
	return out
}

func (c *Controller) forgetAdmissions(cellCluster string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.admittedAt, cellCluster)
}

// cellKey is the queue key of a per-cell cluster's cell.
func cellKey(cellCluster string) string {
	ns, cell, _ := corev1a1.ParseCellClusterName(cellCluster)
	return ns + "/" + cell
}

func (c *Controller) event(cell *corev1a1.Cell, typ, reason, format string, args ...any) {
	if c.recorder == nil {
		return
	}
	ref := &corev1.ObjectReference{APIVersion: corev1a1.SchemeGroupVersion.String(), Kind: "Cell", Namespace: cell.Namespace, Name: cell.Name, UID: cell.UID, ResourceVersion: cell.ResourceVersion}
	c.recorder.Eventf(ref, typ, reason, format, args...)
}

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t.Truncate(time.Second))
	return &mt
}
