package admission

import (
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// SyncFinalizer is KubeFed's sync controller finalizer: cellfed-controller
// and upstream KubeFed's controller both hold a federated object with it
// until its member objects are gone.
const SyncFinalizer = "kubefed.io/sync-controller"

// PropagationLookup is what a Lookup also answers when the finalizer is
// to be set on create: whether a federated kind's FederatedTypeConfig
// enables propagation. A Lookup without it never sets the finalizer.
type PropagationLookup interface {
	Propagating(federatedKind string) (bool, error)
}

// addSyncFinalizer sets the sync controller's finalizer on a created
// federated object of a type whose propagation is enabled, so the
// controller does not write the object once just to add it (it still
// adds it to objects created before, or by a plane without this plugin).
// A type that is not enabled gets none: no controller would remove it.
func (a *Admitter) addSyncFinalizer(r Request) error {
	if r.Operation != Create || !r.isFederated() || r.Object.GetDeletionTimestamp() != nil {
		return nil
	}
	pl, ok := a.Lookup.(PropagationLookup)
	if !ok {
		return nil
	}
	fins := r.Object.GetFinalizers()
	if slices.Contains(fins, SyncFinalizer) {
		return nil
	}
	enabled, err := pl.Propagating(r.Kind.Kind)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("reading the FederatedTypeConfig of %s: %w", r.Kind.Kind, err))
	}
	if enabled {
		r.Object.SetFinalizers(append(fins, SyncFinalizer))
	}
	return nil
}

// Propagating reports whether the FederatedTypeConfig of a federated kind
// exists with propagation Enabled (the one state cellfed-controller and
// KubeFed propagate in).
func (i *Informers) Propagating(federatedKind string) (bool, error) {
	list, err := i.typeConfigs.ByNamespace(i.federationNamespace).List(labels.Everything())
	if err != nil {
		return false, err
	}
	for _, o := range list {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		if kind, _, _ := unstructured.NestedString(u.Object, "spec", "federatedType", "kind"); kind != federatedKind {
			continue
		}
		p, _, _ := unstructured.NestedString(u.Object, "spec", "propagation")
		return p == "Enabled", nil
	}
	return false, nil
}
