package cells

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fedv1b1 "sigs.k8s.io/kubefed/pkg/apis/core/v1beta1"

	corev1a1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/tenancy"
)

// Reasons of the MoveBlocked condition.
const (
	// ReasonMoveTargetNotFound: the KubeFedCluster the cell moves to was
	// deleted (unjoined) during the move.
	ReasonMoveTargetNotFound = "TargetNotFound"
	// ReasonMoveTargetDedicated: the cluster the cell moves to is
	// dedicated to another tenant than the cell's.
	ReasonMoveTargetDedicated = "TargetDedicated"
)

// moveBlock says why the move of cell cannot go on, as the Cell's
// MoveBlocked condition, or nil when it can (or the cell is not moving):
// the cluster it moves to, target (nil when it does not exist), is gone,
// or dedicated to another tenant than nsTenant, the tenant of the cell's
// namespace. An undo is never blocked by its target: it brings the
// objects back. fedNamespace holds the KubeFedClusters. It is a pure
// function.
func moveBlock(cell *corev1a1.Cell, target *fedv1b1.KubeFedCluster, nsTenant, fedNamespace string) *metav1.Condition {
	mv := cell.Spec.Move
	if mv == nil || mv.Undo {
		return nil
	}
	cond := &metav1.Condition{Type: corev1a1.CellMoveBlocked, Status: metav1.ConditionTrue, ObservedGeneration: cell.Generation}
	switch {
	case target == nil:
		cond.Reason = ReasonMoveTargetNotFound
		cond.Message = fmt.Sprintf("KubeFedCluster %s/%s, which cell %s/%s moves to, does not exist (it was unjoined or deleted); nothing more is copied. Undo the move (cellfedctl cell move %s -n %s --undo), or join the cluster again (cellfedctl join %s)",
			fedNamespace, mv.To, cell.Namespace, cell.Name, cell.Name, cell.Namespace, mv.To)
	case !tenancy.MayUse(nsTenant, target.Labels):
		cond.Reason = ReasonMoveTargetDedicated
		cond.Message = tenancy.MoveDedicatedReason(cell.Name, cell.Namespace, nsTenant, mv.To, tenancy.TenantOf(target.Labels))
	default:
		return nil
	}
	return cond
}
