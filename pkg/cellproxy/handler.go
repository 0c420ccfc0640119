package cellproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/streaming/pkg/httpstream"
	fedv1b1 "sigs.k8s.io/kubefed/pkg/apis/core/v1beta1"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/pkg/tenancy"
)

// Lookup finds Cells and KubeFedClusters (the plane's caches).
type Lookup interface {
	Cell(namespace, name string) (*cellv1alpha1.Cell, error)
	Cluster(name string) (*fedv1b1.KubeFedCluster, error)
}

// Handler serves the proxy paths under Prefix. It runs behind the plane's
// authentication, impersonation, authorization (cells/proxy or
// clusters/proxy in proxy.cellfed.io) and audit filters.
type Handler struct {
	// Authorizer is the plane's authorizer: a cell proxy is for users who
	// may get the Cell.
	Authorizer authorizer.Authorizer
	// Watches bounds each user's open watches; nil: no bound.
	Watches *WatchLimit
	ready   atomic.Pointer[backend]
}

type backend struct {
	lookup  Lookup
	members *Members
}

// Start makes the handler serve; until then it answers 503.
func (h *Handler) Start(lookup Lookup, members *Members) {
	h.ready.Store(&backend{lookup: lookup, members: members})
}

// Audit annotation keys on every proxied request.
const (
	AuditCell     = Group + "/cell"
	AuditCluster  = Group + "/cluster"
	AuditUser     = Group + "/impersonated-user"
	AuditGroups   = Group + "/impersonated-groups"
	AuditTenant   = Group + "/impersonated-tenant"
	AuditDecision = Group + "/decision"
	AuditRequest  = Group + "/member-request"
)

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	b := h.ready.Load()
	if b == nil {
		writeStatus(w, &Refusal{Code: http.StatusServiceUnavailable, Message: "the API proxy is starting; retry in a moment"})
		return
	}
	u, ok := request.UserFrom(ctx)
	if !ok {
		writeStatus(w, &Refusal{Code: http.StatusUnauthorized, Message: "no authenticated user"})
		return
	}
	scope, memberPath, refusal := ParsePath(r.URL.Path)
	if refusal != nil {
		writeStatus(w, refusal)
		return
	}
	if k := ForgedImpersonation(r.Header); k != "" {
		h.refuse(ctx, w, &Refusal{Code: http.StatusBadRequest, Message: fmt.Sprintf("header %s is refused by the API proxy: impersonate with kubectl --as against the plane, whose impersonation rules apply", k)})
		return
	}
	var (
		cluster *fedv1b1.KubeFedCluster
		tenant  string
		target  Target
	)
	if scope.IsCell() {
		if refusal := h.authorizeCell(ctx, u, scope); refusal != nil {
			h.refuse(ctx, w, refusal)
			return
		}
		if httpstream.IsUpgradeRequest(r) && r.Method == http.MethodGet {
			// WebSocket exec, attach and port-forward are GETs: they need
			// create on cells/proxy, as SPDY's POSTs do.
			if refusal := h.authorizeStream(ctx, u, scope); refusal != nil {
				h.refuse(ctx, w, refusal)
				return
			}
		}
		cell, err := b.lookup.Cell(scope.Namespace, scope.Cell)
		if err != nil {
			h.refuse(ctx, w, lookupRefusal(err, fmt.Sprintf("%s not found; list the workspace's cells with: kubectl get cells -n %s", scope, scope.Namespace)))
			return
		}
		tenant = tenancy.TenantOf(cell.Labels)
		audit.AddAuditAnnotations(ctx, AuditCell, scope.Namespace+"/"+scope.Cell, AuditCluster, cell.Spec.Cluster)
		cluster, err = b.lookup.Cluster(cell.Spec.Cluster)
		if err != nil {
			h.refuse(ctx, w, lookupRefusal(err, fmt.Sprintf("%s is placed on cluster %s, which is not joined; ask a platform admin", scope, cell.Spec.Cluster)))
			return
		}
		if !tenancy.MayUse(tenant, cluster.Labels) {
			h.refuse(ctx, w, &Refusal{Code: http.StatusForbidden, Message: fmt.Sprintf("%s is placed on cluster %s, which is dedicated to tenant %q, not %q; the proxy does not cross tenants", scope, cluster.Name, tenancy.TenantOf(cluster.Labels), tenant)})
			return
		}
		target, refusal = DecideCell(scope, cluster.Name, r.Method, memberPath, r.URL.Query())
		if refusal != nil {
			h.refuse(ctx, w, refusal)
			return
		}
	} else {
		audit.AddAuditAnnotations(ctx, AuditCluster, scope.Cluster)
		var err error
		cluster, err = b.lookup.Cluster(scope.Cluster)
		if err != nil {
			h.refuse(ctx, w, lookupRefusal(err, fmt.Sprintf("cluster %s is not joined; list clusters with: kubectl get kubefedclusters -A", scope.Cluster)))
			return
		}
		target = DecideCluster(r.Method, memberPath, r.URL.Query())
	}
	if target.Verb == "watch" {
		release, refusal := h.Watches.Acquire(u.GetName())
		if refusal != nil {
			h.refuse(ctx, w, refusal)
			return
		}
		defer release()
	}
	audit.AddAuditAnnotations(ctx, AuditDecision, "allow", AuditUser, u.GetName(), AuditGroups, strings.Join(u.GetGroups(), ","),
		AuditTenant, tenant, AuditRequest, describe(target))

	m, err := b.members.get(cluster)
	if err != nil {
		writeStatus(w, &Refusal{Code: http.StatusServiceUnavailable, Message: err.Error()})
		return
	}
	token, err := b.members.tokenFor(ctx, m)
	if err != nil {
		writeStatus(w, errorStatus(cluster.Name, err))
		return
	}
	Scrub(r.Header)
	Impersonate(r.Header, token, u, tenant)
	loc := *m.base
	loc.Path = strings.TrimSuffix(m.base.Path, "/") + memberPath
	loc.RawPath = ""
	loc.RawQuery = r.URL.RawQuery
	resp := responder{cluster: cluster.Name, tunnel: m.tunnel, pingTimeout: m.pingTimeout}
	if !httpstream.IsUpgradeRequest(r) {
		// Plain requests and watches: a reverse proxy with pooled copy
		// buffers (the upgrade-aware handler allocates 32 KiB for each).
		rp := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.Out.URL = &loc
				pr.Out.Host = ""
			},
			Transport:    m.transport,
			BufferPool:   copyBuffers,
			ErrorHandler: resp.Error,
			ErrorLog:     proxyErrorLog,
		}
		rp.ServeHTTP(w, r)
		return
	}
	p := &proxy.UpgradeAwareHandler{
		Location:        &loc,
		Transport:       m.transport,
		UseLocationHost: true,
		Responder:       resp,
	}
	p.ServeHTTP(w, r)
}

// copyBuffers are the reverse proxy's response copy buffers.
var copyBuffers = &bufferPool{sync.Pool{New: func() any { b := make([]byte, 32*1024); return &b }}}

type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	buf, _ := b.p.Get().(*[]byte)
	return *buf
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }

// proxyErrorLog takes the reverse proxy's own messages (a response cut
// off mid-copy) into klog.
var proxyErrorLog = klog.NewStandardLogger("WARNING")

// authorizeCell asks the plane's authorizer whether u may get the Cell.
func (h *Handler) authorizeCell(ctx context.Context, u user.Info, s Scope) *Refusal {
	d, reason, err := h.Authorizer.Authorize(ctx, authorizer.AttributesRecord{
		User: u, Verb: "get", Namespace: s.Namespace, APIGroup: cellv1alpha1.GroupName, APIVersion: "v1alpha1",
		Resource: "cells", Name: s.Cell, ResourceRequest: true,
	})
	if err == nil && d == authorizer.DecisionAllow {
		return nil
	}
	msg := fmt.Sprintf("user %q may not get cells.%s %s in namespace %s, so may not use its proxy; a platform admin grants it with: cellfedctl tenant grant %s -n %s --role=viewer",
		u.GetName(), cellv1alpha1.GroupName, s.Cell, s.Namespace, u.GetName(), s.Namespace)
	if reason != "" {
		msg += " (" + reason + ")"
	}
	return &Refusal{Code: http.StatusForbidden, Message: msg}
}

// authorizeStream asks whether u may create cells/proxy of the cell.
func (h *Handler) authorizeStream(ctx context.Context, u user.Info, s Scope) *Refusal {
	d, _, err := h.Authorizer.Authorize(ctx, authorizer.AttributesRecord{
		User: u, Verb: "create", Namespace: s.Namespace, APIGroup: Group, APIVersion: Version,
		Resource: "cells", Subresource: "proxy", Name: s.Cell, ResourceRequest: true,
	})
	if err == nil && d == authorizer.DecisionAllow {
		return nil
	}
	return &Refusal{Code: http.StatusForbidden, Message: fmt.Sprintf(
		"user %q may not open streams (exec, attach, port-forward) through %s: that needs create on cells/proxy in %s (role app-team), not only read (role viewer)", u.GetName(), s, Group)}
}

func (h *Handler) refuse(ctx context.Context, w http.ResponseWriter, r *Refusal) {
	audit.AddAuditAnnotations(ctx, AuditDecision, "refuse", Group+"/reason", r.Message)
	writeStatus(w, r)
}

func describe(t Target) string {
	s := t.Verb + " " + t.Resource
	if t.Namespace != "" {
		s += " -n " + t.Namespace
	}
	if t.Name != "" {
		s += " " + t.Name
	}
	return s
}

func lookupRefusal(err error, notFound string) *Refusal {
	if apierrors.IsNotFound(err) {
		return &Refusal{Code: http.StatusNotFound, Message: notFound}
	}
	return &Refusal{Code: http.StatusInternalServerError, Message: err.Error()}
}

func errorStatus(cluster string, err error) *Refusal {
	var u *UnreachableError
	if errors.As(err, &u) {
		return &Refusal{Code: http.StatusServiceUnavailable, Message: u.Error()}
	}
	return &Refusal{Code: http.StatusBadGateway, Message: fmt.Sprintf("cluster %s: %v", cluster, err)}
}

// responder answers errors of the proxied request itself: the member
// connection failed (dial, TLS, tunnel stream, dead connection).
type responder struct {
	cluster     string
	tunnel      bool
	pingTimeout time.Duration
}

func (r responder) Error(w http.ResponseWriter, req *http.Request, err error) {
	var u *UnreachableError
	if !errors.As(err, &u) {
		if req.Context().Err() != nil {
			return // the caller went away
		}
		u = &UnreachableError{Cluster: r.cluster, Tunnel: r.tunnel, Err: err}
		if strings.Contains(err.Error(), "client connection lost") {
			// The HTTP/2 health check closed a connection whose link went
			// silent.
			u.Err = fmt.Errorf("the connection went silent (no answer to a ping within %v)", r.pingTimeout)
		}
	}
	klog.V(2).InfoS("API proxy request failed", "cluster", r.cluster, "path", req.URL.Path, "err", err)
	writeStatus(w, &Refusal{Code: http.StatusServiceUnavailable, Message: u.Error()})
}

var reasons = map[int]metav1.StatusReason{
	http.StatusBadRequest:          metav1.StatusReasonBadRequest,
	http.StatusUnauthorized:        metav1.StatusReasonUnauthorized,
	http.StatusForbidden:           metav1.StatusReasonForbidden,
	http.StatusNotFound:            metav1.StatusReasonNotFound,
	http.StatusTooManyRequests:     metav1.StatusReasonTooManyRequests,
	http.StatusServiceUnavailable:  metav1.StatusReasonServiceUnavailable,
	http.StatusInternalServerError: metav1.StatusReasonInternalError,
}

// writeStatus answers with a Status object, which kubectl prints as
// "Error from server (<Reason>): <message>".
func writeStatus(w http.ResponseWriter, r *Refusal) {
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: r.Message, Reason: reasons[r.Code], Code: int32(r.Code),
	}
	if r.RetryAfter > 0 {
		secs := int32(r.RetryAfter / time.Second)
		st.Details = &metav1.StatusDetails{RetryAfterSeconds: secs}
		w.Header().Set("Retry-After", strconv.Itoa(int(secs)))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(r.Code)
	if err := json.NewEncoder(w).Encode(st); err != nil {
		klog.V(4).InfoS("Writing API proxy status", "err", err)
	}
}

// Informers are the plane caches the proxy reads: Cells and the
// KubeFedClusters of the federation namespace.
type Informers struct {
	cells, clusters cache.SharedIndexInformer
	fedNamespace    string
}

// NewInformers watches Cells and KubeFedClusters through plane. The
// caches hold typed objects: requests read them without converting.
func NewInformers(plane dynamic.Interface, fedNamespace string) *Informers {
	all := dynamicinformer.NewDynamicSharedInformerFactory(plane, 0)
	fed := dynamicinformer.NewFilteredDynamicSharedInformerFactory(plane, 0, fedNamespace, nil)
	i := &Informers{
		cells:        all.ForResource(cellv1alpha1.SchemeGroupVersion.WithResource("cells")).Informer(),
		clusters:     fed.ForResource(kubefed.KubeFedClustersResource).Informer(),
		fedNamespace: fedNamespace,
	}
	if err := i.cells.SetTransform(typed(func() any { return &cellv1alpha1.Cell{} })); err != nil {
		klog.ErrorS(err, "API proxy: typed Cell cache")
	}
	if err := i.clusters.SetTransform(typed(func() any { return &fedv1b1.KubeFedCluster{} })); err != nil {
		klog.ErrorS(err, "API proxy: typed KubeFedCluster cache")
	}
	return i
}

// typed converts cached unstructured objects to the type newObj makes.
func typed(newObj func() any) cache.TransformFunc {
	return func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		out := newObj()
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
			return nil, fmt.Errorf("decoding %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
		return out, nil
	}
}

// Run starts the informers and waits for their caches.
func (i *Informers) Run(ctx context.Context) error {
	go i.cells.RunWithContext(ctx)
	go i.clusters.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), i.cells.HasSynced, i.clusters.HasSynced) {
		return fmt.Errorf("API proxy caches: %w", ctx.Err())
	}
	return nil
}

// OnChange calls f after every change of a Cell or KubeFedCluster.
func (i *Informers) OnChange(f func()) error {
	h := cache.ResourceEventHandlerFuncs{AddFunc: func(any) { f() }, UpdateFunc: func(any, any) { f() }, DeleteFunc: func(any) { f() }}
	for _, inf := range []cache.SharedIndexInformer{i.cells, i.clusters} {
		if _, err := inf.AddEventHandler(h); err != nil {
			return fmt.Errorf("API proxy caches: %w", err)
		}
	}
	return nil
}

// Cells lists the cached Cells.
func (i *Informers) Cells() []*cellv1alpha1.Cell {
	var out []*cellv1alpha1.Cell
	for _, o := range i.cells.GetStore().List() {
		if c, ok := o.(*cellv1alpha1.Cell); ok {
			out = append(out, c)
		}
	}
	return out
}

// Clusters lists the cached KubeFedClusters.
func (i *Informers) Clusters() []*fedv1b1.KubeFedCluster {
	var out []*fedv1b1.KubeFedCluster
	for _, o := range i.clusters.GetStore().List() {
		if c, ok := o.(*fedv1b1.KubeFedCluster); ok {
			out = append(out, c)
		}
	}
	return out
}

// Cell implements Lookup.
func (i *Informers) Cell(namespace, name string) (*cellv1alpha1.Cell, error) {
	obj, err := get(i.cells, namespace+"/"+name, "cells", name)
	if err != nil {
		return nil, err
	}
	c, ok := obj.(*cellv1alpha1.Cell)
	if !ok {
		return nil, fmt.Errorf("cell %s/%s: unexpected %T in the cache", namespace, name, obj)
	}
	return c, nil
}

// Cluster implements Lookup.
func (i *Informers) Cluster(name string) (*fedv1b1.KubeFedCluster, error) {
	obj, err := get(i.clusters, i.fedNamespace+"/"+name, "kubefedclusters", name)
	if err != nil {
		return nil, err
	}
	c, ok := obj.(*fedv1b1.KubeFedCluster)
	if !ok {
		return nil, fmt.Errorf("cluster %s: unexpected %T in the cache", name, obj)
	}
	return c, nil
}

func get(inf cache.SharedIndexInformer, key, resource, name string) (any, error) {
	obj, exists, err := inf.GetIndexer().GetByKey(key)
	if err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", resource, key, err)
	}
	if !exists {
		return nil, apierrors.NewNotFound(cellv1alpha1.Resource(resource), name)
	}
	return obj, nil
}
