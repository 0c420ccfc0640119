package nativestatus

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/cellfed/cellfed/pkg/nativestatus"
)

// Controller writes the aggregated status of one target type's native
// objects.
type Controller struct {
	// target is the native resource and kind on the plane.
	target schema.GroupVersionResource
	kind   schema.GroupVersionKind
	plane  dynamic.Interface
	// federated is the type's federated objects as stored (v1beta2).
	federated cache.SharedIndexInformer
	queue     workqueue.TypedRateLimitingInterface[string]
	now       func() time.Time
}

// New returns the controller of the native objects of target (kind
// targetKind), fed by the type's informer of federated objects.
func New(target schema.GroupVersionResource, targetKind string, plane dynamic.Interface, federated cache.SharedIndexInformer) *Controller {
	return &Controller{
		target: target, kind: target.GroupVersion().WithKind(targetKind), plane: plane, federated: federated,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "nativestatus-" + target.Resource + "." + target.Group}),
		now: time.Now,
	}
}

// Supported reports whether the kind's native objects get an aggregated
// status at all (a controller for another kind has nothing to do).
func Supported(kind schema.GroupKind) bool { return nativestatus.Supported(kind) }

// Run watches the federated objects until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	defer c.queue.ShutDown()
	if !Supported(c.kind.GroupKind()) {
		<-ctx.Done()
		return nil
	}
	enqueue := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		if _, ok := NativeOwner(u, c.kind); !ok {
			return
		}
		if key, err := cache.MetaNamespaceKeyFunc(u); err == nil {
			c.queue.Add(key)
		}
	}
	reg, err := c.federated.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	if err != nil {
		return fmt.Errorf("watching %s: %w", c.target, err)
	}
	defer func() { _ = c.federated.RemoveEventHandler(reg) }()
	if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		return ctx.Err()
	}
	go wait.UntilWithContext(ctx, c.work, time.Second)
	<-ctx.Done()
	return nil
}

func (c *Controller) work(ctx context.Context) {
	for {
		key, quit := c.queue.Get()
		if quit {
			return
		}
		after, err := c.sync(ctx, key)
		switch {
		case err != nil:
			utilruntime.HandleErrorWithContext(ctx, err, "Writing a native object's status", "resource", c.target, "key", key)
			c.queue.AddRateLimited(key)
		default:
			c.queue.Forget(key)
			if after > 0 {
				c.queue.AddAfter(key, after)
			}
		}
		c.queue.Done(key)
	}
}

// sync writes the status of the native object the federated object key
// is placed for, when it changed; after is when to look again without
// an event (0: not needed).
func (c *Controller) sync(ctx context.Context, key string) (after time.Duration, err error) {
	obj, ok, err := c.federated.GetStore().GetByKey(key)
	if err != nil || !ok {
		return 0, err
	}
	fed := obj.(*unstructured.Unstructured)
	owner, ok := NativeOwner(fed, c.kind)
	if !ok || fed.GetDeletionTimestamp() != nil {
		return 0, nil
	}
	res := c.plane.Resource(c.target).Namespace(fed.GetNamespace())
	native, err := res.Get(ctx, owner.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("reading %s %s: %w", c.kind.Kind, key, err)
	case native.GetUID() != owner.UID:
		return 0, nil // another object of that name: not ours to write
	}
	now := c.now()
	status, write, ok := Next(fed, native, now)
	if !ok {
		return 0, nil
	}
	if write {
		next := native.DeepCopy()
		next.Object["status"] = status
		if _, err := res.UpdateStatus(ctx, next, metav1.UpdateOptions{FieldManager: "cellfed-controller"}); err != nil {
			if apierrors.IsNotFound(err) {
				return 0, nil
			}
			return 0, fmt.Errorf("writing the status of %s %s: %w", c.kind.Kind, key, err)
		}
		klog.V(4).InfoS("Wrote a native object's status", "kind", c.kind.Kind, "object", key)
	}
	return RecheckAfter(native, status, now), nil
}
