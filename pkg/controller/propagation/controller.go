package propagation

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	typesv1b1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
	"github.com/cellfed/cellfed/pkg/controller/clusters"
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
)

// Controller propagates the objects of one federated type.
type Controller struct {
	typ      *Type
	opts     Options
	plane    dynamic.Interface
	clusters *clusters.Registry
	versions *versionStore
	recorder record.EventRecorder
	queue    workqueue.TypedRateLimitingInterface[string]
	informer cache.SharedIndexInformer

	// written remembers, per cluster and object, the member's generation
	// or resourceVersion right after this controller wrote it, so an
	// unchanged object is recognised without comparing content.
	mu      sync.Mutex
	written map[string]map[string]memberVersion // object key → cluster → version
}

type memberVersion struct {
	hash       string
	generation int64
	rv         string
}

// New builds the controller of one type.
func New(t *Type, opts Options, plane dynamic.Interface, reg *clusters.Registry, recorder record.EventRecorder) *Controller {
	limiter := workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, opts.RetryMax),
	)
	c := &Controller{
		typ:      t,
		opts:     opts,
		plane:    plane,
		clusters: reg,
		versions: newVersionStore(plane, t),
		recorder: recorder,
		queue:    workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[string]{Name: t.Name}),
		written:  map[string]map[string]memberVersion{},
	}
	c.informer = dynamicinformer.NewFilteredDynamicInformer(plane, t.Federated, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	return c
}

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	defer c.queue.ShutDown()
	logger := klog.FromContext(ctx).WithValues("type", c.typ.Name)
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	if _, err := c.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}); err != nil {
		return err
	}
	// A change of a member object re-checks the federated object it
	// belongs to (drift, deletion on the member).
	c.clusters.Watch(c.typ.Target, cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueForMember,
		UpdateFunc: func(_, obj any) { c.enqueueForMember(obj) },
		DeleteFunc: c.enqueueForMember,
	})
	if err := c.versions.load(ctx); err != nil {
		return err
	}
	go c.informer.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.informer.HasSynced) {
		return fmt.Errorf("%s: waiting for the plane's cache: %w", c.typ.Name, ctx.Err())
	}
	logger.Info("Propagating", "federatedType", c.typ.Federated.String(), "target", c.typ.Target.String(), "workers", c.opts.Workers)
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

// ClusterChanged requeues every object of the type: clusters appeared,
// went, changed labels or readiness.
func (c *Controller) ClusterChanged() {
	for _, key := range c.informer.GetStore().ListKeys() {
		c.queue.Add(key)
	}
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
	c.queue.Add(key)
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	requeue, err := c.reconcile(ctx, key)
	switch {
	case err != nil:
		klog.FromContext(ctx).V(2).Info("Reconcile failed", "type", c.typ.Name, "key", key, "err", err)
		c.queue.AddRateLimited(key)
	case requeue:
		c.queue.AddRateLimited(key)
	default:
		c.queue.Forget(key)
	}
	return true
}

// reconcile brings one federated object's members in line. requeue asks
// for a retry with back-off (a cluster failed); clusters that are not
// ready need none: their recovery requeues everything.
func (c *Controller) reconcile(ctx context.Context, key string) (requeue bool, err error) {
	obj, exists, err := c.informer.GetStore().GetByKey(key)
	if err != nil {
		return false, err
	}
	if !exists {
		c.forget(key)
		return false, nil
	}
	fed := obj.(*unstructured.Unstructured)
	if fed.GetDeletionTimestamp() != nil {
		return c.finalize(ctx, key, fed)
	}
	if !slices.Contains(fed.GetFinalizers(), Finalizer) {
		fed = fed.DeepCopy()
		fed.SetFinalizers(append(fed.GetFinalizers(), Finalizer))
		updated, err := c.resource(fed.GetNamespace()).Update(ctx, fed, metav1.UpdateOptions{})
		if err != nil {
			return false, fmt.Errorf("adding finalizer: %w", err)
		}
		fed = updated
	}
	spec, template, err := decodeSpec(fed)
	if err != nil {
		c.recorder.Eventf(fed, corev1.EventTypeWarning, "InvalidSpec", "%v", err)
		return false, c.writeStatus(ctx, fed, nil, err.Error())
	}
	selected, err := c.selectClusters(spec.Placement)
	if err != nil {
		c.recorder.Eventf(fed, corev1.EventTypeWarning, "ComputePlacementFailed", "%v", err)
		return false, c.writeStatus(ctx, fed, nil, err.Error())
	}
	rec := c.versions.get(key)
	plan := c.plan(fed, selected, rec)
	retainReplicas := spec.RetainReplicas != nil && *spec.RetainReplicas
	// Clusters without overrides get the same object: build it once (it is
	// only read afterwards, so the members' goroutines can share it).
	plain := sync.OnceValues(func() (desired, error) { return build(c.typ, fed, template, nil, retainReplicas) })
	results := c.run(ctx, plan, func(ctx context.Context, a action) result {
		if a.remove {
			return c.ensureRemoved(ctx, fed, a)
		}
		d, err := plain()
		if ops := overridesFor(spec.Overrides, a.writer); len(ops) > 0 {
			d, err = build(c.typ, fed, template, ops, retainReplicas)
		}
		if err != nil {
			return result{status: StatusCreationFailed, err: err}
		}
		return c.ensure(ctx, fed, a, d, retainReplicas)
	})
	next := newRecord(hashOf(template), hashOf(spec.Overrides))
	var statuses []typesv1b1.ClusterStatus
	for _, r := range results {
		for _, name := range r.clusters {
			if v, ok := recordedVersion(r, rec, name); ok {
				next.clusters[name] = v
			}
			if r.report {
				statuses = append(statuses, typesv1b1.ClusterStatus{Name: name, Status: r.status})
			}
		}
		if r.retry {
			requeue = true
		}
		if r.err != nil {
			requeue = true
			c.recorder.Eventf(fed, corev1.EventTypeWarning, r.status, "cluster %s: %v", r.clusters[0], r.err)
		}
	}
	if err := c.versions.save(ctx, key, fed, next); err != nil {
		return true, err
	}
	return requeue, c.writeStatus(ctx, fed, statuses, "")
}

// recordedVersion is what the record should say for a cluster after r:
// the hash now there, or, when the outcome left it unknown (not ready,
// failed), what was recorded before. A cluster never written is not
// recorded; the members' caches still show an object that got there.
func recordedVersion(r result, rec *propagated, cluster string) (string, bool) {
	if !r.keepRecord {
		return "", false
	}
	if r.version != "" {
		return r.version, true
	}
	v, ok := rec.clusters[cluster]
	return v, ok
}

// action is the work on one member for one object: the clusters reached
// through it (per-cell clusters of one physical cluster share a member)
// and whether the object should be there.
type action struct {
	member   *clusters.Member
	clusters []string // sorted; results are reported for each
	writer   string   // the selected cluster whose overrides apply
	remove   bool
	notReady bool
	config   error
	report   bool // selected clusters are reported in status
	known    bool // the record says the object was propagated here
}

type result struct {
	clusters   []string
	status     string
	version    string // the hash now on the member
	keepRecord bool   // the member may still hold the object
	report     bool
	retry      bool // try again with back-off, without an event
	err        error
}

// plan decides, member by member, what to do.
func (c *Controller) plan(fed *unstructured.Unstructured, selected map[string]bool, rec *propagated) []action {
	type group struct {
		member   *clusters.Member
		selected []string
		others   []string
	}
	groups := map[*clusters.Member]*group{}
	var out []action
	ns, name := c.typ.targetName(fed)
	for _, cl := range c.clusters.List() {
		if cl.Member == nil {
			if selected[cl.Name] {
				out = append(out, action{clusters: []string{cl.Name}, config: cl.ConfigError, report: true})
			}
			continue
		}
		g := groups[cl.Member]
		if g == nil {
			g = &group{member: cl.Member}
			groups[cl.Member] = g
		}
		if selected[cl.Name] {
			g.selected = append(g.selected, cl.Name)
		} else {
			g.others = append(g.others, cl.Name)
		}
	}
	for _, g := range groups {
		sort.Strings(g.selected)
		sort.Strings(g.others)
		ready := g.member.Ready()
		if len(g.selected) > 0 {
			out = append(out, action{member: g.member, clusters: g.selected, writer: g.selected[0], notReady: !ready, report: true})
			continue
		}
		// Not selected here: remove what the record or the member's cache
		// says is there.
		var known []string
		for _, n := range g.others {
			if _, ok := rec.clusters[n]; ok {
				known = append(known, n)
			}
		}
		present := false
		if ready {
			// A member still loading reports its objects as they load,
			// which requeues them.
			o, _ := g.member.Get(c.typ.Target, ns, name)
			present = o != nil
		}
		if len(known) == 0 && !present {
			continue
		}
		if len(known) == 0 {
			known = g.others[:1]
		}
		out = append(out, action{member: g.member, clusters: known, remove: true, notReady: !ready, known: true})
	}
	return out
}

// run performs the actions in parallel, one goroutine per member, each
// bounded by the cluster timeout and the member's request slots.
func (c *Controller) run(ctx context.Context, plan []action, do func(context.Context, action) result) []result {
	results := make([]result, len(plan))
	var wg sync.WaitGroup
	for i, a := range plan {
		switch {
		case a.config != nil:
			results[i] = result{clusters: a.clusters, status: StatusConfigMalformed, report: a.report}
			continue
		case a.notReady:
			st := StatusClusterNotReady
			if a.remove {
				st = StatusWaitingForRemoval
			}
			results[i] = result{clusters: a.clusters, status: st, report: a.report || a.remove, keepRecord: true}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			actx, cancel := context.WithTimeout(ctx, c.opts.ClusterTimeout)
			defer cancel()
			r := do(actx, a)
			r.clusters = a.clusters
			r.report = r.report || a.report
			results[i] = r
		}()
	}
	wg.Wait()
	return results
}

func (c *Controller) resource(namespace string) dynamic.ResourceInterface {
	if c.typ.Namespaced {
		return c.plane.Resource(c.typ.Federated).Namespace(namespace)
	}
	return c.plane.Resource(c.typ.Federated)
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

func (c *Controller) forget(key string) {
	c.mu.Lock()
	delete(c.written, key)
	c.mu.Unlock()
	c.versions.forget(key)
}

// selectClusters is placement ∩ existing clusters.
func (c *Controller) selectClusters(p typesv1b1.Placement) (map[string]bool, error) {
	out := map[string]bool{}
	if p.Clusters != nil {
		for _, ref := range p.Clusters {
			if c.clusters.Get(ref.Name) != nil {
				out[ref.Name] = true
			}
		}
		return out, nil
	}
	if p.ClusterSelector == nil {
		return out, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(p.ClusterSelector)
	if err != nil {
		return nil, fmt.Errorf("placement.clusterSelector: %w", err)
	}
	for _, cl := range c.clusters.List() {
		if sel.Matches(labels.Set(cl.Labels)) {
			out[cl.Name] = true
		}
	}
	return out, nil
}

func overridesFor(all []typesv1b1.Override, cluster string) []typesv1b1.ClusterOverride {
	for _, o := range all {
		if o.ClusterName == cluster {
			return o.ClusterOverrides
		}
	}
	return nil
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
