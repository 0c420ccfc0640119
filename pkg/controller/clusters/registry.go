// Package clusters keeps cellfed-controller's view of its member clusters:
// one Cluster per KubeFedCluster in the federation namespace, each reached
// through a Member — a client, a health probe and informers for the
// managed objects of the federated types. Per-cell KubeFedClusters of one
// physical cluster have the same access configuration, so they share one
// Member: one connection, one probe and one set of informers however many
// cells the cluster hosts.
package clusters

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/transport"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	fedv1b1 "sigs.k8s.io/kubefed/pkg/apis/core/v1beta1"

	"github.com/cellfed/cellfed/pkg/controller/informers"

	"github.com/cellfed/cellfed/pkg/apis/kubefed"
)

// kubefed.KubeFedClustersResource is the plane resource of member clusters.

// ManagedLabel marks member objects the federation manages; member
// informers see only objects carrying it with value "true".
const ManagedLabel = "kubefed.io/managed"

// Options tune member access and health checking.
type Options struct {
	// Namespace holds the KubeFedClusters and their token Secrets.
	Namespace string
	// ProbePeriod is the time between health probes of a member.
	ProbePeriod time.Duration
	// UnreadyProbePeriod, when shorter, is the time between probes of a
	// member that is not ready.
	UnreadyProbePeriod time.Duration
	// ProbeTimeout bounds one probe.
	ProbeTimeout time.Duration
	// FailureThreshold consecutive failed probes make a ready member
	// not ready; SuccessThreshold consecutive good ones make it ready.
	FailureThreshold, SuccessThreshold int
	// QPS and Burst limit each member's client on its own.
	QPS   float32
	Burst int
	// RequestTimeout bounds every request to a member.
	RequestTimeout time.Duration
	// Concurrency is how many requests the controller has in flight to
	// one member at a time.
	Concurrency int
	// Dialer, when set, may return a function that opens the connections
	// to a member (a tunnel to a member behind NAT), replacing its proxy;
	// a nil Dialer or result dials the endpoint (or proxy) directly.
	Dialer func(Access) DialFunc
	// Wrap, when set, wraps each member client's transport (tracing).
	Wrap transport.WrapperFunc
}

// DialFunc opens a connection to a member API server.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// DefaultOptions are sized for hundreds of members on a small plane.
func DefaultOptions() Options {
	return Options{
		Namespace: "kube-federation-system",
		// A member whose link silently died goes offline after at most
		// FailureThreshold*(ProbePeriod+ProbeTimeout) = 15 s, and one that
		// returns is probed again within 2 s.
		ProbePeriod:        2 * time.Second,
		ProbeTimeout:       3 * time.Second,
		UnreadyProbePeriod: time.Second,
		FailureThreshold:   3,
		SuccessThreshold:   1,
		QPS:                100,
		Burst:              200,
		RequestTimeout:     30 * time.Second,
		Concurrency:        16,
	}
}

// Cluster is one KubeFedCluster.
type Cluster struct {
	Name   string
	Labels map[string]string
	// Member reaches the cluster; nil when ConfigError is set.
	Member      *Member
	ConfigError error
}

// Registry tracks the KubeFedClusters of the plane and their members.
type Registry struct {
	opts   Options
	plane  dynamic.Interface
	kube   kubernetes.Interface
	status workqueue.TypedRateLimitingInterface[string]

	clusterInformer cache.SharedIndexInformer
	secretInformer  cache.SharedIndexInformer

	mu       sync.RWMutex
	ctx      context.Context
	clusters map[string]*Cluster
	members  map[string]*Member // by Access.key
	// decoded is each cluster's access as last decoded, reused while
	// neither its KubeFedCluster nor its Secret changed: a refresh runs on
	// every KubeFedCluster and Secret event, and decoding them all each
	// time made joining N clusters cost N² decodes (72% of the
	// controller's CPU at 1,000 cells in BenchmarkScale).
	decoded   map[string]decodedCluster
	watched   map[schema.GroupVersionResource][]*watch
	listeners []func()
}

// NewRegistry builds a registry reading the plane through the clients
// and the process's shared caches.
func NewRegistry(plane dynamic.Interface, kube kubernetes.Interface, caches *informers.Factory, opts Options) *Registry {
	r := &Registry{
		opts:     opts,
		plane:    plane,
		kube:     kube,
		status:   workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), workqueue.TypedRateLimitingQueueConfig[string]{Name: "cluster-status"}),
		clusters: map[string]*Cluster{},
		members:  map[string]*Member{},
		decoded:  map[string]decodedCluster{},
		watched:  map[schema.GroupVersionResource][]*watch{},
	}
	r.clusterInformer = caches.KubeFedClusters()
	r.secretInformer = caches.Secrets()
	return r
}

// Subscribe registers fn to be called whenever clusters appear, go,
// change labels or access, or change readiness — once per batch of
// changes, however many clusters it touched. Call before Run.
func (r *Registry) Subscribe(fn func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.listeners = append(r.listeners, fn)
}

// Watch makes every ready member run an informer on gvr (managed objects
// only) that reports to h. Its cache holds lean objects keeping the spec
// fields named in spec (see Lean); h receives its compact entries:
// metav1.Objects (cache keys, names, versions), or tombstones of them,
// which Expand turns into unstructured objects. It may be called at any time; the
// returned function undoes it (a stopped type leaves no handler behind,
// and a member's informer for gvr stops with its last handler).
func (r *Registry) Watch(gvr schema.GroupVersionResource, spec []string, h cache.ResourceEventHandler) (unwatch func()) {
	w := &watch{gvr: gvr, spec: spec, handler: h}
	r.mu.Lock()
	r.watched[gvr] = append(r.watched[gvr], w)
	members := make([]*Member, 0, len(r.members))
	for _, m := range r.members {
		members = append(members, m)
	}
	r.mu.Unlock()
	for _, m := range members {
		m.watch(w)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			r.watched[gvr] = slices.DeleteFunc(r.watched[gvr], func(x *watch) bool { return x == w })
			if len(r.watched[gvr]) == 0 {
				delete(r.watched, gvr)
			}
			members := make([]*Member, 0, len(r.members))
			for _, m := range r.members {
				members = append(members, m)
			}
			r.mu.Unlock()
			for _, m := range members {
				m.unwatch(w)
			}
		})
	}
}

// Get returns the cluster named name, or nil.
func (r *Registry) Get(name string) *Cluster {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.clusters[name]
}

// List returns every known cluster.
func (r *Registry) List() []*Cluster {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Cluster, 0, len(r.clusters))
	for _, c := range r.clusters {
		out = append(out, c)
	}
	return out
}

// HasSynced reports whether the plane's clusters and secrets are loaded.
func (r *Registry) HasSynced() bool {
	return r.clusterInformer.HasSynced() && r.secretInformer.HasSynced()
}

// Run loads the clusters, probes their members and writes cluster
// status until ctx ends.
func (r *Registry) Run(ctx context.Context) error {
	r.mu.Lock()
	r.ctx = ctx
	r.mu.Unlock()
	defer r.status.ShutDown()
	enqueue := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { r.refresh() },
		UpdateFunc: func(any, any) { r.refresh() },
		DeleteFunc: func(any) { r.refresh() },
	}
	if _, err := r.clusterInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { r.refresh() },
		UpdateFunc: func(oldObj, newObj any) {
			r.refresh()
			r.statusChanged(oldObj, newObj)
		},
		DeleteFunc: func(any) { r.refresh() },
	}); err != nil {
		return err
	}
	if _, err := r.secretInformer.AddEventHandler(enqueue); err != nil {
		return err
	}
	if !cache.WaitForCacheSync(ctx.Done(), r.HasSynced) {
		return fmt.Errorf("waiting for KubeFedClusters and Secrets in %s: %w", r.opts.Namespace, ctx.Err())
	}
	r.refresh()
	go func() {
		for r.processStatus(ctx) {
		}
	}()
	<-ctx.Done()
	r.mu.Lock()
	for _, m := range r.members {
		m.stop()
	}
	r.mu.Unlock()
	return nil
}

// refresh rebuilds the cluster set from the informers' caches.
func (r *Registry) refresh() {
	r.mu.Lock()
	if r.ctx == nil || !r.clusterInformer.HasSynced() || !r.secretInformer.HasSynced() {
		r.mu.Unlock()
		return
	}
	next := map[string]*Cluster{}
	used := map[string]bool{}
	var changed []string
	for _, obj := range r.clusterInformer.GetStore().List() {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		c := &Cluster{Name: u.GetName(), Labels: u.GetLabels()}
		d := r.decode(u)
		if d.err != nil {
			c.ConfigError = d.err
		} else {
			a := d.access
			key := a.key()
			m := r.members[key]
			if m == nil {
				var err error
				m, err = newMember(key, a, r.opts, r.memberChanged)
				if err != nil {
					c.ConfigError = err
				} else {
					r.members[key] = m
					for _, ws := range r.watched {
						for _, w := range ws {
							m.watch(w)
						}
					}
					m.start(r.ctx)
				}
			}
			if m != nil {
				c.Member = m
				used[key] = true
			}
		}
		next[c.Name] = c
		if old := r.clusters[c.Name]; old == nil || old.Member != c.Member || !maps.Equal(old.Labels, c.Labels) ||
			errString(old.ConfigError) != errString(c.ConfigError) {
			changed = append(changed, c.Name)
		}
	}
	for name := range r.clusters {
		if next[name] == nil {
			changed = append(changed, name)
		}
	}
	for name := range r.decoded {
		if next[name] == nil {
			delete(r.decoded, name)
		}
	}
	for key, m := range r.members {
		if !used[key] {
			m.stop()
			delete(r.members, key)
		}
	}
	r.clusters = next
	byMember := map[*Member]map[string]map[string]string{}
	for _, c := range next {
		if c.Member != nil {
			if byMember[c.Member] == nil {
				byMember[c.Member] = map[string]map[string]string{}
			}
			byMember[c.Member][c.Name] = c.Labels
		}
	}
	for m, clusters := range byMember {
		m.setClusters(slices.Collect(maps.Keys(clusters)), memberName(clusters))
	}
	r.mu.Unlock()
	r.changed(changed)
}

// statusChanged queues a status write for a KubeFedCluster whose status
// another write changed. writeStatus compares with the cache, which may
// lag the controller's own last write: after a restart over a status an
// earlier controller wrote (an upgrade), the first write (NotProbedYet)
// can land in the cache after the probe's write was skipped as already
// equal, and the stale status would then stay until the member's readiness
// changed again. A status equal to the desired one costs no write.
func (r *Registry) statusChanged(oldObj, newObj any) {
	o, ok1 := oldObj.(*unstructured.Unstructured)
	n, ok2 := newObj.(*unstructured.Unstructured)
	if !ok1 || !ok2 || equality.Semantic.DeepEqual(o.Object["status"], n.Object["status"]) {
		return
	}
	if r.Get(n.GetName()) != nil {
		r.status.Add(n.GetName())
	}
}

// memberChanged is called by a member whose readiness changed.
func (r *Registry) memberChanged(m *Member) { r.changed(m.Clusters()) }

// changed queues the clusters' status writes and tells the subscribers.
func (r *Registry) changed(names []string) {
	if len(names) == 0 {
		return
	}
	r.mu.RLock()
	listeners := r.listeners
	r.mu.RUnlock()
	for _, name := range names {
		r.status.Add(name)
	}
	for _, fn := range listeners {
		fn()
	}
}

// decodedCluster is a KubeFedCluster's access (or why it has none) as of
// the resourceVersions of the cluster and of its Secret.
type decodedCluster struct {
	clusterRV, secretRV string
	access              Access
	err                 error
}

// decode returns u's access, decoding u and its Secret only when either
// changed since the last time. Called with r.mu held.
func (r *Registry) decode(u *unstructured.Unstructured) decodedCluster {
	secretName, _, _ := unstructured.NestedString(u.Object, "spec", "secretRef", "name")
	secret := r.secret(secretName)
	secretRV := ""
	if secret != nil {
		secretRV = secret.ResourceVersion
	}
	if d, ok := r.decoded[u.GetName()]; ok && d.clusterRV == u.GetResourceVersion() && d.secretRV == secretRV && d.clusterRV != "" {
		return d
	}
	d := decodedCluster{clusterRV: u.GetResourceVersion(), secretRV: secretRV}
	var kfc fedv1b1.KubeFedCluster
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &kfc); err != nil {
		d.err = fmt.Errorf("decoding KubeFedCluster: %w", err)
	} else {
		var data map[string][]byte
		if secret != nil {
			data = secret.Data
		}
		d.access, d.err = accessFor(&kfc, data)
	}
	r.decoded[u.GetName()] = d
	return d
}

// secret is the federation namespace's Secret name from the cache (nil
// when there is none).
func (r *Registry) secret(name string) *corev1.Secret {
	if name == "" {
		return nil
	}
	obj, ok, err := r.secretInformer.GetStore().GetByKey(r.opts.Namespace + "/" + name)
	if err != nil || !ok {
		return nil
	}
	s, _ := obj.(*corev1.Secret)
	return s
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// processStatus writes one cluster's status; false when shutting down.
func (r *Registry) processStatus(ctx context.Context) bool {
	name, quit := r.status.Get()
	if quit {
		return false
	}
	defer r.status.Done(name)
	if err := r.writeStatus(ctx, name); err != nil {
		klog.V(2).InfoS("Writing cluster status", "cluster", name, "err", err)
		r.status.AddRateLimited(name)
		return true
	}
	r.status.Forget(name)
	return true
}

// writeStatus sets the Ready and Offline conditions and the Kubernetes
// version of a KubeFedCluster when they differ from the member's state.
func (r *Registry) writeStatus(ctx context.Context, name string) error {
	obj, ok, err := r.clusterInformer.GetStore().GetByKey(r.opts.Namespace + "/" + name)
	if err != nil || !ok {
		return err
	}
	u := obj.(*unstructured.Unstructured)
	var kfc fedv1b1.KubeFedCluster
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &kfc); err != nil {
		return nil // malformed beyond status writing; refresh reported it
	}
	c := r.Get(name)
	if c == nil {
		return nil
	}
	want := desiredStatus(c, kfc.Status, metav1.Now())
	if statusEqual(kfc.Status, want) {
		return nil
	}
	kfc.Status = want
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&kfc)
	if err != nil {
		return err
	}
	_, err = r.plane.Resource(kubefed.KubeFedClustersResource).Namespace(r.opts.Namespace).
		UpdateStatus(ctx, &unstructured.Unstructured{Object: content}, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
