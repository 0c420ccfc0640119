package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

// cellv1alpha1.TemplateRevisionsResource is core.cellfed.io/v1alpha1 templaterevisions.

// History is the template history of federated objects: one
// TemplateRevision per distinct template (and overrides) an object ran,
// in the object's namespace, owned by it, at most Limit per object.
type History struct {
	Client dynamic.Interface
	// Limit is how many revisions are kept per object (DefaultHistoryLimit
	// when 0; a negative limit prunes nothing, for writers that leave
	// pruning to the rollout controller).
	Limit int
}

// List returns the revisions of obj, oldest first.
func (h History) List(ctx context.Context, obj *unstructured.Unstructured) ([]cellv1alpha1.TemplateRevision, error) {
	list, err := h.Client.Resource(cellv1alpha1.TemplateRevisionsResource).Namespace(obj.GetNamespace()).List(ctx, metav1.ListOptions{
		LabelSelector: LabelOwnerUID + "=" + string(obj.GetUID()),
	})
	if err != nil {
		return nil, fmt.Errorf("listing the template revisions of %s: %w", objectName(obj), err)
	}
	revs := make([]cellv1alpha1.TemplateRevision, 0, len(list.Items))
	for _, u := range list.Items {
		var r cellv1alpha1.TemplateRevision
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
			return nil, fmt.Errorf("decoding template revision %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
		revs = append(revs, r)
	}
	SortRevisions(revs)
	return revs, nil
}

// SortRevisions sorts oldest first: by revision, then creation.
func SortRevisions(revs []cellv1alpha1.TemplateRevision) {
	sort.SliceStable(revs, func(i, j int) bool {
		if revs[i].Spec.Revision != revs[j].Spec.Revision {
			return revs[i].Spec.Revision < revs[j].Spec.Revision
		}
		return revs[i].CreationTimestamp.Before(&revs[j].CreationTimestamp)
	})
}

// Previous is the newest revision whose template differs from hash (the
// one `rollout undo` restores), nil when there is none.
func Previous(revs []cellv1alpha1.TemplateRevision, hash string) *cellv1alpha1.TemplateRevision {
	for i := len(revs) - 1; i >= 0; i-- {
		if revs[i].Spec.Hash != hash {
			return &revs[i]
		}
	}
	return nil
}

// RevisionName is the name of the revision of obj with template hash
// hash: the object's name (shortened to fit) and the hash's first 10
// digits. The hash covers the owner's UID, so two objects of different
// kinds with one name get different revision names.
func RevisionName(obj *unstructured.Unstructured, hash string) string {
	name := obj.GetName()
	if len(name) > 200 {
		name = name[:200]
	}
	return name + "-" + ShortHash(hashOf(string(obj.GetUID())+"/"+hash))
}

// Record makes sure the template obj runs now is in its history as the
// newest revision: a new TemplateRevision, or an older one with the same
// template renumbered to the top (an undo brings a template back). It
// then deletes the oldest revisions beyond the limit. It returns the
// revision.
func (h History) Record(ctx context.Context, obj *unstructured.Unstructured) (*cellv1alpha1.TemplateRevision, error) {
	hash := TemplateHash(obj)
	revs, err := h.List(ctx, obj)
	if err != nil {
		return nil, err
	}
	var top int64
	var newest *cellv1alpha1.TemplateRevision
	for i, r := range revs {
		top = max(top, r.Spec.Revision)
		if newest == nil || r.Spec.Generation > newest.Spec.Generation {
			newest = &revs[i]
		}
	}
	if newest != nil && obj.GetGeneration() < newest.Spec.Generation {
		// obj is older than a template already recorded (a cached copy
		// that has not caught up with the writer that recorded it):
		// recording it would push a stale template on top.
		found := *newest
		return &found, nil
	}
	if IsSecretKind(obj.GetKind()) {
		h.redactStored(ctx, revs)
	}
	res := h.Client.Resource(cellv1alpha1.TemplateRevisionsResource).Namespace(obj.GetNamespace())
	var rev *cellv1alpha1.TemplateRevision
	for i := range revs {
		if revs[i].Spec.Hash != hash {
			continue
		}
		rev = &revs[i]
		if rev.Spec.Revision == top {
			// Recorded already (perhaps by a writer that does not prune).
			found := *rev
			h.prune(ctx, obj, revs, hash)
			return &found, nil
		}
	}
	if rev != nil {
		patch, _ := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": rev.ResourceVersion},
			"spec":     map[string]any{"revision": top + 1, "generation": obj.GetGeneration()},
		})
		if _, err := res.Patch(ctx, rev.Name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
			return nil, fmt.Errorf("renumbering template revision %s/%s: %w", obj.GetNamespace(), rev.Name, err)
		}
		rev.Spec.Revision = top + 1
		copied := *rev
		rev = &copied
	} else {
		rev, err = h.create(ctx, obj, hash, top+1)
		if err != nil {
			return nil, err
		}
		revs = append(revs, *rev)
	}
	SortRevisions(revs)
	h.prune(ctx, obj, revs, hash)
	return rev, nil
}

func (h History) create(ctx context.Context, obj *unstructured.Unstructured, hash string, number int64) (*cellv1alpha1.TemplateRevision, error) {
	rev := &cellv1alpha1.TemplateRevision{
		TypeMeta: metav1.TypeMeta{APIVersion: cellv1alpha1.SchemeGroupVersion.String(), Kind: "TemplateRevision"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      RevisionName(obj, hash),
			Namespace: obj.GetNamespace(),
			Labels:    map[string]string{LabelOwnerUID: string(obj.GetUID())},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Name: obj.GetName(), UID: obj.GetUID(),
			}},
		},
		Spec: cellv1alpha1.TemplateRevisionSpec{
			FederatedObject: cellv1alpha1.FederatedObjectReference{
				APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Name: obj.GetName(), UID: string(obj.GetUID()),
			},
			Revision: number, Hash: hash, Generation: obj.GetGeneration(),
		},
	}
	if tmpl, ok, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "template"); ok {
		raw, err := json.Marshal(tmpl)
		if err != nil {
			return nil, fmt.Errorf("encoding the template of %s: %w", objectName(obj), err)
		}
		rev.Spec.Template.Raw = raw
	}
	if ovr, ok, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "overrides"); ok {
		if l, isList := ovr.([]any); !isList || len(l) > 0 {
			raw, err := json.Marshal(ovr)
			if err != nil {
				return nil, fmt.Errorf("encoding the overrides of %s: %w", objectName(obj), err)
			}
			rev.Spec.Overrides.Raw = raw
		}
	}
	// A Secret kind's data never goes into the revision (readable by
	// viewers): it holds digests, and a Secret owned by it the data.
	secretData := IsSecretKind(obj.GetKind())
	realTemplate, realOverrides := rev.Spec.Template.Raw, rev.Spec.Overrides.Raw
	if secretData {
		redacted, err := Redact(rev)
		if err != nil {
			return nil, err
		}
		rev = redacted
		rev.Annotations = map[string]string{AnnotationDataSecret: rev.Name}
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rev)
	if err != nil {
		return nil, fmt.Errorf("encoding template revision: %w", err)
	}
	u := &unstructured.Unstructured{Object: content}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	created, err := h.Client.Resource(cellv1alpha1.TemplateRevisionsResource).Namespace(obj.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
	mine := err == nil
	if apierrors.IsAlreadyExists(err) {
		// Recorded meanwhile by another writer (the controller and
		// cellfedctl both record): the same template, keep it.
		created, err = h.Client.Resource(cellv1alpha1.TemplateRevisionsResource).Namespace(obj.GetNamespace()).Get(ctx, rev.Name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("recording the template of %s as revision %d: %w", objectName(obj), number, err)
	}
	var out cellv1alpha1.TemplateRevision
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(created.Object, &out); err != nil {
		return nil, fmt.Errorf("decoding template revision %s: %w", created.GetName(), err)
	}
	if secretData && out.Annotations[AnnotationDataSecret] != "" {
		if err := h.writeDataSecret(ctx, &out, realTemplate, realOverrides); err != nil {
			if mine {
				// No revision without its data: undo could not restore it.
				_ = h.Client.Resource(cellv1alpha1.TemplateRevisionsResource).Namespace(obj.GetNamespace()).Delete(ctx, out.Name, metav1.DeleteOptions{})
			}
			return nil, fmt.Errorf("recording the template of %s as revision %d: %w", objectName(obj), number, err)
		}
	}
	return &out, nil
}

// prune deletes the oldest revisions beyond the limit, never the one with
// the current template. Failures are logged: the next Record retries.
func (h History) prune(ctx context.Context, obj *unstructured.Unstructured, revs []cellv1alpha1.TemplateRevision, current string) {
	limit := h.Limit
	switch {
	case limit < 0:
		return
	case limit == 0:
		limit = DefaultHistoryLimit
	}
	extra := len(revs) - limit
	for i := 0; i < len(revs) && extra > 0; i++ {
		if revs[i].Spec.Hash == current {
			continue
		}
		err := h.Client.Resource(cellv1alpha1.TemplateRevisionsResource).Namespace(obj.GetNamespace()).Delete(ctx, revs[i].Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			klog.FromContext(ctx).Error(err, "Pruning template history", "object", objectName(obj), "revision", revs[i].Name)
			continue
		}
		extra--
	}
}

// Restore sets obj's spec.template and spec.overrides to rev's.
func Restore(obj *unstructured.Unstructured, rev *cellv1alpha1.TemplateRevision) error {
	if len(rev.Spec.Template.Raw) == 0 {
		unstructured.RemoveNestedField(obj.Object, "spec", "template")
	} else {
		var tmpl map[string]any
		if err := json.Unmarshal(rev.Spec.Template.Raw, &tmpl); err != nil {
			return fmt.Errorf("template revision %s: decoding the template: %w", rev.Name, err)
		}
		if err := unstructured.SetNestedField(obj.Object, tmpl, "spec", "template"); err != nil {
			return err
		}
	}
	if len(rev.Spec.Overrides.Raw) == 0 {
		unstructured.RemoveNestedField(obj.Object, "spec", "overrides")
		return nil
	}
	var ovr []any
	if err := json.Unmarshal(rev.Spec.Overrides.Raw, &ovr); err != nil {
		return fmt.Errorf("template revision %s: decoding the overrides: %w", rev.Name, err)
	}
	return unstructured.SetNestedSlice(obj.Object, ovr, "spec", "overrides")
}

func hashOf(s string) string {
	return TemplateHashOfBytes([]byte(s))
}

// Images lists the container images of a template (a pod template, or a
// workload's spec.template or spec.jobTemplate), for history output.
func Images(template []byte) []string {
	var tmpl map[string]any
	if json.Unmarshal(template, &tmpl) != nil {
		return nil
	}
	var out []string
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if depth > 8 {
			return
		}
		switch x := v.(type) {
		case map[string]any:
			for _, key := range []string{"initContainers", "containers"} {
				if cs, ok := x[key].([]any); ok {
					for _, c := range cs {
						if m, ok := c.(map[string]any); ok {
							if img, ok := m["image"].(string); ok {
								out = append(out, img)
							}
						}
					}
				}
			}
			for k, child := range x {
				if k != "containers" && k != "initContainers" {
					walk(child, depth+1)
				}
			}
		case []any:
			for _, child := range x {
				walk(child, depth+1)
			}
		}
	}
	walk(tmpl, 0)
	sort.Strings(out)
	return out
}
