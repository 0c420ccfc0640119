package propagation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	typesv1b1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
	typesv1b2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
	"github.com/cellfed/cellfed/pkg/controller/clusters"
	"github.com/cellfed/cellfed/pkg/controller/informers"
	"github.com/cellfed/cellfed/pkg/placement"
)

// Per-cluster propagation states, as KubeFed reports them.
const (
	StatusOK                 = "OK"
	StatusClusterNotReady    = "ClusterNotReady"
	StatusCreationFailed     = "CreationFailed"
	StatusUpdateFailed       = "UpdateFailed"
	StatusDeletionFailed     = "DeletionFailed"
	StatusLabelRemovalFailed = "LabelRemovalFailed"
	StatusAlreadyExists      = "AlreadyExists"
	StatusManagedLabelFalse  = "ManagedLabelFalse"
	StatusWaitingForRemoval  = "WaitingForRemoval"
	StatusCreationTimedOut   = "CreationTimedOut"
	StatusUpdateTimedOut     = "UpdateTimedOut"
	StatusDeletionTimedOut   = "DeletionTimedOut"
	StatusConfigMalformed    = "ClusterConfigMalformed"
	// StatusWriteInProgress: the member has not answered the write yet
	// (it goes on in the background); the generation shown is the one
	// the member ran before.
	StatusWriteInProgress = "WriteInProgress"
)

// NamespaceLookup tells a namespaced type's controller what KubeFed's
// namespace placement says about ns: rule is false when the plane does
// not federate namespaces (member namespaces are then created on
// demand); otherwise placement is the placement of ns's
// FederatedNamespace, nil when ns is not federated. An error means the
// answer is not known yet.
type NamespaceLookup func(ns string) (placement *typesv1b1.Placement, rule bool, err error)

// Env is what a type's controller works with.
type Env struct {
	Plane    dynamic.Interface
	Clusters *clusters.Registry
	Recorder record.EventRecorder
	// Namespaces answers the namespace placement of namespaced types;
	// nil applies no namespace rule.
	Namespaces NamespaceLookup
	// NamespaceChanged is told the namespace of every FederatedNamespace
	// that changed (only the Namespace type's controller calls it).
	NamespaceChanged func(ns string)
	// Tenants answers the tenant of a namespace ("" for none); nil
	// treats every namespace as tenant-less. An error means the answer
	// is not known yet.
	Tenants func(ns string) (string, error)
	// Records is the process's index of propagation records by cluster,
	// kept up to date with the records in memory (the cell controller
	// counts from it); nil keeps none.
	Records *informers.Records
	// PodSecurity answers the Pod Security level the member namespace
	// ns enforces ("" for none: the labels are left to the template);
	// nil sets none. See tenancy.PodSecurityLevel.
	PodSecurity func(ns string) (string, error)
}

// Controller propagates the objects of one federated type.
type Controller struct {
	typ    *Type
	policy Policy
	opts   Options
	env    Env
	// objs is each object's state: its record and the bookkeeping
	// below, which all keep their part in it.
	objs     *objects
	records  *versionStore
	queue    workqueue.TypedRateLimitingInterface[string]
	informer cache.SharedIndexInformer
	// primed: running, with every record indexed (Primed).
	primed atomic.Bool
	// fair is the queue's storage: workspaces served fairly (fairQueue).
	fair *fairQueue
	// statusWrites spaces each object's status writes.
	statusWrites *writeLimiter
	// settle holds a status write back while members' caches catch up
	// with what was just written.
	settle *settler
	// written: the last status write of each object until the cache
	// shows it.
	written *lastWrites
	// propagating: when each generation was observed, until it is on
	// every selected member; reflowing: the first member event not yet
	// in the status (for the latency and reflow delay metrics).
	propagating, reflowing *since
	// finalized: the resourceVersion each finalizer patch wrote, until
	// the cache shows it (a reconcile of the older cached copy would
	// patch again and be refused as a conflict).
	finalized *finalizerPatches
}

// New builds the controller of one type.
func New(t *Type, opts Options, env Env) *Controller {
	limiter := workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, opts.RetryMax),
	)
	objs := newObjects()
	c := &Controller{
		typ:     t,
		policy:  PolicyFor(t),
		opts:    opts,
		env:     env,
		objs:    objs,
		records: newVersionStore(env.Plane, t, objs, env.Records),

		statusWrites: newWriteLimiter(objs, opts.StatusInterval),
		settle:       newSettler(objs, opts.StatusInterval),
		written:      newLastWrites(objs),
		finalized:    &finalizerPatches{objs: objs},
		propagating:  newSince(objs, propagatingMark),
		reflowing:    newSince(objs, reflowingMark),
	}
	// Workspaces served fairly, and in each objects with work of their
	// own first (fairQueue, pendingFirst).
	c.fair = newFairQueue(c.hasOwnWork)
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[string]{
		Name: t.Name,
		DelayingQueue: workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{
			Name:  t.Name,
			Queue: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: t.Name, Queue: c.fair}),
		}),
	})
	registerMetrics()
	c.informer = dynamicinformer.NewFilteredDynamicInformer(env.Plane, t.Stored, metav1.NamespaceAll, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, nil).Informer()
	if err := c.informer.SetTransform(clusters.StripManagedFields); err != nil {
		klog.ErrorS(err, "Setting the federated cache's transform", "type", t.Name)
	}
	return c
}

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	defer c.queue.ShutDown()
	defer c.records.forgetAll()
	logger := klog.FromContext(ctx).WithValues("type", c.typ.Name)
	enqueue := func(obj any) {
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			return
		}
		if u, ok := obj.(*unstructured.Unstructured); ok && u.GetDeletionTimestamp() == nil {
			c.propagating.start(key, u.GetGeneration(), time.Now())
		}
		c.queue.Add(key)
		if c.typ.IsNamespace() && c.env.NamespaceChanged != nil {
			ns, _, _ := cache.SplitMetaNamespaceKey(key)
			c.env.NamespaceChanged(ns)
		}
	}
	if _, err := c.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(old, obj any) {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				return
			}
			key, err := cache.MetaNamespaceKeyFunc(u)
			if err != nil {
				return
			}
			c.written.seen(key, u.GetResourceVersion())
			switch {
			case !clusters.StatusOnly(old, obj):
				enqueue(obj)
			case c.foreignStatus(key, u.GetResourceVersion()):
				// Not our status write: check it against the members.
				c.queue.Add(key)
			}
		},
		DeleteFunc: enqueue,
	}); err != nil {
		return err
	}
	// A change of a member object re-checks the federated object it
	// belongs to (drift, deletion on the member).
	unwatch := c.env.Clusters.Watch(c.typ.Target, c.policy.CachedSpec(), cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueForMember,
		UpdateFunc: func(_, obj any) { c.enqueueForMember(obj) },
		DeleteFunc: c.enqueueForMember,
	})
	defer unwatch()
	if err := c.records.load(ctx); err != nil {
		return err
	}
	go c.informer.Run(ctx.Done())
	// A moving cell's admissions requeue the objects they name.
	defer c.env.Records.OnAdmit(func(keys []string) {
		for _, k := range keys {
			if key, ok := c.records.queueKey(k); ok {
				c.queue.Add(key)
			}
		}
	})()
	if !cache.WaitForCacheSync(ctx.Done(), c.informer.HasSynced) {
		return fmt.Errorf("%s: waiting for the plane's cache: %w", c.typ.Name, ctx.Err())
	}
	// Index every object's record now, not at its first reconcile: a
	// cell's move ends when no record lists the cell, which only means
	// something once all are indexed.
	for _, obj := range c.informer.GetStore().List() {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			if key, err := cache.MetaNamespaceKeyFunc(u); err == nil {
				c.records.get(key, u)
			}
		}
	}
	c.primed.Store(true)
	defer c.primed.Store(false)
	logger.Info("Propagating", "federatedType", c.typ.Stored.String(), "target", c.typ.Target.String(), "workers", c.opts.Workers)
	var wg sync.WaitGroup
	for range max(1, c.opts.Workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c.processNext(ctx) {
			}
		}()
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

// hasOwnWork reports whether the object of key needs propagating for its
// own sake (see hasOwnWork), from the cache.
func (c *Controller) hasOwnWork(key string) bool {
	obj, ok, err := c.informer.GetStore().GetByKey(key)
	if err != nil || !ok {
		return true
	}
	u, _ := obj.(*unstructured.Unstructured)
	return hasOwnWork(u)
}

// Informer is the controller's cache of the type's federated objects, in
// Type.Stored: others of the type (its rollout controller) read it
// rather than watch the type again. It runs with the controller.
func (c *Controller) Informer() cache.SharedIndexInformer { return c.informer }

// Primed reports whether the controller runs with every record of its
// type indexed (Env.Records).
func (c *Controller) Primed() bool { return c.primed.Load() }

// HasSynced reports whether the controller's cache of federated objects
// is loaded.
func (c *Controller) HasSynced() bool { return c.informer.HasSynced() }

// ClusterChanged requeues every object of the type: clusters appeared,
// went, changed labels or readiness.
func (c *Controller) ClusterChanged() {
	for _, key := range c.informer.GetStore().ListKeys() {
		c.queue.Add(key)
	}
}

// NamespaceChanged requeues the objects of the type in ns: its
// FederatedNamespace changed.
func (c *Controller) NamespaceChanged(ns string) {
	keys, _ := c.informer.GetIndexer().IndexKeys(cache.NamespaceIndex, ns)
	for _, key := range keys {
		c.queue.Add(key)
	}
}

// FederatedNamespace returns KubeFed's view of the FederatedNamespace of
// ns from the cache of the Namespace type's controller, nil when there is
// none.
func (c *Controller) FederatedNamespace(ns string) (*unstructured.Unstructured, error) {
	if !c.typ.IsNamespace() {
		return nil, fmt.Errorf("%s is not the Namespace type", c.typ.Name)
	}
	if !c.informer.HasSynced() {
		return nil, fmt.Errorf("FederatedNamespaces are not loaded yet")
	}
	obj, ok, err := c.informer.GetStore().GetByKey(ns + "/" + ns)
	if err != nil || !ok {
		return nil, err
	}
	return c.view(obj.(*unstructured.Unstructured))
}

// enqueueForMember queues the federated object a member object belongs
// to: the same key, except that a FederatedNamespace lives in the
// namespace it federates.
func (c *Controller) enqueueForMember(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	if c.typ.IsNamespace() {
		key = key + "/" + key
	}
	c.reflowing.start(key, 0, time.Now())
	c.queue.Add(key)
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	start := time.Now()
	requeue, err := c.reconcile(ctx, key)
	c.fair.Charge(key, time.Since(start))
	result := "ok"
	switch {
	case errors.Is(err, errNotProbed) || errors.Is(err, errLoading):
		// Not a failure: a member is not known yet. Retry soon at a
		// steady pace; an exponential back-off would grow while a slow
		// member loads and leave the object waiting long after.
		klog.FromContext(ctx).V(4).Info("Reconcile waits for a member", "type", c.typ.Name, "key", key, "reason", err)
		c.queue.Forget(key)
		c.queue.AddAfter(key, memberWaitRetry)
		result = "waiting"
	case err != nil:
		klog.FromContext(ctx).V(2).Info("Reconcile failed", "type", c.typ.Name, "key", key, "err", err)
		c.queue.AddRateLimited(key)
		result = "error"
	case requeue:
		c.queue.AddRateLimited(key)
		result = "requeue"
	default:
		c.queue.Forget(key)
	}
	reconcileDuration.WithLabelValues(c.typ.Name, result).Observe(time.Since(start).Seconds())
	return true
}

// reconcile brings one federated object's members in line: decide
// (Plan), do (dispatch), remember (the record) and report (status).
// requeue asks for a retry with back-off (a cluster failed); clusters
// that are not ready need none: their recovery requeues everything.
func (c *Controller) reconcile(ctx context.Context, key string) (requeue bool, err error) {
	obj, exists, err := c.informer.GetStore().GetByKey(key)
	if err != nil {
		return false, err
	}
	if !exists {
		c.records.forget(key)
		c.objs.forget(key)
		// A member event for an object with no federated object: the
		// managed-label rule (orphan.go).
		return false, c.releaseOrphans(ctx, key)
	}
	// stored is the object as the plane stores it (v1beta2), what the
	// controller writes; fed is KubeFed's view of it, what it decides
	// from.
	stored := obj.(*unstructured.Unstructured)
	ctx, span := c.startReconcile(ctx, key, stored)
	defer func() { endSpan(span, err) }()
	deleting := stored.GetDeletionTimestamp() != nil
	switch hasFinalizer := slices.Contains(stored.GetFinalizers(), Finalizer); {
	case deleting && !hasFinalizer:
		c.records.forget(key)
		return false, nil
	case !deleting && !hasFinalizer:
		if c.finalized.pending(key, stored.GetResourceVersion()) {
			// Our finalizer patch is newer than the cache: its update
			// event enqueues the object again (and, should it never
			// come, this does).
			c.queue.AddAfter(key, finalizerPatchPatience)
			return false, nil
		}
		planeWrites.WithLabelValues(c.typ.Name, WriteFinalizer).Inc()
		updated, err := c.setFinalizer(ctx, stored, true)
		if err != nil {
			return false, fmt.Errorf("adding finalizer: %w", err)
		}
		c.finalized.wrote(key, updated.GetResourceVersion())
		stored = updated
	default:
		c.finalized.forget(key)
	}
	fed, err := c.view(stored)
	if err != nil {
		return false, err
	}
	var w work
	if !deleting {
		if w, err = readWork(stored, fed); err != nil {
			c.env.Recorder.Eventf(fed, corev1.EventTypeWarning, "InvalidSpec", "%v", err)
			return false, c.writeStatus(ctx, stored, fed, report{fail: failure{"InvalidObject", err.Error()}})
		}
		if w.template, err = c.withPodSecurity(fed.GetNamespace(), w.template); err != nil {
			return true, err
		}
	} else if placed, err := readWork(stored, fed); err == nil {
		// Only the placement: the clusters a deletion visits besides
		// those recorded or holding the object.
		w.spec.Placement = placed.spec.Placement
	}
	rec := c.records.get(key, stored)
	in, members, err := c.input(key, fed, w.spec.Placement, deleting, rec)
	in.Mask = w.mask
	if err != nil {
		return true, err
	}
	decision, err := Plan(in)
	if in.MoveAdmitted.Len() > 0 {
		klog.FromContext(ctx).V(4).Info("Moving", "type", c.typ.Name, "key", key, "cells", sets.List(in.MoveAdmitted), "recorded", sets.List(in.Recorded), "intents", decision.Intents)
	}
	if err != nil {
		c.env.Recorder.Eventf(fed, corev1.EventTypeWarning, "ComputePlacementFailed", "%v", err)
		return false, c.writeStatus(ctx, stored, fed, report{fail: failure{"ComputePlacementFailed", err.Error()}})
	}
	if !deleting {
		var fresh map[string]observation
		if w.division != nil {
			fresh = c.observe(fed, decision.Intents, members)
		}
		var moving bool
		var clocks clockOutput
		now := clockInput{Now: time.Now()}
		c.objs.read(key, func(s *state) { now.Timers = s.unready })
		if w.divided, moving, clocks, err = divide(key, w.division, fed.GetNamespace(), w.template, c.typ.replicasPath(), statusOf(fed), decision.Intents, w.spec.Overrides, fresh, now); err != nil {
			c.env.Recorder.Eventf(fed, corev1.EventTypeWarning, "ReplicaDivisionFailed", "%v", err)
			return false, c.writeStatus(ctx, stored, fed, report{fail: failure{"ReplicaDivisionFailed", err.Error()}})
		}
		c.objs.update(key, func(s *state) { s.unready = clocks.Timers })
		switch {
		case moving:
			c.queue.AddAfter(key, divisionStepRetry)
		case clocks.Wake > 0:
			c.queue.AddAfter(key, clocks.Wake)
		}
	}
	results := c.dispatch(ctx, key, fed, w, rec, decision.Intents, members)
	next := nextRecord(rec, w, in, decision.Intents, results)
	cur := statusOf(fed)
	for i, it := range decision.Intents {
		if r := results[i]; r.err != nil {
			c.env.Recorder.Eventf(fed, corev1.EventTypeWarning, r.status, "cluster %s: %v", it.Clusters[0], r.err)
		}
	}
	var seen map[string]observation
	if !deleting {
		seen = c.observe(fed, decision.Intents, members)
	}
	out := clusterStatuses(cur, fed.GetGeneration(), deleting, decision.NamespaceNotFederated, decision.Intents, results, seen)
	for i := range out.report.clusters {
		cs := &out.report.clusters[i]
		cs.Replicas = nil
		if n, ok := w.divided[cs.Name]; ok {
			cs.Replicas = &n
		}
	}
	rep, pending, everywhere := out.report, out.pending, out.everywhere
	requeue = requeue || out.requeue
	if everywhere && !requeue {
		// Observed here, once the members are written (the record and
		// status writes that follow are not part of it).
		if d, ok := c.propagating.finish(key, fed.GetGeneration(), time.Now()); ok {
			propagationLatency.WithLabelValues(c.typ.Name).Observe(d.Seconds())
		}
	}
	if deleting && len(next.clusters) == 0 {
		// Removed everywhere: forget the record and let the object go.
		if err := c.records.delete(ctx, key, fed); err != nil {
			return true, err
		}
		planeWrites.WithLabelValues(c.typ.Name, WriteFinalizerRemove).Inc()
		if _, err := c.setFinalizer(ctx, stored, false); err != nil && !apierrors.IsNotFound(err) {
			return true, fmt.Errorf("removing finalizer: %w", err)
		}
		c.records.forget(key)
		return false, nil
	}
	if err := c.records.save(ctx, key, fed, next); err != nil {
		return true, err
	}

	if pending {
		if wait := c.settle.hold(key); wait > 0 {
			// The members' watch events requeue the object in moments;
			// one status write then carries the generation written and
			// the readiness together.
			c.queue.AddAfter(key, wait)
			return requeue, nil
		}
	}
	c.settle.done(key)
	if decision.NamespaceNotFederated {
		rep.fail = failure{"NamespaceNotFederated", fmt.Sprintf("namespace %s is not federated to some placed clusters: create a FederatedNamespace %s/%s placing it there (cells of the namespace need none)", fed.GetNamespace(), fed.GetNamespace(), fed.GetNamespace())}
	}
	return requeue, c.writeStatus(ctx, stored, fed, rep)
}

// observe reads, once per member, what the member's cache shows of the
// object where a status row needs it (the placed clusters'): the input of
// clusterStatuses.
func (c *Controller) observe(fed *unstructured.Unstructured, intents []Intent, members map[string]*clusters.Member) map[string]observation {
	ns, name := c.typ.targetName(fed)
	seen := map[string]observation{}
	for _, it := range intents {
		if it.Member == "" || (it.Verb != Ensure && it.Writer == "") || it.Status == StatusPlacementConflict || it.Status == StatusOutsideWorkspace {
			continue
		}
		if _, ok := seen[it.Member]; ok {
			continue
		}
		m := members[it.Member]
		if m == nil || !m.Ready() {
			seen[it.Member] = observation{state: observedNothing}
			continue
		}
		obj, err := m.Get(c.typ.Target, ns, name)
		switch {
		case err != nil:
			seen[it.Member] = observation{state: observedLoading}
		case obj == nil:
			seen[it.Member] = observation{state: observedAbsent}
		default:
			o := observation{state: observedPresent, version: objectVersion(obj), ready: c.policy.Ready == nil || c.policy.Ready(obj)}
			if st, ok := obj.Object["status"]; ok {
				if raw, err := json.Marshal(st); err == nil {
					o.remoteStatus = &runtime.RawExtension{Raw: raw}
				}
			}
			seen[it.Member] = o
		}
	}
	return seen
}

// work is what a federated object asks for, decoded once per reconcile.
type work struct {
	spec             typesv1b1.Spec
	template         map[string]any
	templateVersion  string
	overridesVersion string
	retainReplicas   bool
	// mask is the placement mask as cluster names; nil without one.
	mask sets.Set[string]
	// division is the v1beta2 spec's replica division in mode Divide;
	// nil without one.
	division *typesv1b2.Spec
	// divided are the replicas each placed cluster is written under the
	// division (divide); nil without one.
	divided map[string]int32
}

// readWork decodes the spec from KubeFed's view fed, and the placement
// mask, which v1beta1 cannot express, from the stored object.
func readWork(stored, fed *unstructured.Unstructured) (work, error) {
	var w work
	var err error
	if w.spec, w.template, err = decodeSpec(fed); err != nil {
		return w, err
	}
	if w.templateVersion, err = templateVersion(fed.Object); err != nil {
		return w, fmt.Errorf("spec.template: %w", err)
	}
	if w.overridesVersion, err = overridesVersion(fed.Object); err != nil {
		return w, err
	}
	w.retainReplicas = w.spec.RetainReplicas != nil && *w.spec.RetainReplicas
	if mask, ok := placement.MaskClusters(stored.Object); ok {
		w.mask = sets.New(mask...)
	}
	if w.division, err = divisionSpec(stored); err != nil {
		return w, err
	}
	return w, nil
}

// input gathers what Plan decides from: the clusters as the registry
// sees them now, whether each member's cache holds the object (one look
// per member, however many clusters share it), the namespace placement
// and the record.
func (c *Controller) input(key string, fed *unstructured.Unstructured, placement typesv1b1.Placement, deleting bool, rec *propagated) (Input, map[string]*clusters.Member, error) {
	in := Input{Namespace: fed.GetNamespace(), Placement: placement, Deleting: deleting, Recorded: sets.KeySet(rec.clusters)}
	if in.Namespace != "" && c.env.Tenants != nil {
		t, err := c.env.Tenants(in.Namespace)
		if err != nil {
			return in, nil, err
		}
		in.Tenant = t
	}
	if !deleting && c.typ.Namespaced && !c.typ.IsNamespace() && c.env.Namespaces != nil {
		p, rule, err := c.env.Namespaces(fed.GetNamespace())
		if err != nil {
			return in, nil, err
		}
		in.NamespaceRule, in.NamespacePlacement = rule, p
	}
	ns, name := c.typ.targetName(fed)
	members := map[string]*clusters.Member{}
	holds := map[*clusters.Member]bool{}
	list := c.env.Clusters.List()
	// A moving cell's clusters need the readiness of their copies, and
	// whether the move admits the object.
	moving := false
	for _, cl := range list {
		if cell, ok := cellv1alpha1.MoveSource(cl.Name); ok && cl.Labels[cellv1alpha1.LabelMove] != "" {
			moving = true
			if c.env.Records.MoveAdmitted(cell, c.records.indexKey(key)) {
				if in.MoveAdmitted == nil {
					in.MoveAdmitted = sets.New[string]()
				}
				in.MoveAdmitted.Insert(cell)
			}
		}
	}
	ready := map[*clusters.Member]bool{}
	for _, cl := range list {
		cand := Candidate{Name: cl.Name, Labels: cl.Labels, ConfigError: cl.ConfigError}
		if m := cl.Member; m != nil {
			health := m.Health()
			if !health.Probed {
				return in, nil, fmt.Errorf("member of cluster %s: %w", cl.Name, errNotProbed)
			}
			cand.Member, cand.Ready = m.Key(), health.Ready
			members[cand.Member] = m
			h, seen := holds[m]
			if !seen && cand.Ready {
				o, err := m.Get(c.typ.Target, ns, name)
				if err != nil && m.Loading(c.typ.Target) {
					// Deciding now would report the cluster
					// ClusterNotReady while its cache loads; the
					// member reports its objects as they load, and the
					// retry covers those it does not hold.
					return in, nil, fmt.Errorf("member of cluster %s: %w", cl.Name, errLoading)
				}
				h = o != nil
				holds[m] = h
				if h && moving {
					ready[m] = c.policy.Ready == nil || c.policy.Ready(o)
				}
			}
			cand.Holds = h
			cand.ObjectReady = ready[m]
		}
		in.Candidates = append(in.Candidates, cand)
	}
	return in, members, nil
}

// errNotProbed: a member has not been probed yet (the controller has just
// started, or the cluster just joined). Its readiness is not known, and
// deciding now would report it ClusterNotReady — which a rollout reads as
// a failing cell. The member's first probe requeues every object.
var errNotProbed = errors.New("not probed yet")

// errLoading: a ready member's cache of the type is still loading.
var errLoading = errors.New("cache loading")

// memberWaitRetry is how soon an object waiting for a member (errNotProbed,
// errLoading) is tried again.
const memberWaitRetry = 250 * time.Millisecond

// result is the outcome of one intent.
type result struct {
	status  string
	version string // KubeFed's version of the member object now, when known
	// unknown: what the member holds is not known (not ready, failed),
	// so what the record says of it stays.
	unknown bool
	// present: the clusters acted on may hold the object now.
	present bool
	retry   bool // try again with back-off, without an event
	err     error
}

// dispatch carries out the intents, one goroutine per member, each
// bounded by the cluster timeout and the member's request slots. A
// member that is down or slow delays nobody else: the reconcile waits at
// most WriteWait for the members' answers; a write still going on then
// is reported WriteInProgress and finishes in the background (see
// landed), and no second write goes to that member for the object until
// it has.
func (c *Controller) dispatch(ctx context.Context, key string, fed *unstructured.Unstructured, w work, rec *propagated, intents []Intent, members map[string]*clusters.Member) []result {
	results := make([]result, len(intents))
	// Clusters without overrides get the same object: build it once (it
	// is only read afterwards, so the members' goroutines can share it).
	plain := sync.OnceValues(func() (desired, error) { return build(c.typ, fed, w.template, nil, w.retainReplicas) })
	busy := c.inFlight(key)
	type answer struct {
		i int
		r result
	}
	answers := make(chan answer, len(intents))
	var mu sync.Mutex // guards late and the hand-over of late answers
	late := false
	launched := map[int]string{} // intent → member
	for i, it := range intents {
		if it.Status != "" {
			results[i] = knownOutcome(it)
			continue
		}
		if busy.Has(it.Member) {
			results[i] = result{status: StatusWriteInProgress, unknown: true, present: true}
			continue
		}
		m := members[it.Member]
		launched[i] = it.Member
		go func() {
			actx, cancel := context.WithTimeout(ctx, c.opts.ClusterTimeout)
			defer cancel()
			actx, span := c.startMemberWrite(actx, it, m.Name())
			var r result
			switch it.Verb {
			case Ensure:
				d, err := plain()
				of := it.Writer
				if it.OverridesOf != "" {
					of = it.OverridesOf // a moving cell's copy
				}
				ops := overridesFor(w.spec.Overrides, of)
				if n, ok := w.divided[of]; ok {
					// The cluster's share first: its own replicas
					// override still wins.
					ops = append([]typesv1b1.ClusterOverride{divisionOp(c.typ.replicasPath(), n)}, ops...)
				}
				if len(ops) > 0 {
					d, err = build(c.typ, fed, w.template, ops, w.retainReplicas)
				}
				if it.CopyFrom != "" {
					// A held-back cell moves at its held-back revision.
					if d, err = c.copyOf(actx, members[it.CopyFrom], fed); err != nil {
						// What the member holds is not known.
						r = result{status: StatusCreationFailed, unknown: true, present: true, retry: true, err: err}
						break
					}
				}
				if err != nil {
					r = result{status: StatusCreationFailed, err: err}
					break
				}
				r = c.ensure(actx, fed, m, it.Writer, d, w.retainReplicas, rec.versionFor(it.Writer, w.templateVersion, w.overridesVersion))
			case Remove, Release:
				r = c.ensureRemoved(actx, fed, m, it.Verb == Release)
			}
			endMemberWrite(span, r)
			mu.Lock()
			defer mu.Unlock()
			if !late {
				answers <- answer{i, r}
				return
			}
			c.landed(ctx, key, fed, it, r)
		}()
	}
	var timeout <-chan time.Time
	if c.opts.WriteWait > 0 {
		t := time.NewTimer(c.opts.WriteWait)
		defer t.Stop()
		timeout = t.C
	}
	for len(launched) > 0 {
		select {
		case a := <-answers:
			results[a.i] = a.r
			delete(launched, a.i)
		case <-timeout:
			mu.Lock()
			late = true
			for len(answers) > 0 {
				a := <-answers
				results[a.i] = a.r
				delete(launched, a.i)
			}
			slow := sets.New[string]()
			for i, member := range launched {
				results[i] = result{status: StatusWriteInProgress, unknown: true, present: true}
				slow.Insert(member)
			}
			c.objs.update(key, func(st *state) {
				if st.inFlight == nil {
					st.inFlight = sets.New[string]()
				}
				st.inFlight = st.inFlight.Union(slow)
			})
			mu.Unlock()
			if len(launched) > 0 {
				klog.FromContext(ctx).V(2).Info("Members slow to answer; their writes go on", "type", c.typ.Name, "key", key, "members", sets.List(slow))
			}
			return results
		}
	}
	return results
}

// inFlight is the members whose write of key goes on in the background
// (nil, without allocating, in the usual case of none).
func (c *Controller) inFlight(key string) (busy sets.Set[string]) {
	c.objs.read(key, func(st *state) {
		if st.inFlight.Len() > 0 {
			busy = st.inFlight.Clone()
		}
	})
	return busy
}

// landed takes the answer of a write that outlived its reconcile: the
// member is free for the object again, and the object is reconciled
// again to report (and record) what the member holds now.
func (c *Controller) landed(ctx context.Context, key string, fed *unstructured.Unstructured, it Intent, r result) {
	c.objs.update(key, func(st *state) {
		st.inFlight.Delete(it.Member)
		if st.inFlight.Len() == 0 {
			st.inFlight = nil
		}
	})
	if r.err != nil {
		c.env.Recorder.Eventf(fed, corev1.EventTypeWarning, r.status, "cluster %s: %v", it.Clusters[0], r.err)
	}
	klog.FromContext(ctx).V(2).Info("A slow member answered", "type", c.typ.Name, "key", key, "member", it.Member, "status", r.status)
	c.queue.Add(key)
}

// knownOutcome is the result of an intent whose outcome the plan already
// knows (Status set): nothing was done, and the clusters may hold the
// object where it was to be removed or released, or where the member
// holds it (Holds).
func knownOutcome(it Intent) result {
	return result{status: it.Status, unknown: true, present: it.Verb == Remove || it.Verb == Release || it.Holds}
}

// nextRecord is the record after the intents: the version now on each
// member written, and every cluster that may still hold the object.
func nextRecord(rec *propagated, w work, in Input, intents []Intent, results []result) *propagated {
	next := newRecord(w.templateVersion, w.overridesVersion)
	if in.Deleting {
		next.templateVersion, next.overridesVersion = rec.templateVersion, rec.overridesVersion
	}
	carry := func(cluster string) {
		next.clusters[cluster] = rec.versionFor(cluster, next.templateVersion, next.overridesVersion)
	}
	memberOf := map[string]string{}
	for _, cand := range in.Candidates {
		memberOf[cand.Name] = cand.Member
	}
	for i, it := range intents {
		r := results[i]
		switch {
		case it.Status == StatusPlacementConflict:
			continue // the member's Ensure intent speaks for it
		case it.Verb == Ensure && r.version != "":
			next.clusters[it.Writer] = r.version
			continue
		}
		if r.unknown {
			// Every cluster recorded on this member may still hold
			// the object.
			for cluster := range rec.clusters {
				if cluster == it.Clusters[0] || (it.Member != "" && memberOf[cluster] == it.Member) {
					carry(cluster)
				}
			}
		}
		if r.present {
			for _, cluster := range it.Clusters {
				if _, ok := next.clusters[cluster]; !ok {
					carry(cluster)
				}
			}
		}
	}
	// A moved cell's move cluster reaches the cell's own member: what it
	// recorded is the cell's (a held-back object is never written again
	// to say so).
	for cluster, v := range next.clusters {
		cell, ok := cellv1alpha1.MoveSource(cluster)
		if !ok || memberOf[cluster] == "" || memberOf[cluster] != memberOf[cell] {
			continue
		}
		if _, has := next.clusters[cell]; !has {
			next.clusters[cell] = v
		}
		delete(next.clusters, cluster)
	}
	return next
}

// targetName is the member object's namespace and name.
func (t *Type) targetName(fed *unstructured.Unstructured) (string, string) {
	switch {
	case t.IsNamespace():
		return "", fed.GetNamespace()
	case t.Namespaced:
		return fed.GetNamespace(), fed.GetName()
	}
	return "", fed.GetName()
}

func overridesFor(all []typesv1b1.Override, cluster string) []typesv1b1.ClusterOverride {
	for _, o := range all {
		if o.ClusterName == cluster {
			return o.ClusterOverrides
		}
	}
	return nil
}

// PlacementOf reads a federated object's placement.
func PlacementOf(fed *unstructured.Unstructured) (*typesv1b1.Placement, error) {
	spec, _, err := decodeSpec(fed)
	if err != nil {
		return nil, err
	}
	return &spec.Placement, nil
}

// decodeSpec reads the federated object's spec and template.
func decodeSpec(fed *unstructured.Unstructured) (typesv1b1.Spec, map[string]any, error) {
	var spec typesv1b1.Spec
	raw, _, _ := unstructured.NestedMap(fed.Object, "spec")
	template, _, _ := unstructured.NestedMap(fed.Object, "spec", "template")
	delete(raw, "template")
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec); err != nil {
		return spec, nil, fmt.Errorf("spec: %w", err)
	}
	return spec, template, nil
}
