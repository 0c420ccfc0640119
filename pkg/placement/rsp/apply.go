package rsp

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Placement reads what Input needs from a v1beta1 federated object: its
// cluster selector (nil when it has none) and the clusters it names.
func Placement(obj *unstructured.Unstructured) (labels.Selector, []string, error) {
	var sel labels.Selector
	if raw, ok, _ := unstructured.NestedMap(obj.Object, "spec", "placement", "clusterSelector"); ok {
		var ls metav1.LabelSelector
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &ls); err != nil {
			return nil, nil, fmt.Errorf("spec.placement.clusterSelector: %w", err)
		}
		s, err := metav1.LabelSelectorAsSelector(&ls)
		if err != nil {
			return nil, nil, fmt.Errorf("spec.placement.clusterSelector: %w", err)
		}
		sel = s
	}
	list, _, _ := unstructured.NestedSlice(obj.Object, "spec", "placement", "clusters")
	var names []string
	for _, e := range list {
		if m, ok := e.(map[string]any); ok {
			if n, ok := m["name"].(string); ok {
				names = append(names, n)
			}
		}
	}
	return sel, names, nil
}

// Current reads each cluster's /spec/replicas override of a v1beta1
// federated object.
func Current(obj *unstructured.Unstructured) map[string]int64 {
	out := map[string]int64{}
	list, _, _ := unstructured.NestedSlice(obj.Object, "spec", "overrides")
	for _, e := range list {
		m, _ := e.(map[string]any)
		name, _ := m["clusterName"].(string)
		ovs, _ := m["clusterOverrides"].([]any)
		for _, o := range ovs {
			om, _ := o.(map[string]any)
			if om["path"] != ReplicasPath || om["op"] == "remove" {
				continue
			}
			if v, ok := asInt64(om["value"]); ok {
				out[name] = v
			}
		}
	}
	return out
}

// Apply writes schedule into a v1beta1 federated object as KubeFed's
// scheduler does: spec.placement.clusters become the scheduled clusters
// (the rest of the placement is kept), each scheduled cluster gets a
// /spec/replicas override of its count, and the replicas override of a
// cluster no longer scheduled is removed (its other overrides stay). It
// reports whether anything changed.
func Apply(obj *unstructured.Unstructured, schedule map[string]int64) (bool, error) {
	changed := false
	names := Names(schedule)
	_, placed, err := Placement(obj)
	if err != nil {
		return false, err
	}
	if !sets.New(placed...).Equal(sets.New(names...)) {
		clusters := make([]any, 0, len(names))
		for _, n := range names {
			clusters = append(clusters, map[string]any{"name": n})
		}
		if err := unstructured.SetNestedSlice(obj.Object, clusters, "spec", "placement", "clusters"); err != nil {
			return false, fmt.Errorf("setting spec.placement.clusters: %w", err)
		}
		changed = true
	}

	list, _, _ := unstructured.NestedSlice(obj.Object, "spec", "overrides")
	seen := map[string]bool{}
	var out []any
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			out = append(out, e)
			continue
		}
		name, _ := m["clusterName"].(string)
		ovs, _ := m["clusterOverrides"].([]any)
		want, scheduled := schedule[name]
		var kept []any
		found := false
		for _, o := range ovs {
			om, _ := o.(map[string]any)
			if om == nil || om["path"] != ReplicasPath {
				kept = append(kept, o)
				continue
			}
			if !scheduled || found {
				changed = true // dropped: not scheduled, or a duplicate
				continue
			}
			found = true
			if v, ok := asInt64(om["value"]); !ok || v != want || om["op"] == "remove" {
				om = map[string]any{"path": ReplicasPath, "value": want}
				changed = true
			}
			kept = append(kept, om)
		}
		if scheduled && !found {
			kept = append(kept, map[string]any{"path": ReplicasPath, "value": want})
			changed = true
		}
		if scheduled {
			seen[name] = true
		}
		if len(kept) == 0 {
			continue
		}
		m["clusterOverrides"] = kept
		out = append(out, m)
	}
	for _, n := range names {
		if seen[n] {
			continue
		}
		out = append(out, map[string]any{
			"clusterName":      n,
			"clusterOverrides": []any{map[string]any{"path": ReplicasPath, "value": schedule[n]}},
		})
		changed = true
	}
	if !changed {
		return false, nil
	}
	if len(out) == 0 {
		unstructured.RemoveNestedField(obj.Object, "spec", "overrides")
		return true, nil
	}
	if err := unstructured.SetNestedSlice(obj.Object, out, "spec", "overrides"); err != nil {
		return false, fmt.Errorf("setting spec.overrides: %w", err)
	}
	return true, nil
}

func asInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case float64:
		if n == float64(int64(n)) {
			return int64(n), true
		}
	}
	return 0, false
}
