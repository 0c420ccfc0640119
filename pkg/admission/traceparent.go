package admission

import (
	"context"
	"io"

	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"

	"github.com/cellfed/cellfed/pkg/apis/types"
	"github.com/cellfed/cellfed/pkg/tracing"
)

// TraceparentPluginName is the admission plugin that records a traced
// write's trace in the federated object (tracing.Annotation), so that
// the controller's reconcile joins the trace of the write that caused it.
const TraceparentPluginName = "CellfedTraceparent"

// RegisterTraceparent adds the traceparent plugin to plugins.
func RegisterTraceparent(plugins *admission.Plugins) {
	plugins.Register(TraceparentPluginName, func(io.Reader) (admission.Interface, error) {
		return &traceparentPlugin{Handler: admission.NewHandler(admission.Create, admission.Update)}, nil
	})
}

// traceparentPlugin sets tracing.Annotation on creates and updates of
// federated objects (types.kubefed.io) and of the native objects a
// PropagationPolicy may place (traced): only with --tracing-config-file,
// and only when the request is sampled. Otherwise it changes nothing.
// The policy controller carries a native object's annotation to the
// federated object it makes, so the release joins the native write's
// trace.
type traceparentPlugin struct {
	*admission.Handler
}

var _ admission.MutationInterface = &traceparentPlugin{}

func (p *traceparentPlugin) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetSubresource() != "" || !traced(a.GetResource().GroupResource()) {
		return nil
	}
	if !trace.SpanFromContext(ctx).IsRecording() {
		return nil // tracing off, or this request is not sampled
	}
	obj, err := meta.Accessor(a.GetObject())
	if err != nil {
		return nil
	}
	var old string
	if o, err := meta.Accessor(a.GetOldObject()); err == nil && a.GetOldObject() != nil {
		old = o.GetAnnotations()[tracing.Annotation]
	}
	ann := obj.GetAnnotations()
	next := traceparentAfter(old, ann[tracing.Annotation], tracing.Traceparent(ctx))
	if next == ann[tracing.Annotation] {
		return nil
	}
	if ann == nil {
		ann = map[string]string{}
	}
	ann[tracing.Annotation] = next
	obj.SetAnnotations(ann)
	return nil
}

// tracedNative are the native resources the plane stores for policies to
// place (docs/native-objects.md), whose writes start a release's trace.
var tracedNative = sets.New(
	schema.GroupResource{Resource: "configmaps"},
	schema.GroupResource{Resource: "secrets"},
	schema.GroupResource{Resource: "services"},
	schema.GroupResource{Resource: "serviceaccounts"},
	schema.GroupResource{Resource: "persistentvolumeclaims"},
	schema.GroupResource{Group: "apps", Resource: "deployments"},
	schema.GroupResource{Group: "apps", Resource: "statefulsets"},
	schema.GroupResource{Group: "apps", Resource: "daemonsets"},
	schema.GroupResource{Group: "apps", Resource: "replicasets"},
	schema.GroupResource{Group: "batch", Resource: "jobs"},
	schema.GroupResource{Group: "batch", Resource: "cronjobs"},
	schema.GroupResource{Group: "networking.k8s.io", Resource: "ingresses"},
	schema.GroupResource{Group: "networking.k8s.io", Resource: "networkpolicies"},
	schema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"},
	schema.GroupResource{Group: "autoscaling", Resource: "horizontalpodautoscalers"},
)

// traced reports whether writes of gr carry their trace in the object:
// federated objects, and the native objects a policy may place.
func traced(gr schema.GroupResource) bool {
	return gr.Group == types.GroupName || tracedNative.Has(gr)
}

// traceparentAfter is the annotation a traced write leaves: the writer's
// own value when the write sets or changes it, else the request's trace
// (request), else what the object holds.
func traceparentAfter(old, written, request string) string {
	switch {
	case written != "" && written != old:
		return written
	case request != "":
		return request
	}
	return written
}
