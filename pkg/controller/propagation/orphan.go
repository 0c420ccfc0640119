package propagation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/cellfed/cellfed/pkg/controller/clusters"
)

// KubeFed's managed-label rule: a member object labelled
// kubefed.io/managed=true whose federated object is gone is no longer
// managed by anyone, so the label — and nothing else — comes off it (as
// KubeFed's sync controller does for a "possible orphan"). The object
// itself stays: deleting is decided by a federated object's deletion,
// which the finalizer carries out before the federated object goes.

// orphanReleases decides, from what each member's cache holds under a
// federated object's key once that object is gone, the members whose
// object loses the managed label: those holding it labelled
// managed=true and not being deleted (KubeFed leaves an object in
// deletion alone). members maps a member key to its cached object (nil
// when it holds none). The result is sorted. It is a pure function.
func orphanReleases(members map[string]*unstructured.Unstructured) []string {
	var out []string
	for m, obj := range members {
		if obj == nil || obj.GetDeletionTimestamp() != nil {
			continue
		}
		if obj.GetLabels()[clusters.ManagedLabel] == "true" {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

// targetOfKey is the member object's namespace and name for the key of a
// federated object of the type (see targetName).
func (t *Type) targetOfKey(key string) (string, string, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return "", "", err
	}
	switch {
	case t.IsNamespace():
		return "", ns, nil
	case t.Namespaced:
		return ns, name, nil
	}
	return "", name, nil
}

// releaseOrphans applies the managed-label rule to the federated object
// key, which the plane's cache no longer holds: every ready member whose
// cache holds the member object labelled managed=true gets the label
// removed. Before any write the plane is asked directly, so a federated
// object the cache has not seen yet (just created, through another
// controller) never loses its members' label.
func (c *Controller) releaseOrphans(ctx context.Context, key string) error {
	ns, name, err := c.typ.targetOfKey(key)
	if err != nil {
		return fmt.Errorf("key %q: %w", key, err)
	}
	byKey := map[string]*clusters.Member{}
	held := map[string]*unstructured.Unstructured{}
	for _, cl := range c.env.Clusters.List() {
		m := cl.Member
		if m == nil || !m.Ready() {
			continue
		}
		if _, seen := byKey[m.Key()]; seen {
			continue
		}
		byKey[m.Key()] = m
		obj, err := m.Get(c.typ.Target, ns, name)
		if err != nil {
			continue // not loaded: its load enqueues what it holds
		}
		held[m.Key()] = obj
	}
	release := orphanReleases(held)
	if len(release) == 0 {
		return nil
	}
	fedNS, fedName, _ := cache.SplitMetaNamespaceKey(key)
	plane := c.env.Plane.Resource(c.typ.Stored)
	var getErr error
	if fedNS != "" {
		_, getErr = plane.Namespace(fedNS).Get(ctx, fedName, metav1.GetOptions{})
	} else {
		_, getErr = plane.Get(ctx, fedName, metav1.GetOptions{})
	}
	switch {
	case getErr == nil:
		return nil // the cache is behind: its event reconciles the object
	case !apierrors.IsNotFound(getErr):
		return fmt.Errorf("checking that %s %s is gone from the plane: %w", c.typ.Name, key, getErr)
	}
	logger := klog.FromContext(ctx)
	var errs []error
	for _, mk := range release {
		if err := c.removeManagedLabel(ctx, byKey[mk], held[mk]); err != nil {
			errs = append(errs, fmt.Errorf("member %s: %w", mk, err))
			continue
		}
		logger.V(2).Info("Removed the managed label of an object whose federated object is gone", "type", c.typ.Name, "key", key, "member", mk)
	}
	if len(errs) > 0 {
		return fmt.Errorf("removing the label %s from %s %s: %w", clusters.ManagedLabel, c.typ.TargetKind, strings.TrimPrefix(ns+"/"+name, "/"), errors.Join(errs...))
	}
	return nil
}

// removeManagedLabel takes the managed label off obj on member m and
// writes nothing else; the resourceVersion makes the patch fail when the
// cache was behind (the retry reads the newer copy).
func (c *Controller) removeManagedLabel(ctx context.Context, m *clusters.Member, obj *unstructured.Unstructured) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": obj.GetResourceVersion(),
		"labels":          map[string]any{clusters.ManagedLabel: nil},
	}})
	if err != nil {
		return err
	}
	actx, cancel := context.WithTimeout(ctx, c.opts.ClusterTimeout)
	defer cancel()
	if err := m.Acquire(actx); err != nil {
		return err
	}
	defer m.Release()
	_, err = c.memberResource(m, obj.GetNamespace()).Patch(actx, obj.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
