package admission

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/klog/v2"

	"github.com/cellfed/cellfed/pkg/tenancy"
)

// PluginName is the name of the in-process admission plugin.
const PluginName = "CellfedFederation"

// syncWait bounds how long a request waits for the caches after start.
const syncWait = 10 * time.Second

// Shared connects the plugin to the plane: the plugin builds the informers
// when the API server hands it clients, and the plane starts them once the
// CRDs they watch are served.
type Shared struct {
	FederationNamespace string
	Informers           *Informers
	// PlaneAddresses are the plane's own serving addresses (host:port),
	// which no registration may give as its member's endpoint.
	PlaneAddresses []string
}

// Register adds the plugin to plugins.
func Register(plugins *admission.Plugins, shared *Shared) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) {
		return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update, admission.Delete), shared: shared}, nil
	})
}

// Plugin runs the Admitter inside cellfed-apiserver.
type Plugin struct {
	*admission.Handler
	shared   *Shared
	dynamic  dynamic.Interface
	informer informers.SharedInformerFactory
	admitter *Admitter
}

var (
	_ admission.MutationInterface                  = &Plugin{}
	_ admission.ValidationInterface                = &Plugin{}
	_ initializer.WantsDynamicClient               = &Plugin{}
	_ initializer.WantsExternalKubeInformerFactory = &Plugin{}
	_ admission.InitializationValidator            = &Plugin{}
)

func (p *Plugin) SetDynamicClient(c dynamic.Interface) { p.dynamic = c; p.build() }

func (p *Plugin) SetExternalKubeInformerFactory(f informers.SharedInformerFactory) {
	p.informer = f
	p.build()
}

func (p *Plugin) build() {
	if p.dynamic == nil || p.informer == nil || p.admitter != nil {
		return
	}
	ns := p.informer.Core().V1().Namespaces()
	p.shared.Informers = NewInformers(p.dynamic, ns.Lister(), ns.Informer().HasSynced, p.shared.FederationNamespace)
	p.admitter = &Admitter{Lookup: p.shared.Informers, FederationNamespace: p.shared.FederationNamespace}
}

// ValidateInitialization fails the start when the plane did not wire the
// plugin.
func (p *Plugin) ValidateInitialization() error {
	if p.admitter == nil {
		return errors.New(PluginName + ": missing dynamic client or informer factory")
	}
	return nil
}

func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	r, ok, err := p.request(ctx, a)
	if !ok || err != nil {
		return err
	}
	return p.admitter.Mutate(r)
}

func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	r, ok, err := p.request(ctx, a)
	if !ok || err != nil {
		return err
	}
	if err := p.admitter.Validate(r); err != nil {
		return err
	}
	warnings, err := p.admitter.Warnings(r)
	if err != nil {
		// A warning that cannot be computed blocks nothing.
		klog.ErrorS(err, "Computing admission warnings", "kind", r.Kind.Kind, "name", r.Name)
	}
	for _, w := range warnings {
		warning.AddWarning(ctx, "", w)
	}
	return nil
}

// request turns attributes into a Request, when admission handles the
// kind, once the caches are synced.
func (p *Plugin) request(ctx context.Context, a admission.Attributes) (Request, bool, error) {
	if !Handles(a.GetKind().GroupKind()) {
		return Request{}, false, nil
	}
	old, hasOld := asUnstructured(a.GetOldObject())
	if a.GetOperation() == admission.Delete {
		// Only deleting a Cell has a rule; its validation reads the
		// object being deleted (there is none for the mutating pass).
		if a.GetKind().GroupKind() != cellKind || !hasOld {
			return Request{}, false, nil
		}
	}
	obj, ok := asUnstructured(a.GetObject())
	if !ok && a.GetOperation() != admission.Delete {
		return Request{}, false, nil
	}
	if a.GetKind().GroupKind() == namespaceKind {
		// Only tenancy labels of a namespace and its Pod Security level
		// have rules; the plane's own
		// namespaces are created (without them) before the caches load.
		var oldLabels map[string]string
		if hasOld {
			oldLabels = old.GetLabels()
		}
		if !tenancy.Changed(oldLabels, obj.GetLabels()) && oldLabels[tenancy.LabelPodSecurity] == obj.GetLabels()[tenancy.LabelPodSecurity] {
			return Request{}, false, nil
		}
	}
	if !p.shared.Informers.HasSynced() {
		waitCtx, cancel := context.WithTimeout(ctx, syncWait)
		defer cancel()
		if !p.shared.Informers.WaitForSync(waitCtx) {
			return Request{}, false, apierrors.NewServiceUnavailable(fmt.Sprintf("%s: the plane is still loading cells and clusters; retry in a moment", PluginName))
		}
	}
	r := Request{
		Operation:   Operation(a.GetOperation()),
		Kind:        a.GetKind(),
		Resource:    a.GetResource().GroupResource(),
		Namespace:   a.GetNamespace(),
		Name:        a.GetName(),
		SubResource: a.GetSubresource(),
		Object:      obj,
	}
	if hasOld {
		r.OldObject = old
	}
	if u := a.GetUserInfo(); u != nil {
		r.User, r.Groups = u.GetName(), u.GetGroups()
	}
	r.FieldManager = fieldManagerOf(a.GetOperationOptions())
	if info, ok := genericapirequest.RequestInfoFrom(ctx); ok {
		r.Replace = info.Verb == "update"
	}
	return r, true, nil
}

// asUnstructured returns custom resources as they are, and the metadata
// of built-in objects (Namespaces: admission reads their labels).
func asUnstructured(obj runtime.Object) (*unstructured.Unstructured, bool) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u, true
	}
	if obj == nil {
		return nil, false
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, false
	}
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	u.SetName(m.GetName())
	u.SetNamespace(m.GetNamespace())
	u.SetLabels(m.GetLabels())
	u.SetAnnotations(m.GetAnnotations())
	u.SetDeletionTimestamp(m.GetDeletionTimestamp())
	return u, true
}

// fieldManagerOf is the field manager a request's options name.
func fieldManagerOf(opts runtime.Object) string {
	switch o := opts.(type) {
	case *metav1.CreateOptions:
		return o.FieldManager
	case *metav1.UpdateOptions:
		return o.FieldManager
	case *metav1.PatchOptions:
		return o.FieldManager
	}
	return ""
}
