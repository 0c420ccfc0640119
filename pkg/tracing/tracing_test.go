package tracing

import (
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       string
		endpoint string
		rate     int32
		err      string
	}{
		{name: "kube-apiserver's v1", in: "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: 127.0.0.1:4317\nsamplingRatePerMillion: 100\n", endpoint: "127.0.0.1:4317", rate: 100},
		{name: "v1beta1", in: "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: TracingConfiguration\nsamplingRatePerMillion: 1000000\n", rate: 1000000},
		{name: "another kind", in: "apiVersion: apiserver.config.k8s.io/v1\nkind: EgressSelectorConfiguration\n", err: "kind TracingConfiguration"},
		{name: "another group", in: "apiVersion: example.com/v1\nkind: TracingConfiguration\n", err: "kind TracingConfiguration"},
		{name: "unknown field", in: "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpont: x:1\n", err: "unknown field"},
		{name: "rate above a million", in: "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nsamplingRatePerMillion: 1000001\n", err: "samplingRatePerMillion"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var endpoint string
			if cfg.Endpoint != nil {
				endpoint = *cfg.Endpoint
			}
			var rate int32
			if cfg.SamplingRatePerMillion != nil {
				rate = *cfg.SamplingRatePerMillion
			}
			if endpoint != tc.endpoint || rate != tc.rate {
				t.Errorf("endpoint %q rate %d, want %q %d", endpoint, rate, tc.endpoint, tc.rate)
			}
		})
	}
}

func TestNewProviderOff(t *testing.T) {
	tp, err := NewProvider(context.Background(), "", "test")
	if tp != nil || err != nil {
		t.Fatalf("NewProvider without a file = %v, %v: want nil, nil (tracing off)", tp, err)
	}
}

func TestTraceparentRoundTrip(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("test").Start(context.Background(), "write")
	defer span.End()
	value := Traceparent(ctx)
	if !strings.HasPrefix(value, "00-"+span.SpanContext().TraceID().String()+"-"+span.SpanContext().SpanID().String()) {
		t.Fatalf("traceparent %q does not name the span %v", value, span.SpanContext())
	}
	back, ok := FromTraceparent(context.Background(), value)
	if !ok {
		t.Fatalf("FromTraceparent(%q) not ok", value)
	}
	if _, ok := FromTraceparent(back, "garbage"); ok {
		t.Error("FromTraceparent accepted garbage")
	}
	if Traceparent(context.Background()) != "" {
		t.Error("Traceparent of a context without a span is not empty")
	}
}
