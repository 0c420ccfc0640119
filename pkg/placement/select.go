package placement

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	typesv1beta1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
)

// ReservedPrefix starts the labels cellfed sets on per-cell clusters (and
// the tenancy labels). A selector that names one is pinned to a kind of
// topology; users select on the other labels.
const ReservedPrefix = "cellfed.io/"

// Topology is a cell or a KubeFedCluster a placement may select, with
// its labels.
type Topology struct {
	Name   string
	Labels map[string]string
}

// SelectorKeys are the label keys a selector names, sorted.
func SelectorKeys(ls *metav1.LabelSelector) []string {
	keys := make([]string, 0, len(ls.MatchLabels)+len(ls.MatchExpressions))
	for k := range ls.MatchLabels {
		keys = append(keys, k)
	}
	for _, e := range ls.MatchExpressions {
		keys = append(keys, e.Key)
	}
	sort.Strings(keys)
	return keys
}

// ReservedKeys are the cellfed.io/ label keys a selector names, sorted.
func ReservedKeys(ls *metav1.LabelSelector) []string {
	var out []string
	for _, k := range SelectorKeys(ls) {
		if strings.HasPrefix(k, ReservedPrefix) {
			out = append(out, k)
		}
	}
	return out
}

// ClusterSelector is the meaning of a v1beta1 placement's cluster
// selector: as written when it names a cellfed.io/ label (it is pinned
// to a kind of topology), otherwise restricted to physical clusters, so
// that KubeFed's "all clusters" selector {} reaches every member once.
func ClusterSelector(ls *metav1.LabelSelector) (labels.Selector, error) {
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, fmt.Errorf("placement.clusterSelector: %w", err)
	}
	if len(ReservedKeys(ls)) > 0 {
		return sel, nil
	}
	physical, err := labels.NewRequirement(cellv1alpha1.LabelTopologyType, selection.DoesNotExist, nil)
	if err != nil {
		return nil, err
	}
	return sel.Add(*physical), nil
}

// Clusters is a v1beta1 placement ∩ the clusters that exist: the
// clusters it names, or those its cluster selector (see ClusterSelector)
// matches. topology reads a candidate's name and labels.
func Clusters[C any](p typesv1beta1.Placement, candidates []C, topology func(C) Topology) (sets.Set[string], error) {
	out := sets.New[string]()
	if p.Clusters != nil {
		names := sets.New[string]()
		for _, ref := range p.Clusters {
			names.Insert(ref.Name)
		}
		for _, c := range candidates {
			if t := topology(c); names.Has(t.Name) {
				out.Insert(t.Name)
			}
		}
		return out, nil
	}
	if p.ClusterSelector == nil {
		return out, nil
	}
	sel, err := ClusterSelector(p.ClusterSelector)
	if err != nil {
		return nil, err
	}
	for _, c := range candidates {
		if t := topology(c); sel.Matches(labels.Set(t.Labels)) {
			out.Insert(t.Name)
		}
	}
	return out, nil
}

// TopologyType is a v1beta2 placement's topology type, cell by default.
func TopologyType(p typesv1beta2.Placement) typesv1beta2.TopologyType {
	if p.TopologyType == "" {
		return typesv1beta2.TopologyCell
	}
	return p.TopologyType
}

// Topologies are the topologies a v1beta2 placement selects, in a stable
// order: spec.placement.topologies as listed (so the person who writes
// the placement chooses which cells go first), or, for a selector
// placement, the candidates it matches in name order. candidates (the
// Cells of the object's namespace, or the physical clusters, by the
// topology type) are only read for a selector placement.
func Topologies(p typesv1beta2.Placement, candidates []Topology) ([]string, error) {
	if p.TopologySelector == nil {
		var out []string
		for _, t := range p.Topologies {
			if !slices.Contains(out, t.Name) {
				out = append(out, t.Name)
			}
		}
		return out, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(p.TopologySelector)
	if err != nil {
		return nil, fmt.Errorf("spec.placement.topologySelector: %w", err)
	}
	var out []string
	for _, c := range candidates {
		if sel.Matches(labels.Set(c.Labels)) && !slices.Contains(out, c.Name) {
			out = append(out, c.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// FormatSelector writes a label selector for people: in kubectl's syntax
// (region=eu,zone in (a,b)), {} for the empty selector (which selects
// everything), and as JSON when it does not parse.
func FormatSelector(ls *metav1.LabelSelector) string {
	if ls == nil {
		return "<none>"
	}
	if len(ls.MatchLabels) == 0 && len(ls.MatchExpressions) == 0 {
		return "{}"
	}
	if _, err := metav1.LabelSelectorAsSelector(ls); err != nil {
		raw, err := json.Marshal(ls)
		if err != nil {
			return metav1.FormatLabelSelector(ls)
		}
		return string(raw)
	}
	return metav1.FormatLabelSelector(ls)
}

// Candidates are the topologies a selector placement of type typ chooses
// from, in name order: objs are the Cells of the object's namespace for
// a cell placement, the KubeFedClusters for a cluster placement, of which
// only the physical clusters count (a per-cell cluster's name holds a
// dot, which a physical cluster's cannot: the plane refuses it). The
// rollout controller reads objs from its caches, cellfedctl from the
// plane.
func Candidates(typ typesv1beta2.TopologyType, objs []metav1.Object) []Topology {
	out := make([]Topology, 0, len(objs))
	for _, o := range objs {
		if typ != typesv1beta2.TopologyCell && strings.Contains(o.GetName(), ".") {
			continue
		}
		out = append(out, Topology{Name: o.GetName(), Labels: o.GetLabels()})
	}
	slices.SortFunc(out, func(a, b Topology) int { return strings.Compare(a.Name, b.Name) })
	return out
}
