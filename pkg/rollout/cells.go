package rollout

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
	"github.com/cellfed/cellfed/pkg/placement"
)

// CellState is what a placed cell's row says.
type CellState string

const (
	// Updated: released, runs the object's current generation, ready.
	Updated CellState = "updated"
	// NotReady: released and runs the current generation, but the member
	// object is not ready (or its readiness is not known yet).
	NotReady CellState = "not ready"
	// Updating: released, but not yet brought in line with the current
	// generation.
	Updating CellState = "updating"
	// HeldBack: outside the mask; keeps what it runs.
	HeldBack CellState = "held back"
	// Failed: propagation failed there, or the member reports that the
	// object cannot progress.
	Failed CellState = "failed"
)

// StatusWriteInProgress is the propagation status of a cell whose member
// has not answered a write yet: updating, not failed.
const StatusWriteInProgress = "WriteInProgress"

// Row is one placed cell's line of `rollout status`.
type Row struct {
	Cell    string
	Cluster string
	// Released is true when the cell is in the mask (or there is none).
	Released bool
	State    CellState
	// Status is the propagation status (OK, HeldBack, UpdateFailed…).
	Status string
	// Generation is the object's generation the cell runs (0: never).
	Generation int64
	Ready      *bool
	// Replicas is "ready/desired" from the member's status, "" when it
	// has none.
	Replicas string
	// Assigned is what the replica division assigns the cell (status
	// replicas); nil when the object's replicas are not divided.
	Assigned *int32
	// Detail explains a failure.
	Detail string
}

// Rows are the placed cells' rows in placed order. A cell is updated
// when the controller has observed the object's current generation, it
// reports the cell OK at that generation, and the member object is
// ready.
func Rows(fed *typesv1beta2.FederatedObject, placed []string) []Row {
	mask := placement.Mask(fed)
	byName := map[string]typesv1beta2.TopologyStatus{}
	var observed int64
	if fed.Status != nil {
		observed = fed.Status.ObservedGeneration
		for _, t := range fed.Status.Topologies {
			byName[t.Name] = t
		}
	}
	gen := fed.GetGeneration()
	rows := make([]Row, 0, len(placed))
	for _, name := range placed {
		ts, known := byName[name]
		r := Row{Cell: name, Cluster: ts.Cluster, Released: mask == nil || slices.Contains(mask, name),
			Status: ts.Status, Generation: ts.Generation, Ready: ts.Ready, Assigned: ts.Replicas}
		r.Replicas, r.Detail = remote(ts)
		switch {
		case !r.Released:
			r.State = HeldBack
		case known && ts.Status != "OK" && ts.Status != "HeldBack" && ts.Status != "" && ts.Status != StatusWriteInProgress:
			r.State = Failed
			if r.Detail == "" {
				r.Detail = ts.Status
			} else {
				r.Detail = ts.Status + ": " + r.Detail
			}
		case r.Detail != "" && ts.Generation == gen && observed == gen:
			// The member says the object cannot progress.
			r.State = Failed
		case !known || ts.Status != "OK" || ts.Generation != gen || observed != gen:
			r.State = Updating
		case ts.Ready == nil || !*ts.Ready:
			r.State = NotReady
		default:
			r.State = Updated
		}
		rows = append(rows, r)
	}
	return rows
}

// remote reads ready/desired replicas and a failure the member object
// reports (a Deployment past its progress deadline, a failed Job) from
// the reflowed member status.
func remote(ts typesv1beta2.TopologyStatus) (replicas, failure string) {
	if ts.RemoteStatus == nil || len(ts.RemoteStatus.Raw) == 0 {
		return "", ""
	}
	var st struct {
		Replicas               *int64 `json:"replicas"`
		ReadyReplicas          int64  `json:"readyReplicas"`
		DesiredNumberScheduled *int64 `json:"desiredNumberScheduled"`
		NumberReady            int64  `json:"numberReady"`
		Conditions             []struct {
			Type, Status, Reason, Message string
		} `json:"conditions"`
	}
	if json.Unmarshal(ts.RemoteStatus.Raw, &st) != nil {
		return "", ""
	}
	switch {
	case st.Replicas != nil:
		replicas = fmt.Sprintf("%d/%d", st.ReadyReplicas, *st.Replicas)
	case st.DesiredNumberScheduled != nil:
		replicas = fmt.Sprintf("%d/%d", st.NumberReady, *st.DesiredNumberScheduled)
	}
	for _, c := range st.Conditions {
		bad := (c.Type == "Progressing" && c.Status == "False") || (c.Type == "ReplicaFailure" && c.Status == "True") ||
			(c.Type == "Failed" && c.Status == "True")
		if bad {
			failure = strings.TrimSpace(c.Type + " " + c.Reason)
			if c.Message != "" {
				failure += " (" + c.Message + ")"
			}
			break
		}
	}
	return replicas, failure
}

// Summary is what the rows say about the rollout.
type Summary struct {
	Placed   int
	Released int
	// UpdatedReady counts released cells that are updated and ready.
	UpdatedReady int
	// Waiting are released cells not updated and ready yet, as
	// "cell (state)".
	Waiting []string
	// Failed are released cells that failed, as "cell: detail".
	Failed []string
	// Done: every released cell is updated and ready.
	Done bool
}

// Summarize sums up rows.
func Summarize(rows []Row) Summary {
	s := Summary{Placed: len(rows)}
	for _, r := range rows {
		if !r.Released {
			continue
		}
		s.Released++
		switch r.State {
		case Updated:
			s.UpdatedReady++
		case Failed:
			s.Failed = append(s.Failed, r.Cell+": "+r.Detail)
			s.Waiting = append(s.Waiting, fmt.Sprintf("%s (%s)", r.Cell, r.State))
		default:
			s.Waiting = append(s.Waiting, fmt.Sprintf("%s (%s)", r.Cell, r.State))
		}
	}
	s.Done = s.UpdatedReady == s.Released
	return s
}

// NextBatch is the first n placed cells outside the mask, in placed
// order.
func NextBatch(placed, mask []string, n int) []string {
	var out []string
	for _, c := range placed {
		if len(out) == n {
			break
		}
		if !slices.Contains(mask, c) {
			out = append(out, c)
		}
	}
	return out
}

// Widen is mask with cells added, in placed order. Mask entries no longer
// placed (a selector that stopped selecting a cell) are dropped: a mask
// only narrows the placement, and admission refuses a mask naming
// unplaced cells.
func Widen(placed, mask, cells []string) []string {
	out := []string{}
	for _, c := range placed {
		if slices.Contains(mask, c) || slices.Contains(cells, c) {
			out = append(out, c)
		}
	}
	return out
}

// Unreleased are the placed cells outside the mask.
func Unreleased(placed, mask []string) []string {
	if mask == nil {
		return nil
	}
	return NextBatch(placed, mask, len(placed))
}
