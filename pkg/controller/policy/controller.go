// Package policy is the propagation-policy controller: it watches
// PropagationPolicies, ClusterPropagationPolicies and the native objects
// of every enabled federated type, and keeps one federated object per
// native object a policy places (pkg/policy/federate), the policies'
// status (pkg/policy/selection), the native objects'
// cellfed.io/placed-by-policy annotation, and an Event on a workspace
// object no policy places. Every change re-runs one level-triggered pass
// over all of them: policies are few and a pass reads caches only.
package policy

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	policyv1alpha1 "github.com/cellfed/cellfed/pkg/apis/policy/v1alpha1"
	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
)

// Options configure the controller.
type Options struct {
	// FederationNamespace holds the FederatedTypeConfigs.
	FederationNamespace string
	// Resync re-runs the pass this often even without a change (a write
	// that failed for a reason no watch reports).
	Resync time.Duration
	// Delay is how long a change waits for the pass, so that a burst of
	// changes (a kubectl apply of many objects) costs one pass.
	Delay time.Duration
}

// NewOptions returns the defaults.
func NewOptions() Options {
	return Options{FederationNamespace: "kube-federation-system", Resync: 5 * time.Minute, Delay: 500 * time.Millisecond}
}

// Finalizer keeps a policy until its federated objects are orphaned or
// deleted, per its deletionPolicy.
const Finalizer = policyv1alpha1.GroupName + "/cleanup"

var namespacesResource = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// Controller is the propagation-policy controller.
type Controller struct {
	plane    dynamic.Interface
	recorder record.EventRecorder
	opts     Options
	factory  dynamicinformer.DynamicSharedInformerFactory
	queue    workqueue.TypedRateLimitingInterface[string]

	mu       sync.Mutex
	watching map[schema.GroupVersionResource]cache.SharedIndexInformer
	// reported is the last no-policy Event per native object UID, so an
	// object gets one Event per change of its state, not one per pass.
	reported map[string]string
}

const key = "all"

// New returns a controller writing to plane.
func New(plane dynamic.Interface, recorder record.EventRecorder, opts Options) *Controller {
	return &Controller{
		plane:    plane,
		recorder: recorder,
		opts:     opts,
		factory:  dynamicinformer.NewDynamicSharedInformerFactory(plane, opts.Resync),
		queue:    workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		watching: map[schema.GroupVersionResource]cache.SharedIndexInformer{},
		reported: map[string]string{},
	}
}

// Run runs the controller until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	defer c.queue.ShutDown()
	for _, gvr := range []schema.GroupVersionResource{
		policyv1alpha1.PropagationPoliciesResource,
		policyv1alpha1.ClusterPropagationPoliciesResource,
		kubefed.FederatedTypeConfigsResource,
		namespacesResource,
	} {
		c.watch(gvr)
	}
	c.factory.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	c.queue.Add(key)
	for c.processNext(ctx) {
	}
	c.factory.Shutdown()
	return nil
}

// watch starts (once) an informer for gvr whose every event queues a pass.
func (c *Controller) watch(gvr schema.GroupVersionResource) cache.SharedIndexInformer {
	c.mu.Lock()
	defer c.mu.Unlock()
	if inf, ok := c.watching[gvr]; ok {
		return inf
	}
	inf := c.factory.ForResource(gvr).Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { c.queue.AddAfter(key, c.opts.Delay) },
		UpdateFunc: func(old, cur any) {
			if changed(old, cur) {
				c.queue.AddAfter(key, c.opts.Delay)
			}
		},
		DeleteFunc: func(any) { c.queue.AddAfter(key, c.opts.Delay) },
	})
	c.watching[gvr] = inf
	return inf
}

func (c *Controller) processNext(ctx context.Context) bool {
	k, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(k)
	if err := c.sync(ctx); err != nil {
		klog.ErrorS(err, "propagation policies: pass failed, retrying")
		c.queue.AddRateLimited(k)
		return true
	}
	c.queue.Forget(k)
	return true
}

// changed reports whether an update is one a pass may act on: anything
// but the status, resourceVersion and managedFields (status writes of
// federated and native objects are most of the traffic and never change a
// decision).
func changed(old, cur any) bool {
	o, ok1 := old.(*unstructured.Unstructured)
	n, ok2 := cur.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return true
	}
	if o.GetResourceVersion() == n.GetResourceVersion() {
		return true // a resync (Options.Resync): passes catch up
	}
	strip := func(u *unstructured.Unstructured) map[string]any {
		m := make(map[string]any, len(u.Object))
		for k, v := range u.Object {
			if k != "status" && k != "metadata" {
				m[k] = v
			}
		}
		meta := map[string]any{}
		um, _ := u.Object["metadata"].(map[string]any)
		for k, v := range um {
			if k != "resourceVersion" && k != "managedFields" {
				meta[k] = v
			}
		}
		m["metadata"] = meta
		return m
	}
	return !equality.Semantic.DeepEqual(strip(o), strip(n))
}

// synced reports whether every informer has synced; new ones start now.
func (c *Controller) synced(ctx context.Context) bool {
	c.factory.Start(ctx.Done())
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, inf := range c.watching {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

func (c *Controller) list(gvr schema.GroupVersionResource) []*unstructured.Unstructured {
	inf := c.watch(gvr)
	var out []*unstructured.Unstructured
	for _, o := range inf.GetStore().List() {
		if u, ok := o.(*unstructured.Unstructured); ok {
			out = append(out, u)
		}
	}
	return out
}

// fedType is an enabled federated type: its target (native) resource and
// its federated resource, in v1beta2.
type fedType struct {
	target     schema.GroupVersionResource
	targetKind schema.GroupVersionKind
	namespaced bool
	federated  schema.GroupVersionResource
	fedKind    schema.GroupVersionKind
}

// types reads the enabled federated types from the FederatedTypeConfigs.
func (c *Controller) types() ([]fedType, error) {
	var out []fedType
	for _, ftc := range c.list(kubefed.FederatedTypeConfigsResource) {
		if ftc.GetNamespace() != c.opts.FederationNamespace {
			continue
		}
		str := func(path ...string) string {
			s, _, _ := unstructured.NestedString(ftc.Object, path...)
			return s
		}
		if str("spec", "propagation") != "Enabled" {
			continue
		}
		t := fedType{
			target:     schema.GroupVersionResource{Group: str("spec", "targetType", "group"), Version: str("spec", "targetType", "version"), Resource: str("spec", "targetType", "pluralName")},
			targetKind: schema.GroupVersionKind{Group: str("spec", "targetType", "group"), Version: str("spec", "targetType", "version"), Kind: str("spec", "targetType", "kind")},
			namespaced: str("spec", "targetType", "scope") == "Namespaced",
			federated:  schema.GroupVersionResource{Group: str("spec", "federatedType", "group"), Version: typesv1beta2.Version, Resource: str("spec", "federatedType", "pluralName")},
			fedKind:    schema.GroupVersionKind{Group: str("spec", "federatedType", "group"), Version: typesv1beta2.Version, Kind: str("spec", "federatedType", "kind")},
		}
		if t.target.Resource == "" || t.federated.Resource == "" {
			return nil, fmt.Errorf("FederatedTypeConfig %s names no target or federated resource", ftc.GetName())
		}
		out = append(out, t)
	}
	return out, nil
}
