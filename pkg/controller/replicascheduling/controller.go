// Package replicascheduling is cellfed-controller's scheduler of KubeFed's
// ReplicaSchedulingPreferences (scheduling.kubefed.io/v1alpha1): for each
// RSP it divides totalReplicas among the clusters of the FederatedDeployment
// or FederatedReplicaSet of the same namespace and name, and writes the
// result into that object as KubeFed's scheduler does (its placement's
// clusters and a /spec/replicas override per cluster). The decision is
// pkg/placement/rsp's; this package reads the caches and writes.
package replicascheduling

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	fedschedulingv1a1 "sigs.k8s.io/kubefed/pkg/apis/scheduling/v1alpha1"

	"github.com/cellfed/cellfed/pkg/apis/types"
	"github.com/cellfed/cellfed/pkg/controller/clusters"
	"github.com/cellfed/cellfed/pkg/controller/informers"
	"github.com/cellfed/cellfed/pkg/placement/rsp"
	"github.com/cellfed/cellfed/pkg/tenancy"
)

// Options tune the scheduler.
type Options struct {
	// Enabled runs it (--replica-scheduling-preferences).
	Enabled bool
	// Resync is how often every RSP is scheduled again, which catches a
	// target created after its RSP and a target's placement changed by
	// hand.
	Resync time.Duration
}

// DefaultOptions are the defaults.
func DefaultOptions() Options { return Options{Enabled: true, Resync: 30 * time.Second} }

// Controller schedules RSPs.
type Controller struct {
	plane      dynamic.Interface
	recorder   record.EventRecorder
	opts       Options
	queue      workqueue.TypedRateLimitingInterface[string]
	rsps       cache.SharedIndexInformer
	clusters   *clusters.Registry
	namespaces cache.SharedIndexInformer
}

// New builds the scheduler on the process's shared caches and cluster
// registry (whose readiness and labels decide the candidates). Call it
// before the registry runs.
func New(plane dynamic.Interface, caches *informers.Factory, reg *clusters.Registry, recorder record.EventRecorder, opts Options) *Controller {
	c := &Controller{
		plane:    plane,
		recorder: recorder,
		opts:     opts,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "replicaschedulingpreferences"}),
		rsps:       caches.ReplicaSchedulingPreferences(),
		clusters:   reg,
		namespaces: caches.Namespaces(),
	}
	// A cluster that comes or goes, turns ready or not, or is
	// relabelled changes the candidates of every RSP.
	reg.Subscribe(c.enqueueAll)
	return c
}

// targetResource is the v1beta1 resource of an RSP's target kind.
func targetResource(kind string) (schema.GroupVersionResource, bool) {
	switch kind {
	case rsp.KindFederatedDeployment:
		return schema.GroupVersionResource{Group: types.GroupName, Version: "v1beta1", Resource: "federateddeployments"}, true
	case rsp.KindFederatedReplicaSet:
		return schema.GroupVersionResource{Group: types.GroupName, Version: "v1beta1", Resource: "federatedreplicasets"}, true
	}
	return schema.GroupVersionResource{}, false
}

// Run schedules until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	defer c.queue.ShutDown()
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	if _, err := c.rsps.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, o any) { enqueue(o) },
	}); err != nil {
		return err
	}
	if !cache.WaitForCacheSync(ctx.Done(), c.rsps.HasSynced, c.clusters.HasSynced, c.namespaces.HasSynced) {
		return fmt.Errorf("replica scheduling: waiting for caches: %w", ctx.Err())
	}
	go wait.UntilWithContext(ctx, func(context.Context) { c.enqueueAll() }, c.opts.Resync)
	var wg sync.WaitGroup
	for range 2 {
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

func (c *Controller) enqueueAll() {
	for _, key := range c.rsps.GetIndexer().ListKeys() {
		c.queue.Add(key)
	}
}

func (c *Controller) next(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	requeue, err := c.sync(ctx, key)
	switch {
	case err != nil:
		klog.ErrorS(err, "Scheduling replicas", "replicaSchedulingPreference", key)
		c.queue.AddRateLimited(key)
	case requeue > 0:
		c.queue.Forget(key)
		c.queue.AddAfter(key, requeue)
	default:
		c.queue.Forget(key)
	}
	return true
}

// waitForTarget is how often a young RSP looks for a target not created
// yet; an older one waits for the resync.
const (
	waitForTarget = 2 * time.Second
	youngRSP      = 2 * time.Minute
)

func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	obj, exists, err := c.rsps.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return 0, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return 0, nil
	}
	var pref fedschedulingv1a1.ReplicaSchedulingPreference
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &pref); err != nil {
		c.recorder.Eventf(u, corev1.EventTypeWarning, "InvalidPreference", "cannot read the ReplicaSchedulingPreference: %v", err)
		return 0, nil
	}
	gvr, ok := targetResource(pref.Spec.TargetKind)
	if !ok {
		c.recorder.Eventf(u, corev1.EventTypeWarning, "InvalidTargetKind",
			"spec.targetKind %q: want %s or %s (the federated object of the same namespace and name)",
			pref.Spec.TargetKind, rsp.KindFederatedDeployment, rsp.KindFederatedReplicaSet)
		return 0, nil
	}
	target, err := c.plane.Resource(gvr).Namespace(pref.Namespace).Get(ctx, pref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if time.Since(pref.CreationTimestamp.Time) < youngRSP {
			return waitForTarget, nil
		}
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading %s %s: %w", pref.Spec.TargetKind, key, err)
	}
	if target.GetDeletionTimestamp() != nil {
		return 0, nil
	}
	sel, named, err := rsp.Placement(target)
	if err != nil {
		c.recorder.Eventf(u, corev1.EventTypeWarning, "InvalidPlacement", "%s %s: %v", pref.Spec.TargetKind, key, err)
		return 0, nil
	}
	in := rsp.Input{
		Namespace: pref.Namespace,
		Tenant:    c.tenantOf(pref.Namespace),
		Key:       key,
		Spec:      pref.Spec,
		Clusters:  c.candidates(),
		Selector:  sel,
		Named:     named,
		Current:   rsp.Current(target),
	}
	schedule, err := rsp.Schedule(in)
	if err != nil {
		c.recorder.Eventf(u, corev1.EventTypeWarning, "InvalidPreference", "%v", err)
		return 0, nil
	}
	if len(schedule) == 0 {
		return 0, nil // no candidate cluster: leave the object as it is
	}
	changed, err := rsp.Apply(target, schedule)
	if err != nil || !changed {
		return 0, err
	}
	if _, err := c.plane.Resource(gvr).Namespace(pref.Namespace).Update(ctx, target, metav1.UpdateOptions{FieldManager: "cellfed-controller/replica-scheduling"}); err != nil {
		if apierrors.IsNotFound(err) {
			return 0, nil
		}
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			// The plane refuses the schedule (e.g. a cell and its
			// physical cluster both named): say so on the RSP and try
			// again at the resync, not in a hot loop.
			c.recorder.Eventf(u, corev1.EventTypeWarning, "ScheduleRefused", "the plane refused the schedule %v for %s %s: %v", schedule, pref.Spec.TargetKind, key, err)
			return 0, nil
		}
		return 0, fmt.Errorf("writing the schedule into %s %s: %w", pref.Spec.TargetKind, key, err)
	}
	klog.V(2).InfoS("Scheduled replicas", "replicaSchedulingPreference", key, "schedule", schedule)
	c.recorder.Eventf(u, corev1.EventTypeNormal, "Scheduled", "%d replicas: %v", pref.Spec.TotalReplicas, schedule)
	return 0, nil
}

func (c *Controller) tenantOf(namespace string) string {
	obj, exists, err := c.namespaces.GetIndexer().GetByKey(namespace)
	if err != nil || !exists {
		return ""
	}
	m, err := apimeta.Accessor(obj)
	if err != nil {
		return ""
	}
	return tenancy.TenantOf(m.GetLabels())
}

func (c *Controller) candidates() []rsp.Cluster {
	var out []rsp.Cluster
	for _, cl := range c.clusters.List() {
		out = append(out, rsp.Cluster{Name: cl.Name, Labels: cl.Labels, Ready: cl.Member != nil && cl.Member.Ready()})
	}
	return out
}
