package clusters

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/tools/cache"
)

// entry is one object of a member cache, compact: typed metadata
// without managedFields, labels and annotations as flat key/value pairs
// rather than maps, and the kept spec fields and the status as JSON.
// Nothing outside this file knows its layout: it is a metav1.Object
// (cache keys, names, versions) and Expand turns it back into the
// unstructured object it was made from, less what Lean drops.
type entry struct {
	metav1.TypeMeta
	// ObjectMeta has neither labels, annotations nor managedFields.
	metav1.ObjectMeta
	labels      []string // key, value, key, value…
	annotations []string
	spec        []byte // JSON object of the kept spec fields; nil: none
	status      []byte // JSON of status; nil: absent
}

// GetLabels shadows ObjectMeta's: the labels live in the flat pairs.
func (e *entry) GetLabels() map[string]string { return unpair(e.labels) }

// SetLabels shadows ObjectMeta's.
func (e *entry) SetLabels(labels map[string]string) { e.labels = pair(labels) }

// GetAnnotations shadows ObjectMeta's.
func (e *entry) GetAnnotations() map[string]string { return unpair(e.annotations) }

// SetAnnotations shadows ObjectMeta's.
func (e *entry) SetAnnotations(ann map[string]string) { e.annotations = pair(ann) }

// GetObjectMeta shadows ObjectMeta's, whose view lacks the labels and
// annotations.
func (e *entry) GetObjectMeta() metav1.Object { return e }

var _ metav1.Object = &entry{}

// interner shares the strings many entries of one cache repeat
// (apiVersion, kind, namespaces, label and annotation keys, label
// values), up to a bound.
type interner struct {
	mu sync.Mutex
	m  map[string]string
}

const maxInterned = 4096

func (in *interner) get(s string) string {
	if s == "" || in == nil {
		return s
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if v, ok := in.m[s]; ok {
		return v
	}
	if len(in.m) < maxInterned {
		if in.m == nil {
			in.m = map[string]string{}
		}
		in.m[s] = s
	}
	return s
}

func pair(m map[string]string) []string { return pairInterned(m, nil, false) }

// pairInterned flattens m, sorted by key, sharing keys through in, and
// values too when values is set.
func pairInterned(m map[string]string, in *interner, values bool) []string {
	if m == nil {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]string, 0, 2*len(m))
	for _, k := range keys {
		v := m[k]
		if values {
			v = in.get(v)
		}
		out = append(out, in.get(k), v)
	}
	return out
}

func unpair(p []string) map[string]string {
	if p == nil {
		return nil
	}
	m := make(map[string]string, len(p)/2)
	for i := 0; i+1 < len(p); i += 2 {
		m[p[i]] = p[i+1]
	}
	return m
}

func unpairAny(p []string) map[string]any {
	m := make(map[string]any, len(p)/2)
	for i := 0; i+1 < len(p); i += 2 {
		m[p[i]] = p[i+1]
	}
	return m
}

// compact makes the cache entry of u, keeping of its spec the fields
// named in spec and sharing repeated strings through in (nil: none).
func compact(u *unstructured.Unstructured, spec []string, in *interner) (*entry, error) {
	e := &entry{
		TypeMeta: metav1.TypeMeta{APIVersion: in.get(u.GetAPIVersion()), Kind: in.get(u.GetKind())},
		ObjectMeta: metav1.ObjectMeta{
			Name:                       u.GetName(),
			GenerateName:               u.GetGenerateName(),
			Namespace:                  in.get(u.GetNamespace()),
			SelfLink:                   u.GetSelfLink(), //nolint:staticcheck // deprecated, but the cache gives back what the member sent
			UID:                        u.GetUID(),
			ResourceVersion:            u.GetResourceVersion(),
			Generation:                 u.GetGeneration(),
			CreationTimestamp:          u.GetCreationTimestamp(),
			DeletionTimestamp:          u.GetDeletionTimestamp(),
			DeletionGracePeriodSeconds: u.GetDeletionGracePeriodSeconds(),
			OwnerReferences:            u.GetOwnerReferences(),
			Finalizers:                 u.GetFinalizers(),
		},
		labels:      pairInterned(u.GetLabels(), in, true),
		annotations: pairInterned(u.GetAnnotations(), in, false),
	}
	if s, ok := u.Object["spec"].(map[string]any); ok {
		kept := map[string]any{}
		for _, f := range spec {
			if v, ok := s[f]; ok {
				kept[f] = v
			}
		}
		if len(kept) > 0 {
			raw, err := json.Marshal(kept)
			if err != nil {
				return nil, fmt.Errorf("encoding the kept spec of %s/%s: %w", e.Namespace, e.Name, err)
			}
			e.spec = raw
		}
	}
	if st, ok := u.Object["status"]; ok {
		raw, err := json.Marshal(st)
		if err != nil {
			return nil, fmt.Errorf("encoding the status of %s/%s: %w", e.Namespace, e.Name, err)
		}
		e.status = raw
	}
	return e, nil
}

// expand builds a fresh unstructured object from e: callers may change
// it freely.
func (e *entry) expand() (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{Object: make(map[string]any, 5)}
	if e.APIVersion != "" {
		u.Object["apiVersion"] = e.APIVersion
	}
	if e.Kind != "" {
		u.Object["kind"] = e.Kind
	}
	md := make(map[string]any, 8)
	u.Object["metadata"] = md
	u.SetName(e.Name)
	u.SetGenerateName(e.GenerateName)
	u.SetNamespace(e.Namespace)
	u.SetSelfLink(e.SelfLink) //nolint:staticcheck // deprecated, but the cache gives back what the member sent
	u.SetUID(e.UID)
	u.SetResourceVersion(e.ResourceVersion)
	u.SetGeneration(e.Generation)
	u.SetCreationTimestamp(e.CreationTimestamp)
	u.SetDeletionTimestamp(e.DeletionTimestamp)
	u.SetDeletionGracePeriodSeconds(e.DeletionGracePeriodSeconds)
	if e.OwnerReferences != nil {
		u.SetOwnerReferences(e.OwnerReferences)
	}
	if e.Finalizers != nil {
		u.SetFinalizers(e.Finalizers)
	}
	if e.labels != nil {
		md["labels"] = unpairAny(e.labels)
	}
	if e.annotations != nil {
		md["annotations"] = unpairAny(e.annotations)
	}
	if e.spec != nil {
		var s map[string]any
		if err := utiljson.Unmarshal(e.spec, &s); err != nil {
			return nil, fmt.Errorf("decoding the cached spec of %s/%s: %w", e.Namespace, e.Name, err)
		}
		u.Object["spec"] = s
	}
	if e.status != nil {
		var st any
		if err := utiljson.Unmarshal(e.status, &st); err != nil {
			return nil, fmt.Errorf("decoding the cached status of %s/%s: %w", e.Namespace, e.Name, err)
		}
		u.Object["status"] = st
	}
	return u, nil
}

// Expand turns what a member cache holds, or hands to a Watch handler,
// into an unstructured object built afresh: a cache entry, a tombstone
// (cache.DeletedFinalStateUnknown) of one, or an object that is already
// unstructured (returned as is). ok is false for anything else.
func Expand(obj any) (u *unstructured.Unstructured, ok bool, err error) {
	switch o := obj.(type) {
	case *entry:
		u, err := o.expand()
		return u, err == nil, err
	case *unstructured.Unstructured:
		return o, true, nil
	case cache.DeletedFinalStateUnknown:
		return Expand(o.Obj)
	}
	return nil, false, nil
}
