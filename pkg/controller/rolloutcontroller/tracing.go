package rolloutcontroller

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cellfed/cellfed/pkg/rollout"
	"github.com/cellfed/cellfed/pkg/tracing"
)

// SpanStep is the span of a rollout step that releases a batch.
const SpanStep = "cellfed.rollout.step"

// noSpan is the span without tracing: it does nothing.
var noSpan = trace.SpanFromContext(context.Background())

// startStep starts the span of the step d of obj's rollout: a new trace,
// linked to the trace of the object's last traced write (its release).
// The step's write to the plane carries it, so the plane records it in
// the object (tracing.Annotation) and the reconciles that write the
// batch to its members, with their member writes, are in this trace.
// Without a tracer it returns ctx as it is.
func (c *Controller) startStep(ctx context.Context, key string, obj *unstructured.Unstructured, d rollout.Decision) (context.Context, trace.Span) {
	if c.opts.Tracer == nil {
		return ctx, noSpan
	}
	opts := []trace.SpanStartOption{
		trace.WithNewRoot(),
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			attribute.String("cellfed.io/key", key),
			attribute.String("cellfed.io/resource", c.resource.GroupResource().String()),
			attribute.String("cellfed.io/step", string(d.Step)),
			attribute.StringSlice("cellfed.io/mask", d.Mask),
			attribute.String("cellfed.io/message", d.Message),
		),
	}
	if release, ok := tracing.FromTraceparent(ctx, obj.GetAnnotations()[tracing.Annotation]); ok {
		opts = append(opts, trace.WithLinks(trace.LinkFromContext(release)))
	}
	return c.opts.Tracer.Start(ctx, SpanStep, opts...)
}

// traceStep starts the span of d when it releases cells (Advance,
// Finish) and returns the context of its write and the function that
// ends it.
func (c *Controller) traceStep(ctx context.Context, key string, obj *unstructured.Unstructured, d rollout.Decision) (context.Context, func()) {
	if c.opts.Tracer == nil || (d.Step != rollout.Advance && d.Step != rollout.Finish) {
		return ctx, func() {}
	}
	ctx, span := c.startStep(ctx, key, obj, d)
	return ctx, func() { span.End() }
}
