package admission

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fedv1beta1 "sigs.k8s.io/kubefed/pkg/apis/core/v1beta1"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/types"
)

// Operation is what the request does.
type Operation string

// Operations admission looks at.
const (
	Create Operation = "CREATE"
	Update Operation = "UPDATE"
	Delete Operation = "DELETE"
)

// Request is one write to admit.
type Request struct {
	Operation   Operation
	Kind        schema.GroupVersionKind
	Resource    schema.GroupResource
	Namespace   string
	Name        string
	SubResource string
	// Object is the new object (nil for DELETE). Mutate changes it in place.
	Object *unstructured.Unstructured
	// OldObject is the current object on UPDATE.
	OldObject *unstructured.Unstructured
	// User and Groups are who writes; FieldManager is the field manager
	// the request names (its options' fieldManager, "" when none).
	User         string
	Groups       []string
	FieldManager string
	// Replace is true for a whole-object update (PUT), false for a patch
	// and when unknown (the admission webhook cannot tell them apart).
	Replace bool
}

// What admission handles.
var (
	cellKind      = cellv1alpha1.SchemeGroupVersion.WithKind("Cell").GroupKind()
	clusterKind   = fedv1beta1.SchemeGroupVersion.WithKind("KubeFedCluster").GroupKind()
	namespaceKind = schema.GroupKind{Kind: "Namespace"}
)

func (r Request) isNamespace() bool { return r.Kind.GroupKind() == namespaceKind }

func (r Request) isFederated() bool { return r.Kind.Group == types.GroupName }
func (r Request) isCell() bool      { return r.Kind.GroupKind() == cellKind }
func (r Request) isCluster() bool   { return r.Kind.GroupKind() == clusterKind }

// Handles says whether admission has rules for kind.
func Handles(kind schema.GroupKind) bool {
	return kind.Group == types.GroupName || kind == cellKind || kind == clusterKind || kind == typeConfigKind || kind == kubeFedConfigKind || kind == namespaceKind
}
