package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/request"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/mux"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
	"github.com/cellfed/cellfed/pkg/propagatedversion"
)

// recordViews serves GET and LIST of PropagatedVersions and
// ClusterPropagatedVersions as the stored objects merged with views
// computed from the propagation records cellfed-controller keeps in
// federated objects' status (package propagatedversion): the controller
// writes one object per release, and KubeFed's tools and controller still
// read their records. It runs in the plane's mux, after authentication,
// authorization (RBAC on propagatedversions applies as to the stored
// objects), audit and the rest of the filters.
//
// Everything else, and every write, goes to the stored CRD as before: a
// KubeFed controller that read a view and writes it gets NotFound on its
// status update and creates the record, as it does for a record deleted
// under it. A WATCH shows only stored records (the views change with
// their federated objects, which a client that needs them watches); so do
// responses in protobuf or as partial metadata (the garbage collector and
// namespace deletion, which have nothing to delete in a view).
type recordViews struct {
	next         http.Handler
	fedNamespace string
	// client reads FederatedTypeConfigs and federated objects, with the
	// plane's loopback identity; nil until the plane has started.
	client atomic.Pointer[dynamic.DynamicClient]
}

// recordViewsPrefix is where the records are served.
const recordViewsPrefix = "/apis/" + kubefed.GroupName + "/v1alpha1/"

// install puts v in front of the records' paths in m.
func (v *recordViews) install(m *mux.PathRecorderMux) {
	for _, r := range []string{"propagatedversions", "clusterpropagatedversions"} {
		m.Handle(recordViewsPrefix+r, v)
		m.HandlePrefix(recordViewsPrefix+r+"/", v)
	}
	m.HandlePrefix(recordViewsPrefix+"namespaces/", v)
}

// start gives v its loopback client once the plane serves.
func (v *recordViews) start(hookCtx genericapiserver.PostStartHookContext) error {
	cfg := rest.CopyConfig(hookCtx.LoopbackClientConfig)
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("record views: loopback client: %w", err)
	}
	v.client.Store(c)
	return nil
}

// answer is how a request for records is answered.
type answer int

const (
	passThrough answer = iota
	asJSON
	asTable
)

// answerFor decides from the request what v does with it.
func answerFor(info *request.RequestInfo, accept string) answer {
	if info == nil || !info.IsResourceRequest || info.APIGroup != kubefed.GroupName || info.APIVersion != "v1alpha1" ||
		(info.Resource != kubefed.PropagatedVersionsResource.Resource && info.Resource != kubefed.ClusterPropagatedVersionsResource.Resource) ||
		info.Subresource != "" || (info.Verb != "get" && info.Verb != "list") {
		return passThrough
	}
	// The first media type the client accepts decides.
	first := strings.TrimSpace(strings.Split(accept, ",")[0])
	switch {
	case first == "" || first == "*/*" || first == "application/json":
		return asJSON
	case strings.HasPrefix(first, "application/json") && strings.Contains(first, "as=Table"):
		return asTable
	}
	return passThrough
}

func (v *recordViews) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	info, _ := request.RequestInfoFrom(req.Context())
	mode := answerFor(info, req.Header.Get("Accept"))
	client := v.client.Load()
	if mode == passThrough || client == nil {
		v.next.ServeHTTP(w, req)
		return
	}
	stored := &bufferedResponse{header: http.Header{}}
	v.next.ServeHTTP(stored, req)
	namespaced := info.Resource == kubefed.PropagatedVersionsResource.Resource
	var err error
	switch {
	case info.Verb == "get" && stored.code == http.StatusNotFound:
		err = v.serveGet(req.Context(), w, client, stored, info, namespaced, mode, req.URL.Query().Get("includeObject"))
	case info.Verb == "list" && stored.code == http.StatusOK:
		err = v.serveList(req.Context(), w, req, client, stored, info, namespaced, mode)
	default:
		stored.copyTo(w)
	}
	if err != nil {
		klog.FromContext(req.Context()).V(2).Info("Serving the stored records only", "path", req.URL.Path, "err", err)
		stored.copyTo(w)
	}
}

// types are the federated types whose objects may carry records.
func (v *recordViews) types(ctx context.Context, client dynamic.Interface) ([]propagatedversion.Type, error) {
	list, err := client.Resource(kubefed.FederatedTypeConfigsResource).Namespace(v.fedNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing FederatedTypeConfigs: %w", err)
	}
	var out []propagatedversion.Type
	for i := range list.Items {
		if t, ok := propagatedversion.TypeOf(&list.Items[i]); ok {
			out = append(out, t)
		}
	}
	return out, nil
}

func (v *recordViews) federated(t propagatedversion.Type) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: t.FederatedAPIGroup, Version: typesv1beta2.Version, Resource: t.FederatedPlural}
}

func (v *recordViews) serveGet(ctx context.Context, w http.ResponseWriter, client dynamic.Interface, stored *bufferedResponse, info *request.RequestInfo, namespaced bool, mode answer, includeObject string) error {
	types, err := v.types(ctx, client)
	if err != nil {
		return err
	}
	for _, t := range propagatedversion.Owners(types, info.Name, namespaced) {
		name := strings.TrimPrefix(info.Name, strings.ToLower(t.TargetKind)+"-")
		res := client.Resource(v.federated(t))
		var fed *unstructured.Unstructured
		if namespaced {
			fed, err = res.Namespace(info.Namespace).Get(ctx, name, metav1.GetOptions{})
		} else {
			fed, err = res.Get(ctx, name, metav1.GetOptions{})
		}
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading %s %s: %w", t.FederatedKind, name, err)
		}
		view, ok := propagatedversion.View(t, fed)
		if !ok {
			continue
		}
		if mode == asTable {
			table := metav1.Table{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"}, ColumnDefinitions: defaultColumns}
			row, err := propagatedversion.TableRow(view, table.ColumnDefinitions, includeObject, time.Now())
			if err != nil {
				return err
			}
			table.Rows = []metav1.TableRow{row}
			return writeJSON(w, http.StatusOK, table)
		}
		return writeJSON(w, http.StatusOK, view.Object)
	}
	stored.copyTo(w)
	return nil
}

// defaultColumns are the columns the plane prints a record without
// printer columns with.
var defaultColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name must be unique within a namespace."},
	{Name: "Age", Type: "date", Description: "CreationTimestamp is a timestamp representing the server time when this object was created."},
}

func (v *recordViews) serveList(ctx context.Context, w http.ResponseWriter, req *http.Request, client dynamic.Interface, stored *bufferedResponse, info *request.RequestInfo, namespaced bool, mode answer) error {
	q := req.URL.Query()
	labelSel, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		return err
	}
	fieldSel, err := fields.ParseSelector(q.Get("fieldSelector"))
	if err != nil {
		return err
	}
	if !propagatedversion.SelectsViews(labelSel) {
		// The stored records only (a controller's StoredOnly list): no
		// federated object needs reading.
		stored.copyTo(w)
		return nil
	}
	var storedList unstructured.UnstructuredList
	var table metav1.Table
	var cont string
	if mode == asTable {
		if err := json.Unmarshal(stored.body.Bytes(), &table); err != nil {
			return fmt.Errorf("decoding the stored table: %w", err)
		}
		cont = table.Continue
	} else {
		if err := storedList.UnmarshalJSON(stored.body.Bytes()); err != nil {
			return fmt.Errorf("decoding the stored list: %w", err)
		}
		cont = storedList.GetContinue()
	}
	if cont != "" {
		// Views follow the last page.
		stored.copyTo(w)
		return nil
	}
	views, err := v.views(ctx, client, info.Namespace, namespaced)
	if err != nil {
		return err
	}
	views = propagatedversion.Selected(views, labelSel, fieldSel)
	if mode == asTable {
		have := map[string]bool{}
		for _, r := range table.Rows {
			have[rowKey(r, info.Namespace)] = true
		}
		now := time.Now()
		for i := range views {
			if have[views[i].GetNamespace()+"/"+views[i].GetName()] {
				continue
			}
			row, err := propagatedversion.TableRow(&views[i], table.ColumnDefinitions, q.Get("includeObject"), now)
			if err != nil {
				return err
			}
			table.Rows = append(table.Rows, row)
		}
		return writeJSON(w, http.StatusOK, table)
	}
	storedList.Items = propagatedversion.Merge(storedList.Items, views)
	return writeJSON(w, http.StatusOK, storedList.UnstructuredContent())
}

// rowKey is the namespace/name of a stored table row: from the object
// it carries, or its name cell in the namespace listed.
func rowKey(r metav1.TableRow, ns string) string {
	var md metav1.PartialObjectMetadata
	if len(r.Object.Raw) > 0 && json.Unmarshal(r.Object.Raw, &md) == nil && md.Name != "" {
		return md.Namespace + "/" + md.Name
	}
	if len(r.Cells) > 0 {
		return ns + "/" + fmt.Sprint(r.Cells[0])
	}
	return ""
}

// views are the views of every record in namespace ns ("" for all).
func (v *recordViews) views(ctx context.Context, client dynamic.Interface, ns string, namespaced bool) ([]unstructured.Unstructured, error) {
	types, err := v.types(ctx, client)
	if err != nil {
		return nil, err
	}
	var out []unstructured.Unstructured
	for _, t := range types {
		if t.Namespaced != namespaced {
			continue
		}
		res := client.Resource(v.federated(t))
		var list *unstructured.UnstructuredList
		if namespaced {
			list, err = res.Namespace(ns).List(ctx, metav1.ListOptions{})
		} else {
			list, err = res.List(ctx, metav1.ListOptions{})
		}
		if apierrors.IsNotFound(err) {
			continue // the type's CRD is not served (yet)
		}
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", t.FederatedKind, err)
		}
		for i := range list.Items {
			if view, ok := propagatedversion.View(t, &list.Items[i]); ok {
				out = append(out, *view)
			}
		}
	}
	return out, nil
}

func writeJSON(w http.ResponseWriter, code int, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding records: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(raw)
	return nil
}

// bufferedResponse holds the stored records' response until it is known
// whether views join it.
type bufferedResponse struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header { return b.header }

func (b *bufferedResponse) WriteHeader(code int) {
	if b.code == 0 {
		b.code = code
	}
}

func (b *bufferedResponse) Write(p []byte) (int, error) {
	if b.code == 0 {
		b.code = http.StatusOK
	}
	return b.body.Write(p)
}

func (b *bufferedResponse) copyTo(w http.ResponseWriter) {
	for k, vs := range b.header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if b.code == 0 {
		b.code = http.StatusOK
	}
	w.WriteHeader(b.code)
	_, _ = w.Write(b.body.Bytes())
}
