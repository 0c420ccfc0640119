package v1alpha1

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Tenancy labels. A namespace that carries both is a tenant workspace;
// Cells and federated objects live in such namespaces and carry the same
// two labels, copied from their namespace by admission.
const (
	LabelTenant    = "cellfed.io/tenant"
	LabelWorkspace = "cellfed.io/workspace"
)

// Labels every per-cell KubeFedCluster carries, so that a cell selector can
// be translated into a cluster selector pinned to one namespace's cells.
// The Cell's own labels are copied next to them.
const (
	// LabelTopologyType is "cell" on per-cell KubeFedClusters. Physical
	// clusters do not carry it.
	LabelTopologyType = "cellfed.io/topology-type"
	// LabelNamespace is the namespace of the Cell.
	LabelNamespace = "cellfed.io/namespace"
	// LabelCell is the name of the Cell.
	LabelCell = "cellfed.io/cell"
	// LabelDraining, set to "true" on a Cell (and so on its per-cell
	// KubeFedCluster), retires the cell: nothing is placed through it
	// any more, what was is removed from its member as a deletion would
	// (the orphan annotation is honoured, the placement mask is not a
	// reason to keep anything), and once the cell holds no object it may
	// be deleted (cellfedctl cell delete NAME --drain).
	LabelDraining = "cellfed.io/draining"
	// LabelMove is set on the move cluster of a moving cell (see
	// MoveClusterName): MoveCopy while the cell moves there, MoveUndo
	// while the move is undone.
	LabelMove = "cellfed.io/move"
	// LabelClusterTenant is set by cellfed-controller on per-cell and
	// move clusters whose physical cluster is dedicated to a tenant: that
	// tenant (the physical cluster's LabelTenant). A per-cell cluster
	// carries its namespace's tenancy labels; this one says whose the
	// member it reaches is, so an object reaches it only when its tenant
	// may use that member. Cells cannot set it.
	LabelClusterTenant = "cellfed.io/cluster-tenant"
)

// Values of LabelMove.
const (
	MoveCopy = "copy"
	MoveUndo = "undo"
)

// moveSuffix ends a move cluster's name.
const moveSuffix = ".move"

// MoveClusterName is the KubeFedCluster through which a moving cell
// reaches the cluster it moves to: <namespace>.<cell>.move, the cell's
// labels, the new physical cluster's access. It exists only during the
// move; placements never select it themselves (the move does).
func MoveClusterName(namespace, cell string) string {
	return CellClusterName(namespace, cell) + moveSuffix
}

// ParseMoveClusterName reverses MoveClusterName.
func ParseMoveClusterName(name string) (namespace, cell string, ok bool) {
	base, found := strings.CutSuffix(name, moveSuffix)
	if !found {
		return "", "", false
	}
	return ParseCellClusterName(base)
}

// MoveSource is the per-cell cluster a move cluster moves, and whether
// name is a move cluster at all.
func MoveSource(name string) (string, bool) {
	base, found := strings.CutSuffix(name, moveSuffix)
	if !found {
		return "", false
	}
	_, _, ok := ParseCellClusterName(base)
	return base, ok
}

// TopologyTypeCell is the value of LabelTopologyType on per-cell clusters.
const TopologyTypeCell = "cell"

// The naming rule. Each Cell has its own KubeFedCluster, named
//
//	<namespace>.<cell>
//
// Namespace and cell names are DNS labels (no dots), so the name holds
// exactly one dot and splits back into (namespace, cell) without
// ambiguity. Physical KubeFedCluster names must therefore be DNS labels
// too: names with a dot are reserved for per-cell clusters.

// CellClusterName is the KubeFedCluster name of cell in namespace.
func CellClusterName(namespace, cell string) string {
	return namespace + "." + cell
}

// ParseCellClusterName reverses CellClusterName. ok is false when name is
// not a per-cell cluster name.
func ParseCellClusterName(name string) (namespace, cell string, ok bool) {
	namespace, cell, found := strings.Cut(name, ".")
	if !found || !IsDNSLabel(namespace) || !IsDNSLabel(cell) {
		return "", "", false
	}
	return namespace, cell, true
}

// CellOfNamespace returns the cell name when clusterName is the per-cell
// cluster of a cell in namespace.
func CellOfNamespace(namespace, clusterName string) (string, bool) {
	ns, cell, ok := ParseCellClusterName(clusterName)
	if !ok || ns != namespace {
		return "", false
	}
	return cell, true
}

// IsDNSLabel reports whether s is an RFC 1123 label (the rule for
// namespace, cell and physical cluster names).
func IsDNSLabel(s string) bool {
	return len(validation.IsDNS1123Label(s)) == 0
}
