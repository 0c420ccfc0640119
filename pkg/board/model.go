// Package board is the release board: a web page that shows, for a
// workspace (namespace), every federated object against every cell, and
// lets the signed-in user move rollouts and decide registrations.
//
// The board has no write path of its own: it reads through the plane's
// API with the user's credentials, and every action runs the same
// cellfedctl code (pkg/rollout underneath) a terminal would, so the
// plane's RBAC decides what each user may see and do. `cellfedctl board`
// serves it on localhost (docs/board.md says why).
//
// This file is the pure part: a federated object and the workspace's
// cells in, the board's rows and squares out.
package board

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/placement"
	"github.com/cellfed/cellfed/pkg/policy/federate"
	"github.com/cellfed/cellfed/pkg/rollout"
)

// Square states, as the page shows them (and styles them: class s-<state>).
const (
	// Ready: released, runs the current template, ready.
	Ready = "ready"
	// Released: released and running the current template, not ready
	// (or readiness unknown yet).
	Released = "released"
	// Updating: released, not yet in line with the current template.
	Updating = "updating"
	// Held: outside the placement mask; keeps what it runs.
	Held = "held"
	// Failed: propagation failed, or the member says it cannot progress.
	Failed = "failed"
)

// Square is one object in one cell.
type Square struct {
	// State is one of Ready, Released, Updating, Held, Failed.
	State string `json:"s"`
	// Replicas is "ready/desired" when the member reports it.
	Replicas string `json:"n,omitempty"`
	// Revision is the template the cell runs: "r<N>" from the object's
	// TemplateRevisions when known, else "g<generation>" ("" when the
	// cell never received it).
	Revision string `json:"r,omitempty"`
	// Detail explains a failure or what the cell waits for.
	Detail string `json:"d,omitempty"`
}

// Row is one federated object.
type Row struct {
	// Key is <plural>/<name>, unique in a workspace.
	Key      string            `json:"key"`
	Kind     string            `json:"kind"`
	Resource string            `json:"resource"`
	Name     string            `json:"name"`
	Labels   map[string]string `json:"labels,omitempty"`
	// Squares by cell; a cell the object is not placed on has none.
	Squares map[string]Square `json:"squares"`
	// Placed, Released, Updated (running the current template) and
	// Ready (updated and ready) count cells: the RELEASED/UPDATED/READY
	// summary.
	Placed   int `json:"placed"`
	Released int `json:"released"`
	Updated  int `json:"updated"`
	Ready    int `json:"ready"`
	// Rollout is the rollout's state (Waiting, Progressing, Paused,
	// Finished, or "" when none ever ran) and Active whether one is on.
	Rollout string `json:"rollout,omitempty"`
	Active  bool   `json:"active,omitempty"`
	// Revision is the object's current template revision ("r<N>" or
	// "g<generation>").
	Revision string `json:"revision"`
	// Error says why the object could not be read (a malformed object is
	// shown, not hidden).
	Error string `json:"error,omitempty"`
	// Native is the native object a propagation policy made this object
	// from ("Deployment web"), and Policy that policy
	// ("PropagationPolicy shop/web"); both empty for a wrapper.
	Native string `json:"native,omitempty"`
	Policy string `json:"policy,omitempty"`
}

// Type is a federated type the board lists.
type Type struct {
	Kind     string `json:"kind"`
	Resource string `json:"resource"` // plural, in types.kubefed.io
}

// Revision is the part of a TemplateRevision the board needs.
type Revision struct {
	Number     int64
	Generation int64
}

// RevisionsOf picks the board's view of TemplateRevisions.
func RevisionsOf(revs []cellv1alpha1.TemplateRevision) []Revision {
	out := make([]Revision, 0, len(revs))
	for _, r := range revs {
		out = append(out, Revision{Number: r.Spec.Revision, Generation: r.Spec.Generation})
	}
	return out
}

// RevisionLabel names the template an object's generation gen runs: the
// revision recorded at the highest generation not after gen ("r3"), else
// the generation itself ("g7"); "" for generation 0 (never received).
func RevisionLabel(gen int64, revs []Revision) string {
	if gen <= 0 {
		return ""
	}
	var best *Revision
	for i := range revs {
		r := &revs[i]
		if r.Generation <= gen && (best == nil || r.Generation > best.Generation ||
			(r.Generation == best.Generation && r.Number > best.Number)) {
			best = r
		}
	}
	if best == nil {
		return fmt.Sprintf("g%d", gen)
	}
	return fmt.Sprintf("r%d", best.Number)
}

// SquareOf is the square for one placed cell's rollout row.
func SquareOf(r rollout.Row, revs []Revision) Square {
	sq := Square{Replicas: r.Replicas, Revision: RevisionLabel(r.Generation, revs), Detail: r.Detail}
	switch r.State {
	case rollout.HeldBack:
		sq.State = Held
	case rollout.Failed:
		sq.State = Failed
	case rollout.Updating:
		sq.State = Updating
	case rollout.NotReady:
		sq.State = Released
	case rollout.Updated:
		sq.State = Ready
	default:
		sq.State = Updating
	}
	return sq
}

// RowOf is obj's row. cells are the workspace's cells (what a selector
// placement chooses from); revs the object's TemplateRevisions.
func RowOf(typ Type, obj *unstructured.Unstructured, cells []placement.Topology, revs []Revision) Row {
	row := Row{Key: typ.Resource + "/" + obj.GetName(), Kind: typ.Kind, Resource: typ.Resource, Name: obj.GetName(),
		Labels: obj.GetLabels(), Squares: map[string]Square{}}
	row.Native, row.Policy = NativeOf(obj)
	fed, err := rollout.Decode(obj)
	if err != nil {
		row.Error = err.Error()
		return row
	}
	set, err := rollout.SettingsOf(obj)
	if err != nil {
		row.Error = err.Error()
	}
	row.Rollout, row.Active = set.State, set.Active
	row.Revision = RevisionLabel(obj.GetGeneration(), revs)
	placed, err := placement.Topologies(fed.Spec.Placement, cells)
	if err != nil {
		row.Error = err.Error()
		return row
	}
	for _, r := range rollout.Rows(fed, placed) {
		sq := SquareOf(r, revs)
		row.Squares[r.Cell] = sq
		row.Placed++
		if r.Released {
			row.Released++
		}
		if r.Released && (sq.State == Ready || sq.State == Released) {
			row.Updated++
		}
		if sq.State == Ready {
			row.Ready++
		}
	}
	return row
}

// NativeOf names the native object a propagation policy made obj from
// ("Deployment web", its controlling owner) and the policy
// ("PropagationPolicy shop/web"); both "" when no policy made obj.
func NativeOf(obj *unstructured.Unstructured) (native, policy string) {
	ref := federate.PolicyOf(obj)
	if ref == "" {
		return "", ""
	}
	if owner := metav1.GetControllerOfNoCopy(obj); owner != nil {
		native = owner.Kind + " " + owner.Name
	}
	return native, strings.Replace(ref, "/", " ", 1)
}

// Columns are the board's columns: the workspace's cells by name, then
// any other topology a row is placed on (a cluster placement), by name.
func Columns(cells []string, rows []Row) []string {
	seen := map[string]bool{}
	out := make([]string, 0, len(cells))
	for _, c := range cells {
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	sort.Strings(out)
	var extra []string
	for _, r := range rows {
		for c := range r.Squares {
			if !seen[c] {
				seen[c] = true
				extra = append(extra, c)
			}
		}
	}
	sort.Strings(extra)
	return append(out, extra...)
}

// SortRows orders rows by kind, then name.
func SortRows(rows []Row) {
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Kind != rows[j].Kind {
			return rows[i].Kind < rows[j].Kind
		}
		return rows[i].Name < rows[j].Name
	})
}

// CommandRef is how cellfedctl names the object: <kind>/<name>, the kind
// lowercased (federateddeployment/web).
func CommandRef(kind, name string) string { return strings.ToLower(kind) + "/" + name }

// cellLine is a placed cell's line on the object page.
type cellLine struct {
	Cell string
	Square
}

// CellLines are row's placed cells in column order.
func CellLines(columns []string, row Row) []cellLine {
	var out []cellLine
	for _, c := range columns {
		if sq, ok := row.Squares[c]; ok {
			out = append(out, cellLine{Cell: c, Square: sq})
		}
	}
	return out
}
