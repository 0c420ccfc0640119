package propagation

import (
	"fmt"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	typesv1b1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
)

// observedState is how much a member's cache says about an object.
type observedState int

const (
	// observedNothing: the member is not ready (or unknown); the last
	// known values stay.
	observedNothing observedState = iota
	// observedLoading: the member is ready but its cache is still
	// loading; the object is tried again shortly.
	observedLoading
	// observedAbsent: the cache holds no such object.
	observedAbsent
	// observedPresent: the cache holds it.
	observedPresent
)

// observation is what a member's cache shows of the object: its status,
// KubeFed's version of it and its readiness.
type observation struct {
	state        observedState
	remoteStatus *runtime.RawExtension
	version      string
	ready        bool
}

// statusOutcome is what clusterStatuses makes of a reconcile.
type statusOutcome struct {
	report report
	// requeue: a member's cache is still loading, or an intent asks
	// for a retry.
	requeue bool
	// pending: a member's cache has not shown what this reconcile found
	// or wrote there yet, so its readiness is not known.
	pending bool
	// everywhere: every selected member outside the mask holds the
	// object's generation.
	everywhere bool
}

// clusterStatuses turns a reconcile's intents, their results and what
// the members' caches show (by member key) into the status rows of the
// clusters to report, starting from the rows of cur: the pure half of
// the status, which nextStatus completes.
func clusterStatuses(cur typesv1b1.Status, generation int64, deleting, namespaceNotFederated bool, intents []Intent, results []result, seen map[string]observation) statusOutcome {
	out := statusOutcome{
		report:     report{placed: sets.New[string](), details: map[string]string{}, cur: &cur},
		everywhere: !deleting && !namespaceNotFederated,
	}
	prev := make(map[string]typesv1b1.ClusterStatus, len(cur.Clusters))
	for _, cs := range cur.Clusters {
		prev[cs.Name] = cs
	}
	for i, it := range intents {
		r := results[i]
		if it.Verb == Ensure && (r.status != StatusOK || r.err != nil || r.retry) {
			out.everywhere = false
		}
		if r.retry || r.err != nil {
			out.requeue = true
		}
		if !it.Report && !(it.Verb != Ensure && r.status != StatusOK) {
			continue
		}
		// Placed: written, held back, or in conflict with the cluster
		// written (only those carry a Writer).
		placed := !deleting && (it.Verb == Ensure || it.Writer != "")
		for _, cl := range it.Clusters {
			cs := prev[cl]
			cs.Name, cs.Status = cl, r.status
			if it.Verb == Ensure && r.status == StatusOK {
				cs.Generation = generation
			}
			cs.Message = ""
			if r.err != nil {
				cs.Message = memberMessage(r.err)
			}
			switch {
			case it.Status == StatusPlacementConflict:
				out.report.details[cl] = fmt.Sprintf("reaches the same member object as %s, which is the one written", it.Writer)
				cs.Ready, cs.RemoteStatus = nil, nil
			case it.Status == StatusCellNotFound:
				_, cell, _ := cellv1alpha1.ParseCellClusterName(cl)
				out.report.details[cl] = fmt.Sprintf("cell %s does not exist: create it, or remove it from the placement", cell)
				cs.Ready, cs.RemoteStatus = nil, nil
			case it.Status == StatusOutsideWorkspace:
				out.report.details[cl] = "another namespace's cell or a cluster dedicated to another tenant: never written for this object"
				cs.Ready, cs.RemoteStatus = nil, nil
			case placed:
				loading, behind := reflow(&cs, seen[it.Member], r.version)
				out.requeue = out.requeue || loading
				out.pending = out.pending || behind
			default:
				cs.Ready, cs.RemoteStatus = nil, nil
			}
			if placed {
				out.report.placed.Insert(cl)
			}
			out.report.clusters = append(out.report.clusters, cs)
		}
	}
	return out
}

// reflow puts what the member's cache shows (o) in cs: its status and
// readiness. written is the member object's version this reconcile wrote
// (or found right); a cache that has not caught up with it says nothing
// about the new object yet, so readiness waits for the watch event
// (behind). A member that is not ready keeps the last known values;
// loading is true when the member is ready but its cache is still
// loading: the object is tried again shortly, as nothing else would
// requeue a held back one.
func reflow(cs *typesv1b1.ClusterStatus, o observation, written string) (loading, behind bool) {
	switch o.state {
	case observedNothing:
		return false, false
	case observedLoading:
		return true, false
	}
	notReady := false
	cs.Ready, cs.RemoteStatus = &notReady, nil
	if o.state == observedAbsent {
		return false, written != ""
	}
	cs.RemoteStatus = o.remoteStatus
	if written != "" && o.version != written {
		return false, true
	}
	ready := o.ready
	cs.Ready = &ready
	return false, false
}

// maxMessage bounds a member's message in the status: the status of one
// object must not grow with what a member chooses to say.
const maxMessage = 512

// memberMessage is what a member answered, for the status row.
func memberMessage(err error) string {
	msg := err.Error()
	if len(msg) > maxMessage {
		cut := maxMessage
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return msg
}
