package admission

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/federatedtypes"
)

// Lookup reads the plane's current state. Implementations read caches;
// a nil result with a nil error means "does not exist".
type Lookup interface {
	Namespace(name string) (*corev1.Namespace, error)
	// Cell returns a Cell of namespace.
	Cell(namespace, name string) (*cellv1alpha1.Cell, error)
	// Cells lists the Cells of namespace whose labels match selector.
	Cells(namespace string, selector labels.Selector) ([]*cellv1alpha1.Cell, error)
	// ClusterLabels returns the labels of a KubeFedCluster; ok is false
	// when it does not exist.
	ClusterLabels(name string) (labels map[string]string, ok bool, err error)
	// CellsOnCluster lists the Cells of every namespace hosted by a
	// physical cluster, or moving to it (spec.move.to).
	CellsOnCluster(cluster string) ([]*cellv1alpha1.Cell, error)
	// FederatedObjects names (kind/name) up to limit federated objects in
	// namespace, of every enabled type.
	FederatedObjects(namespace string, limit int) ([]string, error)
	// ObjectsPlacing names (kind/name) up to limit federated objects of
	// namespace whose placement selects the cluster named cluster, which
	// has clusterLabels, and counts all of them.
	ObjectsPlacing(namespace, cluster string, clusterLabels map[string]string, limit int) (names []string, count int, err error)
	// Target returns the target type of a federated kind (from its
	// FederatedTypeConfig); ok is false when the kind is not enabled.
	Target(federatedKind string) (t federatedtypes.Target, ok bool, err error)
	// CellSelectors lists the federated objects of namespace that place
	// by a cell selector.
	CellSelectors(namespace string) ([]SelectorUse, error)
}

// SelectorUse is a federated object that places by a cell selector.
type SelectorUse struct {
	Kind, Name string
	Selector   *metav1.LabelSelector
}
