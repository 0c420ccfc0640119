package propagation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/cellfed/cellfed/pkg/controller/clusters"
)

var namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

func (c *Controller) memberResource(m *clusters.Member, namespace string) instrumented {
	return c.resourceOf(m.Dynamic, m, namespace)
}

// memberWrites is memberResource for creates and updates: their answers
// carry the member object's metadata only (objectVersion reads no more).
func (c *Controller) memberWrites(m *clusters.Member, namespace string) instrumented {
	return c.resourceOf(m.Writes, m, namespace)
}

func (c *Controller) resourceOf(d dynamic.Interface, m *clusters.Member, namespace string) instrumented {
	if namespace == "" {
		return instrumented{d.Resource(c.typ.Target), m.Name()}
	}
	return instrumented{d.Resource(c.typ.Target).Namespace(namespace), m.Name()}
}

// ensure makes the member hold d: create it when absent, update it when
// it differs, and nothing when it already matches. recorded is the
// member's version the record holds for the object as it is now.
//
// The member cache holds lean objects (metadata and status): an object
// unchanged since the recorded write is found right from the cache alone,
// and one carrying the hash of other content (a release) is updated from
// the cache, which holds every field a write keeps from the member. Any
// other (no record, no hash, drift) is read from the member, compared
// and, when it differs, updated over what the member holds.
func (c *Controller) ensure(ctx context.Context, fed *unstructured.Unstructured, m *clusters.Member, cluster string, d desired, retainReplicas bool, recorded string) result {
	ns, name := d.obj.GetNamespace(), d.obj.GetName()
	cached, err := m.Get(c.typ.Target, ns, name)
	if err != nil {
		return result{status: StatusClusterNotReady, unknown: true, retry: true}
	}
	switch {
	case cached == nil && recorded == "":
		return c.create(ctx, fed, m, cluster, d, retainReplicas)
	case cached == nil:
		// The record holds our write of this very object, the cache not
		// yet: it is behind. Read the member rather than create blindly
		// (which would fail AlreadyExists and adopt with an update).
	case unchanged(d, cached, recorded):
		return result{status: StatusOK, version: objectVersion(cached)}
	case c.policy.UpdatesFromCache() && outdated(d, cached):
		// Our last write was of other content (a release): write over
		// it from the cache; a cache that was behind makes the update a
		// conflict, retried once its event arrives.
		return c.update(ctx, m, d, cached, retainReplicas, StatusUpdateFailed)
	}
	existing, err := c.read(ctx, m, ns, name)
	switch {
	case apierrors.IsNotFound(err):
		return c.create(ctx, fed, m, cluster, d, retainReplicas)
	case err != nil:
		st := StatusUpdateFailed
		if isTimeout(ctx, err) {
			st = StatusUpdateTimedOut
		}
		return result{status: st, unknown: true, present: true, err: fmt.Errorf("reading the member object: %w", err)}
	}
	if upToDate(d, existing) {
		return result{status: StatusOK, version: objectVersion(existing)}
	}
	return c.update(ctx, m, d, existing, retainReplicas, StatusUpdateFailed)
}

// read gets the member object ns/name from the member itself, in one of
// its request slots.
func (c *Controller) read(ctx context.Context, m *clusters.Member, ns, name string) (*unstructured.Unstructured, error) {
	if err := m.Acquire(ctx); err != nil {
		return nil, err
	}
	defer m.Release()
	return c.memberResource(m, ns).Get(ctx, name, metav1.GetOptions{})
}

// unchanged reports whether the cached member object is the one last
// written, as d describes it. As in KubeFed, an object whose version is
// the recorded one is unchanged since it was written — when its labels
// and annotations (which do not bump a generation) still hold what d
// sets, and it carries d's hash or none (an object written by KubeFed
// itself). It reads metadata only, so a lean cached object will do.
func unchanged(d desired, cached *unstructured.Unstructured, recorded string) bool {
	if recorded == "" || recorded != objectVersion(cached) {
		return false
	}
	h := cached.GetAnnotations()[HashAnnotation]
	return (h == d.hash || h == "") && subset(d.obj.GetLabels(), cached.GetLabels()) &&
		subset(withoutOwn(d.obj.GetAnnotations()), cached.GetAnnotations())
}

// outdated reports whether the member object carries the hash of a write
// of other content than d: it needs an update whatever else it holds.
// An object without the hash (written by KubeFed, or by hand) is not
// known to be outdated: its content decides.
func outdated(d desired, cached *unstructured.Unstructured) bool {
	h := cached.GetAnnotations()[HashAnnotation]
	return h != "" && h != d.hash
}

// upToDate reports whether the whole member object holds what d
// describes: a restarted controller without a record, or one taking over
// from KubeFed, rewrites nothing that is right, and a member edit of a
// field d sets is corrected.
//
// The controller's own bookkeeping annotations (hash, tracked keys) never
// make an object out of date by themselves; they are rewritten with the
// next write. Keys the last write set that the template dropped do.
func upToDate(d desired, existing *unstructured.Unstructured) bool {
	if staleLabels, staleAnn := staleKeys(d.obj, existing); len(staleLabels)+len(staleAnn) > 0 {
		return false
	}
	return covers(existing.Object, withAnnotations(d.obj.Object, withoutOwn(d.obj.GetAnnotations())))
}

// withAnnotations is obj with metadata.annotations replaced by ann, sharing
// everything else with obj (only read afterwards).
func withAnnotations(obj map[string]any, ann map[string]string) map[string]any {
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		return obj
	}
	a := make(map[string]any, len(ann))
	for k, v := range ann {
		a[k] = v
	}
	out, outMD := maps.Clone(obj), maps.Clone(md)
	outMD["annotations"] = a
	out["metadata"] = outMD
	return out
}

func subset(want, have map[string]string) bool {
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return true
}

func withoutOwn(ann map[string]string) map[string]string {
	out := maps.Clone(ann)
	for _, k := range ownAnnotations {
		delete(out, k)
	}
	return out
}

func (c *Controller) create(ctx context.Context, fed *unstructured.Unstructured, m *clusters.Member, cluster string, d desired, retainReplicas bool) result {
	ns := d.obj.GetNamespace()
	if err := m.Acquire(ctx); err != nil {
		return result{status: StatusCreationTimedOut, unknown: true, err: err}
	}
	body, err := d.encoded()
	if err != nil {
		m.Release()
		return result{status: StatusCreationFailed, err: fmt.Errorf("encoding the member object: %w", err)}
	}
	created, err := c.memberWrites(m, ns).CreateEncoded(ctx, d.obj, body, metav1.CreateOptions{})
	if apierrors.IsNotFound(err) && ns != "" {
		// The namespace is missing in the member: create it, marked as
		// ours, and try again.
		if err = c.createNamespace(ctx, m, ns); err == nil {
			created, err = c.memberWrites(m, ns).CreateEncoded(ctx, d.obj, body, metav1.CreateOptions{})
		}
	}
	m.Release()
	switch {
	case err == nil:
		return result{status: StatusOK, version: objectVersion(created)}
	case apierrors.IsAlreadyExists(err):
		return c.adopt(ctx, fed, m, cluster, d, retainReplicas)
	case isTimeout(ctx, err):
		return result{status: StatusCreationTimedOut, unknown: true, present: true, err: err}
	case !answered(err):
		// The member never answered (the connection broke mid-request:
		// a tunnel's agent or link died): the create may have landed,
		// so the record keeps the cluster and a deletion visits it.
		return result{status: StatusCreationFailed, unknown: true, present: true, err: err}
	}
	return result{status: StatusCreationFailed, unknown: true, err: err}
}

// adopt handles a create that found the object already there: ours (the
// cache was behind) is updated; one labelled managed=false is never
// touched; any other is adopted only when adoption is on.
func (c *Controller) adopt(ctx context.Context, fed *unstructured.Unstructured, m *clusters.Member, cluster string, d desired, retainReplicas bool) result {
	existing, err := c.memberResource(m, d.obj.GetNamespace()).Get(ctx, d.obj.GetName(), metav1.GetOptions{})
	if err != nil {
		return result{status: StatusCreationFailed, unknown: true, err: fmt.Errorf("reading the existing object: %w", err)}
	}
	switch existing.GetLabels()[clusters.ManagedLabel] {
	case "true":
	case "false":
		return result{status: StatusManagedLabelFalse}
	default:
		if !c.opts.AdoptExisting {
			return result{status: StatusAlreadyExists}
		}
		c.env.Recorder.Eventf(fed, corev1.EventTypeNormal, "Adopted", "adopted the existing %s %s in cluster %s", c.typ.TargetKind, d.obj.GetName(), cluster)
	}
	return c.update(ctx, m, d, existing, retainReplicas, StatusAlreadyExists)
}

func (c *Controller) update(ctx context.Context, m *clusters.Member, d desired, existing *unstructured.Unstructured, retainReplicas bool, failStatus string) result {
	obj := retain(c.policy, d.obj, existing, retainReplicas)
	if err := m.Acquire(ctx); err != nil {
		return result{status: StatusUpdateTimedOut, unknown: true, present: true, err: err}
	}
	updated, err := c.memberWrites(m, obj.GetNamespace()).Update(ctx, obj, metav1.UpdateOptions{})
	m.Release()
	if err != nil {
		st := failStatus
		if isTimeout(ctx, err) {
			st = StatusUpdateTimedOut
		}
		if apierrors.IsConflict(err) {
			// The cache was behind; its next event requeues the object.
			return result{status: st, unknown: true, present: true, retry: true}
		}
		return result{status: st, unknown: true, present: true, err: err}
	}
	return result{status: StatusOK, version: objectVersion(updated)}
}

// ensureRemoved deletes the member object, or only takes the managed
// label off when release is set or the federated object asks for
// orphaning. Namespaces the controller did not create are never deleted,
// only released.
func (c *Controller) ensureRemoved(ctx context.Context, fed *unstructured.Unstructured, m *clusters.Member, release bool) result {
	ns, name := c.typ.targetName(fed)
	existing, err := m.Get(c.typ.Target, ns, name)
	if err != nil {
		return result{status: StatusWaitingForRemoval, unknown: true, present: true, retry: true}
	}
	if err := m.Acquire(ctx); err != nil {
		return result{status: StatusDeletionTimedOut, unknown: true, present: true, err: err}
	}
	defer m.Release()
	if existing == nil {
		// The cache can be behind a create that landed late (sent by a
		// controller that died, or through a slow tunnel): ask the
		// member before letting the object go.
		live, err := c.memberResource(m, ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return result{status: StatusOK}
		case err != nil:
			st := StatusWaitingForRemoval
			if isTimeout(ctx, err) {
				st = StatusDeletionTimedOut
			}
			return result{status: st, unknown: true, present: true, err: fmt.Errorf("reading the object the cache does not hold: %w", err)}
		case live.GetLabels()[clusters.ManagedLabel] != "true":
			return result{status: StatusOK} // not ours: never touched
		}
		existing = live
	}
	if fed.GetAnnotations()[OrphanAnnotation] == "true" {
		release = true
	}
	if c.typ.IsNamespace() && existing.GetAnnotations()[CreatedByAnnotation] != createdBy {
		release = true
	}
	if release {
		// A patch, as the cache holds no content to write back; the
		// resourceVersion makes it fail when the cache was behind.
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": existing.GetResourceVersion(),
			"labels":          map[string]any{clusters.ManagedLabel: nil},
			"annotations":     map[string]any{HashAnnotation: nil},
		}})
		if err != nil {
			return result{status: StatusLabelRemovalFailed, unknown: true, present: true, err: err}
		}
		_, err = c.memberResource(m, ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return result{status: StatusLabelRemovalFailed, unknown: true, present: true, err: err, retry: apierrors.IsConflict(err)}
		}
		return result{status: StatusOK}
	}
	err = c.memberResource(m, ns).Delete(ctx, name, deleteOptions(fed))
	switch {
	case err == nil || apierrors.IsNotFound(err):
		return result{status: StatusOK}
	case isTimeout(ctx, err):
		return result{status: StatusDeletionTimedOut, unknown: true, present: true, err: err}
	}
	return result{status: StatusDeletionFailed, unknown: true, present: true, err: err}
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
	labels, err := c.namespaceLabels(name)
	if err != nil {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	if len(labels) > 0 {
		ns.SetLabels(labels) // Pod Security from the start
	}
	_, err = instrumented{m.Dynamic.Resource(namespaces), m.Name()}.Create(ctx, ns, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// answered tells an error the member sent (a Kubernetes status: the
// request was decided there) from one where no answer came back.
func answered(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status)
}

func isTimeout(ctx context.Context, err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err)
}
