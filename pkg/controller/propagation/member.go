package propagation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/cellfed/cellfed/pkg/controller/clusters"
)

var namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

func (c *Controller) memberResource(m *clusters.Member, namespace string) dynamic.ResourceInterface {
	if namespace == "" {
		return m.Dynamic.Resource(c.typ.Target)
	}
	return m.Dynamic.Resource(c.typ.Target).Namespace(namespace)
}

// ensure makes the member hold d: create it when absent, update it when
// it differs, and nothing when it already matches.
func (c *Controller) ensure(ctx context.Context, fed *unstructured.Unstructured, a action, d desired, retainReplicas bool) result {
	ns, name := d.obj.GetNamespace(), d.obj.GetName()
	objKey := keyOf(fed)
	existing, err := a.member.Get(c.typ.Target, ns, name)
	if err != nil {
		return result{status: StatusClusterNotReady, keepRecord: true, retry: true}
	}
	if existing == nil {
		return c.create(ctx, fed, a, d, retainReplicas)
	}
	if c.upToDate(a.writer, objKey, d, existing) {
		return result{status: StatusOK, version: d.hash, keepRecord: true}
	}
	return c.update(ctx, a, objKey, d, existing, retainReplicas, StatusUpdateFailed)
}

// upToDate reports whether the member object is what d describes: the
// hash this controller wrote is on it and, since that write, nobody
// changed its spec (same generation; same resourceVersion for types
// without one) — or, when this process has not written it, everything d
// sets is there (a restarted controller rewrites nothing that is right).
func (c *Controller) upToDate(cluster, objKey string, d desired, existing *unstructured.Unstructured) bool {
	if existing.GetAnnotations()[HashAnnotation] != d.hash {
		return false
	}
	c.mu.Lock()
	w, ok := c.written[objKey][cluster]
	c.mu.Unlock()
	if ok && w.hash == d.hash {
		if g := existing.GetGeneration(); g > 0 && g == w.generation {
			return true
		}
		if existing.GetResourceVersion() == w.rv {
			return true
		}
	}
	if !covers(existing.Object, d.obj.Object) {
		return false
	}
	c.remember(cluster, objKey, d.hash, existing)
	return true
}

func (c *Controller) remember(cluster, objKey, hash string, obj *unstructured.Unstructured) {
	c.mu.Lock()
	if c.written[objKey] == nil {
		c.written[objKey] = map[string]memberVersion{}
	}
	c.written[objKey][cluster] = memberVersion{hash: hash, generation: obj.GetGeneration(), rv: obj.GetResourceVersion()}
	c.mu.Unlock()
}

func (c *Controller) create(ctx context.Context, fed *unstructured.Unstructured, a action, d desired, retainReplicas bool) result {
	ns := d.obj.GetNamespace()
	if err := a.member.Acquire(ctx); err != nil {
		return result{status: StatusCreationTimedOut, keepRecord: true, err: err}
	}
	created, err := c.memberResource(a.member, ns).Create(ctx, d.obj, metav1.CreateOptions{})
	if apierrors.IsNotFound(err) && ns != "" {
		// The namespace is missing in the member: create it, marked as
		// ours, and try again.
		if err = c.createNamespace(ctx, a.member, ns); err == nil {
			created, err = c.memberResource(a.member, ns).Create(ctx, d.obj, metav1.CreateOptions{})
		}
	}
	a.member.Release()
	switch {
	case err == nil:
		c.remember(a.writer, keyOf(fed), d.hash, created)
		return result{status: StatusOK, version: d.hash, keepRecord: true}
	case apierrors.IsAlreadyExists(err):
		return c.adopt(ctx, fed, a, d, retainReplicas)
	case isTimeout(ctx, err):
		return result{status: StatusCreationTimedOut, keepRecord: true, err: err}
	}
	return result{status: StatusCreationFailed, keepRecord: true, err: err}
}

// adopt handles a create that found the object already there: ours (the
// cache was behind) is updated; one labelled managed=false is never
// touched; any other is adopted only when adoption is on.
func (c *Controller) adopt(ctx context.Context, fed *unstructured.Unstructured, a action, d desired, retainReplicas bool) result {
	existing, err := c.memberResource(a.member, d.obj.GetNamespace()).Get(ctx, d.obj.GetName(), metav1.GetOptions{})
	if err != nil {
		return result{status: StatusCreationFailed, keepRecord: true, err: fmt.Errorf("reading the existing object: %w", err)}
	}
	switch existing.GetLabels()[clusters.ManagedLabel] {
	case "true":
	case "false":
		return result{status: StatusManagedLabelFalse, report: true}
	default:
		if !c.opts.AdoptExisting {
			return result{status: StatusAlreadyExists, retry: false}
		}
		c.recorder.Eventf(fed, corev1.EventTypeNormal, "Adopted", "adopted the existing %s %s in cluster %s", c.typ.TargetKind, d.obj.GetName(), a.writer)
	}
	return c.update(ctx, a, keyOf(fed), d, existing, retainReplicas, StatusAlreadyExists)
}

func (c *Controller) update(ctx context.Context, a action, objKey string, d desired, existing *unstructured.Unstructured, retainReplicas bool, failStatus string) result {
	obj := retain(d.obj, existing, retainReplicas)
	if err := a.member.Acquire(ctx); err != nil {
		return result{status: StatusUpdateTimedOut, version: existing.GetAnnotations()[HashAnnotation], keepRecord: true, err: err}
	}
	updated, err := c.memberResource(a.member, obj.GetNamespace()).Update(ctx, obj, metav1.UpdateOptions{})
	a.member.Release()
	if err != nil {
		st := failStatus
		if isTimeout(ctx, err) {
			st = StatusUpdateTimedOut
		}
		if apierrors.IsConflict(err) {
			// The cache was behind; its next event requeues the object.
			return result{status: st, keepRecord: true, retry: true}
		}
		return result{status: st, version: existing.GetAnnotations()[HashAnnotation], keepRecord: true, err: err}
	}
	c.remember(a.writer, objKey, d.hash, updated)
	return result{status: StatusOK, version: d.hash, keepRecord: true}
}

// ensureRemoved deletes the member object, or with the orphan annotation
// only takes the managed label off. Namespaces the controller did not
// create are never deleted, only released.
func (c *Controller) ensureRemoved(ctx context.Context, fed *unstructured.Unstructured, a action) result {
	ns, name := c.typ.targetName(fed)
	existing, err := a.member.Get(c.typ.Target, ns, name)
	if err != nil {
		return result{status: StatusWaitingForRemoval, keepRecord: true, retry: true}
	}
	if existing == nil {
		return result{status: StatusOK}
	}
	if err := a.member.Acquire(ctx); err != nil {
		return result{status: StatusDeletionTimedOut, keepRecord: true, err: err}
	}
	defer a.member.Release()
	orphan := fed.GetAnnotations()[OrphanAnnotation] == "true"
	if c.typ.IsNamespace() && existing.GetAnnotations()[CreatedByAnnotation] != createdBy {
		orphan = true
	}
	if orphan {
		obj := existing.DeepCopy()
		l := obj.GetLabels()
		delete(l, clusters.ManagedLabel)
		obj.SetLabels(l)
		ann := obj.GetAnnotations()
		delete(ann, HashAnnotation)
		obj.SetAnnotations(ann)
		_, err = c.memberResource(a.member, ns).Update(ctx, obj, metav1.UpdateOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return result{status: StatusLabelRemovalFailed, keepRecord: true, err: err, retry: apierrors.IsConflict(err)}
		}
		return result{status: StatusOK}
	}
	err = c.memberResource(a.member, ns).Delete(ctx, name, deleteOptions(fed))
	switch {
	case err == nil || apierrors.IsNotFound(err):
		return result{status: StatusOK}
	case isTimeout(ctx, err):
		return result{status: StatusDeletionTimedOut, keepRecord: true, err: err}
	}
	return result{status: StatusDeletionFailed, keepRecord: true, err: err}
}

// deleteOptions are KubeFed's kubefed.io/deleteoption annotation when
// set (JSON DeleteOptions), else background propagation.
func deleteOptions(fed *unstructured.Unstructured) metav1.DeleteOptions {
	var opts metav1.DeleteOptions
	if raw := fed.GetAnnotations()[DeleteOptionAnnotation]; raw != "" && json.Unmarshal([]byte(raw), &opts) == nil {
		return opts
	}
	bg := metav1.DeletePropagationBackground
	return metav1.DeleteOptions{PropagationPolicy: &bg}
}

func (c *Controller) createNamespace(ctx context.Context, m *clusters.Member, name string) error {
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{
			"name":        name,
			"annotations": map[string]any{CreatedByAnnotation: createdBy},
		},
	}}
	_, err := m.Dynamic.Resource(namespaces).Create(ctx, ns, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

func isTimeout(ctx context.Context, err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err)
}

func keyOf(fed *unstructured.Unstructured) string {
	if fed.GetNamespace() == "" {
		return fed.GetName()
	}
	return fed.GetNamespace() + "/" + fed.GetName()
}
