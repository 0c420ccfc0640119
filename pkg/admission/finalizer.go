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
// to be set on create: whether a controller propagates a federated kind
// now. A Lookup without it never sets the finalizer.
type PropagationLookup interface {
	Propagating(federatedKind string) (bool, error)
}

// addSyncFinalizer sets the sync controller's finalizer on a created
// federated object of a type a controller propagates, so the controller
// does not write the object once just to add it (it still adds it to
// objects created before, while no controller ran, or through a plane
// without this plugin). No controller, no finalizer: nothing would
// remove it, and every delete would hang.
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
	propagating, err := pl.Propagating(r.Kind.Kind)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("reading the FederatedTypeConfig of %s: %w", r.Kind.Kind, err))
	}
	if propagating {
		r.Object.SetFinalizers(append(fins, SyncFinalizer))
	}
	return nil
}

// Propagating reports whether a controller propagates a federated kind:
// see propagates.
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
		if kind, _, _ := unstructured.NestedString(u.Object, "spec", "federatedType", "kind"); kind == federatedKind {
			return propagates(u), nil
		}
	}
	return false, nil
}

// propagates reports whether a FederatedTypeConfig says a controller
// propagates its type now: propagation is Enabled and a controller
// (cellfed-controller or KubeFed's, which report alike) has seen this
// generation and reports its propagation controller Running. A
// controller that dies keeps reporting Running; objects created then
// wait for a controller to be deleted, as objects it finalized before.
func propagates(ftc *unstructured.Unstructured) bool {
	p, _, _ := unstructured.NestedString(ftc.Object, "spec", "propagation")
	state, _, _ := unstructured.NestedString(ftc.Object, "status", "propagationController")
	observed, _, _ := unstructured.NestedInt64(ftc.Object, "status", "observedGeneration")
	return p == "Enabled" && state == "Running" && observed == ftc.GetGeneration()
}
