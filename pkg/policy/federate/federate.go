// Package federate turns a native object and the propagation policy that
// places it into the v1beta2 federated object cellfed keeps for it, and
// says which fields of that object the policy owns. It is pure: the
// caller reads the objects and writes the result.
//
// The federated object is Federated<Kind> (types.kubefed.io/v1beta2)
// with the native object's name and namespace, so `kubectl get
// federateddeployment web` finds the one for Deployment web; it is
// controlled by the native object (deleting the native object deletes
// it, and so the member objects), and labelled with the policy that made
// it.
package federate

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/cellfed/cellfed/pkg/apis/policy/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/types"
	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
	"github.com/cellfed/cellfed/pkg/policy/selection"
	"github.com/cellfed/cellfed/pkg/tracing"
)

// FederatedGVK is the federated kind cellfed uses for a native kind by
// default: Federated<Kind> in types.kubefed.io/v1beta2 (a
// FederatedTypeConfig may name another; the caller decides).
func FederatedGVK(kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: types.GroupName, Version: typesv1beta2.Version, Kind: "Federated" + kind}
}

// Policy is the policy that places an object: who it is and its spec.
type Policy struct {
	Ref  selection.Policy
	Spec *policyv1alpha1.PropagationPolicySpec
}

// droppedAnnotations are native annotations that describe the plane's
// copy, not the object: they are not written to members.
var droppedAnnotations = []string{
	"kubectl.kubernetes.io/last-applied-configuration",
	"deployment.kubernetes.io/revision",
	policyv1alpha1.AnnotationPlacedByPolicy,
	tracing.Annotation, // carried to the federated object by Build
}

// droppedAnnotationPrefixes are dropped the same way (a claim's binding
// to a volume of the plane's, which has none).
var droppedAnnotationPrefixes = []string{
	"pv.kubernetes.io/",
	"volume.beta.kubernetes.io/",
	"volume.kubernetes.io/",
}

// jobControllerLabels are the labels the API server puts on a Job's pod
// template from the Job's UID: each member's Job gets its own.
var jobControllerLabels = []string{"controller-uid", "batch.kubernetes.io/controller-uid"}

// Template returns the template of native's federated object: the native
// object without its status, kind and apiVersion (the federated type's
// target gives them), its name and namespace (the federated object's),
// and the metadata and fields the plane or its controllers filled in for
// the plane's copy: uid, resourceVersion, generation, timestamps,
// managedFields, owner references, finalizers, last-applied annotations;
// a Service's cluster IPs (unless headless) and health-check node port, a
// Job's generated selector and controller-uid labels, a claim's bound
// volume, a ServiceAccount's token secrets, a Pod's node.
func Template(native *unstructured.Unstructured) map[string]any {
	obj := native.DeepCopy().Object
	delete(obj, "status")
	delete(obj, "apiVersion")
	delete(obj, "kind")
	meta := map[string]any{}
	if l := native.GetLabels(); len(l) > 0 {
		meta["labels"] = toAny(l)
	}
	ann := map[string]string{}
	for k, v := range native.GetAnnotations() {
		if !dropAnnotation(k) {
			ann[k] = v
		}
	}
	if len(ann) > 0 {
		meta["annotations"] = toAny(ann)
	}
	delete(obj, "metadata")
	if len(meta) > 0 {
		obj["metadata"] = meta
	}

	gk := native.GroupVersionKind().GroupKind()
	switch gk {
	case schema.GroupKind{Kind: "Service"}:
		if ip, _, _ := unstructured.NestedString(obj, "spec", "clusterIP"); ip != "None" {
			unstructured.RemoveNestedField(obj, "spec", "clusterIP")
			unstructured.RemoveNestedField(obj, "spec", "clusterIPs")
		}
		unstructured.RemoveNestedField(obj, "spec", "healthCheckNodePort")
	case schema.GroupKind{Group: "batch", Kind: "Job"}:
		if manual, _, _ := unstructured.NestedBool(obj, "spec", "manualSelector"); !manual {
			unstructured.RemoveNestedField(obj, "spec", "selector")
			for _, l := range jobControllerLabels {
				unstructured.RemoveNestedField(obj, "spec", "template", "metadata", "labels", l)
			}
		}
	case schema.GroupKind{Kind: "PersistentVolumeClaim"}:
		unstructured.RemoveNestedField(obj, "spec", "volumeName")
	case schema.GroupKind{Kind: "ServiceAccount"}:
		delete(obj, "secrets")
	case schema.GroupKind{Kind: "Pod"}:
		unstructured.RemoveNestedField(obj, "spec", "nodeName")
	}
	return obj
}

func dropAnnotation(k string) bool {
	for _, d := range droppedAnnotations {
		if k == d {
			return true
		}
	}
	for _, p := range droppedAnnotationPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Spec is the federated spec the policy gives native: the template, the
// policy's placement, overrides, replica division and retainReplicas.
// It carries no placement mask: with release Immediate the policy keeps
// the object without one; with Rollout the mask belongs to the rollout.
func Spec(native *unstructured.Unstructured, spec *policyv1alpha1.PropagationPolicySpec) (map[string]any, error) {
	var out typesv1beta2.Spec
	if err := convert(spec.Placement, &out.Placement); err != nil {
		return nil, fmt.Errorf("placement: %w", err)
	}
	if out.Placement.TopologyType == "" {
		out.Placement.TopologyType = typesv1beta2.TopologyCell
	}
	if len(spec.Overrides) > 0 {
		if err := convert(spec.Overrides, &out.Overrides); err != nil {
			return nil, fmt.Errorf("overrides: %w", err)
		}
	}
	if spec.ReplicaDivision != nil {
		out.ReplicaDivision = &typesv1beta2.ReplicaDivision{}
		if err := convert(spec.ReplicaDivision, out.ReplicaDivision); err != nil {
			return nil, fmt.Errorf("replicaDivision: %w", err)
		}
	}
	out.RetainReplicas = spec.RetainReplicas
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	// utiljson decodes whole numbers as int64, as the API server's
	// objects have them: a merged object compares equal to the stored one.
	var m map[string]any
	if err := utiljson.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["template"] = Template(native)
	return m, nil
}

// convert copies in to out through JSON: the policy's fields are the
// federated type's, with the same JSON names.
func convert(in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// Build returns the federated object policy makes of native, of kind
// fedGVK (FederatedGVK of the native kind, unless a FederatedTypeConfig
// names another): named like native, in its namespace (a Namespace's own
// federated object lives in it), controlled by native, labelled and
// annotated with the policy (and with the trace of native's last traced
// write, tracing.Annotation, which its template leaves out).
func Build(native *unstructured.Unstructured, policy Policy, fedGVK schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	if native.GetName() == "" || native.GetUID() == "" {
		return nil, fmt.Errorf("%s %q: a native object needs a name and a uid to own its federated object", native.GetKind(), native.GetName())
	}
	spec, err := Spec(native, policy.Spec)
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s by %s: %w", native.GetKind(), native.GetNamespace(), native.GetName(), policy.Ref.Ref(), err)
	}
	fed := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	fed.SetGroupVersionKind(fedGVK)
	fed.SetName(native.GetName())
	ns := native.GetNamespace()
	if native.GroupVersionKind().GroupKind() == (schema.GroupKind{Kind: "Namespace"}) {
		ns = native.GetName()
	}
	fed.SetNamespace(ns)
	fed.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: native.GetAPIVersion(),
		Kind:       native.GetKind(),
		Name:       native.GetName(),
		UID:        native.GetUID(),
		Controller: ptr.To(true),
	}})
	fed.SetLabels(map[string]string{policyLabel(policy.Ref.Kind): policy.Ref.Name})
	ann := map[string]string{policyv1alpha1.AnnotationPolicy: policy.Ref.Ref()}
	if tp := native.GetAnnotations()[tracing.Annotation]; tp != "" {
		// The release joins the trace of the native object's last traced
		// write (the plane's admission records it there).
		ann[tracing.Annotation] = tp
	}
	fed.SetAnnotations(ann)
	return fed, nil
}

func policyLabel(kind string) string {
	if kind == policyv1alpha1.KindClusterPropagationPolicy {
		return policyv1alpha1.LabelClusterPropagationPolicy
	}
	return policyv1alpha1.LabelPropagationPolicy
}

// OwnedFields are the spec fields of a federated object its policy owns
// (with release Immediate also spec.placementMask): the policy and the
// native object decide them, and a hand edit of them is refused.
var OwnedFields = [][]string{
	{"spec", "template"},
	{"spec", "placement"},
	{"spec", "overrides"},
	{"spec", "replicaDivision"},
	{"spec", "retainReplicas"},
}

// ownedFields are OwnedFields for strategy.
func ownedFields(strategy policyv1alpha1.ReleaseStrategy) [][]string {
	if strategy == policyv1alpha1.ReleaseRollout {
		return OwnedFields
	}
	return append(append([][]string{}, OwnedFields...), []string{"spec", "placementMask"})
}

// Merge returns existing with what desired (Build's result) says: the
// fields the policy owns, its labels, annotations and owner reference.
// Everything else (status, a rollout's labels and annotations, others'
// labels) is kept. With release Rollout the existing placement mask is
// kept (the rollout's); with Immediate it is removed.
func Merge(existing, desired *unstructured.Unstructured, strategy policyv1alpha1.ReleaseStrategy) *unstructured.Unstructured {
	out := existing.DeepCopy()
	for _, f := range ownedFields(strategy) {
		v, found, _ := unstructured.NestedFieldCopy(desired.Object, f...)
		if found {
			_ = unstructured.SetNestedField(out.Object, v, f...)
		} else {
			unstructured.RemoveNestedField(out.Object, f...)
		}
	}
	labels := out.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	delete(labels, policyv1alpha1.LabelPropagationPolicy)
	delete(labels, policyv1alpha1.LabelClusterPropagationPolicy)
	for k, v := range desired.GetLabels() {
		labels[k] = v
	}
	out.SetLabels(labels)
	ann := out.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	for k, v := range desired.GetAnnotations() {
		ann[k] = v
	}
	out.SetAnnotations(ann)
	out.SetOwnerReferences(desired.GetOwnerReferences())
	return out
}

// Changed reports whether Merge(existing, desired) would change existing.
func Changed(existing, desired *unstructured.Unstructured, strategy policyv1alpha1.ReleaseStrategy) bool {
	return !reflect.DeepEqual(existing.Object, Merge(existing, desired, strategy).Object)
}

// EditedOwnedFields lists the policy-owned fields (as dotted paths) that
// differ between old and new, an update of a federated object a policy
// made; admission refuses such an update unless it comes from
// cellfed-controller.
func EditedOwnedFields(old, new *unstructured.Unstructured, strategy policyv1alpha1.ReleaseStrategy) []string {
	var out []string
	for _, f := range ownedFields(strategy) {
		a, foundA, _ := unstructured.NestedFieldNoCopy(old.Object, f...)
		b, foundB, _ := unstructured.NestedFieldNoCopy(new.Object, f...)
		if foundA != foundB || !reflect.DeepEqual(a, b) {
			out = append(out, strings.Join(f, "."))
		}
	}
	return out
}

// PolicyOf returns the policy reference a federated object records
// (PropagationPolicy/<ns>/<name> or ClusterPropagationPolicy/<name>),
// empty when no policy made it.
func PolicyOf(fed *unstructured.Unstructured) string {
	return fed.GetAnnotations()[policyv1alpha1.AnnotationPolicy]
}
