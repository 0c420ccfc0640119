package controller

import (
	"context"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/cellfed/cellfed/pkg/tracing"
)

// startTracing turns tracing on when --tracing-config-file is set: the
// propagation controllers get a tracer, and the plane's and members'
// clients carry the trace of the requests made within one (so the plane's
// and members' API servers, when they trace, join it). It returns the
// function that flushes the spans still buffered at exit. Without the
// flag it changes nothing.
func startTracing(ctx context.Context, cfg *rest.Config, o *Options) (func(), error) {
	tp, err := tracing.NewProvider(ctx, o.TracingConfigFile, "cellfed-controller")
	if err != nil || tp == nil {
		return func() {}, err
	}
	o.Propagation.Tracer = tp.Tracer("github.com/cellfed/cellfed/pkg/controller/propagation")
	o.Rollout.Tracer = tp.Tracer("github.com/cellfed/cellfed/pkg/controller/rolloutcontroller")
	o.Clusters.Wrap = tracing.Transport(tp)
	cfg.Wrap(tracing.Transport(tp))
	klog.InfoS("Tracing on", "config", o.TracingConfigFile)
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tp.Shutdown(sctx); err != nil {
			klog.ErrorS(err, "Flushing the last spans")
		}
	}, nil
}
