package rolloutcontroller

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cellfed/cellfed/pkg/rollout"
	"github.com/cellfed/cellfed/pkg/tracing"
)

func TestTraceStep(t *testing.T) {
	const release = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, tc := range []struct {
		name      string
		step      rollout.Step
		annotated string
		spans     int
		link      string // the linked trace, "" for none
	}{
		{name: "advance links the release", step: rollout.Advance, annotated: release, spans: 1, link: "0af7651916cd43dd8448eb211c80319c"},
		{name: "finish without a traced release", step: rollout.Finish, spans: 1},
		{name: "wait is no step", step: rollout.Wait, annotated: release},
		{name: "pause releases nothing", step: rollout.Pause, annotated: release},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			c := &Controller{opts: Options{Tracer: tp.Tracer("test")}, resource: schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta2", Resource: "federateddeployments"}}
			obj := &unstructured.Unstructured{Object: map[string]any{}}
			if tc.annotated != "" {
				obj.SetAnnotations(map[string]string{tracing.Annotation: tc.annotated})
			}
			ctx, end := c.traceStep(context.Background(), "shop/web", obj, rollout.Decision{Step: tc.step, Mask: []string{"rz00a"}})
			if tc.spans > 0 && tracing.Traceparent(ctx) == "" {
				t.Error("the step's write carries no trace")
			}
			end()
			spans := rec.Ended()
			if len(spans) != tc.spans {
				t.Fatalf("%d spans, want %d", len(spans), tc.spans)
			}
			if tc.spans == 0 {
				return
			}
			s := spans[0]
			if s.Name() != SpanStep || s.Parent().IsValid() {
				t.Errorf("span %s with parent %v: want a new root %s", s.Name(), s.Parent(), SpanStep)
			}
			var linked string
			if len(s.Links()) > 0 {
				linked = s.Links()[0].SpanContext.TraceID().String()
			}
			if linked != tc.link {
				t.Errorf("linked trace %q, want %q", linked, tc.link)
			}
		})
	}
}
