package propagation

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/sets"
)

// movesOutside are the move clusters of the selected moving cells that
// the object may not reach: the cluster the cell moves to is dedicated
// to another tenant (tenancy.MayReach). planMoves never writes there;
// the plan reports them OutsideWorkspace, so the object's status says
// why its copy is not made.
func movesOutside(in Input, moves map[string]string, selected sets.Set[string]) []string {
	if len(moves) == 0 {
		return nil
	}
	byName := make(map[string]Candidate, len(in.Candidates))
	for _, c := range in.Candidates {
		byName[c.Name] = c
	}
	var out []string
	for _, cell := range slices.Sorted(maps.Keys(moves)) {
		to := moves[cell]
		if dst, ok := byName[to]; ok && selected.Has(cell) && !inWorkspace(in, dst) {
			out = append(out, to)
		}
	}
	return out
}
