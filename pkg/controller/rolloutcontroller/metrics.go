package rolloutcontroller

import (
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/cellfed/cellfed/pkg/placement"
	"github.com/cellfed/cellfed/pkg/rollout"
)

// Pause reasons of cellfed_rollout_pauses_total.
const (
	pauseDeadline = "progress_deadline"
	pauseFailure  = "failure"
)

var (
	pauses = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           "cellfed_rollout_pauses_total",
		Help:           "Automatic rollouts the rollout controller paused, by federated type and reason (progress_deadline: a batch missed its progress deadline; failure: a released cell failed).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"type", "reason"})
	rolloutCellsDesc = metrics.NewDesc("cellfed_rollout_cells",
		"Cells of the federated objects under a rollout, summed by federated type, workspace namespace and state: placed, released (outside the placement mask), ready (released, updated and ready) and held_back (placed but masked).",
		[]string{"type", "namespace", "state"}, nil, metrics.ALPHA, "")
	rolloutsDesc = metrics.NewDesc("cellfed_rollouts",
		"Federated objects under a rollout, by federated type, workspace namespace and rollout state (Waiting, Progressing, Paused, Finished; Waiting when not yet written).",
		[]string{"type", "namespace", "state"}, nil, metrics.ALPHA, "")
)

// pauseReason is the label of a pause decision: its cause.
func pauseReason(d rollout.Decision) string {
	if d.DeadlineExceeded {
		return pauseDeadline
	}
	return pauseFailure
}

// cellCounts are the cells of one workspace's objects of one type.
type cellCounts struct{ placed, released, ready, heldBack int }

// workspaceKey is a type and a namespace.
type workspaceKey struct{ typ, namespace string }

// releaseState sums the rollouts among objs by workspace, a pure
// function; placed gives an object's placed cells (nil: unknown, the
// object is counted in cellfed_rollouts only).
func releaseState(typ string, objs []any, placed func(*unstructured.Unstructured) []string) (map[workspaceKey]map[string]int, map[workspaceKey]cellCounts) {
	states := map[workspaceKey]map[string]int{}
	cells := map[workspaceKey]cellCounts{}
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok || !active(u) {
			continue
		}
		k := workspaceKey{typ, u.GetNamespace()}
		state := u.GetAnnotations()[rollout.AnnotationState]
		if state == "" {
			state = rollout.StateWaiting
		}
		if states[k] == nil {
			states[k] = map[string]int{}
		}
		states[k][state]++
		fed, err := rollout.Decode(u)
		if err != nil {
			continue
		}
		p := placed(u)
		if p == nil {
			continue
		}
		sum := rollout.Summarize(rollout.Rows(fed, p))
		cc := cells[k]
		cc.placed += sum.Placed
		cc.released += sum.Released
		cc.ready += sum.UpdatedReady
		cc.heldBack += sum.Placed - sum.Released
		cells[k] = cc
	}
	return states, cells
}

// collector serves the release state of every rollout controller of
// the process (one per federated type).
type collector struct {
	metrics.BaseStableCollector
	mu          sync.Mutex
	controllers map[string]*Controller
}

func (c *collector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- rolloutCellsDesc
	ch <- rolloutsDesc
}

func (c *collector) CollectWithStability(ch chan<- metrics.Metric) {
	c.mu.Lock()
	ctrls := make([]*Controller, 0, len(c.controllers))
	for _, ctrl := range c.controllers {
		ctrls = append(ctrls, ctrl)
	}
	c.mu.Unlock()
	sort.Slice(ctrls, func(i, j int) bool { return ctrls[i].resource.Resource < ctrls[j].resource.Resource })
	for _, ctrl := range ctrls {
		states, cells := releaseState(ctrl.resource.Resource, ctrl.informer.GetStore().List(), ctrl.placedCells)
		for k, byState := range states {
			for state, n := range byState {
				ch <- metrics.NewLazyConstMetric(rolloutsDesc, metrics.GaugeValue, float64(n), k.typ, k.namespace, state)
			}
		}
		for k, cc := range cells {
			for state, n := range map[string]int{"placed": cc.placed, "released": cc.released, "ready": cc.ready, "held_back": cc.heldBack} {
				ch <- metrics.NewLazyConstMetric(rolloutCellsDesc, metrics.GaugeValue, float64(n), k.typ, k.namespace, state)
			}
		}
	}
}

// placedCells are the cells obj is placed on, nil when unknown.
func (c *Controller) placedCells(obj *unstructured.Unstructured) []string {
	fed, err := rollout.Decode(obj)
	if err != nil {
		return nil
	}
	var candidates []placement.Topology
	if fed.Spec.Placement.TopologySelector != nil {
		candidates = c.candidates(obj, fed)
	}
	placed, err := placement.Topologies(fed.Spec.Placement, candidates)
	if err != nil {
		return nil
	}
	return placed
}

var (
	registerOnce sync.Once
	global       = &collector{controllers: map[string]*Controller{}}
)

// registerMetrics serves c's rollouts on /metrics (the latest
// controller of a type replaces an earlier one) and starts both pause
// counters of its type at 0.
func registerMetrics(c *Controller) {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(pauses)
		legacyregistry.CustomMustRegister(global)
	})
	global.mu.Lock()
	global.controllers[c.resource.Resource] = c
	global.mu.Unlock()
	for _, r := range []string{pauseDeadline, pauseFailure} {
		pauses.WithLabelValues(c.resource.Resource, r).Add(0)
	}
}
