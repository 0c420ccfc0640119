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
)

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
