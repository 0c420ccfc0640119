// Package rolloutcontroller is cellfed-controller's rollout controller:
// for one federated type it watches the objects under a rollout started by
// `cellfedctl rollout start` (label rollout.cellfed.io/active=true),
// records each new template in their history (TemplateRevisions), and
// drives automatic rollouts (rollout.cellfed.io/auto): it widens the
// placement mask batch by batch once every released cell is updated and
// ready, pauses on a failed cell or a missed progress deadline, and
// removes the mask after the last batch. Its whole state is on the
// object (mask and annotations), so a restart picks up where it was. The
// decisions, annotations and history are the rollout library's (package
// rollout, pkg/rollout).
package rolloutcontroller

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
	"github.com/cellfed/cellfed/pkg/controller/informers"
	"github.com/cellfed/cellfed/pkg/placement"
	"github.com/cellfed/cellfed/pkg/rollout"
)

// Options tune the rollout controller.
type Options struct {
	// Workers reconcile objects of one type in parallel.
	Workers int
	// HistoryLimit is how many template revisions are kept per object.
	HistoryLimit int
	// FederationNamespace holds the KubeFedClusters a cluster selector
	// chooses from.
	FederationNamespace string
	// Tracer traces the steps that release batches (tracing.go); nil
	// traces nothing.
	Tracer trace.Tracer
}

// DefaultOptions are the defaults.
func DefaultOptions() Options {
	return Options{Workers: 2, HistoryLimit: rollout.DefaultHistoryLimit, FederationNamespace: "kube-federation-system"}
}

// Caches are the process's shared caches the rollout controller reads:
// what a selector placement chooses from. A nil cache offers nothing.
type Caches struct {
	// Cells, indexed by namespace.
	Cells cache.SharedIndexInformer
	// KubeFedClusters of the federation namespace.
	KubeFedClusters cache.SharedIndexInformer
	// Federated is the type's objects in v1beta2, run by its owner (the
	// type's propagation controller); nil: the rollout controller
	// caches the objects under a rollout itself.
	Federated cache.SharedIndexInformer
	// StatusConfirmed reports whether the object's status, at its
	// resourceVersion, is one the type's propagation controller wrote or
	// checked against the members. A status anybody else wrote (an app
	// team patching /status "ready") is never acted on. nil trusts every
	// status (tests of the decisions alone).
	StatusConfirmed func(*unstructured.Unstructured) bool
}

// unconfirmedRetry is how soon an object whose status the propagation
// controller has not confirmed yet is looked at again.
const unconfirmedRetry = time.Second

// Controller runs the rollouts of one federated type.
type Controller struct {
	caches Caches
	// resource is the federated type's v1beta2 resource.
	resource schema.GroupVersionResource
	plane    dynamic.Interface
	opts     Options
	history  rollout.History
	queue    workqueue.TypedRateLimitingInterface[string]
	informer cache.SharedIndexInformer
	// ownInformer: informer is the controller's own, which it runs.
	ownInformer bool
	recorder    record.EventRecorder
	now         func() time.Time

	mu sync.Mutex
	// recorded is the template hash last recorded per object UID, so an
	// unchanged template costs no history read.
	recorded map[string]string
}

// New builds the rollout controller of the federated resource (any
// version; v1beta2 is used). recorder (optional) gets an event for each
// step an automatic rollout takes. The caches must be started by their
// owner; they are only read once synced.
func New(federated schema.GroupVersionResource, plane dynamic.Interface, caches Caches, recorder record.EventRecorder, opts Options) *Controller {
	federated.Version = typesv1beta2.Version
	c := &Controller{
		caches:   caches,
		resource: federated,
		plane:    plane,
		opts:     opts,
		history:  rollout.History{Client: plane, Limit: opts.HistoryLimit},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, 30*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "rollout-" + federated.Resource}),
		recorder: recorder,
		now:      time.Now,
		recorded: map[string]string{},
	}
	defer registerMetrics(c)
	if caches.Federated != nil {
		c.informer = caches.Federated
		return c
	}
	// A cache of its own keeps only objects under a rollout.
	c.ownInformer = true
	c.informer = dynamicinformer.NewFilteredDynamicInformer(plane, federated, metav1.NamespaceAll, 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.LabelSelector = rollout.LabelActive + "=true" }).Informer()
	if err := c.informer.SetTransform(informers.StripManagedFields); err != nil {
		klog.ErrorS(err, "Setting the rollout cache's transform")
	}
	return c
}

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	defer c.queue.ShutDown()
	logger := klog.FromContext(ctx).WithValues("controller", "rollout", "resource", c.resource.GroupResource().String())
	ctx = klog.NewContext(ctx, logger)
	// Only objects under a rollout, or leaving one, are its business.
	enqueue := func(objs ...any) {
		for _, obj := range objs {
			if !active(obj) {
				continue
			}
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				c.queue.Add(key)
			}
			return
		}
	}
	if _, err := c.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { enqueue(o) }, UpdateFunc: func(old, o any) { enqueue(o, old) }, DeleteFunc: func(o any) { enqueue(o) },
	}); err != nil {
		return err
	}
	if c.ownInformer {
		go c.informer.Run(ctx.Done())
	}
	synced := []cache.InformerSynced{c.informer.HasSynced}
	for _, inf := range []cache.SharedIndexInformer{c.caches.Cells, c.caches.KubeFedClusters} {
		if inf != nil {
			synced = append(synced, inf.HasSynced)
		}
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("rollout %s: waiting for the plane's cache: %w", c.resource.Resource, ctx.Err())
	}
	logger.Info("Running rollouts")
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

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	after, err := c.reconcile(ctx, key)
	switch {
	case err != nil:
		klog.FromContext(ctx).Error(err, "Rollout failed; retrying", "object", key)
		c.queue.AddRateLimited(key)
	case after > 0:
		c.queue.Forget(key)
		c.queue.AddAfter(key, after)
	default:
		c.queue.Forget(key)
	}
	return true
}

// reconcile records a new template and takes the next step of an
// automatic rollout. It returns when to look again without news.
func (c *Controller) reconcile(ctx context.Context, key string) (time.Duration, error) {
	logger := klog.FromContext(ctx).WithValues("object", key)
	item, exists, err := c.informer.GetStore().GetByKey(key)
	if err != nil {
		return 0, err
	}
	if !exists || !active(item) {
		c.forget()
		return 0, nil
	}
	obj := item.(*unstructured.Unstructured)
	if obj.GetDeletionTimestamp() != nil {
		return 0, nil
	}
	set, err := rollout.SettingsOf(obj)
	if err != nil {
		// A person has to fix it; say so on the object, once.
		return 0, c.writeState(ctx, obj, rollout.Decision{State: rollout.StateWaiting, Message: err.Error() + "; fix the annotation"})
	}
	hash := rollout.TemplateHash(obj)

	// 1. History: each template seen under the rollout is recorded; a
	// new one restarts the batch's progress clock.
	if set.TemplateHash != hash {
		if err := c.record(ctx, obj, hash); err != nil {
			return 0, err
		}
		logger.V(2).Info("Recorded a new template", "hash", rollout.ShortHash(hash))
		return 0, c.write(ctx, obj, func(next *unstructured.Unstructured) error {
			rollout.SetAnnotations(next, map[string]string{
				rollout.AnnotationTemplateHash:  hash,
				rollout.AnnotationProgressSince: rollout.FormatTime(c.now()),
			})
			return nil
		})
	}
	if c.lastRecorded(obj) != hash {
		// After a restart: make sure the history has it (a no-op when it
		// does).
		if err := c.record(ctx, obj, hash); err != nil {
			return 0, err
		}
	}
	if !set.Auto || set.Paused {
		return 0, nil
	}

	// 2. The automatic rollout's next step, taken only on a status the
	// propagation controller stands behind.
	if c.caches.StatusConfirmed != nil && !c.caches.StatusConfirmed(obj) {
		logger.V(2).Info("Waiting for the propagation controller to confirm the status", "resourceVersion", obj.GetResourceVersion())
		return unconfirmedRetry, nil
	}
	fed, err := rollout.Decode(obj)
	if err != nil {
		return 0, err
	}
	var candidates []placement.Topology
	if fed.Spec.Placement.TopologySelector != nil {
		candidates = c.candidates(obj, fed)
	}
	placed, err := placement.Topologies(fed.Spec.Placement, candidates)
	if err != nil {
		return 0, c.writeState(ctx, obj, rollout.Decision{State: rollout.StateWaiting, Message: err.Error() + "; fix the placement"})
	}
	d := rollout.Decide(rollout.Input{
		Settings: set, Placed: placed, Mask: placement.Mask(fed), Rows: rollout.Rows(fed, placed), Hash: hash, Now: c.now(),
	})
	after, err := c.apply(ctx, key, obj, d)
	if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
		// The plane refuses the step (e.g. the placement changed under
		// the mask): say so on the object instead of retrying forever.
		return 0, c.writeState(ctx, obj, rollout.Decision{State: rollout.StateWaiting,
			Message: fmt.Sprintf("the plane refused to %s: %v; fix the object or pause the rollout", d.Step, err)})
	}
	return after, err
}

// apply carries a decision out.
func (c *Controller) apply(ctx context.Context, key string, obj *unstructured.Unstructured, d rollout.Decision) (time.Duration, error) {
	logger := klog.FromContext(ctx).WithValues("object", key)
	ctx, endStep := c.traceStep(ctx, key, obj, d)
	defer endStep()
	var (
		done bool
		err  error
	)
	switch d.Step {
	case rollout.Advance:
		done, err = c.wrote(ctx, obj, func(next *unstructured.Unstructured) error {
			if err := placement.SetMask(next, d.Mask); err != nil {
				return err
			}
			rollout.SetAnnotations(next, map[string]string{
				rollout.AnnotationProgressSince: rollout.FormatTime(c.now()),
				rollout.AnnotationState:         d.State, rollout.AnnotationMessage: d.Message,
			})
			return nil
		})
		if done {
			logger.Info("Released the next batch", "mask", d.Mask, "message", d.Message)
			c.event(obj, false, "RolloutAdvanced", d.Message)
		}
		return 0, err
	case rollout.Pause:
		done, err = c.wrote(ctx, obj, func(next *unstructured.Unstructured) error {
			rollout.SetAnnotations(next, map[string]string{
				rollout.AnnotationPaused: "true", rollout.AnnotationPauseReason: d.Message,
				rollout.AnnotationState: d.State, rollout.AnnotationMessage: d.Message,
			})
			return nil
		})
		if done {
			pauses.WithLabelValues(c.resource.Resource, pauseReason(d)).Inc()
			logger.Info("Paused the rollout", "reason", d.Message)
			c.event(obj, true, "RolloutPaused", d.Message)
		}
		return 0, err
	case rollout.Finish:
		done, err = c.wrote(ctx, obj, func(next *unstructured.Unstructured) error {
			rollout.End(next, d.State, d.Message)
			return nil
		})
		if done {
			logger.Info("Rollout finished", "message", d.Message)
			c.event(obj, false, "RolloutFinished", d.Message)
			c.forget()
		}
		return 0, err
	}
	return d.RequeueAfter, c.writeState(ctx, obj, d)
}

// writeState records state and message when they changed.
func (c *Controller) writeState(ctx context.Context, obj *unstructured.Unstructured, d rollout.Decision) error {
	ann := obj.GetAnnotations()
	if ann[rollout.AnnotationState] == d.State && ann[rollout.AnnotationMessage] == d.Message {
		return nil
	}
	return c.write(ctx, obj, func(next *unstructured.Unstructured) error {
		rollout.SetAnnotations(next, map[string]string{rollout.AnnotationState: d.State, rollout.AnnotationMessage: d.Message})
		return nil
	})
}

// write updates the object as cached, guarded by its resourceVersion:
// a conflict means a newer object is on its way through the informer,
// which requeues it; the step is decided again then.
func (c *Controller) write(ctx context.Context, obj *unstructured.Unstructured, mutate func(*unstructured.Unstructured) error) error {
	_, err := c.wrote(ctx, obj, mutate)
	return err
}

// wrote is write that also says whether the object was written (false
// after a conflict).
func (c *Controller) wrote(ctx context.Context, obj *unstructured.Unstructured, mutate func(*unstructured.Unstructured) error) (bool, error) {
	next := obj.DeepCopy()
	if err := mutate(next); err != nil {
		return false, err
	}
	_, err := c.plane.Resource(c.resource).Namespace(obj.GetNamespace()).Update(ctx, next, metav1.UpdateOptions{FieldManager: "cellfed-rollout"})
	switch {
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		klog.FromContext(ctx).V(2).Info("Object changed meanwhile; deciding again", "object", obj.GetNamespace()+"/"+obj.GetName())
		return false, nil
	case err != nil:
		return false, fmt.Errorf("updating %s %s/%s: %w", c.resource.Resource, obj.GetNamespace(), obj.GetName(), err)
	}
	return true, nil
}

// event records what an automatic rollout did on the object.
func (c *Controller) event(obj *unstructured.Unstructured, warning bool, reason, message string) {
	if c.recorder == nil {
		return
	}
	typ := corev1.EventTypeNormal
	if warning {
		typ = corev1.EventTypeWarning
	}
	c.recorder.Event(obj, typ, reason, message)
}

func (c *Controller) record(ctx context.Context, obj *unstructured.Unstructured, hash string) error {
	if _, err := c.history.Record(ctx, obj); err != nil {
		return err
	}
	c.mu.Lock()
	c.recorded[string(obj.GetUID())] = hash
	c.mu.Unlock()
	return nil
}

func (c *Controller) lastRecorded(obj *unstructured.Unstructured) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.recorded[string(obj.GetUID())]
}

// forget drops what is remembered of objects no longer under a rollout.
func (c *Controller) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	live := map[string]bool{}
	for _, o := range c.informer.GetStore().List() {
		if active(o) {
			live[string(o.(*unstructured.Unstructured).GetUID())] = true
		}
	}
	for uid := range c.recorded {
		if !live[uid] {
			delete(c.recorded, uid)
		}
	}
}

// active reports whether obj (or the object of a tombstone) is under a
// rollout.
func active(obj any) bool {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	return ok && u.GetLabels()[rollout.LabelActive] == "true"
}

// candidates are what a selector placement chooses from, from the
// process's caches: the Cells of the object's namespace, or the physical
// KubeFedClusters.
func (c *Controller) candidates(obj *unstructured.Unstructured, fed *typesv1beta2.FederatedObject) []placement.Topology {
	typ := placement.TopologyType(fed.Spec.Placement)
	var objs []metav1.Object
	switch {
	case typ == typesv1beta2.TopologyCell && c.caches.Cells != nil:
		objs = informers.ObjectsIn(c.caches.Cells, obj.GetNamespace())
	case typ != typesv1beta2.TopologyCell && c.caches.KubeFedClusters != nil:
		objs = informers.Objects(c.caches.KubeFedClusters)
	}
	return placement.Candidates(typ, objs)
}
