// Package cells is cellfed-controller's cell controller: for every Cell it
// keeps the per-cell KubeFedCluster named <namespace>.<cell> — the
// physical cluster's access configuration under the cell's identity and
// labels — and reports the cluster's readiness on the Cell. Cells are how
// the plane's conversion makes a deployment unit look like a cluster to
// KubeFed's API.
package cells

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	fedv1b1 "sigs.k8s.io/kubefed/pkg/apis/core/v1beta1"

	"github.com/cellfed/cellfed/pkg/controller/informers"

	corev1a1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/pkg/controller/clusters"
	"github.com/cellfed/cellfed/pkg/tenancy"
)

// CellResource is the plane resource of Cells.
var CellResource = schema.GroupVersionResource{Group: corev1a1.GroupName, Version: "v1alpha1", Resource: "cells"}

// Controller reconciles Cells into per-cell KubeFedClusters.
type Controller struct {
	plane     dynamic.Interface
	namespace string // of KubeFedClusters
	workers   int
	queue     workqueue.TypedRateLimitingInterface[string]

	cells      cache.SharedIndexInformer
	kfcs       cache.SharedIndexInformer
	namespaces cache.SharedIndexInformer
	// versions are the stored PropagatedVersions (KubeFed's controller
	// writes them), indexed by the clusters they list, and records the
	// propagation records cellfed-controller keeps in federated objects'
	// status: a cell's count of objects is the union of both.
	versions cache.SharedIndexInformer
	records  *informers.Records

	recorder record.EventRecorder
	// primed reports that records lists every object a cluster holds
	// (every propagation controller runs): a move ends only then.
	primed func() bool
	// admittedAt is when each moving cell's move admitted each object
	// not copied yet: one that stays uncopied (held back by a mask, or
	// refused by the new cluster) stops counting against the batch after
	// stuckAfter, so it cannot stall the rest.
	mu         sync.Mutex
	admittedAt map[string]map[string]time.Time
	// countWritten is when each cell's object count was last written
	// (guarded by mu), for countWait.
	countWritten map[string]time.Time
}

// stuckAfter is how long an admitted object may take to be copied before
// the move starts others in its place.
const stuckAfter = 30 * time.Second

// moveStep is how soon a moving cell is looked at again after its
// objects' records change.
const moveStep = 200 * time.Millisecond

// recordClusters are the cluster names a PropagatedVersion lists.
func recordClusters(obj any) []string {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			u, _ = d.Obj.(*unstructured.Unstructured)
		}
	}
	if u == nil {
		return nil
	}
	list, _, _ := unstructured.NestedSlice(u.Object, "status", "clusterVersions")
	names := make([]string, 0, len(list))
	for _, e := range list {
		if m, ok := e.(map[string]any); ok {
			if n, _ := m["clusterName"].(string); n != "" {
				names = append(names, n)
			}
		}
	}
	return names
}

const byCluster = "byCluster"

// New builds the cell controller, reading the process's shared caches;
// fedNamespace holds the KubeFedClusters. primed reports that the
// process's record index is complete (nil: always).
func New(plane dynamic.Interface, caches *informers.Factory, recorder record.EventRecorder, primed func() bool, fedNamespace string, workers int) *Controller {
	if primed == nil {
		primed = func() bool { return true }
	}
	c := &Controller{
		plane:        plane,
		namespace:    fedNamespace,
		workers:      workers,
		recorder:     recorder,
		primed:       primed,
		admittedAt:   map[string]map[string]time.Time{},
		countWritten: map[string]time.Time{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "cells"}),
	}
	c.cells = caches.Cells()
	c.kfcs = caches.KubeFedClusters()
	c.namespaces = caches.Namespaces()
	c.records = caches.Records()
	c.versions = caches.StoredPropagatedVersions(leanRecord,
		cache.Indexers{byCluster: func(obj any) ([]string, error) { return recordClusters(obj), nil }})
	return c
}

// leanRecord keeps of a PropagatedVersion what the cell controller reads,
// the cluster names (it counts each cluster's objects), and its metadata
// without managedFields: a record of an object on many cells is mostly
// versions and managedFields listing each cluster.
func leanRecord(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	names := recordClusters(u)
	list := make([]any, len(names))
	for i, n := range names {
		list[i] = map[string]any{"clusterName": n}
	}
	u.Object = map[string]any{"apiVersion": u.Object["apiVersion"], "kind": u.Object["kind"], "metadata": u.Object["metadata"],
		"status": map[string]any{"clusterVersions": list}}
	return clusters.StripManagedFields(u)
}

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	defer c.queue.ShutDown()
	handlers := []struct {
		inf cache.SharedIndexInformer
		fn  func(any)
	}{
		{c.cells, c.enqueueCell},
		{c.kfcs, c.enqueueForCluster},
		{c.namespaces, c.enqueueForNamespace},
	}
	for _, h := range handlers {
		fn := h.fn
		cells := h.inf == c.cells
		if _, err := h.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: fn,
			UpdateFunc: func(old, o any) {
				// A cell's own status write comes back as an update:
				// reconciling it again while records change would write
				// the count as fast as the plane answers.
				if cells && clusters.StatusOnly(old, o) {
					return
				}
				fn(o)
			},
			DeleteFunc: fn,
		}); err != nil {
			return err
		}
	}
	// A record counts for the cells it lists before and after a change.
	if _, err := c.versions.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueForRecord,
		UpdateFunc: func(old, cur any) { c.enqueueForRecord(old); c.enqueueForRecord(cur) },
		DeleteFunc: c.enqueueForRecord,
	}); err != nil {
		return err
	}
	c.records.OnChange(c.enqueueForClusters)
	if !cache.WaitForCacheSync(ctx.Done(), c.cells.HasSynced, c.kfcs.HasSynced, c.namespaces.HasSynced, c.versions.HasSynced) {
		return fmt.Errorf("cell controller: waiting for caches: %w", ctx.Err())
	}
	var wg sync.WaitGroup
	for range max(1, c.workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c.next(ctx) {
			}
		}()
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

func objectOf(obj any) metav1.Object {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := apimeta.Accessor(obj)
	if err != nil {
		return nil
	}
	return m
}

func (c *Controller) enqueueCell(obj any) {
	if m := objectOf(obj); m != nil {
		c.queue.Add(m.GetNamespace() + "/" + m.GetName())
	}
}

// enqueueForCluster: a physical cluster changes its cells; a per-cell
// cluster is checked against its cell (and removed if the cell is gone).
func (c *Controller) enqueueForCluster(obj any) {
	m := objectOf(obj)
	if m == nil {
		return
	}
	if ns, cell, ok := corev1a1.ParseCellClusterName(m.GetName()); ok {
		c.queue.Add(ns + "/" + cell)
		return
	}
	if ns, cell, ok := corev1a1.ParseMoveClusterName(m.GetName()); ok {
		c.queue.Add(ns + "/" + cell)
		return
	}
	cells, _ := c.cells.GetIndexer().ByIndex(informers.CellsByCluster, m.GetName())
	for _, cell := range cells {
		c.enqueueCell(cell)
	}
	// And the cells moving to it: their move cluster copies its access
	// and dedication, and a move to a cluster gone or dedicated to
	// another tenant is blocked.
	for _, cell := range c.cells.GetStore().List() {
		if u, ok := cell.(*unstructured.Unstructured); ok {
			if to, _, _ := unstructured.NestedString(u.Object, "spec", "move", "to"); to == m.GetName() {
				c.enqueueCell(cell)
			}
		}
	}
}

// enqueueForRecord: the cells a PropagatedVersion lists recount.
// The count waits objectCountDelay, so a release of many objects costs
// each cell one status write per delay, not one per object.
func (c *Controller) enqueueForRecord(obj any) { c.enqueueForClusters(recordClusters(obj)) }

// enqueueForClusters: the cells of clusters recount, after
// objectCountDelay.
func (c *Controller) enqueueForClusters(names []string) {
	for _, cluster := range names {
		if ns, cell, ok := corev1a1.ParseMoveClusterName(cluster); ok {
			// A move goes on as soon as its objects do.
			c.queue.AddAfter(ns+"/"+cell, moveStep)
			continue
		}
		if ns, cell, ok := corev1a1.ParseCellClusterName(cluster); ok {
			c.queue.AddAfter(ns+"/"+cell, objectCountDelay)
		}
	}
}

// objectCountDelay is how long a cell's object count waits for more
// records to change.
const objectCountDelay = 2 * time.Second

func (c *Controller) enqueueForNamespace(obj any) {
	m := objectOf(obj)
	if m == nil {
		return
	}
	cells, _ := c.cells.GetIndexer().ByIndex(cache.NamespaceIndex, m.GetName())
	for _, cell := range cells {
		c.enqueueCell(cell)
	}
}

func (c *Controller) next(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.reconcile(ctx, key); err != nil {
		klog.FromContext(ctx).V(1).Info("Cell reconcile failed", "cell", key, "err", err)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

func (c *Controller) reconcile(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	clusterName := corev1a1.CellClusterName(ns, name)
	obj, exists, err := c.cells.GetStore().GetByKey(key)
	if err != nil {
		return err
	}
	if !exists {
		c.records.Admit(clusterName, nil)
		c.forgetAdmissions(clusterName)
		c.mu.Lock()
		delete(c.countWritten, key)
		c.mu.Unlock()
		if err := c.deleteCellCluster(ctx, corev1a1.MoveClusterName(ns, name)); err != nil {
			return err
		}
		return c.deleteCellCluster(ctx, clusterName)
	}
	var cell corev1a1.Cell
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.(*unstructured.Unstructured).Object, &cell); err != nil {
		return fmt.Errorf("decoding cell: %w", err)
	}
	physical := c.cluster(cell.Spec.Cluster)
	if physical == nil {
		if err := c.deleteCellCluster(ctx, clusterName); err != nil {
			return err
		}
		return c.writeStatus(ctx, &cell, "", nil, cell.Status.Move, apimeta.FindStatusCondition(cell.Status.Conditions, corev1a1.CellMoveBlocked))
	}
	want := c.desired(&cell, physical)
	if err := c.apply(ctx, want); err != nil {
		return err
	}
	moved, blocked, err := c.move(ctx, &cell, obj.(*unstructured.Unstructured))
	if err != nil {
		return err
	}
	return c.writeStatus(ctx, &cell, clusterName, physical, moved, blocked)
}

// tenantOf is the tenant of namespace ns ("" for none, or not cached).
func (c *Controller) tenantOf(ns string) string {
	if obj, ok, _ := c.namespaces.GetStore().GetByKey(ns); ok {
		return tenancy.TenantOf(obj.(*corev1.Namespace).Labels)
	}
	return ""
}

func (c *Controller) cluster(name string) *fedv1b1.KubeFedCluster {
	if name == "" {
		return nil
	}
	obj, ok, err := c.kfcs.GetStore().GetByKey(c.namespace + "/" + name)
	if err != nil || !ok {
		return nil
	}
	var kfc fedv1b1.KubeFedCluster
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.(*unstructured.Unstructured).Object, &kfc); err != nil {
		return nil
	}
	return &kfc
}

// desired is the per-cell KubeFedCluster of a cell: the physical
// cluster's spec, labelled with the cell's labels, its topology and its
// namespace's tenancy.
func (c *Controller) desired(cell *corev1a1.Cell, physical *fedv1b1.KubeFedCluster) *fedv1b1.KubeFedCluster {
	labels := maps.Clone(cell.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	for _, k := range tenancy.Labels {
		delete(labels, k)
	}
	delete(labels, corev1a1.LabelClusterTenant)
	if obj, ok, _ := c.namespaces.GetStore().GetByKey(cell.Namespace); ok {
		maps.Copy(labels, tenancy.ObjectLabels(obj.(*corev1.Namespace).Labels))
	}
	// Whose member it reaches: objects of another tenant never do.
	maps.Copy(labels, tenancy.PhysicalTenantLabels(physical.Labels))
	labels[corev1a1.LabelTopologyType] = corev1a1.TopologyTypeCell
	labels[corev1a1.LabelNamespace] = cell.Namespace
	labels[corev1a1.LabelCell] = cell.Name
	return &fedv1b1.KubeFedCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: fedv1b1.SchemeGroupVersion.String(), Kind: "KubeFedCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: corev1a1.CellClusterName(cell.Namespace, cell.Name), Namespace: c.namespace, Labels: labels},
		Spec:       *physical.Spec.DeepCopy(),
	}
}

// apply creates or updates the per-cell cluster when it differs.
func (c *Controller) apply(ctx context.Context, want *fedv1b1.KubeFedCluster) error {
	client := c.plane.Resource(kubefed.KubeFedClustersResource).Namespace(c.namespace)
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(want)
	if err != nil {
		return err
	}
	delete(content, "status")
	cur := c.cluster(want.Name)
	if cur == nil {
		_, err := client.Create(ctx, &unstructured.Unstructured{Object: content}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("per-cell cluster %s exists but is not cached yet", want.Name)
		}
		if err != nil {
			return fmt.Errorf("creating per-cell cluster %s: %w", want.Name, err)
		}
		klog.FromContext(ctx).Info("Created per-cell cluster", "cluster", want.Name)
		return nil
	}
	if maps.Equal(cur.Labels, want.Labels) && reflect.DeepEqual(cur.Spec, want.Spec) {
		return nil
	}
	obj, _, _ := c.kfcs.GetStore().GetByKey(c.namespace + "/" + want.Name)
	u := obj.(*unstructured.Unstructured).DeepCopy()
	u.SetLabels(want.Labels)
	u.Object["spec"] = content["spec"]
	if _, err := client.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating per-cell cluster %s: %w", want.Name, err)
	}
	klog.FromContext(ctx).Info("Updated per-cell cluster", "cluster", want.Name)
	return nil
}

// deleteCellCluster removes a per-cell cluster that has no cell (or whose
// physical cluster is gone). Only clusters labelled as per-cell are
// touched.
func (c *Controller) deleteCellCluster(ctx context.Context, name string) error {
	cur := c.cluster(name)
	if cur == nil || cur.Labels[corev1a1.LabelTopologyType] != corev1a1.TopologyTypeCell {
		return nil
	}
	err := c.plane.Resource(kubefed.KubeFedClustersResource).Namespace(c.namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting per-cell cluster %s: %w", name, err)
	}
	klog.FromContext(ctx).Info("Deleted per-cell cluster", "cluster", name)
	return nil
}

// writeStatus reports the per-cell cluster and the physical cluster's
// readiness on the Cell, when they changed.
// blocked, when set, is the MoveBlocked condition (see moveBlock); it is
// removed otherwise.
func (c *Controller) writeStatus(ctx context.Context, cell *corev1a1.Cell, clusterName string, physical *fedv1b1.KubeFedCluster, move *corev1a1.CellMoveStatus, blocked *metav1.Condition) error {
	st := corev1a1.CellStatus{KubeFedCluster: clusterName, Conditions: slices.Clone(cell.Status.Conditions), Move: move}
	found := metav1.Condition{Type: corev1a1.CellClusterFound, Status: metav1.ConditionTrue, Reason: "ClusterFound",
		Message: fmt.Sprintf("KubeFedCluster %s/%s exists", c.namespace, cell.Spec.Cluster), ObservedGeneration: cell.Generation}
	ready := metav1.Condition{Type: corev1a1.CellReady, Status: metav1.ConditionUnknown, Reason: "ClusterNotProbed",
		Message: "the cluster has not been probed yet", ObservedGeneration: cell.Generation}
	if physical == nil {
		found.Status, found.Reason = metav1.ConditionFalse, "ClusterNotFound"
		found.Message = fmt.Sprintf("KubeFedCluster %s/%s does not exist; join it with `cellfedctl join %s`", c.namespace, cell.Spec.Cluster, cell.Spec.Cluster)
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, "ClusterNotFound", found.Message
	} else {
		for _, cond := range physical.Status.Conditions {
			if cond.Type != "Ready" {
				continue
			}
			ready.Status = metav1.ConditionStatus(cond.Status)
			if cond.Reason != nil && *cond.Reason != "" {
				ready.Reason = *cond.Reason
			}
			ready.Message = fmt.Sprintf("cluster %s: %s", cell.Spec.Cluster, ready.Reason)
			if cond.Message != nil && *cond.Message != "" {
				ready.Message = fmt.Sprintf("cluster %s: %s", cell.Spec.Cluster, *cond.Message)
			}
		}
	}
	apimeta.SetStatusCondition(&st.Conditions, found)
	apimeta.SetStatusCondition(&st.Conditions, ready)
	if blocked != nil {
		apimeta.SetStatusCondition(&st.Conditions, *blocked)
	} else {
		apimeta.RemoveStatusCondition(&st.Conditions, corev1a1.CellMoveBlocked)
	}
	if clusterName != "" {
		stored, err := c.versions.GetIndexer().IndexKeys(byCluster, clusterName)
		if err != nil {
			return err
		}
		// A moving cell's objects on its move cluster count too.
		keys := c.records.Keys(clusterName).Insert(stored...).Union(c.records.Keys(corev1a1.MoveClusterName(cell.Namespace, cell.Name)))
		st.Objects = ptr.To(int32(keys.Len()))
	}
	if equalStatus(cell.Status, st) {
		return nil
	}
	key := cell.Namespace + "/" + cell.Name
	c.mu.Lock()
	last := c.countWritten[key]
	c.mu.Unlock()
	if wait := countWait(cell.Status, st, last, time.Now()); wait > 0 {
		c.queue.AddAfter(key, wait)
		return nil
	}
	old := cell.Status
	cell = cell.DeepCopy()
	cell.Status = st
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cell)
	if err != nil {
		return err
	}
	_, err = c.plane.Resource(CellResource).Namespace(cell.Namespace).UpdateStatus(ctx, &unstructured.Unstructured{Object: content}, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil && !ptr.Equal(old.Objects, st.Objects) {
		c.mu.Lock()
		c.countWritten[key] = time.Now()
		c.mu.Unlock()
	}
	return err
}

// countInterval is the least time between two status writes of a cell
// that change only its object count from one number other than 0 to
// another: a release of many objects costs each cell one write per
// interval (it cost 0.73 plane writes per object at 20 cells, one per
// cell every 2 s). A count that reaches or leaves 0 and every other
// change are written at once: `cell delete --drain` deletes a cell whose
// count is 0, so a stored 0 must never stand for objects placed since.
const countInterval = 15 * time.Second

// countWait is how long the write of next over cur must wait: 0 to write
// now, else the time left of countInterval since the cell's count was
// last written (lastWrite).
func countWait(cur, next corev1a1.CellStatus, lastWrite, now time.Time) time.Duration {
	if ptr.Deref(cur.Objects, 0) == 0 || ptr.Deref(next.Objects, 0) == 0 || ptr.Equal(cur.Objects, next.Objects) {
		return 0
	}
	same := cur
	same.Objects = next.Objects
	if !equalStatus(same, next) {
		return 0 // more than the count changed
	}
	return max(0, lastWrite.Add(countInterval).Sub(now))
}

func equalStatus(a, b corev1a1.CellStatus) bool {
	if a.KubeFedCluster != b.KubeFedCluster || len(a.Conditions) != len(b.Conditions) || !ptr.Equal(a.Objects, b.Objects) || !reflect.DeepEqual(a.Move, b.Move) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}
