// Command floor is the least a correct propagator of cell-placed
// FederatedConfigMaps does, written as plainly as the same client
// libraries allow: the floor the race (test/bench, BenchmarkControllerRace)
// measures cellfed-controller against. It is a benchmark tool, not a
// product: one type (v1beta2 FederatedConfigMaps placed on cells, without
// overrides or masks), no leader election, no retries but the next event.
//
// Per placement it does only what correctness needs:
//   - it reads each federated object once, from one plane watch of its
//     type, decoded into the typed v1beta2 struct with the template kept
//     as raw bytes;
//   - it creates (or, when the template changed, updates) the object on
//     the cell's member in protobuf, the cheapest encoding a member
//     accepts;
//   - it observes each member object once, through one metadata-only
//     watch per member (a ConfigMap has no status to reflow), and keeps
//     per placement what drift detection needs: the resourceVersion it
//     wrote and a 64-bit hash of the template. A member object changed
//     or deleted by anyone else is written again, from the plane's
//     current object;
//   - it writes the federated object's status once per generation (the
//     topologies it reached), as cellfed-controller does with its one
//     plane write per release.
//
// Usage:
//
//	floor --kubeconfig plane.kubeconfig --member member-0=m0.kubeconfig --member member-1=...
//
// Cells (core.cellfed.io/v1alpha1) map a placement's cell to its member
// (spec.cluster); a cell the floor does not know yet makes it list the
// cells again.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	typesv1b2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
)

const (
	fedPath      = "/apis/types.kubefed.io/v1beta2"
	fedResource  = "federatedconfigmaps"
	cellsPath    = "/apis/core.cellfed.io/v1alpha1/cells"
	managedLabel = "kubefed.io/managed"
)

type memberFlags map[string]string

func (m memberFlags) String() string { return fmt.Sprint(map[string]string(m)) }
func (m memberFlags) Set(v string) error {
	name, path, ok := strings.Cut(v, "=")
	if !ok || name == "" || path == "" {
		return fmt.Errorf("--member %q: want <cluster>=<kubeconfig>", v)
	}
	m[name] = path
	return nil
}

func main() {
	var kubeconfig string
	workers := 8
	members := memberFlags{}
	flag.StringVar(&kubeconfig, "kubeconfig", "", "the plane's kubeconfig")
	flag.IntVar(&workers, "workers", workers, "federated objects reconciled in parallel (cellfed-controller's default)")
	flag.Var(members, "member", "<cluster>=<kubeconfig> of a member (repeat for each)")
	flag.Parse()
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer cancel()
	if err := run(ctx, kubeconfig, members, workers); err != nil && ctx.Err() == nil {
		klog.ErrorS(err, "floor failed")
		os.Exit(1)
	}
}

func loadConfig(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", path, err)
	}
	cfg.QPS = -1 // no client-side rate limit: the floor is what the work costs
	return cfg, nil
}

func run(ctx context.Context, kubeconfig string, memberConfigs memberFlags, workers int) error {
	cfg, err := loadConfig(kubeconfig)
	if err != nil {
		return err
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("plane client: %w", err)
	}
	f := &floor{
		plane:   &plane{base: strings.TrimSuffix(cfg.Host, "/"), http: hc},
		members: map[string]*member{},
		queue:   workqueue.NewTyped[string](),
		pending: map[string]*typesv1b2.FederatedObject{},
		statusG: map[string]int64{},
	}
	for name, path := range memberConfigs {
		m, err := newMember(f, name, path)
		if err != nil {
			return err
		}
		f.members[name] = m
		go m.watch(ctx)
	}
	if err := f.listCells(ctx); err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		f.queue.ShutDown()
	}()
	for range workers {
		go func() {
			for f.work(ctx) {
			}
		}()
	}
	return f.watchPlane(ctx)
}

// floor is the propagator's state: the members, the cells' members and
// the federated objects waiting for a worker.
type floor struct {
	plane   *plane
	members map[string]*member
	queue   workqueue.TypedInterface[string]
	// readyOnce logs "Floor ready" after the first list of the plane.
	readyOnce sync.Once

	mu      sync.Mutex
	cells   map[string]string                     // "<ns>/<cell>" → member
	pending map[string]*typesv1b2.FederatedObject // newest event's object; nil: read it from the plane
	statusG map[string]int64                      // status written for this generation
}

// plane is the plane's HTTP API, used directly: JSON in, raw bytes kept.
type plane struct {
	base string
	http *http.Client
}

func (p *plane) do(ctx context.Context, method, path, contentType string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, p.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := p.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, &statusError{code: resp.StatusCode, msg: fmt.Sprintf("%s %s: %d %s", method, path, resp.StatusCode, msg)}
	}
	return resp, nil
}

type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string { return e.msg }

func (p *plane) getJSON(ctx context.Context, path string, into any) error {
	resp, err := p.do(ctx, http.MethodGet, path, "", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		return fmt.Errorf("decoding %s: %w", path, err)
	}
	return nil
}

func (f *floor) listCells(ctx context.Context) error {
	var list struct {
		Items []struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
			Spec     struct {
				Cluster string `json:"cluster"`
			} `json:"spec"`
		} `json:"items"`
	}
	if err := f.plane.getJSON(ctx, cellsPath, &list); err != nil {
		return fmt.Errorf("listing cells: %w", err)
	}
	cells := make(map[string]string, len(list.Items))
	for _, c := range list.Items {
		cells[c.Metadata.Namespace+"/"+c.Metadata.Name] = c.Spec.Cluster
	}
	f.mu.Lock()
	f.cells = cells
	f.mu.Unlock()
	return nil
}

func (f *floor) enqueue(key string, obj *typesv1b2.FederatedObject) {
	f.mu.Lock()
	if obj != nil || f.pending[key] == nil {
		f.pending[key] = obj
	}
	f.mu.Unlock()
	f.queue.Add(key)
}

// watchPlane lists the federated objects and watches them from the list,
// listing again when the watch cannot resume.
func (f *floor) watchPlane(ctx context.Context) error {
	rv := ""
	for ctx.Err() == nil {
		if rv == "" {
			var err error
			if rv, err = f.listPlane(ctx); err != nil {
				klog.ErrorS(err, "listing the federated objects")
				time.Sleep(time.Second) // the plane refused: try again
				continue
			}
			f.readyOnce.Do(func() { klog.InfoS("Floor ready", "members", len(f.members)) })
		}
		next, err := f.watchPlaneFrom(ctx, rv)
		if err != nil {
			klog.ErrorS(err, "watching the federated objects")
			next = ""
		}
		rv = next
	}
	return ctx.Err()
}

func (f *floor) listPlane(ctx context.Context) (string, error) {
	cont := ""
	for {
		var list struct {
			Metadata metav1.ListMeta             `json:"metadata"`
			Items    []typesv1b2.FederatedObject `json:"items"`
		}
		q := url.Values{"limit": {"500"}}
		if cont != "" {
			q.Set("continue", cont)
		}
		if err := f.plane.getJSON(ctx, fedPath+"/"+fedResource+"?"+q.Encode(), &list); err != nil {
			return "", err
		}
		for i := range list.Items {
			o := &list.Items[i]
			f.enqueue(o.Namespace+"/"+o.Name, o)
		}
		if cont = list.Metadata.Continue; cont == "" {
			return list.Metadata.ResourceVersion, nil
		}
	}
}

// watchPlaneFrom watches from rv until the watch ends and returns the
// resourceVersion to resume from ("" to list again).
func (f *floor) watchPlaneFrom(ctx context.Context, rv string) (string, error) {
	q := url.Values{"watch": {"1"}, "resourceVersion": {rv}, "allowWatchBookmarks": {"true"}}
	resp, err := f.plane.do(ctx, http.MethodGet, fedPath+"/"+fedResource+"?"+q.Encode(), "", nil)
	if err != nil {
		var se *statusError
		if errors.As(err, &se) && se.code == http.StatusGone {
			return "", nil
		}
		return "", err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var ev struct {
			Type   watch.EventType `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := dec.Decode(&ev); err != nil {
			if ctx.Err() != nil || errors.Is(err, io.EOF) {
				return rv, nil
			}
			return rv, fmt.Errorf("reading the watch: %w", err)
		}
		switch ev.Type {
		case watch.Error:
			return "", nil // expired: list again
		case watch.Bookmark:
			var m struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
			}
			if json.Unmarshal(ev.Object, &m) == nil {
				rv = m.Metadata.ResourceVersion
			}
			continue
		}
		o := &typesv1b2.FederatedObject{}
		if err := json.Unmarshal(ev.Object, o); err != nil {
			return "", fmt.Errorf("decoding a watch event: %w", err)
		}
		rv = o.ResourceVersion
		if ev.Type == watch.Deleted {
			continue // its member objects are the garbage of another test
		}
		f.enqueue(o.Namespace+"/"+o.Name, o)
	}
}

func (f *floor) work(ctx context.Context) bool {
	key, quit := f.queue.Get()
	if quit {
		return false
	}
	defer f.queue.Done(key)
	f.mu.Lock()
	obj := f.pending[key]
	delete(f.pending, key)
	f.mu.Unlock()
	if err := f.reconcile(ctx, key, obj); err != nil {
		klog.ErrorS(err, "reconciling", "key", key)
	}
	return true
}

// reconcile writes obj (read from the plane when nil) to each placed
// cell's member whose copy is not from its template, then its status.
func (f *floor) reconcile(ctx context.Context, key string, obj *typesv1b2.FederatedObject) error {
	ns, name, _ := strings.Cut(key, "/")
	if obj == nil {
		obj = &typesv1b2.FederatedObject{}
		if err := f.plane.getJSON(ctx, fedPath+"/namespaces/"+ns+"/"+fedResource+"/"+name, obj); err != nil {
			var se *statusError
			if errors.As(err, &se) && se.code == http.StatusNotFound {
				return nil
			}
			return err
		}
	}
	if obj.DeletionTimestamp != nil || obj.Spec.Placement.TopologyType != typesv1b2.TopologyCell {
		return nil
	}
	h := fnv.New64a()
	_, _ = h.Write(obj.Spec.Template.Raw)
	hash := h.Sum64()
	topologies := make([]typesv1b2.TopologyStatus, len(obj.Spec.Placement.Topologies))
	var wg sync.WaitGroup
	for i, t := range obj.Spec.Placement.Topologies {
		topologies[i] = typesv1b2.TopologyStatus{Name: t.Name, Cluster: ns + "." + t.Name, Status: "OK", Generation: obj.Generation}
		m := f.memberOf(ctx, ns, t.Name)
		if m == nil {
			topologies[i].Status, topologies[i].Generation = "ClusterNotReady", 0
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.apply(ctx, ns, name, obj.Spec.Template.Raw, hash); err != nil {
				klog.ErrorS(err, "writing", "member", m.name, "key", key)
				topologies[i].Status, topologies[i].Generation, topologies[i].Message = "CreationFailed", 0, err.Error()
			}
		}()
	}
	wg.Wait()
	return f.writeStatus(ctx, key, obj, topologies)
}

func (f *floor) memberOf(ctx context.Context, ns, cell string) *member {
	f.mu.Lock()
	cluster, ok := f.cells[ns+"/"+cell]
	f.mu.Unlock()
	if !ok {
		if err := f.listCells(ctx); err != nil {
			klog.ErrorS(err, "listing cells")
		}
		f.mu.Lock()
		cluster = f.cells[ns+"/"+cell]
		f.mu.Unlock()
	}
	return f.members[cluster]
}

// writeStatus writes the topologies reached, once per generation unless
// one of them failed (to be written again by the next event).
func (f *floor) writeStatus(ctx context.Context, key string, obj *typesv1b2.FederatedObject, topologies []typesv1b2.TopologyStatus) error {
	ok := 0
	for _, t := range topologies {
		if t.Status == "OK" {
			ok++
		}
	}
	f.mu.Lock()
	done := f.statusG[key] == obj.Generation
	f.mu.Unlock()
	if done && ok == len(topologies) {
		return nil
	}
	n := fmt.Sprintf("%d/%d", ok, len(topologies))
	body, err := json.Marshal(map[string]any{"status": typesv1b2.Status{
		ObservedGeneration: obj.Generation, Topologies: topologies, Released: n, Propagated: n,
	}})
	if err != nil {
		return err
	}
	resp, err := f.plane.do(ctx, http.MethodPatch, fedPath+"/namespaces/"+obj.Namespace+"/"+fedResource+"/"+obj.Name+"/status",
		"application/merge-patch+json", body)
	if err != nil {
		return fmt.Errorf("writing the status: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if ok == len(topologies) {
		f.mu.Lock()
		f.statusG[key] = obj.Generation
		f.mu.Unlock()
	}
	return nil
}

// member is one member cluster: a protobuf client for writes, a
// metadata-only watch of the managed ConfigMaps, and per placement what
// drift detection needs.
type member struct {
	name  string
	floor *floor
	kube  kubernetes.Interface
	meta  metadata.Interface

	mu     sync.Mutex
	placed map[string]placement // "<ns>/<name>"
}

// placement is what the floor keeps per placement: the member object's
// resourceVersion after its write ("" while a write is under way) and
// the hash of the template written.
type placement struct {
	rv   string
	hash uint64
}

func newMember(f *floor, name, kubeconfig string) (*member, error) {
	cfg, err := loadConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	pb := rest.CopyConfig(cfg)
	pb.ContentType = "application/vnd.kubernetes.protobuf"
	pb.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	kube, err := kubernetes.NewForConfig(pb)
	if err != nil {
		return nil, fmt.Errorf("member %s: %w", name, err)
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("member %s: %w", name, err)
	}
	return &member{name: name, floor: f, kube: kube, meta: meta, placed: map[string]placement{}}, nil
}

// apply brings the member's copy of ns/name in line with the template
// (raw JSON) unless it already is.
func (m *member) apply(ctx context.Context, ns, name string, template []byte, hash uint64) error {
	key := ns + "/" + name
	m.mu.Lock()
	p, known := m.placed[key]
	if known && p.hash == hash && p.rv != "" {
		m.mu.Unlock()
		return nil
	}
	m.placed[key] = placement{hash: hash} // rv "": a write is under way
	m.mu.Unlock()
	cm := &corev1.ConfigMap{}
	if err := json.Unmarshal(template, cm); err != nil {
		return fmt.Errorf("template of %s: %w", key, err)
	}
	cm.TypeMeta = metav1.TypeMeta{}
	cm.Namespace, cm.Name = ns, name
	if cm.Labels == nil {
		cm.Labels = map[string]string{}
	}
	cm.Labels[managedLabel] = "true"
	c := m.kube.CoreV1().ConfigMaps(ns)
	var out *corev1.ConfigMap
	var err error
	if known && p.rv != "" {
		cm.ResourceVersion = p.rv
		out, err = c.Update(ctx, cm, metav1.UpdateOptions{})
	} else {
		out, err = c.Create(ctx, cm, metav1.CreateOptions{})
	}
	if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		// Someone else's copy, or ours changed meanwhile: overwrite it.
		var cur *corev1.ConfigMap
		if cur, err = c.Get(ctx, name, metav1.GetOptions{}); err == nil {
			cm.ResourceVersion = cur.ResourceVersion
			out, err = c.Update(ctx, cm, metav1.UpdateOptions{})
		} else if apierrors.IsNotFound(err) {
			cm.ResourceVersion = ""
			out, err = c.Create(ctx, cm, metav1.CreateOptions{})
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		delete(m.placed, key)
		return fmt.Errorf("writing %s: %w", key, err)
	}
	m.placed[key] = placement{rv: out.ResourceVersion, hash: hash}
	return nil
}

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// watch observes the member's managed ConfigMaps' metadata: a copy
// changed or deleted by anyone but the floor is written again.
func (m *member) watch(ctx context.Context) {
	opts := metav1.ListOptions{LabelSelector: managedLabel + "=true", AllowWatchBookmarks: true}
	for ctx.Err() == nil {
		w, err := m.meta.Resource(configMaps).Watch(ctx, opts)
		if err != nil {
			klog.ErrorS(err, "watching", "member", m.name)
			opts.ResourceVersion = ""
			time.Sleep(time.Second) // the member refused: try again
			continue
		}
		for ev := range w.ResultChan() {
			o, ok := ev.Object.(*metav1.PartialObjectMetadata)
			if !ok {
				opts.ResourceVersion = "" // an error event: start over
				continue
			}
			opts.ResourceVersion = o.ResourceVersion
			if ev.Type == watch.Bookmark || ev.Type == watch.Added {
				continue
			}
			m.observe(ev.Type, o.Namespace+"/"+o.Name, o.ResourceVersion)
		}
		w.Stop()
	}
}

func (m *member) observe(t watch.EventType, key, rv string) {
	m.mu.Lock()
	p, known := m.placed[key]
	drift := known && p.rv != "" && (t == watch.Deleted || p.rv != rv)
	if drift {
		delete(m.placed, key)
	}
	m.mu.Unlock()
	if drift {
		m.floor.enqueue(key, nil)
	}
}
