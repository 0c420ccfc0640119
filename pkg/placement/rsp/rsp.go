// Package rsp schedules a federated workload by KubeFed's
// ReplicaSchedulingPreference (scheduling.kubefed.io/v1alpha1): the pure
// decision behind cellfed-controller's RSP controller. Given the
// preference, the clusters the plane knows and the object's placement, it
// says which clusters the object is placed on and how many replicas each
// runs; Apply writes that into a v1beta1 federated object the way KubeFed's
// scheduler does (spec.placement.clusters and a /spec/replicas override
// per cluster), so KubeFed's tools and its e2e suite see what they expect.
//
// KubeFed's semantics, as its API documents them:
//   - The candidates are the ready clusters; with intersectWithClusterSelector
//     only those the object's own placement selects.
//   - A cluster named in spec.clusters uses its preferences, any other
//     candidate those of "*"; without either it gets no replicas. (KubeFed
//     still places it, with a 0 override; cellfed leaves it out, since a
//     physical cluster placed beside a cell on it is refused by admission.)
//     An RSP with no clusters at all spreads evenly ("*": weight 1).
//   - totalReplicas is divided by weight after each cluster's minReplicas,
//     never above a cluster's maxReplicas.
//   - rebalance: false (the default) keeps replicas where they run: a
//     cluster's current replicas (its override) stay as a floor, within its
//     maxReplicas and while the total lasts. rebalance: true divides afresh.
//
// What cellfed adds: the candidates are limited to the clusters the
// object's namespace may reach (tenancy), and a per-cell cluster
// (<namespace>.<cell>) is a candidate only when spec.clusters names it; a
// cell runs on a physical cluster, so "*" counting both would run a share
// twice on one member. The division itself is pkg/placement/division's
// (weights by Sainte-Laguë, a stable tie-break by object and cluster).
package rsp

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	fedschedulingv1a1 "sigs.k8s.io/kubefed/pkg/apis/scheduling/v1alpha1"

	"github.com/cellfed/cellfed/pkg/placement/division"
	"github.com/cellfed/cellfed/pkg/tenancy"
)

// Target kinds an RSP may name (KubeFed's).
const (
	KindFederatedDeployment = "FederatedDeployment"
	KindFederatedReplicaSet = "FederatedReplicaSet"
)

// Wildcard is the spec.clusters key whose preferences apply to every
// candidate not named.
const Wildcard = "*"

// ReplicasPath is the override path KubeFed's scheduler writes.
const ReplicasPath = "/spec/replicas"

// Cluster is a KubeFedCluster as the scheduler sees it.
type Cluster struct {
	Name   string
	Labels map[string]string
	Ready  bool
}

// Input is one scheduling decision.
type Input struct {
	// Namespace and Tenant of the federated object (tenancy); Key is
	// namespace/name, which seeds the division's tie-break.
	Namespace, Tenant, Key string
	Spec                   fedschedulingv1a1.ReplicaSchedulingPreferenceSpec
	Clusters               []Cluster
	// Placement is the object's own placement, read only with
	// intersectWithClusterSelector: a cluster selector when Selector is
	// set (an empty one selects every cluster), else the clusters named.
	Selector labels.Selector
	Named    []string
	// Current is each cluster's replicas override now.
	Current map[string]int64
}

// Schedule returns the replicas of every cluster the object is to be
// placed on. An empty result means no candidate: KubeFed then leaves the
// object as it is.
func Schedule(in Input) (map[string]int64, error) {
	if in.Spec.TotalReplicas < 0 {
		return nil, fmt.Errorf("totalReplicas %d is negative", in.Spec.TotalReplicas)
	}
	prefs := in.Spec.Clusters
	if len(prefs) == 0 {
		prefs = map[string]fedschedulingv1a1.ClusterPreferences{Wildcard: {Weight: 1}}
	}
	named := map[string]bool{}
	for _, n := range in.Named {
		named[n] = true
	}
	var cells []division.Cell
	out := map[string]int64{}
	for _, c := range in.Clusters {
		if !c.Ready || !tenancy.MayReach(in.Namespace, in.Tenant, c.Name, c.Labels) {
			continue
		}
		pref, explicit := prefs[c.Name]
		if _, _, perCell := strings.Cut(c.Name, "."); perCell && !explicit {
			continue
		}
		if in.Spec.IntersectWithClusterSelector {
			if in.Selector != nil && !in.Selector.Matches(labels.Set(c.Labels)) ||
				in.Selector == nil && !named[c.Name] {
				continue
			}
		}
		if !explicit {
			var ok bool
			if pref, ok = prefs[Wildcard]; !ok {
				continue
			}
		}
		cell, err := seat(c.Name, pref, in.Current[c.Name], in.Spec.Rebalance)
		if err != nil {
			return nil, err
		}
		cells = append(cells, cell)
	}
	res, err := division.Divide(division.Input{Key: in.Key, Mode: division.ModeDivide, Replicas: in.Spec.TotalReplicas, Cells: cells})
	if err != nil {
		return nil, err
	}
	for _, a := range res.Cells {
		out[a.Name] = int64(a.Replicas)
	}
	return out, nil
}

// seat turns a cluster's preferences into a division cell: its current
// replicas become part of its minimum unless the RSP rebalances.
func seat(name string, p fedschedulingv1a1.ClusterPreferences, current int64, rebalance bool) (division.Cell, error) {
	if p.Weight < 0 || p.MinReplicas < 0 || p.MaxReplicas != nil && *p.MaxReplicas < 0 {
		return division.Cell{}, fmt.Errorf("cluster %s: weight, minReplicas and maxReplicas must not be negative", name)
	}
	c := division.Cell{Name: name, Weight: clamp(p.Weight), MinReplicas: clamp(p.MinReplicas)}
	if p.MaxReplicas != nil {
		m := clamp(*p.MaxReplicas)
		c.MaxReplicas = &m
		c.MinReplicas = min(c.MinReplicas, m)
	}
	if !rebalance && current > int64(c.MinReplicas) {
		floor := clamp(current)
		if c.MaxReplicas != nil {
			floor = min(floor, *c.MaxReplicas)
		}
		c.MinReplicas = max(c.MinReplicas, floor)
	}
	return c, nil
}

func clamp(v int64) int32 {
	return int32(max(0, min(v, math.MaxInt32)))
}

// Names returns the clusters of a schedule, sorted.
func Names(schedule map[string]int64) []string {
	out := make([]string, 0, len(schedule))
	for n := range schedule {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
