// Package nativestatus computes the status of a native object on the
// plane (a Deployment, a Job, a Service...) from the status its member
// objects report in the cells it is placed on, following each kind's own
// conventions, so that kubectl rollout status, kubectl wait, kstatus
// (Helm v4's --wait) and Argo CD's health checks read the plane's object
// as they read a cluster's. It reads no clients and no clock: the caller
// says what each cell reports and what time it is.
//
// # Which cells count, and how
//
// Every placed cell counts. Three kinds of cell count specially:
//
//   - A cell whose member object does not run the current template yet
//     (the controller has not written it, or the member's own
//     controller has not observed it: its status.observedGeneration is
//     below the member object's generation) contributes its pods to the
//     totals but none of them as updated, and keeps observedGeneration
//     below the object's generation.
//   - A held-back cell (outside the placement mask of a grayscale
//     release) that runs an older template is never counted as updated
//     either. For the kinds with an updated count (Deployment,
//     StatefulSet, DaemonSet) it does not hold observedGeneration back:
//     the status describes the current spec, and the updated count stays
//     below spec.replicas, so kubectl rollout status prints "n out of m
//     new replicas have been updated" and waits. A Deployment's
//     Progressing condition says HeldBack and names the cells; once no
//     progress is made for spec.progressDeadlineSeconds it turns False,
//     reason ProgressDeadlineExceeded (as a stuck Deployment does), so
//     helm --wait, kubectl rollout status and Argo CD stop waiting with
//     a failure instead of hanging, and never report the release done
//     before every cell runs it. For the other kinds (which have no
//     updated count) a held-back cell on an older template keeps
//     observedGeneration below the generation.
//   - An offline cell (its member is not reachable) counts with the last
//     status it reported, except that none of its pods count as ready or
//     available: nobody knows whether they serve.
//
// Replica counts compare with spec.replicas on the plane: summed when the
// replica division divides it among the cells, and, when each cell runs
// it in full (Duplicate, the default), the share every cell reaches
// (podCounts). DaemonSets, Jobs and the other kinds sum.
package nativestatus

import (
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Cell is what one placed cell says about the member object there.
type Cell struct {
	// Name of the cell (or cluster); messages name cells by it.
	Name string
	// HeldBack: the cell is outside the placement mask; it keeps what it
	// runs.
	HeldBack bool
	// Offline: the cell's member is not reachable; Status is the last
	// one it reported.
	Offline bool
	// Current: the controller last wrote the current template there
	// (the federated object's generation that carries the native
	// object's current spec) and the member confirmed the write.
	Current bool
	// MemberGeneration is the member object's metadata.generation right
	// after that write (0: unknown). Its status.observedGeneration at or
	// above it says the member's own controller has seen the write.
	MemberGeneration int64
	// Status is the member object's status (nil: never reported, e.g.
	// not created there yet).
	Status map[string]any
}

// Input is everything a native object's status is computed from.
type Input struct {
	// Kind is the native object's group and kind (Group "" for the core
	// group).
	Kind schema.GroupKind
	// Generation is the native object's metadata.generation on the
	// plane.
	Generation int64
	// Spec is the native object's spec.
	Spec map[string]any
	// Divided: spec.replicas is divided among the cells (the federated
	// object's replicaDivision mode is Divide), so replica counts are
	// summed. Otherwise each cell runs spec.replicas in full and a
	// count is what every cell reaches (podCounts).
	Divided bool
	// Cells are the placed cells, in any order.
	Cells []Cell
	// Previous is the native object's status as the plane holds it (nil:
	// none): condition times and the last progress carry over from it.
	Previous map[string]any
	// Now is the time written into conditions that change.
	Now time.Time
}

// Aggregate is the native object's status over its cells. ok is false
// for a kind whose status is not aggregated (kinds without a status):
// the object's status stays as it is.
func Aggregate(in Input) (status map[string]any, ok bool) {
	f, ok := kinds[in.Kind]
	if !ok {
		return nil, false
	}
	in.Cells = sortedCells(in.Cells)
	return f(in), true
}

// Supported reports whether Aggregate computes a status for kind.
func Supported(kind schema.GroupKind) bool {
	_, ok := kinds[kind]
	return ok
}

var kinds = map[schema.GroupKind]func(Input) map[string]any{
	{Group: "apps", Kind: "Deployment"}:                     deployment,
	{Group: "apps", Kind: "StatefulSet"}:                    statefulSet,
	{Group: "apps", Kind: "DaemonSet"}:                      daemonSet,
	{Group: "apps", Kind: "ReplicaSet"}:                     replicaSet,
	{Group: "batch", Kind: "Job"}:                           job,
	{Group: "batch", Kind: "CronJob"}:                       cronJob,
	{Group: "", Kind: "Service"}:                            service,
	{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}: hpa,
	{Group: "policy", Kind: "PodDisruptionBudget"}:          pdb,
}

func sortedCells(cells []Cell) []Cell {
	out := append([]Cell(nil), cells...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// observed reports whether the cell's member object runs the current
// template and its own controller has seen it. Only the kinds whose
// controllers write status.observedGeneration ask (Deployments,
// StatefulSets, DaemonSets, ReplicaSets, HPAs, PDBs): a status without
// it (a member object just created, {} until its controller handles it)
// has not been seen, and counts as nothing yet.
func (c Cell) observed() bool {
	if !c.Current || !c.reported() {
		return false
	}
	return c.MemberGeneration > 0 && toInt(c.Status["observedGeneration"]) >= c.MemberGeneration
}

// reported: the member's controller has written the object's status
// (its observedGeneration), for the kinds that have one.
func (c Cell) reported() bool {
	_, ok := c.Status["observedGeneration"]
	return ok
}

// olderHeldBack: a held-back cell that does not run the current template.
func (c Cell) olderHeldBack() bool { return c.HeldBack && !c.Current }

// observedGeneration is the aggregate status.observedGeneration: the
// generation when every cell that must (all placed cells, or those not
// held back when heldBackWaits) has observed the current template, and
// below it otherwise (never above what it said before).
func observedGeneration(in Input, heldBackObserves bool) int64 {
	all := true
	for _, c := range in.Cells {
		if heldBackObserves && c.olderHeldBack() {
			continue
		}
		if !c.observed() {
			all = false
			break
		}
	}
	if all {
		return in.Generation
	}
	behind := in.Generation - 1
	if prev, ok := in.Previous["observedGeneration"]; ok && toInt(prev) < behind {
		behind = toInt(prev)
	}
	return max(behind, 0)
}

// names lists the cells for which pick holds.
func names(cells []Cell, pick func(Cell) bool) []string {
	var out []string
	for _, c := range cells {
		if pick(c) {
			out = append(out, c.Name)
		}
	}
	return out
}

// toInt reads a JSON number (int64, float64, int32 or int).
func toInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int32:
		return int64(x)
	case int:
		return int64(x)
	case float64:
		return int64(x)
	}
	return 0
}

func num(m map[string]any, key string) int64 {
	if m == nil {
		return 0
	}
	return toInt(m[key])
}

// setNum sets key when v is not zero: the API omits zero counts, so a
// status read back from the plane compares equal to the one written.
func setNum(m map[string]any, key string, v int64) {
	if v != 0 {
		m[key] = v
	}
}

// specInt is the spec field at path, def when unset.
func specInt(spec map[string]any, def int64, path ...string) int64 {
	var cur any = spec
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return def
		}
		if cur, ok = m[p]; !ok {
			return def
		}
	}
	if cur == nil {
		return def
	}
	return toInt(cur)
}
