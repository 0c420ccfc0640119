// Package servicestore stores Services on the plane without allocating
// anything: no cluster IP, node port or health-check node port comes from
// a range the plane would pretend to own. A Service is kept as it was
// written (spec.clusterIP empty, "None" or an address the app team chose)
// for the member clusters it is placed on to allocate. Validation,
// defaulting, printing and server-side apply are Kubernetes' own
// (k8s.io/kubernetes/pkg/registry/core/service); only the checks that
// need an allocated value are left out (AllocationErrors).
package servicestore

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/printers"
	printersinternal "k8s.io/kubernetes/pkg/printers/internalversion"
	printerstorage "k8s.io/kubernetes/pkg/printers/storage"
	svcreg "k8s.io/kubernetes/pkg/registry/core/service"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// REST is the storage of services.
type REST struct {
	*genericregistry.Store
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
)

// ShortNames are kube-apiserver's.
func (r *REST) ShortNames() []string { return []string{"svc"} }

// Categories are kube-apiserver's.
func (r *REST) Categories() []string { return []string{"all"} }

// NewREST returns the storage of services and of services/status.
func NewREST(optsGetter generic.RESTOptionsGetter) (*REST, *StatusREST, error) {
	strategy := storeStrategy{RESTCreateUpdateStrategy: svcreg.Strategy, ResetFieldsStrategy: svcreg.Strategy}
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &api.Service{} },
		NewListFunc:               func() runtime.Object { return &api.ServiceList{} },
		PredicateFunc:             svcreg.Matcher,
		DefaultQualifiedResource:  api.Resource("services"),
		SingularQualifiedResource: api.Resource("service"),
		ReturnDeletedObject:       true,

		CreateStrategy:      strategy,
		UpdateStrategy:      strategy,
		DeleteStrategy:      svcreg.Strategy,
		ResetFieldsStrategy: svcreg.Strategy,

		BeginCreate: func(_ context.Context, obj runtime.Object, _ *metav1.CreateOptions) (genericregistry.FinishFunc, error) {
			Normalize(obj.(*api.Service), nil)
			return noop, nil
		},
		BeginUpdate: func(_ context.Context, obj, old runtime.Object, _ *metav1.UpdateOptions) (genericregistry.FinishFunc, error) {
			Normalize(obj.(*api.Service), old.(*api.Service))
			return noop, nil
		},

		TableConvertor: printerstorage.TableConvertor{TableGenerator: printers.NewTableGenerator().With(printersinternal.AddHandlers)},
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: svcreg.GetAttrs}); err != nil {
		return nil, nil, err
	}
	status := *store
	status.UpdateStrategy = svcreg.StatusStrategy
	status.ResetFieldsStrategy = svcreg.StatusStrategy
	status.BeginCreate, status.BeginUpdate = nil, nil
	return &REST{store}, &StatusREST{store: &status}, nil
}

func noop(context.Context, bool) {}

// Normalize keeps spec.clusterIP and spec.clusterIPs in step the way
// kube-apiserver does before it allocates: a create that sets only
// clusterIP (every client but the newest, and "None" for a headless
// Service) gets clusterIPs from it; an update that leaves both out keeps
// the stored ones, as re-applying a manifest does in Kubernetes. old is
// nil on create. Nothing is allocated.
func Normalize(svc, old *api.Service) {
	if old != nil && svc.Spec.Type != api.ServiceTypeExternalName && svc.Spec.ClusterIP == "" && len(svc.Spec.ClusterIPs) == 0 {
		svc.Spec.ClusterIP = old.Spec.ClusterIP
		svc.Spec.ClusterIPs = old.Spec.ClusterIPs
	}
	if svc.Spec.ClusterIP != "" && len(svc.Spec.ClusterIPs) == 0 {
		svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
	}
}

// storeStrategy is Kubernetes' service strategy with AllocationErrors
// left out of validation.
type storeStrategy struct {
	rest.RESTCreateUpdateStrategy
	rest.ResetFieldsStrategy
}

func (s storeStrategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	return withoutAllocationErrors(s.RESTCreateUpdateStrategy.Validate(ctx, obj))
}

func (s storeStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return withoutAllocationErrors(s.RESTCreateUpdateStrategy.ValidateUpdate(ctx, obj, old))
}

// AllocationErrors are the validation errors kube-apiserver can only
// avoid by allocating: a LoadBalancer Service with externalTrafficPolicy
// Local needs a health-check node port, which the member cluster
// allocates.
var AllocationErrors = []struct {
	Type  field.ErrorType
	Field string
}{
	{field.ErrorTypeRequired, "spec.healthCheckNodePort"},
}

func withoutAllocationErrors(errs field.ErrorList) field.ErrorList {
	out := errs[:0:0]
	for _, e := range errs {
		allocation := false
		for _, a := range AllocationErrors {
			allocation = allocation || (e.Type == a.Type && e.Field == a.Field)
		}
		if !allocation {
			out = append(out, e)
		}
	}
	return out
}

// StatusREST is the storage of services/status (written back from the
// members by a controller).
type StatusREST struct {
	store *genericregistry.Store
}

// New returns an empty Service.
func (r *StatusREST) New() runtime.Object { return &api.Service{} }

// Destroy does nothing: the store is shared with REST.
func (r *StatusREST) Destroy() {}

// Get returns the Service (patches of the status read it).
func (r *StatusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// Update changes the status only; it never creates.
func (r *StatusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

// ConvertToTable prints like services.
func (r *StatusREST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}

// GetResetFields is the status strategy's.
func (r *StatusREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}
