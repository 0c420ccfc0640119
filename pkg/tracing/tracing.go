// Package tracing is cellfed's OpenTelemetry tracing: the tracing
// configuration file (kube-apiserver's TracingConfiguration, read the same
// way by cellfed-controller), the tracer provider that exports to an OTLP
// gRPC collector, the transport that carries a trace to the plane and the
// members, and the cellfed.io/traceparent annotation that carries a
// write's trace from the plane to the controller's reconcile.
//
// Off by default: without a configuration file there is no exporter, the
// tracer is nil and no annotation is written.
package tracing

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.39.0"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/transport"
	cbtracing "k8s.io/component-base/tracing"
	tracingapi "k8s.io/component-base/tracing/api/v1"
	"sigs.k8s.io/yaml"
)

// Annotation holds the W3C traceparent of the last write of a federated
// object: the plane sets it on writes it traces, and the controller's
// reconcile of the object joins that trace. A user may set it too.
const Annotation = "cellfed.io/traceparent"

// ConfigGroup is the API group of kube-apiserver's TracingConfiguration;
// the file may use any of its versions.
const ConfigGroup = "apiserver.config.k8s.io"

var configVersions = map[string]bool{ConfigGroup + "/v1": true, ConfigGroup + "/v1beta1": true, ConfigGroup + "/v1alpha1": true}

// configFile is kube-apiserver's --tracing-config-file: a
// TracingConfiguration with endpoint and samplingRatePerMillion.
type configFile struct {
	APIVersion                      string `json:"apiVersion"`
	Kind                            string `json:"kind"`
	tracingapi.TracingConfiguration `json:",inline"`
}

// ParseConfig decodes and validates a tracing configuration file's content.
func ParseConfig(data []byte) (*tracingapi.TracingConfiguration, error) {
	var f configFile
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, fmt.Errorf("decoding the tracing configuration: %w", err)
	}
	if !configVersions[f.APIVersion] || f.Kind != "TracingConfiguration" {
		return nil, fmt.Errorf("the tracing configuration must be kind TracingConfiguration of %s/v1 (or v1beta1, v1alpha1), not %s %q", ConfigGroup, f.Kind, f.APIVersion)
	}
	if errs := tracingapi.ValidateTracingConfiguration(&f.TracingConfiguration, nil, field.NewPath("")); len(errs) > 0 {
		return nil, fmt.Errorf("the tracing configuration: %w", errs.ToAggregate())
	}
	return &f.TracingConfiguration, nil
}

// ReadConfig reads the tracing configuration file at path.
func ReadConfig(path string) (*tracingapi.TracingConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the tracing configuration: %w", err)
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// NewProvider returns the tracer provider of the configuration file at
// path for the service named service, as kube-apiserver builds its own:
// OTLP over gRPC to the configured endpoint, sampling
// samplingRatePerMillion of the traces this process starts and every
// trace a sampled caller started. An empty path returns nil: tracing off.
func NewProvider(ctx context.Context, path, service string) (cbtracing.TracerProvider, error) {
	if path == "" {
		return nil, nil
	}
	cfg, err := ReadConfig(path)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	tp, err := cbtracing.NewProvider(ctx, cfg, nil, []resource.Option{
		resource.WithAttributes(semconv.ServiceName(service), semconv.ServiceInstanceID(host)),
	})
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	return tp, nil
}

// Transport wraps a client's transport so that requests made within a
// trace carry it (traceparent) and get a client span. Requests made
// outside any trace (watches, health probes) go out as they are.
func Transport(tp trace.TracerProvider) transport.WrapperFunc {
	return func(rt http.RoundTripper) http.RoundTripper {
		return otelhttp.NewTransport(rt,
			otelhttp.WithTracerProvider(tp),
			otelhttp.WithPropagators(propagators),
			otelhttp.WithFilter(func(r *http.Request) bool {
				return trace.SpanContextFromContext(r.Context()).IsValid()
			}),
		)
	}
}

var propagators = propagation.TraceContext{}

// Traceparent is the W3C traceparent of the span in ctx ("" when ctx
// holds no valid span).
func Traceparent(ctx context.Context) string {
	carrier := propagation.MapCarrier{}
	propagators.Inject(ctx, carrier)
	return carrier["traceparent"]
}

// FromTraceparent returns ctx with the remote span context traceparent
// names; ok is false when traceparent is not a valid one.
func FromTraceparent(ctx context.Context, traceparent string) (context.Context, bool) {
	if traceparent == "" {
		return ctx, false
	}
	sc := trace.SpanContextFromContext(propagators.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent}))
	if !sc.IsValid() {
		return ctx, false
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc), true
}
