// Package conversion converts federated objects between KubeFed's
// community shape (types.kubefed.io/v1beta1: placement by cluster) and the
// multi-topology shape (v1beta2: placement by cell or cluster). Conversion
// is a pure function of the object: cell names become per-cell
// KubeFedCluster names through the naming rule of pkg/apis/core/v1alpha1,
// using only the object's own namespace.
//
// Each direction maps what the other version can express; what it cannot
// (a placement mask, a replica division, a selector's topology type, an
// empty placement's topology type, a community selector that is not
// pinned to a topology type) is stashed in an annotation on the converted object and restored
// on the way back, as long as the converted fields were not changed in
// between. So a round trip in either direction returns the object
// unchanged.
//
// Objects are handled as unstructured content (map[string]any), exactly as
// the API server holds custom resources; only placement, placementMask,
// replicaDivision, overrides, status and two annotations are touched.
package conversion

import (
	"encoding/json"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/types"
	typesv1beta1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
)

// StatusOK is a topology's status in v1beta2 when the object was
// propagated there. v1beta1 says it as KubeFed does, with no status at
// all (KubeFed's ClusterPropagationOK is ""), which is what KubeFed's
// tools wait for.
const StatusOK = "OK"

// Annotations that carry what one version cannot express.
const (
	// AnnotationV1beta2Spec is set on v1beta1 objects. It holds the
	// v1beta2 placement, placementMask, overrides and replicaDivision as
	// JSON.
	AnnotationV1beta2Spec = "conversion.cellfed.io/v1beta2-spec"
	// AnnotationV1beta1Spec is set on v1beta2 objects. It holds the
	// v1beta1 placement and overrides as JSON.
	AnnotationV1beta1Spec = "conversion.cellfed.io/v1beta1-spec"
)

var (
	apiVersionV1beta1 = types.GroupName + "/" + typesv1beta1.Version
	apiVersionV1beta2 = types.GroupName + "/" + typesv1beta2.Version
)

// FieldStashChanged is a top-level field admission sets on a v1beta1
// update whose only change to the spec is in its v1beta2 view, made
// through the AnnotationV1beta2Spec stash (a placement mask moved by a
// v1beta1 client). The API server serves each version with that version
// in memory, so it decides metadata.generation on the v1beta1 form, where
// a stash is metadata and would not count: the field makes the change
// count, as the same change written in v1beta2 does. Conversion to the
// storage version drops it; it is never stored or served.
const FieldStashChanged = "cellfedStashChanged"

// Convert converts obj in place to apiVersion, which must be
// types.kubefed.io/v1beta1 or v1beta2. Converting to the object's own
// version is a no-op.
func Convert(obj map[string]any, apiVersion string) error {
	from, _ := obj["apiVersion"].(string)
	if from == apiVersion {
		return nil
	}
	delete(obj, FieldStashChanged)
	switch {
	case from == apiVersionV1beta2 && apiVersion == apiVersionV1beta1:
		return toV1beta1(obj)
	case from == apiVersionV1beta1 && apiVersion == apiVersionV1beta2:
		return toV1beta2(obj)
	default:
		return fmt.Errorf("cannot convert %q to %q: only %s and %s are known", from, apiVersion, apiVersionV1beta1, apiVersionV1beta2)
	}
}

// specKeys are the spec fields conversion owns, per version.
var (
	specKeysV1beta1 = []string{"placement", "overrides"}
	specKeysV1beta2 = []string{"placement", "placementMask", "overrides", "replicaDivision"}
)

func toV1beta1(obj map[string]any) error {
	ns := namespaceOf(obj)
	spec, attachSpec, err := specOf(obj)
	if err != nil {
		return err
	}
	v2 := pick(spec, specKeysV1beta2)
	typ := topologyTypeOf(v2)

	var v1 map[string]any
	var stash map[string]any
	if restored, ok := fromStash(obj, AnnotationV1beta1Spec); ok && reflect.DeepEqual(toV1beta2Spec(ns, restored), normalizeV1beta2(v2)) {
		v1 = restored
	} else {
		v1 = toV1beta1Spec(ns, v2)
		if !reflect.DeepEqual(toV1beta2Spec(ns, v1), normalizeV1beta2(v2)) {
			stash = v2
		}
	}
	setAnnotation(obj, AnnotationV1beta1Spec, nil)
	setAnnotation(obj, AnnotationV1beta2Spec, stash)
	replace(spec, specKeysV1beta2, v1)
	attachSpec()

	if status, ok := obj["status"].(map[string]any); ok {
		if list, ok := status["topologies"]; ok {
			delete(status, "topologies")
			status["clusters"] = mapList(list, func(e map[string]any) map[string]any {
				name, _ := e["name"].(string)
				cluster, _ := e["cluster"].(string)
				delete(e, "cluster")
				if cluster == "" {
					cluster = clusterNameOf(ns, typ, name)
				}
				e["name"] = cluster
				if e["status"] == StatusOK {
					delete(e, "status") // KubeFed's OK is no status
				}
				return e
			})
		}
	}
	obj["apiVersion"] = apiVersionV1beta1
	return nil
}

func toV1beta2(obj map[string]any) error {
	ns := namespaceOf(obj)
	spec, attachSpec, err := specOf(obj)
	if err != nil {
		return err
	}
	v1 := pick(spec, specKeysV1beta1)

	var v2 map[string]any
	var stash map[string]any
	if restored, ok := fromStash(obj, AnnotationV1beta2Spec); ok && reflect.DeepEqual(toV1beta1Spec(ns, restored), v1) {
		v2 = restored
	} else {
		v2 = toV1beta2Spec(ns, v1)
		if !reflect.DeepEqual(toV1beta1Spec(ns, v2), v1) {
			stash = v1
		}
	}
	setAnnotation(obj, AnnotationV1beta2Spec, nil)
	setAnnotation(obj, AnnotationV1beta1Spec, stash)
	replace(spec, specKeysV1beta1, v2)
	attachSpec()
	typ := topologyTypeOf(v2)

	if status, ok := obj["status"].(map[string]any); ok {
		statusToV1beta2(status, ns, typ)
	}
	obj["apiVersion"] = apiVersionV1beta2
	return nil
}

// toV1beta1Spec maps v1beta2 placement, placementMask, overrides and
// replicaDivision to v1beta1 placement and overrides. The placement mask
// and the replica division have no v1beta1 counterpart in the object
// (KubeFed divides with a separate ReplicaSchedulingPreference) and are
// dropped (the caller stashes them).
func toV1beta1Spec(ns string, v2 map[string]any) map[string]any {
	typ := topologyTypeOf(v2)
	out := map[string]any{}
	if p, ok := v2["placement"].(map[string]any); ok {
		placement := map[string]any{}
		for k, v := range p {
			switch k {
			case "topologyType":
			case "topologies":
				placement["clusters"] = renameList(v, "name", "name", func(n string) string { return clusterNameOf(ns, typ, n) })
			case "topologySelector":
				placement["clusterSelector"] = pinSelector(ns, typ, v)
			default:
				placement[k] = v
			}
		}
		out["placement"] = placement
	}
	if o, ok := v2["overrides"]; ok {
		out["overrides"] = renameList(o, "topologyName", "clusterName", func(n string) string { return clusterNameOf(ns, typ, n) })
	}
	return out
}

// toV1beta2Spec maps v1beta1 placement and overrides to v1beta2. The
// topology type is cell when every named cluster is a cell of this
// namespace and a selector (if any) is pinned to this namespace's cells;
// otherwise cluster.
func toV1beta2Spec(ns string, v1 map[string]any) map[string]any {
	typ := inferTopologyType(ns, v1)
	out := map[string]any{}
	if p, ok := v1["placement"].(map[string]any); ok {
		placement := map[string]any{"topologyType": string(typ)}
		for k, v := range p {
			switch k {
			case "clusters":
				placement["topologies"] = renameList(v, "name", "name", func(n string) string { return topologyNameOf(ns, typ, n) })
			case "clusterSelector":
				placement["topologySelector"] = unpinSelector(ns, typ, v)
			default:
				placement[k] = v
			}
		}
		out["placement"] = placement
	}
	if o, ok := v1["overrides"]; ok {
		out["overrides"] = renameList(o, "clusterName", "topologyName", func(n string) string { return topologyNameOf(ns, typ, n) })
	}
	return out
}

// normalizeV1beta2 fills the defaulted topology type so that an object
// that leaves it out compares equal to its conversion.
func normalizeV1beta2(v2 map[string]any) map[string]any {
	p, ok := v2["placement"].(map[string]any)
	if !ok {
		return v2
	}
	if t, _ := p["topologyType"].(string); t != "" {
		return v2
	}
	placement := make(map[string]any, len(p)+1)
	for k, v := range p {
		placement[k] = v
	}
	placement["topologyType"] = string(typesv1beta2.TopologyCell)
	out := make(map[string]any, len(v2))
	for k, v := range v2 {
		out[k] = v
	}
	out["placement"] = placement
	return out
}

func topologyTypeOf(v2 map[string]any) typesv1beta2.TopologyType {
	if p, ok := v2["placement"].(map[string]any); ok {
		if t, _ := p["topologyType"].(string); t != "" {
			return typesv1beta2.TopologyType(t)
		}
	}
	return typesv1beta2.TopologyCell
}

func inferTopologyType(ns string, v1 map[string]any) typesv1beta2.TopologyType {
	if ns == "" {
		return typesv1beta2.TopologyCluster
	}
	allCells := true
	check := func(name string) {
		if _, ok := cellv1alpha1.CellOfNamespace(ns, name); !ok {
			allCells = false
		}
	}
	if p, ok := v1["placement"].(map[string]any); ok {
		forEachName(p["clusters"], "name", check)
		if sel, ok := p["clusterSelector"].(map[string]any); ok && !hasPins(sel, cellPins(ns)) {
			allCells = false
		}
	}
	forEachName(v1["overrides"], "clusterName", check)
	if allCells {
		return typesv1beta2.TopologyCell
	}
	return typesv1beta2.TopologyCluster
}

// clusterNameOf is the KubeFedCluster name of a topology name.
func clusterNameOf(ns string, typ typesv1beta2.TopologyType, name string) string {
	if typ == typesv1beta2.TopologyCell && ns != "" {
		return cellv1alpha1.CellClusterName(ns, name)
	}
	return name
}

// topologyNameOf is the topology name of a KubeFedCluster name.
func topologyNameOf(ns string, typ typesv1beta2.TopologyType, cluster string) string {
	if typ == typesv1beta2.TopologyCell {
		if cell, ok := cellv1alpha1.CellOfNamespace(ns, cluster); ok {
			return cell
		}
	}
	return cluster
}

// Selector pins: requirements added to a translated selector so that it can
// only match per-cell clusters of this namespace (type cell) or physical
// clusters (type cluster).

func cellPins(ns string) []any {
	return []any{
		map[string]any{"key": cellv1alpha1.LabelTopologyType, "operator": "In", "values": []any{cellv1alpha1.TopologyTypeCell}},
		map[string]any{"key": cellv1alpha1.LabelNamespace, "operator": "In", "values": []any{ns}},
	}
}

func clusterPins() []any {
	return []any{map[string]any{"key": cellv1alpha1.LabelTopologyType, "operator": "DoesNotExist"}}
}

func pinsFor(ns string, typ typesv1beta2.TopologyType) []any {
	if typ == typesv1beta2.TopologyCell {
		return cellPins(ns)
	}
	return clusterPins()
}

func pinSelector(ns string, typ typesv1beta2.TopologyType, v any) any {
	sel, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(sel)+1)
	for k, val := range sel {
		out[k] = val
	}
	exprs, _ := sel["matchExpressions"].([]any)
	pinned := make([]any, 0, len(exprs)+2)
	pinned = append(pinned, exprs...)
	out["matchExpressions"] = append(pinned, pinsFor(ns, typ)...)
	return out
}

func unpinSelector(ns string, typ typesv1beta2.TopologyType, v any) any {
	sel, ok := v.(map[string]any)
	if !ok {
		return v
	}
	pins := pinsFor(ns, typ)
	if !hasPins(sel, pins) {
		return sel
	}
	out := make(map[string]any, len(sel))
	for k, val := range sel {
		out[k] = val
	}
	exprs, _ := sel["matchExpressions"].([]any)
	kept := make([]any, 0, len(exprs))
	for _, e := range exprs {
		if !containsExpr(pins, e) {
			kept = append(kept, e)
		}
	}
	if len(kept) == 0 {
		delete(out, "matchExpressions")
	} else {
		out["matchExpressions"] = kept
	}
	return out
}

func hasPins(sel map[string]any, pins []any) bool {
	exprs, _ := sel["matchExpressions"].([]any)
	for _, p := range pins {
		if !containsExpr(exprs, p) {
			return false
		}
	}
	return true
}

func containsExpr(list []any, e any) bool {
	for _, x := range list {
		if reflect.DeepEqual(x, e) {
			return true
		}
	}
	return false
}

// Unstructured helpers.

func namespaceOf(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	return ns
}

// specOf returns obj's spec. An object without one gets an empty map that
// is attached only if conversion puts something in it.
func specOf(obj map[string]any) (spec map[string]any, attach func(), err error) {
	switch v := obj["spec"].(type) {
	case map[string]any:
		return v, func() {}, nil
	case nil:
		m := map[string]any{}
		return m, func() {
			if len(m) > 0 {
				obj["spec"] = m
			}
		}, nil
	default:
		return nil, nil, fmt.Errorf("spec must be an object, not %s", kindOf(v))
	}
}

// kindOf names the kind of a JSON value for people.
func kindOf(v any) string {
	switch v.(type) {
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "true or false"
	case int64, float64, int, int32, float32:
		return "a number"
	}
	return fmt.Sprintf("%v", v)
}

// pick copies the named keys of m (shallowly) into a new map.
func pick(m map[string]any, keys []string) map[string]any {
	out := make(map[string]any, len(keys))
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

// replace deletes keys from m and sets the entries of with.
func replace(m map[string]any, keys []string, with map[string]any) {
	for _, k := range keys {
		delete(m, k)
	}
	for k, v := range with {
		m[k] = v
	}
}

// renameList copies a list of objects, renaming key from → to and mapping
// its string value through fn. Other keys are copied as they are.
func renameList(v any, from, to string, fn func(string) string) any {
	list, ok := v.([]any)
	if !ok {
		return v
	}
	out := make([]any, len(list))
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			out[i] = item
			continue
		}
		c := make(map[string]any, len(m))
		for k, val := range m {
			if k == from {
				if s, ok := val.(string); ok {
					val = fn(s)
				}
				c[to] = val
				continue
			}
			c[k] = val
		}
		out[i] = c
	}
	return out
}

func forEachName(v any, key string, fn func(string)) {
	list, _ := v.([]any)
	for _, item := range list {
		if m, ok := item.(map[string]any); ok {
			s, _ := m[key].(string)
			fn(s)
		}
	}
}

// mapList applies fn to every object of a list, in place.
func mapList(v any, fn func(map[string]any) map[string]any) any {
	list, ok := v.([]any)
	if !ok {
		return v
	}
	for i, item := range list {
		if m, ok := item.(map[string]any); ok {
			list[i] = fn(m)
		}
	}
	return list
}

func fromStash(obj map[string]any, key string) (map[string]any, bool) {
	md, _ := obj["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	s, ok := ann[key].(string)
	if !ok {
		return nil, false
	}
	var out map[string]any
	if err := utiljson.Unmarshal([]byte(s), &out); err != nil || out == nil {
		return nil, false
	}
	return out, true
}

// setAnnotation sets key to the JSON of value, or removes it when value is
// nil (and the annotations map when it becomes empty).
func setAnnotation(obj map[string]any, key string, value map[string]any) {
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		if value == nil {
			return
		}
		md = map[string]any{}
		obj["metadata"] = md
	}
	ann, _ := md["annotations"].(map[string]any)
	if value == nil {
		if _, ok := ann[key]; ok {
			delete(ann, key)
			if len(ann) == 0 {
				delete(md, "annotations")
			}
		}
		return
	}
	b, err := json.Marshal(value)
	if err != nil {
		// Unstructured content always marshals; keep the object usable.
		return
	}
	if ann == nil {
		ann = map[string]any{}
		md["annotations"] = ann
	}
	ann[key] = string(b)
}

// StashChanged says whether a v1beta1 update from old to obj changes the
// object's v1beta2 spec while its v1beta1 spec stays as it was: the change
// is in the stash only, and the API server would not see it.
func StashChanged(old, obj map[string]any) bool {
	if old["apiVersion"] != apiVersionV1beta1 || obj["apiVersion"] != apiVersionV1beta1 {
		return false
	}
	if !reflect.DeepEqual(old["spec"], obj["spec"]) {
		return false // a spec change counts by itself
	}
	a, b := runtime.DeepCopyJSON(old), runtime.DeepCopyJSON(obj)
	if toV1beta2(a) != nil || toV1beta2(b) != nil {
		return false
	}
	return !reflect.DeepEqual(a["spec"], b["spec"])
}

// StashedV1beta2Spec returns the v1beta2 placement, placementMask,
// overrides and replicaDivision a v1beta1 object stashes in AnnotationV1beta2Spec, exactly
// when its v1beta2 view shows them: a stash the placement no longer
// matches is ignored, as conversion ignores it. ok is false for a
// v1beta1 object without a (matching) stash.
func StashedV1beta2Spec(obj map[string]any) (spec map[string]any, ok bool) {
	restored, found := fromStash(obj, AnnotationV1beta2Spec)
	if !found {
		return nil, false
	}
	v1, _ := obj["spec"].(map[string]any)
	if !reflect.DeepEqual(toV1beta1Spec(namespaceOf(obj), restored), pick(v1, specKeysV1beta1)) {
		return nil, false
	}
	return restored, true
}

// V1beta1View returns obj, a v1beta2 object, as v1beta1 without changing
// obj: the same conversion as Convert, on a copy that shares with obj
// every part conversion leaves alone (the template, the rest of the
// spec, metadata but its annotations). So a reader holding the stored
// (v1beta2) object, such as a controller's cache, gets KubeFed's view of
// it without the webhook and without copying the whole object. The view
// must be treated as read-only where it shares with obj. An object that
// is v1beta1 already is returned as it is.
func V1beta1View(obj map[string]any) (map[string]any, error) {
	if from, _ := obj["apiVersion"].(string); from == apiVersionV1beta1 {
		return obj, nil
	}
	view := make(map[string]any, len(obj))
	for k, v := range obj {
		view[k] = v
	}
	if md, ok := obj["metadata"].(map[string]any); ok {
		m := make(map[string]any, len(md))
		for k, v := range md {
			m[k] = v
		}
		if ann, ok := md["annotations"].(map[string]any); ok {
			a := make(map[string]any, len(ann))
			for k, v := range ann {
				a[k] = v
			}
			m["annotations"] = a
		}
		view["metadata"] = m
	}
	if spec, ok := obj["spec"].(map[string]any); ok {
		s := make(map[string]any, len(spec))
		for k, v := range spec {
			s[k] = v
		}
		view["spec"] = s
	}
	if status, ok := obj["status"].(map[string]any); ok {
		view["status"] = deepCopyJSON(status)
	}
	if err := Convert(view, apiVersionV1beta1); err != nil {
		return nil, err
	}
	return view, nil
}

// StatusToV1beta2 converts a v1beta1 status (status.clusters named by
// KubeFedCluster) to the v1beta2 status of obj, a v1beta2 object (its
// namespace and topology type name the topologies), in place: what
// Convert does to the status of a v1beta1 object whose v1beta2 spec is
// obj's. It lets a reader of the stored version write a status computed
// in KubeFed's terms without a round trip through the webhook.
func StatusToV1beta2(obj map[string]any, status map[string]any) {
	spec, _ := obj["spec"].(map[string]any)
	statusToV1beta2(status, namespaceOf(obj), topologyTypeOf(spec))
}

func statusToV1beta2(status map[string]any, ns string, typ typesv1beta2.TopologyType) {
	list, ok := status["clusters"]
	if !ok {
		return
	}
	delete(status, "clusters")
	status["topologies"] = mapList(list, func(e map[string]any) map[string]any {
		cluster, _ := e["name"].(string)
		e["name"] = topologyNameOf(ns, typ, cluster)
		e["cluster"] = cluster
		if st, _ := e["status"].(string); st == "" {
			e["status"] = StatusOK
		}
		return e
	})
}

// deepCopyJSON copies unstructured content.
func deepCopyJSON(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = deepCopyValue(v)
	}
	return out
}

func deepCopyValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return deepCopyJSON(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopyValue(e)
		}
		return out
	}
	return v
}
