package propagation

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/tracing"
)

// Span names and attributes of the controller's traces (Options.Tracer).
const (
	SpanReconcile   = "cellfed.reconcile"
	SpanMemberWrite = "cellfed.member.write"
	SpanStatusWrite = "cellfed.status.write"

	AttrCell     = "cellfed.io/cell"
	AttrCluster  = "cellfed.io/cluster"
	AttrMember   = "cellfed.io/member"
	AttrType     = "cellfed.io/type"
	AttrKey      = "cellfed.io/key"
	AttrVerb     = "cellfed.io/verb"
	AttrResource = "cellfed.io/resource"
	AttrStatus   = "cellfed.io/status"
)

// noSpan is the span of a controller without tracing: every call on it
// does nothing, and getting it allocates nothing.
var noSpan = trace.SpanFromContext(context.Background())

// startReconcile starts the span of one reconcile of stored, the child
// of the trace its last traced write recorded (tracing.Annotation), or
// the root of a new trace when it holds none. Without a tracer it
// returns ctx as it is.
func (c *Controller) startReconcile(ctx context.Context, key string, stored *unstructured.Unstructured) (context.Context, trace.Span) {
	if c.opts.Tracer == nil {
		return ctx, noSpan
	}
	parent, _ := tracing.FromTraceparent(ctx, stored.GetAnnotations()[tracing.Annotation])
	return c.opts.Tracer.Start(parent, SpanReconcile, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		attribute.String(AttrType, c.typ.Name),
		attribute.String(AttrKey, key),
		attribute.Int64("cellfed.io/generation", stored.GetGeneration()),
	))
}

// startMemberWrite starts the span of one intent's work on its member,
// named as metrics name it (the physical KubeFedCluster that reaches it):
// the member's requests are its children (and carry it to the member).
func (c *Controller) startMemberWrite(ctx context.Context, it Intent, member string) (context.Context, trace.Span) {
	if c.opts.Tracer == nil {
		return ctx, noSpan
	}
	cluster := it.Writer
	if cluster == "" && len(it.Clusters) > 0 {
		cluster = it.Clusters[0]
	}
	_, cell, _ := cellv1alpha1.ParseCellClusterName(cluster)
	return c.opts.Tracer.Start(ctx, SpanMemberWrite, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		attribute.String(AttrCell, cell),
		attribute.String(AttrCluster, cluster),
		attribute.String(AttrMember, member),
		attribute.String(AttrVerb, string(it.Verb)),
		attribute.String(AttrResource, c.typ.Target.GroupResource().String()),
	))
}

// endMemberWrite ends a member write's span with its outcome.
func endMemberWrite(span trace.Span, r result) {
	if !span.IsRecording() {
		span.End()
		return
	}
	span.SetAttributes(attribute.String(AttrStatus, r.status))
	endSpan(span, r.err)
}

// startStatusWrite starts the span of a status write to the plane.
func (c *Controller) startStatusWrite(ctx context.Context) (context.Context, trace.Span) {
	if c.opts.Tracer == nil {
		return ctx, noSpan
	}
	return c.opts.Tracer.Start(ctx, SpanStatusWrite, trace.WithSpanKind(trace.SpanKindInternal))
}

// endSpan ends span, marked failed when err is set.
func endSpan(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
