package nativestatus

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Deployment condition reasons, as the Deployment controller writes them.
const (
	ReasonNewReplicaSetAvailable   = "NewReplicaSetAvailable"
	ReasonReplicaSetUpdated        = "ReplicaSetUpdated"
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	ReasonMinimumReplicasAvailable = "MinimumReplicasAvailable"
	ReasonMinimumReplicasUnavail   = "MinimumReplicasUnavailable"
	// ReasonHeldBack: everything released runs the current template, but
	// cells outside the placement mask run an older one.
	ReasonHeldBack = "HeldBack"
)

// defaultProgressDeadline is spec.progressDeadlineSeconds' API default.
const defaultProgressDeadline = 600

// counts are summed replica counts.
type counts struct {
	replicas, updated, ready, available, unavailable int64
}

// sumPods sums a workload's pod counts over the cells: keys name the
// member status fields for all pods, updated, ready and available pods,
// and unavailable ("" when the kind has none). Updated pods count only
// in cells that run the current template and have observed it; an
// offline cell's pods count as unavailable, never as ready or available.
func sumPods(cells []Cell, all, updated, ready, available, unavailable string) counts {
	var n counts
	for _, c := range cells {
		s := c.Status
		r := num(s, all)
		n.replicas += r
		if c.observed() {
			n.updated += num(s, updated)
		}
		if c.Offline {
			n.unavailable += r
			continue
		}
		n.ready += num(s, ready)
		n.available += num(s, available)
		if unavailable != "" {
			n.unavailable += num(s, unavailable)
		}
	}
	return n
}

// lagging names the released cells that do not run the current template
// (or whose member has not observed it yet).
func lagging(cells []Cell) []string {
	return names(cells, func(c Cell) bool { return !c.HeldBack && !c.observed() })
}

func offline(cells []Cell) []string {
	return names(cells, func(c Cell) bool { return c.Offline })
}

func heldBack(cells []Cell) []string {
	return names(cells, Cell.olderHeldBack)
}

// waitingFor says why a rollout is not complete, naming the cells.
func waitingFor(cells []Cell) string {
	var parts []string
	if h := heldBack(cells); len(h) > 0 {
		parts = append(parts, fmt.Sprintf("held back by the placement mask, not running the current template: %s", cellList(h)))
	}
	if l := lagging(cells); len(l) > 0 {
		parts = append(parts, fmt.Sprintf("not running the current template yet: %s", cellList(l)))
	}
	if o := offline(cells); len(o) > 0 {
		parts = append(parts, fmt.Sprintf("offline (last known status counted, no pod available): %s", cellList(o)))
	}
	return strings.Join(parts, "; ")
}

func deployment(in Input) map[string]any {
	want := specInt(in.Spec, 1, "replicas")
	n := podCounts(in, want, "replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas")
	og := observedGeneration(in, true)
	st := map[string]any{}
	setNum(st, "observedGeneration", og)
	setNum(st, "replicas", n.replicas)
	setNum(st, "updatedReplicas", n.updated)
	setNum(st, "readyReplicas", n.ready)
	setNum(st, "availableReplicas", n.available)
	setNum(st, "unavailableReplicas", n.unavailable)

	// Available: every cell that holds the Deployment (or should) has
	// its minimum availability, by its own condition.
	unavailable := names(in.Cells, func(c Cell) bool {
		if c.HeldBack && c.Status == nil {
			return false // held back before it ever ran there
		}
		return c.Offline || !is(c.Status, "Available", "True")
	})
	avail := condition{Type: "Available", Status: "True", Reason: ReasonMinimumReplicasAvailable, Message: "Deployment has minimum availability in every cell."}
	if len(unavailable) > 0 {
		avail = condition{Type: "Available", Status: "False", Reason: ReasonMinimumReplicasUnavail,
			Message: fmt.Sprintf("Deployment does not have minimum availability in %d of %d cells: %s.", len(unavailable), len(in.Cells), cellList(unavailable))}
	}

	prog := deploymentProgressing(in, want, og, n)
	conds := []condition{avail, prog}
	if failing := names(in.Cells, func(c Cell) bool { return !c.Offline && is(c.Status, "ReplicaFailure", "True") }); len(failing) > 0 {
		conds = append(conds, condition{Type: "ReplicaFailure", Status: "True", Reason: "FailedCreate",
			Message: fmt.Sprintf("pods cannot be created in %s.", cellList(failing))})
	}
	st["conditions"] = stamped(conds, in.Previous, in.Now)
	return st
}

// deploymentProgressing is the Progressing condition: what kubectl
// rollout status, kstatus and Argo CD read to tell a rollout that is
// done, in progress or stuck.
func deploymentProgressing(in Input, want, og int64, n counts) condition {
	timedOut := names(in.Cells, func(c Cell) bool {
		p := find(c.Status, "Progressing")
		return !c.Offline && c.observed() && p != nil && p["reason"] == ReasonProgressDeadlineExceeded
	})
	if len(timedOut) > 0 {
		return condition{Type: "Progressing", Status: "False", Reason: ReasonProgressDeadlineExceeded,
			Message: fmt.Sprintf("the progress deadline was exceeded in %s.", cellList(timedOut))}
	}
	prev := in.Previous
	progress := prev == nil || num(prev, "observedGeneration") != og || num(prev, "replicas") != n.replicas ||
		num(prev, "updatedReplicas") != n.updated || num(prev, "readyReplicas") != n.ready ||
		num(prev, "availableReplicas") != n.available
	done := og == in.Generation && n.updated >= want && n.replicas <= n.updated && n.available >= n.updated &&
		len(heldBack(in.Cells)) == 0 && len(lagging(in.Cells)) == 0
	if done {
		return condition{Type: "Progressing", Status: "True", Reason: ReasonNewReplicaSetAvailable,
			Message: "the current template runs and is available in every cell.", progress: progress}
	}
	reason := ReasonReplicaSetUpdated
	if len(heldBack(in.Cells)) > 0 && len(lagging(in.Cells)) == 0 {
		reason = ReasonHeldBack
	}
	msg := fmt.Sprintf("%d of %d replicas run the current template", n.updated, want)
	if w := waitingFor(in.Cells); w != "" {
		msg += "; " + w
	}
	msg += "."
	deadline := specInt(in.Spec, defaultProgressDeadline, "progressDeadlineSeconds")
	if !progress && deadline < math.MaxInt32 {
		old := find(prev, "Progressing")
		age, known := since(prev, "Progressing", in.Now)
		if (old != nil && old["reason"] == ReasonProgressDeadlineExceeded) || (known && age > time.Duration(deadline)*time.Second) {
			return condition{Type: "Progressing", Status: "False", Reason: ReasonProgressDeadlineExceeded,
				Message: fmt.Sprintf("no progress for %ds: %s", deadline, msg)}
		}
	}
	return condition{Type: "Progressing", Status: "True", Reason: reason, Message: msg, progress: progress}
}

func statefulSet(in Input) map[string]any {
	want := specInt(in.Spec, 1, "replicas")
	n := podCounts(in, want, "replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "")
	og := observedGeneration(in, true)
	st := map[string]any{}
	setNum(st, "observedGeneration", og)
	setNum(st, "replicas", n.replicas)
	setNum(st, "readyReplicas", n.ready)
	setNum(st, "availableReplicas", n.available)
	setNum(st, "updatedReplicas", n.updated)
	var current int64
	for _, c := range in.Cells {
		current += num(c.Status, "currentReplicas")
	}
	setNum(st, "currentReplicas", current)

	// Revisions are per cell (a template hash, which overrides change);
	// the aggregate's updateRevision is the first updated cell's, and
	// currentRevision equals it only once every cell has rolled out.
	rolledOut := func(c Cell) bool {
		cur, _ := c.Status["currentRevision"].(string)
		upd, _ := c.Status["updateRevision"].(string)
		return c.observed() && (upd == "" || cur == upd)
	}
	update := ""
	for _, c := range in.Cells {
		if c.observed() {
			if update, _ = c.Status["updateRevision"].(string); update != "" {
				break
			}
		}
	}
	if update == "" {
		update = fmt.Sprintf("generation-%d", in.Generation)
	}
	done := og == in.Generation && n.ready >= want && len(names(in.Cells, func(c Cell) bool { return !rolledOut(c) })) == 0
	currentRev := ""
	if done {
		currentRev = update
	} else {
		for _, c := range in.Cells {
			if cur, _ := c.Status["currentRevision"].(string); !rolledOut(c) && cur != update {
				currentRev = cur
				break
			}
		}
	}
	st["updateRevision"] = update
	if currentRev != "" {
		st["currentRevision"] = currentRev
	}
	return st
}

func daemonSet(in Input) map[string]any {
	st := map[string]any{}
	setNum(st, "observedGeneration", observedGeneration(in, true))
	n := sumPods(in.Cells, "desiredNumberScheduled", "updatedNumberScheduled", "numberReady", "numberAvailable", "numberUnavailable")
	var scheduled, misscheduled int64
	for _, c := range in.Cells {
		scheduled += num(c.Status, "currentNumberScheduled")
		misscheduled += num(c.Status, "numberMisscheduled")
	}
	// The API requires these four, zero included.
	st["desiredNumberScheduled"] = n.replicas
	st["currentNumberScheduled"] = scheduled
	st["numberMisscheduled"] = misscheduled
	st["numberReady"] = n.ready
	setNum(st, "updatedNumberScheduled", n.updated)
	setNum(st, "numberAvailable", n.available)
	setNum(st, "numberUnavailable", n.unavailable)
	return st
}

func replicaSet(in Input) map[string]any {
	st := map[string]any{}
	setNum(st, "observedGeneration", observedGeneration(in, false))
	n := podCounts(in, specInt(in.Spec, 1, "replicas"), "replicas", "", "readyReplicas", "availableReplicas", "")
	var labeled int64
	for _, c := range in.Cells {
		labeled += num(c.Status, "fullyLabeledReplicas")
	}
	st["replicas"] = n.replicas // required by the API, zero included
	setNum(st, "fullyLabeledReplicas", labeled)
	setNum(st, "readyReplicas", n.ready)
	setNum(st, "availableReplicas", n.available)
	if failing := names(in.Cells, func(c Cell) bool { return !c.Offline && is(c.Status, "ReplicaFailure", "True") }); len(failing) > 0 {
		st["conditions"] = stamped([]condition{{Type: "ReplicaFailure", Status: "True", Reason: "FailedCreate",
			Message: fmt.Sprintf("pods cannot be created in %s.", cellList(failing))}}, in.Previous, in.Now)
	}
	return st
}
