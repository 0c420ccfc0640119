package propagation

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	typesv1b1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
	typesv1b2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
	"github.com/cellfed/cellfed/pkg/conversion"
	"github.com/cellfed/cellfed/pkg/placement/division"
)

// divisionSpec reads a stored object's v1beta2 replica division (from
// the v1beta1 stash for objects stored in v1beta1), with the topology
// type and namespace that turn its names into cluster names. nil when
// the object has none, or its mode is not Divide.
func divisionSpec(stored *unstructured.Unstructured) (*typesv1b2.Spec, error) {
	v2, _ := stored.Object["spec"].(map[string]any)
	if stashed, ok := conversion.StashedV1beta2Spec(stored.Object); ok {
		v2 = stashed
	}
	d, ok := v2["replicaDivision"].(map[string]any)
	if !ok {
		return nil, nil
	}
	var spec typesv1b2.Spec
	in := map[string]any{"replicaDivision": d}
	if p, ok := v2["placement"].(map[string]any); ok {
		in["placement"] = map[string]any{"topologyType": p["topologyType"]}
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(in, &spec); err != nil {
		return nil, fmt.Errorf("spec.replicaDivision: %w", err)
	}
	if spec.ReplicaDivision.Mode != typesv1b2.DivisionDivide {
		return nil, nil
	}
	return &spec, nil
}

// divide decides the replicas each placed cluster runs now under the
// object's replica division: the division of the template's replicas
// (package division), reached by steps that never drop the ready total
// (division.Step) from what each cluster was assigned before (the
// status's replicas). It returns nil when the object is not divided.
// Failover counts a cluster whose member is not ready as failing.
//
// fresh is what each member's cache shows of the object now, by member
// (observe): its counts win over the last status written, so a step
// follows readiness as soon as a member reports it.
//
// With failover, a cluster whose replicas stay unready (fewer ready than
// assigned) for failoverAfterSeconds fails too: clocks are each cluster's
// unreadyTimer, as of now; divide returns their next values and how soon
// the object must be looked at again for one of them (0: no clock runs).
//
// replicasPath is where the type keeps its replicas (the type's
// FederatedTypeConfig spec.replicasPath, /spec/replicas by default).
func divide(key string, spec *typesv1b2.Spec, ns string, template map[string]any, replicasPath string, cur typesv1b1.Status, intents []Intent, overrides []typesv1b1.Override, fresh map[string]observation, clocks clockInput) (divided map[string]int32, moving bool, next clockOutput, err error) {
	if spec == nil {
		return nil, false, clockOutput{}, nil
	}
	d := spec.ReplicaDivision
	replicas, err := templateReplicas(template, replicasPath)
	if err != nil {
		return nil, false, clockOutput{}, err
	}
	clusterOf := func(name string) string {
		if spec.Placement.TopologyType != typesv1b2.TopologyCluster && ns != "" {
			return cellv1alpha1.CellClusterName(ns, name)
		}
		return name
	}
	conf := map[string]typesv1b2.DivisionTopology{}
	for _, t := range d.Topologies {
		conf[clusterOf(t.Name)] = t
	}
	prev := map[string]typesv1b1.ClusterStatus{}
	for _, cs := range cur.Clusters {
		prev[cs.Name] = cs
	}
	in := division.Input{Key: key, Mode: division.ModeDivide, Replicas: replicas, Dynamic: d.Dynamic == typesv1b2.DynamicAvailableReplicas, Failover: d.Failover}
	ready := map[string]int32{}
	for _, it := range intents {
		if it.Writer == "" || it.OverridesOf != "" || it.Status == StatusPlacementConflict || (it.Verb != Ensure && it.Status != StatusHeldBack) {
			// A moving cell's move cluster writes the cell's share.
			continue
		}
		cl := it.Writer
		c := division.Cell{Name: cl, Weight: 1, Held: it.Status == StatusHeldBack, Failing: it.Status == StatusClusterNotReady}
		if t, ok := conf[cl]; ok {
			if t.Weight != nil {
				c.Weight = *t.Weight
			}
			c.MinReplicas, c.MaxReplicas = t.MinReplicas, t.MaxReplicas
		}
		ps := prev[cl]
		counts := remoteCounts(ps.RemoteStatus)
		if o, ok := fresh[it.Member]; ok && o.state == observedPresent {
			counts = remoteCounts(o.remoteStatus)
		}
		switch {
		case ps.Replicas != nil:
			c.Current = *ps.Replicas
		case counts.Replicas != nil:
			c.Current = *counts.Replicas
		}
		c.Available = counts.AvailableReplicas
		if counts.ReadyReplicas != nil {
			ready[cl] = *counts.ReadyReplicas
		}
		if d.Failover && !c.Failing {
			failing, t, wake := unreadyFailing(clocks.Timers[cl], c.Current, counts.ready(), failoverAfter(d), clocks.Now)
			c.Failing = failing
			if !t.zero() {
				if next.Timers == nil {
					next.Timers = map[string]unreadyTimer{}
				}
				next.Timers[cl] = t
			}
			if wake > 0 && (next.Wake == 0 || wake < next.Wake) {
				next.Wake = wake
			}
		}
		c.Override = replicasOverride(replicasPath, overridesFor(overrides, cl))
		in.Cells = append(in.Cells, c)
	}
	res, err := division.Divide(in)
	if err != nil {
		return nil, false, clockOutput{}, err
	}
	current := make(map[string]int32, len(in.Cells))
	for _, c := range in.Cells {
		current[c.Name] = c.Current
	}
	// Held and overridden clusters are written as they are; the others
	// move towards their targets without dropping the ready total.
	moves := make([]division.Move, 0, len(res.Cells))
	for _, a := range res.Cells {
		if a.Reason == division.ReasonHeld || a.Reason == division.ReasonOverride {
			continue
		}
		moves = append(moves, division.Move{Name: a.Name, Current: current[a.Name], Target: a.Replicas, Ready: ready[a.Name]})
	}
	maxSurge := int32(1)
	if d.MaxSurge != nil {
		maxSurge = *d.MaxSurge
	}
	out, err := division.Step(moves, maxSurge)
	if err != nil {
		return nil, false, clockOutput{}, err
	}
	for _, a := range res.Cells {
		if _, ok := out[a.Name]; !ok {
			out[a.Name] = a.Replicas
		}
		moving = moving || out[a.Name] != a.Replicas
	}
	return out, moving, next, nil
}

// clockInput is what divide needs to run the failover clocks of unready
// replicas: the time, and each cluster's clock as last returned.
type clockInput struct {
	Now    time.Time
	Timers map[string]unreadyTimer
}

// clockOutput is each cluster's clock after divide (only running ones),
// and how soon to look again for one of them (0: none runs).
type clockOutput struct {
	Timers map[string]unreadyTimer
	Wake   time.Duration
}

// unreadyTimer is one cluster's failover clock for replicas that do not
// become ready. The controller keeps it in memory: a restarted
// controller starts each clock again, which delays a failover, never
// hastens one.
type unreadyTimer struct {
	// since: when the cluster was first seen with fewer ready replicas
	// than it was assigned.
	since time.Time
	// failedAt: when failover moved its share away. It gets none until
	// failoverAfter has passed again, then is tried again; a move never
	// lowers the ready total, so a retry that stays unready costs the
	// others nothing.
	failedAt time.Time
}

func (t unreadyTimer) zero() bool { return t.since.IsZero() && t.failedAt.IsZero() }

// defaultFailoverAfter is failoverAfterSeconds when it is not set.
const defaultFailoverAfter = 300 * time.Second

func failoverAfter(d *typesv1b2.ReplicaDivision) time.Duration {
	if d.FailoverAfterSeconds != nil {
		return time.Duration(*d.FailoverAfterSeconds) * time.Second
	}
	return defaultFailoverAfter
}

// unreadyFailing decides whether a cluster assigned current replicas, of
// which ready are ready (nil: the member reports no status), fails for
// unready replicas at now, given its clock t; it returns the next clock
// and how soon the decision may change (0: not until something else
// does).
func unreadyFailing(t unreadyTimer, current int32, ready *int32, after time.Duration, now time.Time) (bool, unreadyTimer, time.Duration) {
	if !t.failedAt.IsZero() {
		if left := after - now.Sub(t.failedAt); left > 0 {
			return true, t, left
		}
		t = unreadyTimer{} // cooled down: try the cluster again
	}
	if ready == nil || current == 0 || *ready >= current {
		return false, unreadyTimer{}, 0
	}
	if t.since.IsZero() {
		t.since = now
	}
	if left := after - now.Sub(t.since); left > 0 {
		return false, t, left
	}
	return true, unreadyTimer{failedAt: now}, after
}

// divisionStepRetry is how soon a division on its way (divide's
// moving) is looked at again when no member event comes first: a step
// that only changes what an offline cluster is assigned writes to no
// member, so no member event would bring the next step.
const divisionStepRetry = time.Second

// replicaCounts are the counts a workload's status reports.
type replicaCounts struct {
	Replicas          *int32 `json:"replicas"`
	ReadyReplicas     *int32 `json:"readyReplicas"`
	AvailableReplicas *int32 `json:"availableReplicas"`
	// reported: the member reported a status (a JSON object).
	reported bool
}

// ready is the ready replicas a reported status shows: a workload's
// status leaves readyReplicas out when it is 0; nil when the member
// reports no status at all.
func (c replicaCounts) ready() *int32 {
	if c.ReadyReplicas != nil {
		return c.ReadyReplicas
	}
	if c.reported {
		return new(int32)
	}
	return nil
}

func remoteCounts(raw *runtime.RawExtension) replicaCounts {
	var c replicaCounts
	if raw != nil && len(raw.Raw) > 0 {
		// A status of another shape has no counts.
		c.reported = json.Unmarshal(raw.Raw, &c) == nil
	}
	return c
}

// replicasOverride is the replicas an explicit override of the cluster
// sets, if one does: it wins over the division.
func replicasOverride(path string, ops []typesv1b1.ClusterOverride) *int32 {
	var out *int32
	for _, op := range ops {
		if op.Path != path || op.Op == "remove" || op.Value == nil {
			continue
		}
		var n int32
		if err := json.Unmarshal(op.Value.Raw, &n); err == nil && n >= 0 {
			out = &n
		}
	}
	return out
}

// divisionOp is the override that writes a cluster's share. It goes
// before the cluster's own overrides, so an explicit replicas override
// still wins.
func divisionOp(path string, n int32) typesv1b1.ClusterOverride {
	return typesv1b1.ClusterOverride{Op: "add", Path: path, Value: &runtime.RawExtension{Raw: fmt.Appendf(nil, "%d", n)}}
}

// templateReplicas reads the replicas a divided template asks for at the
// type's replicas path (1, the workloads' default, when it has none). A
// path that is not valid, leads through something that is not an object,
// or holds anything but an integer from 0 to MaxInt32 fails this object
// with a message naming the path and its fix, never the type: objects
// admitted before admission checked these (or written around it) fail
// alone.
func templateReplicas(template map[string]any, replicasPath string) (int32, error) {
	fix := "fix spec.replicasPath of the type's FederatedTypeConfig (e.g. /spec/replicas), or use mode Duplicate"
	if err := division.ValidateReplicasPath(replicasPath); err != nil {
		return 0, fmt.Errorf("the type's replicasPath: %v; %s", err, fix)
	}
	segs, _ := division.ReplicasPathSegments(replicasPath)
	v, ok, err := unstructured.NestedFieldNoCopy(template, segs...)
	if err != nil {
		return 0, fmt.Errorf("the type's replicasPath %s does not lead to a field of the template: %v; %s", replicasPath, err, fix)
	}
	if !ok || v == nil {
		return 1, nil
	}
	var n float64
	switch x := v.(type) {
	case int64:
		n = float64(x)
	case float64:
		n = x
	default:
		return 0, fmt.Errorf("the template's %s is %s, not an integer: a divided template holds its replicas there; %s", replicasPath, jsonKindOf(v), fix)
	}
	switch {
	case n != math.Trunc(n):
		return 0, fmt.Errorf("the template's %s is %v, not an integer", replicasPath, v)
	case n < 0:
		return 0, fmt.Errorf("the template's %s is %v: divided replicas must be >= 0", replicasPath, v)
	case n > math.MaxInt32:
		return 0, fmt.Errorf("the template's %s is %v: divided replicas must be at most %d", replicasPath, v, math.MaxInt32)
	}
	return int32(n), nil
}

// jsonKindOf names the kind of a JSON value for a message.
func jsonKindOf(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "true or false"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	}
	return "not a number"
}
