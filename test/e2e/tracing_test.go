package e2e

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cellfed/cellfed/pkg/controller/propagation"
	"github.com/cellfed/cellfed/pkg/controller/rolloutcontroller"
	"github.com/cellfed/cellfed/pkg/tracing"
	"github.com/cellfed/cellfed/test/framework"
)

// span is one span an OTLP exporter sent to the test's receiver.
type span struct {
	trace, id, parent string
	name, service     string
	attrs             map[string]string
	links             []string // the linked traces
}

// otlpReceiver is an OTLP/gRPC trace collector that keeps every span.
type otlpReceiver struct {
	coltracepb.UnimplementedTraceServiceServer
	addr  string
	mu    sync.Mutex
	spans []span
}

func (r *otlpReceiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		service := attrMap(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans = append(r.spans, span{
					trace:   hex.EncodeToString(s.GetTraceId()),
					id:      hex.EncodeToString(s.GetSpanId()),
					parent:  hex.EncodeToString(s.GetParentSpanId()),
					name:    s.GetName(),
					service: service,
					attrs:   attrMap(s.GetAttributes()),
					links:   linkedTraces(s.GetLinks()),
				})
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

func (r *otlpReceiver) all() []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.spans)
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		out[kv.GetKey()] = attrString(kv.GetValue())
	}
	return out
}

func attrString(v *commonpb.AnyValue) string {
	switch {
	case v.GetStringValue() != "":
		return v.GetStringValue()
	case v.GetArrayValue() != nil:
		var parts []string
		for _, e := range v.GetArrayValue().GetValues() {
			parts = append(parts, attrString(e))
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(v.GetIntValue())
}

func linkedTraces(links []*tracepb.Span_Link) []string {
	var out []string
	for _, l := range links {
		out = append(out, hex.EncodeToString(l.GetTraceId()))
	}
	return out
}

// startOTLPReceiver serves the receiver on a free local port until the
// test ends.
func startOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &otlpReceiver{addr: l.Addr().String()}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, r)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return r
}

// TestTracing applies one federated object to three cells with the plane
// and the controller tracing to an OTLP receiver: the apply is one trace
// holding the plane's request, the controller's reconciles (children of
// the plane's spans, found through cellfed.io/traceparent), a member
// write per cell with the cell and cluster, and the status write back,
// whose request the plane traces in the same trace.
func TestTracing(t *testing.T) {
	t.Parallel()
	recv := startOTLPReceiver(t)
	config := filepath.Join(t.TempDir(), "tracing.yaml")
	if err := os.WriteFile(config, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: TracingConfiguration
endpoint: `+recv.addr+`
samplingRatePerMillion: 1000000
`), 0o600); err != nil {
		t.Fatal(err)
	}
	f := startFederationWith(t, 3, framework.PlaneOptions{Args: []string{"--tracing-config-file=" + config}}, "--tracing-config-file="+config)
	f.kubectl.MustRun(t, deployment("shop", "traced", "nginx:1.27", []string{"rz00a", "rz10a", "rz20a"}, ""), "apply", "-f", "-")
	f.waitStatus(t, fedDeployV2, "shop", "traced", "rz00a=OK,rz10a=OK,rz20a=OK", "True")

	// The object carries the trace of its last traced write.
	tp := f.kubectl.MustRun(t, "", "get", "federateddeployments.v1beta2.types.kubefed.io", "-n", "shop", "traced",
		"-o", `jsonpath={.metadata.annotations.cellfed\.io/traceparent}`)
	if _, ok := tracing.FromTraceparent(context.Background(), tp); !ok {
		t.Fatalf("annotation %s = %q: want a W3C traceparent", tracing.Annotation, tp)
	}

	const key = "shop/traced"
	var got traceOf
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range got.byID {
				t.Logf("span %s parent %s: %s %s %v", s.id, s.parent, s.service, s.name, s.attrs)
			}
		}
	})
	eventually(t, "the apply's trace at the receiver", func() (bool, string) {
		var msg string
		got, msg = findTrace(recv.all(), key, "/namespaces/shop/federateddeployments")
		return msg == "", msg
	})
	// One trace: every reconcile of the object joined the apply's.
	for _, s := range recv.all() {
		if s.name == propagation.SpanReconcile && s.attrs[propagation.AttrKey] == key && s.trace != got.root.trace {
			t.Errorf("reconcile span %s is in trace %s, not the apply's %s", s.id, s.trace, got.root.trace)
		}
	}

	t.Run("a native Deployment placed by a policy", func(t *testing.T) {
		// The trace starts at the plane's POST of the Deployment: the
		// policy controller carries its trace to the federated object it
		// makes, whose reconcile, member writes and status write join it.
		f.kubectl.MustRun(t, `
apiVersion: policy.cellfed.io/v1alpha1
kind: PropagationPolicy
metadata: {name: traced, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: native-traced}]
  placement: {topologies: [{name: rz00a}, {name: rz10a}, {name: rz20a}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: native-traced, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: native-traced}}
  template:
    metadata: {labels: {app: native-traced}}
    spec:
      containers: [{name: web, image: "nginx:1.27"}]
`, "apply", "-f", "-")
		var native traceOf
		eventually(t, "the native Deployment's trace at the receiver", func() (bool, string) {
			var msg string
			native, msg = findTrace(recv.all(), "shop/native-traced", "/apis/apps/v1/namespaces/shop/deployments")
			return msg == "", msg
		})
		// Members never hold the plane's trace.
		for i := range f.members {
			d := f.memberObject(t, i, schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "shop", "native-traced")
			if d == nil {
				t.Fatalf("member-%d holds no Deployment native-traced", i)
			}
			if v, ok := d.GetAnnotations()[tracing.Annotation]; ok {
				t.Errorf("member-%d's Deployment carries %s=%s", i, tracing.Annotation, v)
			}
		}
		t.Logf("native trace %s: root %s %s, %d spans", native.root.trace, native.root.service, native.root.name, len(native.byID))
	})

	t.Run("a rollout step's trace holds its batch's member writes", func(t *testing.T) {
		f.rolloutObject(t, "stepped")
		f.ctl.ok(t, "rollout", "start", "deployment/stepped", "-n", "shop", "--auto", "--batch=1", "--progress-deadline=10m")
		eventually(t, "the rollout controller waits for a new template", func() (bool, string) {
			msg := f.rolloutAnnotation(t, "stepped", "message")
			return strings.Contains(msg, "waiting for a new template"), msg
		})
		f.setImage(t, "stepped", "app:2")
		f.waitImage(t, 0, "stepped", "app:2", 2)
		f.memberReady(t, 0, "stepped")
		f.waitImage(t, 1, "stepped", "app:2", 2) // the step released rz10a
		eventually(t, "the step's trace at the receiver", func() (bool, string) {
			msg := stepTrace(recv.all(), "shop/stepped", "rz10a")
			return msg == "", msg
		})
	})
}

// stepTrace says what the trace of the rollout step of key that released
// cell lacks ("" when nothing): the step span, linked to a trace holding
// a reconcile of key (its release), and below it, through the plane's
// spans and a reconcile, the member write of cell.
func stepTrace(spans []span, key, cell string) string {
	byID := map[string]span{}
	reconciled := map[string]bool{} // traces holding a reconcile of key
	var step span
	for _, s := range spans {
		byID[s.id] = s
		switch {
		case s.name == propagation.SpanReconcile && s.attrs[propagation.AttrKey] == key:
			reconciled[s.trace] = true
		case s.name == rolloutcontroller.SpanStep && s.attrs["cellfed.io/key"] == key && strings.Contains(s.attrs["cellfed.io/mask"], cell):
			step = s
		}
	}
	if step.id == "" {
		return fmt.Sprintf("no step span of %s releasing %s among %d spans", key, cell, len(spans))
	}
	if len(step.links) != 1 || !reconciled[step.links[0]] || step.links[0] == step.trace {
		return fmt.Sprintf("step span %s links %v: want the trace of the release it continues", step.id, step.links)
	}
	for _, s := range spans {
		if s.trace != step.trace || s.name != propagation.SpanMemberWrite || s.attrs[propagation.AttrCell] != cell || s.attrs[propagation.AttrStatus] != "OK" {
			continue
		}
		// Up from the member write: a reconcile of key, the plane's
		// spans, the step.
		var path []string
		for cur, ok := s, true; ok; cur, ok = byID[cur.parent] {
			path = append(path, cur.service+":"+cur.name)
			if cur.id == step.id {
				if slices.Contains(path, "cellfed-controller:"+propagation.SpanReconcile) && slices.ContainsFunc(path, func(p string) bool { return strings.HasPrefix(p, "apiserver:") }) {
					return ""
				}
				return fmt.Sprintf("member write %s reaches the step through %v", s.id, path)
			}
		}
	}
	return fmt.Sprintf("trace %s of the step: no member write of %s below it yet", step.trace, cell)
}

// traceOf is the spans of the trace of one apply.
type traceOf struct {
	root   span
	byID   map[string]span
	writes []span
}

// findTrace finds the trace of the apply of the federated object key in
// spans, started by the plane's POST to a path ending in post, and says
// what it lacks ("" when nothing).
func findTrace(spans []span, key, post string) (traceOf, string) {
	var tr traceOf
	var traceID string
	for _, s := range spans {
		if s.name == propagation.SpanReconcile && s.attrs[propagation.AttrKey] == key {
			traceID = s.trace
			break
		}
	}
	if traceID == "" {
		return tr, fmt.Sprintf("no reconcile span of %s among %d spans", key, len(spans))
	}
	tr.byID = map[string]span{}
	for _, s := range spans {
		if s.trace == traceID {
			tr.byID[s.id] = s
		}
	}
	parentOf := func(s span) (span, bool) { p, ok := tr.byID[s.parent]; return p, ok }
	// The root: the plane's request that created the object (its
	// outermost filter's span).
	for _, s := range tr.byID {
		if s.parent == "" {
			tr.root = s
		}
	}
	if tr.root.id == "" || tr.root.service != "apiserver" {
		return tr, fmt.Sprintf("trace %s: root span %q of %q: want the plane's", traceID, tr.root.name, tr.root.service)
	}
	// fromApply: every span from s up to the root is the plane's, and
	// one is its server span of the POST of the object.
	fromApply := func(s span) bool {
		posted := false
		for s.parent != "" {
			p, ok := parentOf(s)
			if !ok || p.service != "apiserver" {
				return false
			}
			posted = posted || (p.attrs["http.request.method"] == "POST" && strings.HasSuffix(p.attrs["url.path"], post))
			s = p
		}
		return posted
	}
	var reconciles, statusWrites, planeStatus int
	for _, s := range tr.byID {
		p, ok := parentOf(s)
		switch {
		case s.name == propagation.SpanReconcile:
			if !ok || !fromApply(s) {
				return tr, fmt.Sprintf("reconcile span %s: parent %q (%s %s) is not below the plane's POST", s.id, s.parent, p.service, p.name)
			}
			reconciles++
		case s.name == propagation.SpanMemberWrite:
			if !ok || p.name != propagation.SpanReconcile {
				return tr, fmt.Sprintf("member write span %s: parent %q is not a reconcile", s.id, s.parent)
			}
			tr.writes = append(tr.writes, s)
		case s.name == propagation.SpanStatusWrite:
			if !ok || p.name != propagation.SpanReconcile {
				return tr, fmt.Sprintf("status write span %s: parent %q is not a reconcile", s.id, s.parent)
			}
			statusWrites++
		case s.service == "apiserver" && strings.HasSuffix(strings.SplitN(s.attrs["http.target"], "?", 2)[0], "/status"):
			// The plane's span of the status write: below the
			// controller's client span, below the status write.
			if ok {
				if gp, ok := parentOf(p); ok && gp.name == propagation.SpanStatusWrite {
					planeStatus++
				}
			}
		}
	}
	var cells []string
	for _, w := range tr.writes {
		if w.attrs[propagation.AttrStatus] != "OK" || w.attrs[propagation.AttrVerb] != "ensure" ||
			w.attrs[propagation.AttrCluster] != "shop."+w.attrs[propagation.AttrCell] || w.attrs[propagation.AttrResource] != "deployments.apps" {
			return tr, fmt.Sprintf("member write span %s: attributes %v", w.id, w.attrs)
		}
		cells = append(cells, w.attrs[propagation.AttrCell])
	}
	sort.Strings(cells)
	cells = slices.Compact(cells)
	switch {
	case reconciles == 0 || statusWrites == 0 || planeStatus == 0:
		return tr, fmt.Sprintf("trace %s: %d reconciles, %d status writes, %d plane status spans: want each", traceID, reconciles, statusWrites, planeStatus)
	case !slices.Equal(cells, []string{"rz00a", "rz10a", "rz20a"}):
		return tr, fmt.Sprintf("trace %s: member writes to cells %v, want rz00a, rz10a, rz20a", traceID, cells)
	}
	return tr, ""
}
