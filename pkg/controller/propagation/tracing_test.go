package propagation

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cellfed/cellfed/pkg/tracing"
)

var tracedDeployments = &Type{Name: "deployments.apps", Target: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}}

// tracedObject is a federated object whose last write was traced.
func tracedObject(traceparent string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetNamespace("shop")
	u.SetName("web")
	if traceparent != "" {
		u.SetAnnotations(map[string]string{tracing.Annotation: traceparent})
	}
	return u
}

// traceReconcile makes the tracing calls of one reconcile that writes
// three members and the status, as reconcile, dispatch and writeStatus
// make them.
func traceReconcile(c *Controller, stored *unstructured.Unstructured, intents []Intent) {
	ctx, span := c.startReconcile(context.Background(), "shop/web", stored)
	for _, it := range intents {
		_, ws := c.startMemberWrite(ctx, it, it.Member)
		endMemberWrite(ws, result{status: StatusOK})
	}
	_, ss := c.startStatusWrite(ctx)
	endSpan(ss, nil)
	endSpan(span, nil)
}

var threeCells = []Intent{
	{Verb: Ensure, Member: "m0", Clusters: []string{"shop.rz00a"}, Writer: "shop.rz00a"},
	{Verb: Ensure, Member: "m1", Clusters: []string{"shop.rz10a"}, Writer: "shop.rz10a"},
	{Verb: Ensure, Member: "m2", Clusters: []string{"shop.rz20a"}, Writer: "shop.rz20a"},
}

func TestReconcileSpans(t *testing.T) {
	const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, tc := range []struct {
		name        string
		traceparent string
		wantTrace   string // "" : a new trace
		wantParent  string
	}{
		{name: "child of the traced write", traceparent: parent, wantTrace: "0af7651916cd43dd8448eb211c80319c", wantParent: "b7ad6b7169203331"},
		{name: "no annotation: a new trace", wantParent: "0000000000000000"},
		{name: "malformed annotation: a new trace", traceparent: "00-nope", wantParent: "0000000000000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sdktrace.AlwaysSample()))
			c := &Controller{typ: tracedDeployments, opts: Options{Tracer: tp.Tracer("test")}}
			traceReconcile(c, tracedObject(tc.traceparent), threeCells)
			spans := rec.Ended()
			if len(spans) != 5 {
				t.Fatalf("%d spans, want 5 (reconcile, 3 member writes, status write)", len(spans))
			}
			byName := map[string][]sdktrace.ReadOnlySpan{}
			for _, s := range spans {
				byName[s.Name()] = append(byName[s.Name()], s)
			}
			r := byName[SpanReconcile][0]
			if got := r.Parent().SpanID().String(); got != tc.wantParent {
				t.Errorf("reconcile's parent %s, want %s", got, tc.wantParent)
			}
			if tc.wantTrace != "" && r.SpanContext().TraceID().String() != tc.wantTrace {
				t.Errorf("reconcile in trace %s, want %s", r.SpanContext().TraceID(), tc.wantTrace)
			}
			var cells []string
			for _, s := range append(byName[SpanMemberWrite], byName[SpanStatusWrite]...) {
				if s.Parent().SpanID() != r.SpanContext().SpanID() {
					t.Errorf("%s's parent %s, want the reconcile %s", s.Name(), s.Parent().SpanID(), r.SpanContext().SpanID())
				}
				for _, a := range s.Attributes() {
					if a.Key == AttrCell {
						cells = append(cells, a.Value.AsString())
					}
				}
			}
			if len(cells) != 3 || cells[0] != "rz00a" || cells[1] != "rz10a" || cells[2] != "rz20a" {
				t.Errorf("member writes' cells %v, want rz00a rz10a rz20a", cells)
			}
		})
	}
}

func TestMemberWriteSpanOutcome(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	c := &Controller{typ: tracedDeployments, opts: Options{Tracer: tp.Tracer("test")}}
	_, s := c.startMemberWrite(context.Background(), threeCells[0], "member-0")
	endMemberWrite(s, result{status: StatusCreationFailed, err: errors.New("refused")})
	got := rec.Ended()[0]
	if got.Status().Description != "refused" {
		t.Errorf("status %v, want the error", got.Status())
	}
	want := map[attribute.Key]string{AttrCell: "rz00a", AttrCluster: "shop.rz00a", AttrMember: "member-0", AttrVerb: "ensure", AttrResource: "deployments.apps", AttrStatus: StatusCreationFailed}
	for _, a := range got.Attributes() {
		if w, ok := want[a.Key]; ok {
			if a.Value.AsString() != w {
				t.Errorf("%s = %q, want %q", a.Key, a.Value.AsString(), w)
			}
			delete(want, a.Key)
		}
	}
	if len(want) > 0 {
		t.Errorf("missing attributes %v", want)
	}
}

// BenchmarkReconcileTracing measures the tracing calls of one reconcile
// writing three members: off (no --tracing-config-file, the default),
// none (the same work without the calls: the baseline) and on (an SDK
// tracer sampling everything, no exporter).
func BenchmarkReconcileTracing(b *testing.B) {
	stored := tracedObject("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	b.Run("none", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ctx := context.Background()
			for range threeCells {
				_ = ctx
			}
		}
	})
	b.Run("off", func(b *testing.B) {
		c := &Controller{typ: tracedDeployments}
		b.ReportAllocs()
		for b.Loop() {
			traceReconcile(c, stored, threeCells)
		}
	})
	b.Run("on", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
		c := &Controller{typ: tracedDeployments, opts: Options{Tracer: tp.Tracer("bench")}}
		b.ReportAllocs()
		for b.Loop() {
			traceReconcile(c, stored, threeCells)
		}
	})
}
