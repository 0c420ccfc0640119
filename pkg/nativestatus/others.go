package nativestatus

import (
	"encoding/json"
	"fmt"
	"time"
)

// expected: the cell holds the object, or should (a cell held back
// before the object ever ran there holds nothing and is not expected).
func expected(c Cell) bool { return !(c.HeldBack && c.Status == nil) }

// job: counts summed; Failed once any cell's Job failed, Complete once
// every placed cell's Job completed (and none failed).
func job(in Input) map[string]any {
	st := map[string]any{}
	var active, ready, succeeded, failed, terminating int64
	var start, completion string
	for _, c := range in.Cells {
		s := c.Status
		active += num(s, "active")
		succeeded += num(s, "succeeded")
		failed += num(s, "failed")
		terminating += num(s, "terminating")
		if !c.Offline {
			ready += num(s, "ready")
		}
		if t, _ := s["startTime"].(string); t != "" && (start == "" || earlier(t, start)) {
			start = t
		}
		if t, _ := s["completionTime"].(string); t != "" && (completion == "" || earlier(completion, t)) {
			completion = t
		}
	}
	setNum(st, "active", active)
	setNum(st, "ready", ready)
	setNum(st, "succeeded", succeeded)
	setNum(st, "failed", failed)
	setNum(st, "terminating", terminating)
	if start != "" {
		st["startTime"] = start
	}
	var conds []condition
	failedIn := names(in.Cells, func(c Cell) bool { return is(c.Status, "Failed", "True") })
	// A cell held back before the Job ever ran there has not run it:
	// the Job is not complete.
	notDone := names(in.Cells, func(c Cell) bool { return !is(c.Status, "Complete", "True") })
	switch {
	case len(failedIn) > 0:
		reason, _ := find(in.Cells[indexOf(in.Cells, failedIn[0])].Status, "Failed")["reason"].(string)
		conds = append(conds, condition{Type: "Failed", Status: "True", Reason: reason,
			Message: fmt.Sprintf("the Job failed in %s.", cellList(failedIn))})
	case len(notDone) == 0 && len(in.Cells) > 0:
		conds = append(conds, condition{Type: "Complete", Status: "True", Reason: "CompletionsReached",
			Message: "the Job completed in every cell."})
		if completion != "" {
			st["completionTime"] = completion
		}
	}
	if len(in.Cells) > 0 && len(names(in.Cells, func(c Cell) bool { return !is(c.Status, "Suspended", "True") })) == 0 {
		conds = append(conds, condition{Type: "Suspended", Status: "True", Reason: "JobSuspended", Message: "the Job is suspended in every cell."})
	}
	if len(conds) > 0 {
		st["conditions"] = stamped(conds, in.Previous, in.Now)
	}
	return st
}

func indexOf(cells []Cell, name string) int {
	for i, c := range cells {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// earlier reports whether RFC 3339 time a is before b (unparsable times
// compare as strings).
func earlier(a, b string) bool {
	ta, ea := time.Parse(time.RFC3339, a)
	tb, eb := time.Parse(time.RFC3339, b)
	if ea != nil || eb != nil {
		return a < b
	}
	return ta.Before(tb)
}

// cronJob: the active Jobs of every cell, and the latest schedule and
// success times.
func cronJob(in Input) map[string]any {
	st := map[string]any{}
	var active []any
	var scheduled, succeeded string
	for _, c := range in.Cells {
		if refs, ok := c.Status["active"].([]any); ok {
			active = append(active, refs...)
		}
		if t, _ := c.Status["lastScheduleTime"].(string); t != "" && (scheduled == "" || earlier(scheduled, t)) {
			scheduled = t
		}
		if t, _ := c.Status["lastSuccessfulTime"].(string); t != "" && (succeeded == "" || earlier(succeeded, t)) {
			succeeded = t
		}
	}
	if len(active) > 0 {
		st["active"] = active
	}
	if scheduled != "" {
		st["lastScheduleTime"] = scheduled
	}
	if succeeded != "" {
		st["lastSuccessfulTime"] = succeeded
	}
	return st
}

// service: status.loadBalancer.ingress is every cell's ingress (each
// once, in cell order), written once every expected cell has one: a
// waiter reading "has an ingress" must not see the first cell's alone.
func service(in Input) map[string]any {
	lb := map[string]any{}
	st := map[string]any{"loadBalancer": lb}
	var ingress []any
	seen := map[string]bool{}
	missing := false
	for _, c := range in.Cells {
		if !expected(c) {
			continue
		}
		m, _ := c.Status["loadBalancer"].(map[string]any)
		list, _ := m["ingress"].([]any)
		if len(list) == 0 {
			missing = true
		}
		for _, e := range list {
			b, err := json.Marshal(e)
			if err != nil || seen[string(b)] {
				continue
			}
			seen[string(b)] = true
			ingress = append(ingress, e)
		}
	}
	if !missing && len(ingress) > 0 {
		lb["ingress"] = ingress
	}
	return st
}

// hpa: replicas summed, the latest scale time; AbleToScale and
// ScalingActive hold when they hold in every cell, ScalingLimited when
// it holds in any.
func hpa(in Input) map[string]any {
	st := map[string]any{}
	setNum(st, "observedGeneration", observedGeneration(in, false))
	var cur, desired int64
	var scaled string
	for _, c := range in.Cells {
		cur += num(c.Status, "currentReplicas")
		desired += num(c.Status, "desiredReplicas")
		if t, _ := c.Status["lastScaleTime"].(string); t != "" && (scaled == "" || earlier(scaled, t)) {
			scaled = t
		}
	}
	setNum(st, "currentReplicas", cur)
	st["desiredReplicas"] = desired // required by the API, zero included
	if scaled != "" {
		st["lastScaleTime"] = scaled
	}
	counted := countedCells(in.Cells)
	conds := []condition{
		everyCell(counted, "AbleToScale"),
		everyCell(counted, "ScalingActive"),
	}
	if limited := names(counted, func(c Cell) bool { return is(c.Status, "ScalingLimited", "True") }); len(limited) > 0 {
		conds = append(conds, condition{Type: "ScalingLimited", Status: "True", Reason: "TooManyReplicas",
			Message: fmt.Sprintf("the replica count is limited in %s.", cellList(limited))})
	} else if len(counted) > 0 {
		conds = append(conds, condition{Type: "ScalingLimited", Status: "False", Reason: "DesiredWithinRange",
			Message: "the desired count is within the acceptable range in every cell."})
	}
	if len(counted) == 0 {
		return st
	}
	st["conditions"] = stamped(conds, in.Previous, in.Now)
	return st
}

// countedCells are the cells whose conditions speak: online cells that
// reported a status.
func countedCells(cells []Cell) []Cell {
	var out []Cell
	for _, c := range cells {
		if !c.Offline && c.Status != nil {
			out = append(out, c)
		}
	}
	return out
}

// everyCell is condition t, True when it is True in every cell (with the
// first cell's reason), False naming the cells where it is not.
func everyCell(cells []Cell, t string) condition {
	not := names(cells, func(c Cell) bool { return !is(c.Status, t, "True") })
	if len(not) == 0 {
		reason := ""
		if len(cells) > 0 {
			reason, _ = find(cells[0].Status, t)["reason"].(string)
		}
		return condition{Type: t, Status: "True", Reason: reason, Message: fmt.Sprintf("%s in every cell.", t)}
	}
	reason, _ := find(cells[indexOf(cells, not[0])].Status, t)["reason"].(string)
	return condition{Type: t, Status: "False", Reason: reason, Message: fmt.Sprintf("%s does not hold in %s.", t, cellList(not))}
}

// pdb: counts summed (an offline cell's pods count as expected, not as
// healthy, and allow no disruption); DisruptionAllowed holds when it
// holds in every cell.
func pdb(in Input) map[string]any {
	st := map[string]any{}
	setNum(st, "observedGeneration", observedGeneration(in, false))
	var healthy, desired, expectedPods, allowed int64
	disrupted := map[string]any{}
	for _, c := range in.Cells {
		desired += num(c.Status, "desiredHealthy")
		expectedPods += num(c.Status, "expectedPods")
		if c.Offline {
			continue
		}
		healthy += num(c.Status, "currentHealthy")
		allowed += num(c.Status, "disruptionsAllowed")
		if d, ok := c.Status["disruptedPods"].(map[string]any); ok {
			for k, v := range d {
				disrupted[k] = v
			}
		}
	}
	// The API requires these four, zero included.
	st["currentHealthy"], st["desiredHealthy"], st["expectedPods"], st["disruptionsAllowed"] = healthy, desired, expectedPods, allowed
	if len(disrupted) > 0 {
		st["disruptedPods"] = disrupted
	}
	not := names(in.Cells, func(c Cell) bool { return expected(c) && (c.Offline || !is(c.Status, "DisruptionAllowed", "True")) })
	cond := condition{Type: "DisruptionAllowed", Status: "True", Reason: "SufficientPods", Message: "a disruption is allowed in every cell."}
	if len(not) > 0 {
		cond = condition{Type: "DisruptionAllowed", Status: "False", Reason: "InsufficientPods",
			Message: fmt.Sprintf("no disruption is allowed in %s.", cellList(not))}
	}
	st["conditions"] = stamped([]condition{cond}, in.Previous, in.Now)
	return st
}
