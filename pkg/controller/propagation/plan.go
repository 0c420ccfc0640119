package propagation

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	typesv1b1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
	"github.com/cellfed/cellfed/pkg/placement"
	"github.com/cellfed/cellfed/pkg/tenancy"
)

// Verb is what a plan does with the object on one member.
type Verb string

const (
	// Ensure creates or updates the member object.
	Ensure Verb = "ensure"
	// Remove deletes the member object (or, when the federated object
	// asks for orphaning, takes the managed label off).
	Remove Verb = "remove"
	// Release takes the managed label off and keeps the object: its
	// namespace is no longer federated to the cluster.
	Release Verb = "release"
	// Leave touches nothing; Status says why.
	Leave Verb = "leave"
)

// Statuses the plan decides without touching a member.
const (
	// StatusPlacementConflict: another selected cluster reaches the same
	// member object and is the one written.
	StatusPlacementConflict = "PlacementConflict"
	// StatusHeldBack: the cluster is outside the placement mask; what it
	// holds is left exactly as it is.
	StatusHeldBack = "HeldBack"
	// StatusOutsideWorkspace: the cluster belongs to another workspace
	// (another namespace's cell, or a physical cluster dedicated to
	// another tenant); it is never read or written for this object.
	StatusOutsideWorkspace = "OutsideWorkspace"
	// StatusCellNotFound: the placement names a cell of the object's
	// namespace that does not exist (deleted, or not created yet).
	StatusCellNotFound = "CellNotFound"
)

// Candidate is one KubeFedCluster as a plan sees it.
type Candidate struct {
	Name   string
	Labels map[string]string
	// Member identifies the member API server the cluster reaches:
	// clusters with the same Member reach the same member object (the
	// per-cell clusters of one physical cluster). Empty when the
	// cluster's configuration is broken (ConfigError).
	Member      string
	ConfigError error
	Ready       bool
	// Holds reports that the member's cache holds the object; known
	// only while the member is ready.
	Holds bool
	// ObjectReady reports that the object the member holds is ready
	// (the type's readiness rule). Read only for the clusters of a
	// moving cell.
	ObjectReady bool
}

// Input is everything a plan is decided from.
type Input struct {
	// Namespace is the federated object's namespace ("" when cluster
	// scoped).
	Namespace string
	// Tenant is the tenant of the object's namespace ("" when it has
	// none). A namespaced object only ever reaches its workspace's
	// clusters: its namespace's per-cell clusters and physical clusters
	// that are shared or dedicated to Tenant.
	Tenant    string
	Placement typesv1b1.Placement
	// NamespaceRule applies KubeFed's namespace placement: the object
	// is namespaced (and not a Namespace itself) and the plane federates
	// namespaces. Physical clusters are then selected only where the
	// namespace's FederatedNamespace places the namespace; cells of the
	// object's namespace imply their namespace.
	NamespaceRule bool
	// NamespacePlacement is the placement of the namespace's
	// FederatedNamespace; nil when the namespace is not federated.
	NamespacePlacement *typesv1b1.Placement
	// Mask, when not nil, are the clusters the plan may act on (the
	// placement mask as cluster names): every other cluster is left
	// exactly as it is, whether placed, no longer placed or just back
	// from an outage. nil acts everywhere.
	Mask sets.Set[string]
	// Deleting plans the removal of the object everywhere, whatever the
	// mask says.
	Deleting bool
	// Recorded are the clusters the propagation record says may hold
	// the object.
	Recorded sets.Set[string]
	// Candidates are the KubeFedClusters that exist now.
	Candidates []Candidate
	// MoveAdmitted are the per-cell clusters of moving cells whose move
	// may take this object now (the move's batch has room for it).
	// Objects already copied go on moving without it.
	MoveAdmitted sets.Set[string]
}

// Intent is what to do on one member.
type Intent struct {
	Verb Verb
	// Member is the member acted on ("" for a misconfigured cluster).
	Member string
	// Clusters are the clusters the intent is about, sorted: the one
	// written (Ensure), those that may hold the object (Remove,
	// Release), or the one left alone (Leave).
	Clusters []string
	// Writer is the cluster whose overrides apply (Ensure), or, for a
	// PlacementConflict, the cluster written instead.
	Writer string
	// OverridesOf, when set, is the cluster whose overrides (and share
	// of divided replicas) apply instead of Writer's: the moving cell's,
	// when Writer is its move cluster.
	OverridesOf string
	// CopyFrom, when set, is the member whose object is written as it is
	// instead of the template: a moving cell held back by the mask moves
	// at its held-back revision.
	CopyFrom string
	// Status, when set, is the outcome already known: nothing is
	// dispatched (the member is not ready or misconfigured, or the
	// cluster is left alone).
	Status string
	// Report puts the clusters' statuses in the object's status:
	// selected clusters always, others while something is pending.
	Report bool
	// Holds: a cluster left alone (Leave) whose member's cache holds the
	// object; the record keeps it, recorded before or not (a held-back
	// copy made by a controller killed before it wrote its record).
	Holds bool
}

// Decision is a plan: the intents, one per member (plus one per
// conflicting or misconfigured cluster), sorted by first cluster.
type Decision struct {
	Intents []Intent
	// NamespaceNotFederated: the placement names clusters the object's
	// namespace is not federated to.
	NamespaceNotFederated bool
}

// Plan decides what every member should do with one federated object.
// It is a pure function of its input.
func Plan(in Input) (Decision, error) {
	var d Decision
	selected := sets.New[string]()
	excluded := sets.New[string]()      // placed, but the namespace is not federated there
	placedOutside := sets.New[string]() // placed, but outside the object's workspace
	// placed are the clusters a deleted object's placement selects: the
	// record can miss one that holds the object (a create that landed
	// after the controller that sent it died), and its member's cache
	// can too (the member is down, or the event not yet seen), so a
	// deletion visits them as well.
	placed := sets.New[string]()
	// draining are the clusters of retiring cells (LabelDraining): never
	// selected, and what they hold is removed as a deletion would,
	// whatever the mask says.
	draining := sets.New[string]()
	for _, c := range in.Candidates {
		if c.Labels[cellv1alpha1.LabelDraining] == "true" {
			draining.Insert(c.Name)
		}
	}
	// moves are the move clusters of moving cells (the cluster they
	// move to) by the cell's own cluster. The mask names the cell's
	// cluster: it applies to the move cluster alike.
	moves := moveClusters(in.Candidates)
	if in.Mask != nil && len(moves) > 0 {
		in.Mask = in.Mask.Clone()
		for cell, to := range moves {
			if in.Mask.Has(cell) {
				in.Mask.Insert(to)
			}
		}
	}
	overridesOf := map[string]string{}
	copyFrom := map[string]string{} // move cluster → member of the held-back copy
	if in.Deleting {
		if sel, err := selectClusters(in.Placement, in.Candidates); err == nil {
			placed = sel
		}
	} else {
		var err error
		if selected, err = selectClusters(in.Placement, in.Candidates); err != nil {
			return d, err
		}
		for _, to := range moves {
			selected.Delete(to) // only ever selected by its move
		}
		for _, c := range in.Candidates {
			if selected.Has(c.Name) && !inWorkspace(in, c) {
				selected.Delete(c.Name)
				placedOutside.Insert(c.Name)
			}
			if selected.Has(c.Name) && draining.Has(c.Name) {
				// Visited like a deleted object's placed cluster: the
				// record or the cache can miss what it holds.
				selected.Delete(c.Name)
				placed.Insert(c.Name)
			}
		}
		d.Intents = append(d.Intents, missingCells(in)...)
		if in.NamespaceRule {
			allowed := sets.New[string]()
			if in.NamespacePlacement != nil {
				if allowed, err = selectClusters(*in.NamespacePlacement, in.Candidates); err != nil {
					return d, fmt.Errorf("the namespace's FederatedNamespace: %w", err)
				}
			}
			for name := range selected {
				if _, ok := cellv1alpha1.CellOfNamespace(in.Namespace, name); ok || allowed.Has(name) {
					continue
				}
				selected.Delete(name)
				excluded.Insert(name)
				if in.NamespacePlacement == nil {
					d.NamespaceNotFederated = true
				}
			}
		}
		placedOutside.Insert(movesOutside(in, moves, selected)...)
		for _, m := range planMoves(in, moves, selected, draining) {
			selected.Insert(m.to)
			overridesOf[m.to] = m.cell
			if m.copyFrom != "" {
				copyFrom[m.dest] = m.copyFrom
			}
			if m.removeFrom != "" {
				// Ready where it goes: removed where it was, as a
				// drain would, whatever the mask says.
				selected.Delete(m.removeFrom)
				draining.Insert(m.removeFrom)
			}
		}
	}

	type group struct {
		ready, holds bool
		all          []string
	}
	groups := map[string]*group{}
	var members []string
	for _, c := range in.Candidates {
		if !inWorkspace(in, c) {
			// Never read or written for this object: a placement naming
			// it is reported; a cluster recorded before its tenancy
			// changed stays recorded (and untouched) until the object
			// is deleted, which forgets it.
			if !in.Deleting && (placedOutside.Has(c.Name) || in.Recorded.Has(c.Name)) {
				d.Intents = append(d.Intents, Intent{Verb: Leave, Clusters: []string{c.Name}, Status: StatusOutsideWorkspace, Report: true})
			}
			continue
		}
		if c.Member == "" {
			// A broken configuration reaches nothing: say so where the
			// object is wanted or may still be.
			if selected.Has(c.Name) || in.Recorded.Has(c.Name) {
				d.Intents = append(d.Intents, Intent{Verb: Leave, Clusters: []string{c.Name}, Status: StatusConfigMalformed, Report: true})
			}
			continue
		}
		g := groups[c.Member]
		if g == nil {
			g = &group{ready: c.Ready}
			groups[c.Member] = g
			members = append(members, c.Member)
		}
		g.all = append(g.all, c.Name)
		g.holds = g.holds || (c.Ready && c.Holds)
	}

	for _, m := range members {
		g := groups[m]
		// Move clusters last: another selected cluster of the member
		// is the one written.
		slices.SortFunc(g.all, func(a, b string) int {
			_, ma := overridesOf[a]
			_, mb := overridesOf[b]
			if ma != mb {
				if ma {
					return 1
				}
				return -1
			}
			return strings.Compare(a, b)
		})
		var sel, excl, known, wasPlaced []string
		for _, n := range g.all {
			switch {
			case selected.Has(n):
				sel = append(sel, n)
			case excluded.Has(n):
				excl = append(excl, n)
			}
			if in.Recorded.Has(n) {
				known = append(known, n)
			}
			if placed.Has(n) {
				wasPlaced = append(wasPlaced, n)
			}
		}
		switch {
		case len(sel) > 0:
			// One member object, however many selected clusters reach
			// it: the first in name order is written, the others are
			// conflicts, never reported as written.
			writer := sel[0]
			it := Intent{Verb: Ensure, Member: m, Clusters: []string{writer}, Writer: writer, OverridesOf: overridesOf[writer], Report: true}
			switch {
			case !masked(in, writer) && copyFrom[writer] != "":
				it.CopyFrom = copyFrom[writer]
				if !g.ready {
					it.Status = StatusClusterNotReady
				}
			case !masked(in, writer):
				it.Verb, it.Status, it.Holds = Leave, StatusHeldBack, g.holds
			case !g.ready:
				it.Status = StatusClusterNotReady
			}
			d.Intents = append(d.Intents, it)
			for _, other := range sel[1:] {
				d.Intents = append(d.Intents, Intent{Verb: Leave, Member: m, Clusters: []string{other}, Writer: writer, Status: StatusPlacementConflict, Report: true})
			}
		case len(known) == 0 && !g.holds && len(wasPlaced) == 0:
			// Nothing there and nothing wanted.
		default:
			it := Intent{Verb: Remove, Member: m, Clusters: orFirst(known, orFirst(wasPlaced, g.all))}
			if len(excl) > 0 {
				it.Verb, it.Clusters = Release, orFirst(known, excl)
			}
			switch {
			case !slices.ContainsFunc(it.Clusters, func(c string) bool { return masked(in, c) || draining.Has(c) }):
				// Unplaced but outside the mask: it keeps what it has
				// until the mask reaches it or goes.
				it.Verb, it.Status, it.Report = Leave, StatusHeldBack, true
			case !g.ready:
				it.Status, it.Report = StatusWaitingForRemoval, true
			}
			d.Intents = append(d.Intents, it)
		}
	}
	slices.SortFunc(d.Intents, func(a, b Intent) int { return strings.Compare(a.Clusters[0], b.Clusters[0]) })
	return d, nil
}

// inWorkspace reports whether a namespaced object may reach cluster c: a
// per-cell cluster (named <namespace>.<cell>) of its own namespace, or a
// physical cluster that is shared (no tenant label) or dedicated to the
// object's tenant. Cluster-scoped objects reach every cluster.
func inWorkspace(in Input, c Candidate) bool {
	return tenancy.MayReach(in.Namespace, in.Tenant, c.Name, c.Labels)
}

// missingCells are the Leave intents (CellNotFound) of the clusters a
// placement names that are per-cell clusters of the object's namespace
// but do not exist: a cell deleted (or not created yet) is reported,
// never silently skipped.
func missingCells(in Input) []Intent {
	exists := sets.New[string]()
	for _, c := range in.Candidates {
		exists.Insert(c.Name)
	}
	var out []Intent
	seen := sets.New[string]()
	for _, ref := range in.Placement.Clusters {
		if exists.Has(ref.Name) || seen.Has(ref.Name) {
			continue
		}
		if _, ok := cellv1alpha1.CellOfNamespace(in.Namespace, ref.Name); !ok {
			continue
		}
		seen.Insert(ref.Name)
		out = append(out, Intent{Verb: Leave, Clusters: []string{ref.Name}, Status: StatusCellNotFound, Report: true})
	}
	return out
}

// masked reports whether the plan may act on cluster: there is no mask,
// the object is being deleted, or the mask names the cluster.
func masked(in Input, cluster string) bool {
	return in.Mask == nil || in.Deleting || in.Mask.Has(cluster)
}

func orFirst(list, fallback []string) []string {
	if len(list) > 0 {
		return list
	}
	return fallback[:1]
}

// selectClusters is placement ∩ existing clusters. A selector that names
// none of cellfed's labels selects physical clusters only, never the
// per-cell clusters of any namespace (KubeFed's "all clusters" selector
// {} then reaches every member once).
func selectClusters(p typesv1b1.Placement, candidates []Candidate) (sets.Set[string], error) {
	return placement.Clusters(p, candidates, func(c Candidate) placement.Topology {
		return placement.Topology{Name: c.Name, Labels: c.Labels}
	})
}

// moveClusters are the move clusters among the candidates (labelled
// LabelMove) by the per-cell cluster of the cell that moves, when that
// exists too.
func moveClusters(candidates []Candidate) map[string]string {
	var out map[string]string
	names := sets.New[string]()
	for _, c := range candidates {
		names.Insert(c.Name)
	}
	for _, c := range candidates {
		if _, ok := c.Labels[cellv1alpha1.LabelMove]; !ok {
			continue
		}
		if cell, ok := cellv1alpha1.MoveSource(c.Name); ok && names.Has(cell) {
			if out == nil {
				out = map[string]string{}
			}
			out[cell] = c.Name
		}
	}
	return out
}

// cellMove is what a moving cell does with one object.
type cellMove struct {
	cell, to string
	// removeFrom is the cluster whose copy goes now: the cell's (moving)
	// or the move cluster's (undoing), once the copy on the other side
	// is ready.
	removeFrom string
	// dest is the cluster the object goes to: the move cluster (moving)
	// or the cell's (undoing).
	dest string
	// copyFrom is the member of the copy to take as it is, when the cell
	// is held back by the mask.
	copyFrom string
}

// planMoves decides the object's moves. A move takes an object the cell
// places when the move admits it (or it is copied already): it is
// ensured on the move cluster with the cell's overrides, and once that
// copy is ready the cell's own copy is removed. An undo keeps the cell's
// copy and removes the move cluster's once the cell's is ready. Moves
// between clusters that reach the same member have nothing to do.
func planMoves(in Input, moves map[string]string, selected, draining sets.Set[string]) []cellMove {
	if len(moves) == 0 {
		return nil
	}
	byName := make(map[string]Candidate, len(in.Candidates))
	for _, c := range in.Candidates {
		byName[c.Name] = c
	}
	var out []cellMove
	for _, cell := range slices.Sorted(maps.Keys(moves)) {
		to := moves[cell]
		src, dst := byName[cell], byName[to]
		if !selected.Has(cell) || draining.Has(cell) || draining.Has(to) || src.Member == "" || dst.Member == "" || src.Member == dst.Member || !inWorkspace(in, dst) {
			continue
		}
		copied := in.Recorded.Has(to) || (dst.Ready && dst.Holds)
		undo := dst.Labels[cellv1alpha1.LabelMove] == cellv1alpha1.MoveUndo
		switch {
		case undo && !copied:
			continue // nothing there to bring back
		case !undo && !copied && !in.MoveAdmitted.Has(cell):
			continue // not its turn yet
		}
		m := cellMove{cell: cell, to: to, dest: to}
		from, there := cell, dst
		if undo {
			from, there, m.dest = to, src, cell
		}
		if there.Ready && there.Holds && there.ObjectReady {
			m.removeFrom = from
		} else if here := byName[from]; !masked(in, cell) && here.Ready && here.Holds {
			// Held back: the copy it holds goes over as it is (once
			// the copy there is ready, there is nothing to write).
			m.copyFrom = here.Member
		}
		out = append(out, m)
	}
	return out
}
