package propagation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cellfed/cellfed/pkg/annotationrules"
	typesv1b1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
	"github.com/cellfed/cellfed/pkg/controller/clusters"
)

const (
	// HashAnnotation on a member object is the hash of what the
	// controller last wrote there (template, overrides, labels), written
	// with the object itself, so a restarted controller knows what a
	// member holds without rewriting it.
	HashAnnotation = "cellfed.io/propagated-hash"
	// CreatedByAnnotation marks member namespaces the controller created;
	// only those are ever deleted by it.
	CreatedByAnnotation = "cellfed.io/created-by"
	createdBy           = "cellfed-controller"
	// ManagedLabelsAnnotation and ManagedAnnotationsAnnotation on a member
	// object list (comma-separated, sorted) the label and annotation keys
	// the federation set there with the last write: a key that leaves the
	// template is removed from the member, one the member added is never
	// touched. Annotations are tracked only for types with annotation
	// rules (FederatedTypeConfig spec.propagatingAnnotations).
	ManagedLabelsAnnotation      = "cellfed.io/managed-labels"
	ManagedAnnotationsAnnotation = "cellfed.io/managed-annotations"
)

// ownAnnotations are the annotations the controller itself sets on member
// objects.
var ownAnnotations = []string{HashAnnotation, ManagedLabelsAnnotation, ManagedAnnotationsAnnotation}

// desired is the object one cluster should hold, before member-owned
// fields are merged in by retain.
type desired struct {
	obj  *unstructured.Unstructured
	hash string
	// json is obj's JSON encoding, made once for every member a create
	// sends the same object to; nil: encoded per request.
	json func() ([]byte, error)
}

// encoded is d.obj's JSON encoding, the body of a create.
func (d desired) encoded() ([]byte, error) {
	if d.json == nil {
		return json.Marshal(d.obj.Object)
	}
	return d.json()
}

// build makes the member object for a cluster: the template named after
// the federated object, the cluster's overrides applied, the managed
// label set, and the hash annotation describing all of it.
func build(t *Type, fed *unstructured.Unstructured, template map[string]any, overrides []typesv1b1.ClusterOverride, retainReplicas bool) (desired, error) {
	obj := &unstructured.Unstructured{Object: cleanTemplate(template)}
	obj.SetAPIVersion(t.Target.GroupVersion().String())
	obj.SetKind(t.TargetKind)
	namespace, name := t.targetName(fed)
	obj.SetName(name)
	obj.SetNamespace(namespace)
	if len(overrides) > 0 {
		patched, err := applyOverrides(obj.Object, overrides)
		if err != nil {
			return desired{}, err
		}
		obj.Object = patched
		// Overrides may not rename or move the object (admission rejects
		// such paths; this guards objects admitted before the rule).
		obj.SetAPIVersion(t.Target.GroupVersion().String())
		obj.SetKind(t.TargetKind)
		obj.SetName(name)
		obj.SetNamespace(namespace)
	}
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	if t.IsNamespace() && len(overrides) > 0 {
		keepPlatformLabels(template, labels)
	}
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	for _, k := range ownAnnotations {
		delete(ann, k) // only the controller sets these
	}
	delete(labels, clusters.ManagedLabel)
	ann[ManagedLabelsAnnotation] = keyList(labels)
	labels[clusters.ManagedLabel] = "true"
	obj.SetLabels(labels)
	if patterns, ok := t.annotationPatterns(); ok {
		// Spec-like keys (matching a pattern) are propagated and
		// tracked; status-like ones belong to the members.
		for k := range ann {
			if k != ManagedLabelsAnnotation && !annotationrules.Match(patterns, k) {
				delete(ann, k)
			}
		}
		tracked := maps.Clone(ann)
		delete(tracked, ManagedLabelsAnnotation)
		ann[ManagedAnnotationsAnnotation] = keyList(tracked)
	}
	obj.SetAnnotations(ann)
	h := sha256.New()
	raw, err := json.Marshal(obj.Object)
	if err != nil {
		return desired{}, fmt.Errorf("encoding member object: %w", err)
	}
	h.Write(raw)
	if retainReplicas {
		h.Write([]byte("\x00retainReplicas"))
	}
	sum := hex.EncodeToString(h.Sum(nil))[:32]
	ann[HashAnnotation] = sum
	obj.SetAnnotations(ann)
	return desired{obj: obj, hash: sum, json: sync.OnceValues(func() ([]byte, error) { return json.Marshal(obj.Object) })}, nil
}

// keyList is the sorted, comma-separated list of m's keys.
func keyList(m map[string]string) string {
	return strings.Join(slices.Sorted(maps.Keys(m)), ",")
}

// trackedKeys reads a key list annotation of a member object; ok is false
// when the object does not carry it (written before keys were tracked,
// or by KubeFed).
func trackedKeys(obj *unstructured.Unstructured, annotation string) (keys []string, ok bool) {
	v, ok := obj.GetAnnotations()[annotation]
	if !ok || v == "" {
		return nil, ok
	}
	return strings.Split(v, ","), true
}

// staleKeys are the keys the federation set on existing with its last
// write that want no longer sets: labels always, annotations for types
// with annotation rules (want then tracks them).
func staleKeys(want, existing *unstructured.Unstructured) (labels, annotations []string) {
	if keys, ok := trackedKeys(existing, ManagedLabelsAnnotation); ok {
		for _, k := range keys {
			if _, set := want.GetLabels()[k]; !set && k != clusters.ManagedLabel {
				labels = append(labels, k)
			}
		}
	}
	if _, rules := want.GetAnnotations()[ManagedAnnotationsAnnotation]; rules {
		if keys, ok := trackedKeys(existing, ManagedAnnotationsAnnotation); ok {
			for _, k := range keys {
				if _, set := want.GetAnnotations()[k]; !set {
					annotations = append(annotations, k)
				}
			}
		}
	}
	return labels, annotations
}

// cleanTemplate copies the template without the metadata only the
// member's API server may set.
func cleanTemplate(template map[string]any) map[string]any {
	obj := map[string]any{}
	if template != nil {
		obj = runtime.DeepCopyJSON(template)
	}
	if md, ok := obj["metadata"].(map[string]any); ok {
		for _, k := range []string{"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields",
			"selfLink", "deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences", "finalizers", "namespace", "name", "generateName"} {
			delete(md, k)
		}
	}
	delete(obj, "status")
	return obj
}

// applyOverrides applies JSON-patch operations (replace by default).
func applyOverrides(obj map[string]any, ops []typesv1b1.ClusterOverride) (map[string]any, error) {
	type op struct {
		Op    string          `json:"op"`
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value,omitempty"`
	}
	patch := make([]op, 0, len(ops))
	for _, o := range ops {
		p := op{Op: o.Op, Path: o.Path}
		if p.Op == "" {
			p.Op = "replace"
		}
		if o.Value != nil {
			p.Value = o.Value.Raw
		}
		if p.Op != "remove" && p.Value == nil {
			p.Value = json.RawMessage("null")
		}
		patch = append(patch, p)
	}
	rawPatch, err := json.Marshal(patch)
	if err != nil {
		return nil, err
	}
	decoded, err := jsonpatch.DecodePatch(rawPatch)
	if err != nil {
		return nil, fmt.Errorf("overrides: %w", err)
	}
	doc, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	out, err := decoded.Apply(doc)
	if err != nil {
		return nil, fmt.Errorf("applying overrides: %w", err)
	}
	// Back to the numeric types unstructured content uses.
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(out); err != nil {
		return nil, fmt.Errorf("overridden object: %w", err)
	}
	return u.Object, nil
}

// retain merges what the member owns into the object to write over
// existing: resourceVersion, finalizers and owner references, labels and
// annotations the member added, the fields the type's policy names, and
// replicas when retainReplicas is set.
func retain(p Policy, want *unstructured.Unstructured, existing *unstructured.Unstructured, retainReplicas bool) *unstructured.Unstructured {
	out := want.DeepCopy()
	out.SetResourceVersion(existing.GetResourceVersion())
	out.SetFinalizers(existing.GetFinalizers())
	out.SetOwnerReferences(existing.GetOwnerReferences())
	labels := union(existing.GetLabels(), want.GetLabels())
	ann := union(existing.GetAnnotations(), want.GetAnnotations())
	staleLabels, staleAnn := staleKeys(want, existing)
	for _, k := range staleLabels {
		delete(labels, k)
	}
	for _, k := range staleAnn {
		delete(ann, k)
	}
	if _, rules := want.GetAnnotations()[ManagedAnnotationsAnnotation]; !rules {
		delete(ann, ManagedAnnotationsAnnotation) // rules removed from the type
	}
	out.SetLabels(labels)
	out.SetAnnotations(ann)
	for _, f := range p.RetainSpec {
		if v, ok, _ := unstructured.NestedFieldNoCopy(existing.Object, "spec", f); ok {
			if _, set, _ := unstructured.NestedFieldNoCopy(out.Object, "spec", f); !set {
				_ = unstructured.SetNestedField(out.Object, runtime.DeepCopyJSONValue(v), "spec", f)
			}
		}
	}
	if p.RetainNodePorts {
		retainNodePorts(out, existing)
	}
	for _, f := range p.RetainTop {
		if v, ok := existing.Object[f]; ok {
			if _, set := out.Object[f]; !set {
				out.Object[f] = runtime.DeepCopyJSONValue(v)
			}
		}
	}
	if retainReplicas {
		if v, ok, _ := unstructured.NestedFieldNoCopy(existing.Object, "spec", "replicas"); ok {
			_ = unstructured.SetNestedField(out.Object, runtime.DeepCopyJSONValue(v), "spec", "replicas")
		}
	}
	return out
}

// retainNodePorts keeps the member's node port of each port the
// template leaves unset, matching ports by name, then by port number.
func retainNodePorts(out, existing *unstructured.Unstructured) {
	have, _, _ := unstructured.NestedSlice(existing.Object, "spec", "ports")
	want, ok, _ := unstructured.NestedSlice(out.Object, "spec", "ports")
	if !ok {
		return
	}
	for i, p := range want {
		pm, ok := p.(map[string]any)
		if !ok || pm["nodePort"] != nil {
			continue
		}
		for _, h := range have {
			hm, ok := h.(map[string]any)
			if !ok || hm["nodePort"] == nil {
				continue
			}
			if pm["name"] == hm["name"] && numEqual(pm["port"], hm["port"]) {
				pm["nodePort"] = hm["nodePort"]
				want[i] = pm
				break
			}
		}
	}
	_ = unstructured.SetNestedSlice(out.Object, want, "spec", "ports")
}

func union(a, b map[string]string) map[string]string {
	if len(a) == 0 && len(b) == 0 {
		return nil
	}
	out := maps.Clone(a)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, b)
	return out
}

// covers reports whether have holds everything in want: every map key of
// want with an equal value (nulls and empty values in want match absent
// ones), lists element by element. Fields only have sets are the
// member's own (defaults, status) and do not count.
func covers(have, want any) bool {
	switch w := want.(type) {
	case nil:
		return true
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		for k, wv := range w {
			hv, present := h[k]
			if !present {
				if isEmpty(wv) {
					continue
				}
				return false
			}
			if !covers(hv, wv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		if len(h) != len(w) {
			return false
		}
		for i := range w {
			if !covers(h[i], w[i]) {
				return false
			}
		}
		return true
	default:
		if numEqual(have, want) {
			return true
		}
		return reflect.DeepEqual(have, want)
	}
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

func numEqual(a, b any) bool {
	x, ok1 := toFloat(a)
	y, ok2 := toFloat(b)
	return ok1 && ok2 && x == y
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// copyOf is what a member holds of the federated object, to be written
// elsewhere as it is: a moving cell held back by the placement mask moves
// at the revision it holds. What the member filled in (status, its
// metadata, the fields the type's policy retains, node ports) is left
// out, for the new member to fill in; the hash annotation stays, so the
// copy counts as that revision.
func (c *Controller) copyOf(ctx context.Context, m *clusters.Member, fed *unstructured.Unstructured) (desired, error) {
	if m == nil {
		return desired{}, fmt.Errorf("the held-back copy's member is gone")
	}
	ns, name := c.typ.targetName(fed)
	// The member itself: its cache keeps only what decisions read.
	cur, err := c.read(ctx, m, ns, name)
	if err != nil {
		return desired{}, fmt.Errorf("reading the held-back copy to move: %w", err)
	}
	obj := &unstructured.Unstructured{Object: cleanTemplate(cur.Object)}
	obj.SetAPIVersion(c.typ.Target.GroupVersion().String())
	obj.SetKind(c.typ.TargetKind)
	obj.SetNamespace(ns)
	obj.SetName(name)
	for _, f := range c.policy.RetainSpec {
		unstructured.RemoveNestedField(obj.Object, "spec", f)
	}
	for _, f := range c.policy.RetainTop {
		delete(obj.Object, f)
	}
	if c.policy.RetainNodePorts {
		if ports, ok, _ := unstructured.NestedSlice(obj.Object, "spec", "ports"); ok {
			for _, p := range ports {
				if pm, ok := p.(map[string]any); ok {
					delete(pm, "nodePort")
				}
			}
			_ = unstructured.SetNestedSlice(obj.Object, ports, "spec", "ports")
		}
	}
	hash := obj.GetAnnotations()[HashAnnotation]
	if hash == "" {
		raw, err := json.Marshal(obj.Object)
		if err != nil {
			return desired{}, fmt.Errorf("encoding the held-back copy: %w", err)
		}
		sum := sha256.Sum256(raw)
		hash = hex.EncodeToString(sum[:])[:32]
		ann := obj.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[HashAnnotation] = hash
		obj.SetAnnotations(ann)
	}
	return desired{obj: obj, hash: hash}, nil
}
