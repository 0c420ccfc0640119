package clusters

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

// Health is a member's state as its probes found it.
type Health struct {
	// Probed is false until the first probe finished.
	Probed bool
	Ready  bool
	// Reachable is false when the last probe got no HTTP answer.
	Reachable bool
	// Message explains the last failed probe.
	Message string
	// Version is the member's Kubernetes version (gitVersion).
	Version string
}

// Member is one member API server reached with one access configuration.
type Member struct {
	key     string
	opts    Options
	Dynamic dynamic.Interface
	// Writes is Dynamic for creates and updates whose answer is read only
	// for the written object's version: the member answers them with a
	// PartialObjectMetadata in protobuf, so neither side encodes or
	// decodes the rest of the object (writes.go).
	Writes    dynamic.Interface
	rest      rest.Interface
	discovery discovery.ServerVersionInterface
	onChange  func(*Member)
	slots     chan struct{}

	mu        sync.Mutex
	health    Health
	failures  int
	successes int
	clusters  []string
	name      atomic.Pointer[string] // memberName of its clusters
	cancel    context.CancelFunc     // stops probing
	watched   []*watch
	informers *memberInformers // non-nil while ready
}

// memberInformers are one generation of a member's informers: started
// when the member becomes ready, stopped when it stops being ready. Each
// resource has its own informer, stopped when its last handler goes.
type memberInformers struct {
	ctx   context.Context
	byGVR map[schema.GroupVersionResource]*resourceInformer
}

type resourceInformer struct {
	informer cache.SharedIndexInformer
	started  time.Time
	spec     []string // the spec fields its cache keeps
	cancel   context.CancelFunc
	regs     map[*watch]cache.ResourceEventHandlerRegistration
}

// watch is one handler of one resource, registered with Registry.Watch.
type watch struct {
	gvr schema.GroupVersionResource
	// spec are the spec fields the member cache keeps (see Lean).
	spec    []string
	handler cache.ResourceEventHandler
}

func newMember(key string, a Access, opts Options, onChange func(*Member)) (*Member, error) {
	cfg, err := a.RESTConfig(opts.QPS, opts.Burst, opts.RequestTimeout)
	if err != nil {
		return nil, err
	}
	if opts.Dialer != nil {
		if dial := opts.Dialer(a); dial != nil {
			// The dialer reaches the member itself (a tunnel): no proxy.
			cfg.Dial, cfg.Proxy = dial, nil
		}
	}
	if opts.Wrap != nil {
		cfg.Wrap(opts.Wrap)
	}
	dyn, writes, err := dynamicClients(cfg)
	if err != nil {
		return nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("member discovery client: %w", err)
	}
	return &Member{
		key:       key,
		opts:      opts,
		Dynamic:   dyn,
		Writes:    writes,
		rest:      disco.RESTClient(),
		discovery: disco,
		onChange:  onChange,
		slots:     make(chan struct{}, max(1, opts.Concurrency)),
	}, nil
}

// Health returns the member's last probed state.
func (m *Member) Health() Health {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.health
}

// Ready reports whether the member answered its last probes.
func (m *Member) Ready() bool { return m.Health().Ready }

// Clusters names the KubeFedClusters reached through this member.
func (m *Member) Clusters() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.clusters)
}

func (m *Member) setClusters(names []string, name string) {
	slices.Sort(names)
	m.mu.Lock()
	m.clusters = names
	m.mu.Unlock()
	m.name.Store(&name)
}

// Name is what metrics call the member: the first physical
// KubeFedCluster (in name order) that reaches it, such as member-1, or
// with none, its first cluster; its key before the registry names it.
func (m *Member) Name() string {
	if n := m.name.Load(); n != nil && *n != "" {
		return *n
	}
	return m.key
}

// memberName picks a member's Name from the clusters that reach it
// (name → labels): per-cell and move clusters only when no physical
// cluster reaches it.
func memberName(clusters map[string]map[string]string) string {
	var physical, any string
	for name, labels := range clusters {
		if any == "" || name < any {
			any = name
		}
		if labels[cellv1alpha1.LabelTopologyType] == "" && labels[cellv1alpha1.LabelMove] == "" && (physical == "" || name < physical) {
			physical = name
		}
	}
	if physical != "" {
		return physical
	}
	return any
}

// Acquire takes one of the member's request slots; Release returns it.
// The slots bound how many requests are in flight to one member.
func (m *Member) Acquire(ctx context.Context) error {
	select {
	case m.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Release returns a slot taken by Acquire.
func (m *Member) Release() { <-m.slots }

// ErrNotSynced means the member's informer for a type has not loaded yet.
var ErrNotSynced = errors.New("member cache not synced")

// Get returns the managed object ns/name of gvr from the member's cache,
// nil when the cache does not hold it. It fails with ErrNotSynced while
// the member is not ready or its informer is still loading. The object
// is lean (see Lean): metadata and status, no content. It is built
// afresh from the cache entry on each call, so the caller owns it.
func (m *Member) Get(gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	m.mu.Lock()
	var ri *resourceInformer
	if m.informers != nil {
		ri = m.informers.byGVR[gvr]
	}
	m.mu.Unlock()
	if ri == nil || !ri.informer.HasSynced() {
		return nil, ErrNotSynced
	}
	i := ri.informer
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	obj, ok, err := i.GetStore().GetByKey(key)
	if err != nil || !ok {
		return nil, err
	}
	u, ok, err := Expand(obj)
	if err != nil {
		return nil, fmt.Errorf("member cache entry %s: %w", key, err)
	}
	if !ok {
		return nil, fmt.Errorf("member cache entry %s is a %T", key, obj)
	}
	return u, nil
}

// LoadingGrace is how long a member cache that has not loaded yet counts
// as loading (Loading) rather than failing.
const LoadingGrace = 30 * time.Second

// Loading reports whether the member is ready and its cache of gvr is
// still loading, started less than LoadingGrace ago: what it holds is
// not known yet, and soon will be. A cache that cannot load (the
// resource is missing on the member) stops counting as loading after
// the grace.
func (m *Member) Loading(gvr schema.GroupVersionResource) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.health.Ready || m.informers == nil {
		return false
	}
	ri := m.informers.byGVR[gvr]
	return ri != nil && !ri.informer.HasSynced() && time.Since(ri.started) < LoadingGrace
}

// Key identifies the member: clusters with the same key reach the same
// member API server with the same access.
func (m *Member) Key() string { return m.key }

// watch adds an informer for w's resource, now if the member is ready.
func (m *Member) watch(w *watch) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.watched = append(m.watched, w)
	if m.informers != nil {
		m.informers.add(m.Dynamic, w)
	}
}

// unwatch removes w's handler; an informer left with no handler stops.
func (m *Member) unwatch(w *watch) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.watched = slices.DeleteFunc(m.watched, func(x *watch) bool { return x == w })
	if m.informers != nil {
		m.informers.remove(w)
	}
}

func (mi *memberInformers) add(dyn dynamic.Interface, w *watch) {
	ri := mi.byGVR[w.gvr]
	if ri == nil {
		ctx, cancel := context.WithCancel(mi.ctx)
		ri = &resourceInformer{
			informer: dynamicinformer.NewFilteredDynamicInformer(dyn, w.gvr, metav1.NamespaceAll, 0, cache.Indexers{},
				func(o *metav1.ListOptions) { o.LabelSelector = ManagedLabel + "=true" }).Informer(),
			cancel:  cancel,
			regs:    map[*watch]cache.ResourceEventHandlerRegistration{},
			started: time.Now(),
		}
		if err := ri.informer.SetTransform(Lean(w.spec)); err != nil {
			klog.ErrorS(err, "Setting the member cache's transform", "resource", w.gvr)
		}
		ri.spec = w.spec
		mi.byGVR[w.gvr] = ri
		go ri.informer.Run(ctx.Done())
	} else if !slices.Equal(ri.spec, w.spec) {
		// One controller watches a type; a second watcher asking for
		// other spec fields would not find them in the cache.
		klog.ErrorS(nil, "A member cache is shared by watchers keeping different spec fields", "resource", w.gvr, "kept", ri.spec, "asked", w.spec)
	}
	reg, err := ri.informer.AddEventHandler(w.handler)
	if err != nil {
		klog.ErrorS(err, "Adding member event handler", "resource", w.gvr)
		return
	}
	ri.regs[w] = reg
}

// remove takes w's handler off its informer and stops the informer when
// it was the last.
func (mi *memberInformers) remove(w *watch) {
	ri := mi.byGVR[w.gvr]
	if ri == nil {
		return
	}
	if reg, ok := ri.regs[w]; ok {
		if err := ri.informer.RemoveEventHandler(reg); err != nil {
			klog.ErrorS(err, "Removing member event handler", "resource", w.gvr)
		}
		delete(ri.regs, w)
	}
	if len(ri.regs) == 0 {
		ri.cancel()
		delete(mi.byGVR, w.gvr)
	}
}

func (mi *memberInformers) stop() {
	for _, ri := range mi.byGVR {
		ri.cancel()
	}
}

// start begins probing; the first probe runs at once.
func (m *Member) start(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	m.mu.Lock()
	m.cancel = cancel
	m.mu.Unlock()
	go func() {
		for {
			m.probe(ctx)
			period := m.opts.ProbePeriod
			if !m.Ready() && m.opts.UnreadyProbePeriod > 0 {
				// A member that is away is looked at more often, so one
				// that returns (a tunnel reconnecting) is used again soon.
				period = min(period, m.opts.UnreadyProbePeriod)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(period):
			}
		}
	}()
}

// stop ends probing and the informers.
func (m *Member) stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cancel != nil {
		m.cancel()
	}
	m.stopInformersLocked()
}

func (m *Member) stopInformersLocked() {
	if m.informers != nil {
		m.informers.stop()
		m.informers = nil
	}
}

// probe asks the member's /readyz (falling back to /healthz for servers
// without it) and applies the thresholds.
func (m *Member) probe(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, m.opts.ProbeTimeout)
	defer cancel()
	ok, reachable, msg := m.check(ctx)
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return // stopping
	}
	var version string
	if ok && !m.Health().Ready {
		if v, err := m.discovery.ServerVersion(); err == nil {
			version = v.GitVersion
		}
	}
	m.mu.Lock()
	was := m.health
	if ok {
		m.failures, m.successes = 0, m.successes+1
	} else {
		m.successes, m.failures = 0, m.failures+1
	}
	h := was
	h.Reachable, h.Message = reachable, msg
	if version != "" {
		h.Version = version
	}
	switch {
	case !was.Probed:
		h.Ready = ok // the first probe decides
	case was.Ready && m.failures >= m.opts.FailureThreshold:
		h.Ready = false
	case !was.Ready && m.successes >= m.opts.SuccessThreshold:
		h.Ready = true
	}
	h.Probed = true
	m.health = h
	changed := h != was
	if h.Ready && m.informers == nil {
		mi := &memberInformers{ctx: context.Background(), byGVR: map[schema.GroupVersionResource]*resourceInformer{}}
		for _, w := range m.watched {
			mi.add(m.Dynamic, w)
		}
		m.informers = mi
	} else if !h.Ready && m.informers != nil {
		// An unready member's informers are stopped, not left retrying.
		m.stopInformersLocked()
	}
	m.mu.Unlock()
	if changed && (h.Ready != was.Ready || !was.Probed || h.Version != was.Version || h.Reachable != was.Reachable) {
		if h.Ready != was.Ready || !was.Probed {
			klog.InfoS("Member readiness changed", "clusters", m.Clusters(), "ready", h.Ready, "message", h.Message)
		}
		m.onChange(m)
	}
}

// check runs one probe: ok, whether the server answered at all, and why
// not ok.
func (m *Member) check(ctx context.Context) (ok, reachable bool, msg string) {
	for _, path := range []string{"/readyz", "/healthz"} {
		var code int
		body, err := m.rest.Get().AbsPath(path).Do(ctx).StatusCode(&code).Raw()
		switch {
		case err == nil && string(body) == "ok":
			return true, true, ""
		case code == http.StatusNotFound:
			continue
		case code != 0:
			return false, true, fmt.Sprintf("%s answered %d: %s", path, code, trim(body, err))
		default:
			return false, false, fmt.Sprintf("%s: %v", path, err)
		}
	}
	return false, true, "neither /readyz nor /healthz exists"
}

func trim(body []byte, err error) string {
	s := string(body)
	if s == "" && err != nil {
		s = err.Error()
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// Lean returns the transform of a member cache. It keeps of each object
// what the controller reads from the cache: apiVersion, kind, metadata
// without managedFields (labels and annotations whole: the no-op check
// compares them with the template's), status (reflowed to the federated
// object), and the spec fields named in spec (those readiness reads, such
// as replicas). Everything else, the rest of spec, data, rules and so on,
// is dropped: the controller reads an object's content from the member
// itself, on the rare occasions it needs it.
//
// What it keeps it keeps compact, not as unstructured maps: a cache
// entry is a metav1.Object (keys, names, versions), and Expand (or
// Member.Get) turns it back into an unstructured object. Entries and
// anything not unstructured (tombstones) pass through unchanged.
func Lean(spec []string) cache.TransformFunc {
	in := &interner{}
	return func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		return compact(u, spec, in)
	}
}

// StripManagedFields drops metadata.managedFields from objects entering a
// cache: the controller never reads them, and they are a large part of a
// small object. Writes built from a cached object send none, which the
// API server reads as "unchanged".
func StripManagedFields(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if md, ok := u.Object["metadata"].(map[string]any); ok {
			delete(md, "managedFields")
		}
	}
	return obj, nil
}

// dynamicClients are a member's Dynamic and Writes clients, on one set of
// connections.
func dynamicClients(cfg *rest.Config) (dyn, writes dynamic.Interface, err error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("member client: %w", err)
	}
	if dyn, err = dynamic.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, nil, fmt.Errorf("member client: %w", err)
	}
	if writes, err = newWritesClient(cfg, dyn, httpClient); err != nil {
		return nil, nil, err
	}
	return dyn, writes, nil
}
