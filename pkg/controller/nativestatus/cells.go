// Package nativestatus is cellfed-controller's native status writer: for
// one federated type whose objects are placed on behalf of native objects
// on the plane (a Deployment applied to the plane and placed by a
// policy), it writes the status aggregated over the cells
// (pkg/nativestatus) into the native object's status, with one write when
// it changed. The federated object's per-cell status (status.topologies)
// is the input and stays as it is.
//
// A federated object is placed on behalf of a native object when it has
// an owner reference to an object of the target kind with its own name,
// in its namespace: the policy path (pkg/policy/federate) makes the
// native object its controller.
package nativestatus

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cellfed/cellfed/pkg/nativestatus"
	"github.com/cellfed/cellfed/pkg/policy/federate"
)

// Topology statuses that decide how a cell counts (the propagation
// controller's, as the v1beta2 status says them).
const (
	statusOK               = "OK"
	statusHeldBack         = "HeldBack"
	statusClusterNotReady  = "ClusterNotReady"
	statusPlacementConflct = "PlacementConflict"
	statusOutsideWorkspace = "OutsideWorkspace"
)

// NativeOwner is the owner reference of fed to the native object it is
// placed for: an object of kind target (group/version and kind) named as
// fed. ok is false when fed is not placed for a native object.
func NativeOwner(fed *unstructured.Unstructured, target schema.GroupVersionKind) (ref metav1.OwnerReference, ok bool) {
	apiVersion := target.GroupVersion().String()
	for _, r := range fed.GetOwnerReferences() {
		if r.Kind == target.Kind && r.APIVersion == apiVersion && r.Name == fed.GetName() {
			return r, true
		}
	}
	return metav1.OwnerReference{}, false
}

// Synced reports whether fed's template carries native's current spec:
// it is the template the policy path builds from native now
// (federate.Template), which leaves out what the plane filled in for its
// own copy (a Service's cluster IPs, a Job's generated selector).
func Synced(fed, native *unstructured.Unstructured) bool {
	tmpl, _, _ := unstructured.NestedFieldNoCopy(fed.Object, "spec", "template")
	return sameJSON(tmpl, federate.Template(native))
}

// Cells reads the placed cells from fed's stored (v1beta2) status: its
// topologies, and the member object's generation after the last write
// from the propagation record. synced says whether fed's template is the
// native object's current spec: only then does a cell that runs fed's
// generation run the current template.
func Cells(fed *unstructured.Unstructured, synced bool) []nativestatus.Cell {
	memberGen := map[string]int64{}
	versions, _, _ := unstructured.NestedSlice(fed.Object, "status", "record", "clusterVersions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		name, _ := m["clusterName"].(string)
		ver, _ := m["version"].(string)
		if g, ok := strings.CutPrefix(ver, "gen:"); ok {
			if n, err := strconv.ParseInt(g, 10, 64); err == nil {
				memberGen[name] = n
			}
		}
	}
	topologies, _, _ := unstructured.NestedSlice(fed.Object, "status", "topologies")
	var cells []nativestatus.Cell
	for _, t := range topologies {
		m, _ := t.(map[string]any)
		st, _ := m["status"].(string)
		if st == statusPlacementConflct || st == statusOutsideWorkspace {
			continue // never written for this object there
		}
		name, _ := m["name"].(string)
		cluster, _ := m["cluster"].(string)
		gen, _, _ := unstructured.NestedInt64(m, "generation")
		c := nativestatus.Cell{
			Name:     name,
			HeldBack: st == statusHeldBack,
			Offline:  st == statusClusterNotReady,
			// An offline cell keeps the generation it last ran.
			Current:          synced && (st == statusOK || st == statusClusterNotReady) && gen == fed.GetGeneration(),
			MemberGeneration: memberGen[cluster],
		}
		c.Status, _ = m["remoteStatus"].(map[string]any)
		cells = append(cells, c)
	}
	return cells
}

// divided reports whether fed divides its replicas among its cells
// (spec.replicaDivision.mode Divide) rather than running them in full in
// each (Duplicate, the default).
func divided(fed *unstructured.Unstructured) bool {
	mode, _, _ := unstructured.NestedString(fed.Object, "spec", "replicaDivision", "mode")
	return mode == "Divide"
}

// Next is the status native should have, given fed: ok is false when
// native's kind has no aggregated status, and write says whether it
// differs from native's status.
func Next(fed, native *unstructured.Unstructured, now time.Time) (status map[string]any, write, ok bool) {
	spec, _, _ := unstructured.NestedMap(native.Object, "spec")
	prev, _, _ := unstructured.NestedMap(native.Object, "status")
	status, ok = nativestatus.Aggregate(nativestatus.Input{
		Kind:       native.GroupVersionKind().GroupKind(),
		Generation: native.GetGeneration(),
		Spec:       spec,
		Divided:    divided(fed),
		Cells:      Cells(fed, Synced(fed, native)),
		Previous:   prev,
		Now:        now,
	})
	if !ok {
		return nil, false, false
	}
	return status, !sameJSON(prev, status), true
}

// RecheckAfter is when a Deployment's status must be computed again
// without any event: when its progress deadline runs out (0: never).
func RecheckAfter(native *unstructured.Unstructured, status map[string]any, now time.Time) time.Duration {
	if native.GroupVersionKind().GroupKind() != (schema.GroupKind{Group: "apps", Kind: "Deployment"}) {
		return 0
	}
	deadline, ok, _ := unstructured.NestedInt64(native.Object, "spec", "progressDeadlineSeconds")
	if !ok {
		deadline = 600
	}
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != "Progressing" || m["status"] != "True" || m["reason"] == nativestatus.ReasonNewReplicaSetAvailable {
			continue
		}
		s, _ := m["lastUpdateTime"].(string)
		at, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return 0
		}
		return max(at.Add(time.Duration(deadline)*time.Second+time.Second).Sub(now), time.Second)
	}
	return 0
}

// sameJSON compares two JSON values by content (numbers as numbers,
// whatever their Go type).
func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		return false
	}
	var x, y any
	if json.Unmarshal(ja, &x) != nil || json.Unmarshal(jb, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
