package propagation

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	typesv1b2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
	"github.com/cellfed/cellfed/pkg/conversion"
)

// The controller reads and writes federated objects in the version the
// plane stores, v1beta2 (Type.Stored): no request of the controller costs
// the plane a conversion webhook call (a v1beta1 write costs about 8: the
// request, the stored object, and the managedFields of each version; a
// v1beta1 watch one per event). Where the controller thinks in KubeFed's
// terms (cluster names, v1beta1 placement and overrides, the records'
// hashes and owner references) it reads the object's v1beta1 view,
// computed in-process by the webhook's own pure functions
// (conversion.V1beta1View), and the placement mask straight from
// spec.placementMask.

// view is KubeFed's (v1beta1) view of a stored object, sharing the parts
// conversion leaves alone with it: read-only.
func (c *Controller) view(stored *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	v, err := conversion.V1beta1View(stored.Object)
	if err != nil {
		return nil, fmt.Errorf("%s %s: KubeFed's view: %w", c.typ.FederatedKind, stored.GetName(), err)
	}
	return &unstructured.Unstructured{Object: v}, nil
}

func (c *Controller) resource(namespace string) dynamic.ResourceInterface {
	if c.typ.Namespaced {
		return c.env.Plane.Resource(c.typ.Stored).Namespace(namespace)
	}
	return c.env.Plane.Resource(c.typ.Stored)
}

// updateStatus writes status (KubeFed's shape, computed from the view) as
// the stored object's status, converted in-process.
// It returns the object the write made.
func (c *Controller) updateStatus(ctx context.Context, stored *unstructured.Unstructured, status map[string]any) (*unstructured.Unstructured, error) {
	if c.typ.Stored.Version == typesv1b2.Version {
		conversion.StatusToV1beta2(stored.Object, status)
	}
	// A shallow copy: the status subresource reads only metadata and
	// status of what it is sent.
	obj := &unstructured.Unstructured{Object: maps.Clone(stored.Object)}
	obj.Object["status"] = status
	return c.resource(stored.GetNamespace()).UpdateStatus(ctx, obj, metav1.UpdateOptions{})
}

// setFinalizer adds (or removes) the sync finalizer with a merge patch of
// metadata guarded by the object's resourceVersion, and returns the
// object as the informer shows it next.
func (c *Controller) setFinalizer(ctx context.Context, stored *unstructured.Unstructured, add bool) (*unstructured.Unstructured, error) {
	fins := slices.DeleteFunc(slices.Clone(stored.GetFinalizers()), func(f string) bool { return f == Finalizer })
	if add {
		fins = append(fins, Finalizer)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": stored.GetResourceVersion(), "finalizers": fins}})
	if err != nil {
		return nil, err
	}
	patched, err := c.resource(stored.GetNamespace()).Patch(ctx, stored.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return nil, err
	}
	patched.SetManagedFields(nil) // as the informer's transform does
	return patched, nil
}

// finalizerPatches remembers, in each object's state, the finalizer
// patch the cache has not shown yet.
type finalizerPatches struct {
	objs *objects
}

type finalizerPatch struct {
	resourceVersion string
	at              time.Time
}

// finalizerPatchPatience bounds how long a reconcile waits for the cache
// to show a finalizer patch before it patches again.
const finalizerPatchPatience = 10 * time.Second

func (f *finalizerPatches) wrote(key, rv string) {
	f.objs.update(key, func(s *state) { s.finalizer = finalizerPatch{resourceVersion: rv, at: time.Now()} })
}

func (f *finalizerPatches) forget(key string) {
	f.objs.update(key, func(s *state) { s.finalizer = finalizerPatch{} })
}

// pending reports whether a finalizer patch of key is newer than the
// cached resourceVersion cachedRV (and recent).
func (f *finalizerPatches) pending(key, cachedRV string) (pending bool) {
	f.objs.update(key, func(s *state) {
		p := s.finalizer
		if p.at.IsZero() {
			return
		}
		if time.Since(p.at) > finalizerPatchPatience || !olderResourceVersion(cachedRV, p.resourceVersion) {
			s.finalizer = finalizerPatch{}
			return
		}
		pending = true
	})
	return pending
}

// olderResourceVersion compares two resourceVersions of one object as the
// numbers etcd and kine make them; anything else counts as not older.
func olderResourceVersion(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x < y
}
