// Package registration is the plane's registration controller: it moves a
// registration's member token into a Secret at once, gives the
// registration's bootstrap token and agent read (and the agent renew)
// access to it alone, applies the tenant's auto-approve policy, and on
// approval signs the agent's certificate, creates the tunnelled
// KubeFedCluster and deletes the bootstrap token. It re-signs renewed
// certificate requests of approved registrations, disconnects revoked
// agents, and records every failure in the Ready condition.
//
// It runs in cellfed-apiserver (a post-start hook), which holds the agent
// CA in its data dir. Inside this package, the name registration is the
// library the plane, cellfedctl and the agent share (pkg/registration).
package registration

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/pki"
)

// Controller reconciles ClusterRegistrations.
type Controller struct {
	opts    Options
	kube    kubernetes.Interface
	dynamic dynamic.Interface
	pki     pki.Files
	tunnel  Tunnel
	access  Access
	now     func() time.Time

	regs     cache.GenericLister
	regsSync cache.InformerSynced
	policies cache.GenericLister
	polSync  cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	factory  dynamicinformer.DynamicSharedInformerFactory
}

// New builds the controller. tunnel may be nil (no hub in this process).
func New(opts Options, kube kubernetes.Interface, dyn dynamic.Interface, files pki.Files, tunnel Tunnel, access Access) (*Controller, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	c := &Controller{
		opts: opts, kube: kube, dynamic: dyn, pki: files, tunnel: tunnel, access: access, now: time.Now,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "cellfed-registrations"}),
	}
	c.factory = dynamicinformer.NewDynamicSharedInformerFactory(dyn, opts.Resync)
	inf := c.factory.ForResource(cellv1alpha1.ClusterRegistrationsResource)
	c.regs, c.regsSync = inf.Lister(), inf.Informer().HasSynced
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	// Every replica of the plane disconnects revoked agents from its own
	// hub, whether or not it runs the workers (an agent may be connected
	// to any replica).
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { enqueue(o); c.disconnectRevoked(o) }, UpdateFunc: func(_, o any) { enqueue(o); c.disconnectRevoked(o) },
		DeleteFunc: func(o any) { enqueue(o); c.disconnectDeleted(o) },
	}); err != nil {
		return nil, fmt.Errorf("watching registrations: %w", err)
	}
	pol := c.factory.ForResource(cellv1alpha1.RegistrationPoliciesResource)
	c.policies, c.polSync = pol.Lister(), pol.Informer().HasSynced
	requeueAll := func(any) {
		objs, err := c.regs.List(labelsEverything())
		if err != nil {
			return
		}
		for _, o := range objs {
			enqueue(o)
		}
	}
	if _, err := pol.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: requeueAll, UpdateFunc: func(_, o any) { requeueAll(o) }, DeleteFunc: requeueAll,
	}); err != nil {
		return nil, fmt.Errorf("watching the registration policy: %w", err)
	}
	registerMetrics(c)
	return c, nil
}

// Run starts the informers and workers and blocks until ctx is done.
func (c *Controller) Run(ctx context.Context) {
	c.StartInformers(ctx)
	c.RunWorkers(ctx)
}

// StartInformers starts the caches Admit reads and the handler that
// disconnects revoked agents; every replica of the plane runs them. They
// stop when ctx is done.
func (c *Controller) StartInformers(ctx context.Context) {
	c.factory.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
		c.factory.Shutdown()
	}()
}

// RunWorkers reconciles registrations (signing, KubeFedClusters, status)
// until ctx is done; only one replica of the plane runs them at a time.
// StartInformers must have been called.
func (c *Controller) RunWorkers(ctx context.Context) {
	defer utilruntime.HandleCrash()
	if !cache.WaitForCacheSync(ctx.Done(), c.regsSync, c.polSync) {
		return
	}
	// Registrations that changed while another replica led are
	// reconciled again.
	if objs, err := c.regs.List(labelsEverything()); err == nil {
		for _, o := range objs {
			if key, err := cache.MetaNamespaceKeyFunc(o); err == nil {
				c.queue.Add(key)
			}
		}
	}
	c.warnLegacyPolicy(ctx)
	klog.InfoS("Registration controller started", "workers", c.opts.Workers, "certValidity", c.opts.CertValidity)
	for range c.opts.Workers {
		go wait.UntilWithContext(ctx, c.worker, time.Second)
	}
	<-ctx.Done()
}

func (c *Controller) get(name string) (*cellv1alpha1.ClusterRegistration, error) {
	obj, err := c.regs.Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("unexpected %T in the registration cache", obj)
	}
	var reg cellv1alpha1.ClusterRegistration
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &reg); err != nil {
		return nil, fmt.Errorf("decoding ClusterRegistration %s: %w", name, err)
	}
	return &reg, nil
}

func labelsEverything() labels.Selector { return labels.Everything() }
