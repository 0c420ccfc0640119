package propagation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	fedtypes "github.com/cellfed/cellfed/pkg/apis/types"
	typesv1b2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
	"github.com/cellfed/cellfed/pkg/conversion"
)

// The controller reads federated objects in v1beta1, KubeFed's version,
// but the plane stores them in v1beta2: a v1beta1 write costs the plane
// about 8 conversion webhook calls (the request, the stored object, and
// the managedFields of each version), a v1beta2 write none or one. So
// the controller writes in v1beta2 — the status converted in-process with
// the webhook's own functions, finalizers as a metadata patch — whenever
// the plane serves v1beta2 for the type (every types.kubefed.io type of a
// cellfed plane; a KubeFed-shaped CRD elsewhere falls back to v1beta1
// for good on the first 404).

// storageVersion says whether the type's writes go to v1beta2.
func (c *Controller) storageVersion() bool {
	return c.typ.Federated.Group == fedtypes.GroupName && !c.v1beta1Writes.Load()
}

func (c *Controller) resourceV2(namespace string) dynamic.ResourceInterface {
	gvr := c.typ.Federated
	gvr.Version = typesv1b2.Version
	if c.typ.Namespaced {
		return c.env.Plane.Resource(gvr).Namespace(namespace)
	}
	return c.env.Plane.Resource(gvr)
}

// notServed reports whether err says the version is not served at all
// (a 404 about the resource, not about the object).
func notServed(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d == nil || d.Name == ""
}

func (c *Controller) fallBack(err error) {
	if c.v1beta1Writes.CompareAndSwap(false, true) {
		klog.InfoS("The plane does not serve v1beta2 for this type: writing v1beta1", "type", c.typ.Name, "err", err)
	}
}

// updateStatus writes obj's status (obj is v1beta1, a copy the caller
// owns).
func (c *Controller) updateStatus(ctx context.Context, obj *unstructured.Unstructured) error {
	if c.storageVersion() {
		v2 := obj.DeepCopy()
		err := conversion.Convert(v2.Object, fedtypes.GroupName+"/"+typesv1b2.Version)
		if err != nil {
			return fmt.Errorf("converting the status to v1beta2: %w", err)
		}
		_, err = c.resourceV2(obj.GetNamespace()).UpdateStatus(ctx, v2, metav1.UpdateOptions{})
		if !notServed(err) {
			return err
		}
		c.fallBack(err)
	}
	_, err := c.resource(obj.GetNamespace()).UpdateStatus(ctx, obj, metav1.UpdateOptions{})
	return err
}

// setFinalizer adds (or removes) the sync finalizer with a merge patch of
// metadata guarded by the object's resourceVersion, and returns the
// object as the informer would show it next (v1beta1).
func (c *Controller) setFinalizer(ctx context.Context, fed *unstructured.Unstructured, add bool) (*unstructured.Unstructured, error) {
	fins := slices.DeleteFunc(slices.Clone(fed.GetFinalizers()), func(f string) bool { return f == Finalizer })
	if add {
		fins = append(fins, Finalizer)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": fed.GetResourceVersion(), "finalizers": fins}})
	if err != nil {
		return nil, err
	}
	if c.storageVersion() {
		patched, err := c.resourceV2(fed.GetNamespace()).Patch(ctx, fed.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
		if !notServed(err) {
			if err != nil {
				return nil, err
			}
			// The rest of the reconcile reads v1beta1: the object as it
			// was with the finalizers and resourceVersion written (only
			// metadata changed).
			out := fed.DeepCopy()
			out.SetFinalizers(fins)
			out.SetResourceVersion(patched.GetResourceVersion())
			return out, nil
		}
		c.fallBack(err)
	}
	return c.resource(fed.GetNamespace()).Patch(ctx, fed.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
}

// finalizerPatches remembers the finalizer patches the cache has not
// shown yet.
type finalizerPatches struct {
	mu sync.Mutex
	m  map[string]finalizerPatch
}

type finalizerPatch struct {
	resourceVersion string
	at              time.Time
}

// finalizerPatchPatience bounds how long a reconcile waits for the cache
// to show a finalizer patch before it patches again.
const finalizerPatchPatience = 10 * time.Second

func (f *finalizerPatches) wrote(key, rv string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m[key] = finalizerPatch{resourceVersion: rv, at: time.Now()}
}

func (f *finalizerPatches) forget(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, key)
}

// pending reports whether a finalizer patch of key is newer than the
// cached resourceVersion cachedRV (and recent).
func (f *finalizerPatches) pending(key, cachedRV string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.m[key]
	if !ok {
		return false
	}
	if time.Since(p.at) > finalizerPatchPatience || !olderResourceVersion(cachedRV, p.resourceVersion) {
		delete(f.m, key)
		return false
	}
	return true
}

// olderResourceVersion compares two resourceVersions of one object as the
// numbers etcd and kine make them; anything else counts as not older.
func olderResourceVersion(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x < y
}
