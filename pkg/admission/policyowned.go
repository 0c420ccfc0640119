package admission

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	policyv1alpha1 "github.com/cellfed/cellfed/pkg/apis/policy/v1alpha1"
	"github.com/cellfed/cellfed/pkg/pki"
	"github.com/cellfed/cellfed/pkg/policy/federate"
)

// fromPolicyController reports whether r is a write of the
// propagation-policy controller in cellfed-controller: it names that
// controller's field manager (policyv1alpha1.FieldManager) and comes from
// a user the plane lets do everything (system:masters), as
// cellfed-controller's is (docs/operations.md). An app team cannot pass
// for it by naming the field manager.
func fromPolicyController(r Request) bool {
	return r.FieldManager == policyv1alpha1.FieldManager && slices.Contains(r.Groups, pki.AdminGroup)
}

// policyOwnedErrors refuses an update of a federated object a
// propagation policy made (its old object names the policy) that changes
// a spec field the policy owns (federate.OwnedFields: template,
// placement, overrides, replicaDivision, retainReplicas), unless the
// policy controller writes it: the next pass would put the field back.
// The error names the policy and the native object to edit instead. The
// placement mask, labels, annotations and status stay open to rollouts
// and other tools (a rollout of such an object works as on any other).
func policyOwnedErrors(r Request) field.ErrorList {
	if r.Operation != Update || r.SubResource != "" || r.Object == nil || r.OldObject == nil || !r.isFederated() {
		return nil
	}
	ref := federate.PolicyOf(r.OldObject)
	if ref == "" || fromPolicyController(r) {
		return nil
	}
	// The mask is the rollout's (federate: with release Rollout; with
	// Immediate the policy removes one on its next pass).
	edited := federate.EditedOwnedFields(r.OldObject, r.Object, policyv1alpha1.ReleaseRollout)
	if len(edited) == 0 {
		return nil
	}
	native := "its native object"
	if owner := metav1.GetControllerOfNoCopy(r.OldObject); owner != nil {
		native = owner.Kind + " " + nsName(r.OldObject.GetNamespace(), owner.Name)
	}
	policy := policyName(ref)
	msg := fmt.Sprintf("%s %s is made by %s from %s: edit %s or %s instead (the template comes from %s; placement, overrides, replicaDivision and retainReplicas from the policy); cellfed-controller would put a hand edit back",
		r.Kind.Kind, nsName(r.Namespace, r.Name), policy, native, policy, native, native)
	var errs field.ErrorList
	for _, f := range edited {
		parts := strings.Split(f, ".")
		errs = append(errs, field.Forbidden(field.NewPath(parts[0], parts[1:]...), msg))
	}
	return errs
}

// policyName turns a policy reference (PropagationPolicy/<ns>/<name>,
// ClusterPropagationPolicy/<name>) into "PropagationPolicy <ns>/<name>".
func policyName(ref string) string {
	kind, rest, ok := strings.Cut(ref, "/")
	if !ok {
		return ref
	}
	return kind + " " + rest
}

func nsName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}
