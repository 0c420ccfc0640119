package selection

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/cellfed/cellfed/pkg/apis/policy/v1alpha1"
)

// Decision is the selection result for one object.
type Decision struct {
	Object Object
	Result Result
}

// Status is policy p's status given the decisions for every object it
// could select: how many it places, how many it is shadowed for (and up
// to MaxShadowedObjects of them, in object order, with the winner and
// why), and the conditions Matched and Shadowed. The conditions carry no
// times: the writer sets them with meta.SetStatusCondition, which keeps
// the transition time of a condition whose status did not change.
func Status(p Policy, generation int64, decisions []Decision) policyv1alpha1.PropagationPolicyStatus {
	st := policyv1alpha1.PropagationPolicyStatus{ObservedGeneration: generation}
	ref := p.Ref()
	var shadowed []policyv1alpha1.ShadowedObject
	for _, d := range decisions {
		if d.Result.Winner == nil {
			continue
		}
		if d.Result.Winner.Policy.Ref() == ref {
			st.Placed++
			continue
		}
		for _, s := range d.Result.Shadowed {
			if s.Policy.Ref() != ref {
				continue
			}
			st.Shadowed++
			shadowed = append(shadowed, policyv1alpha1.ShadowedObject{
				ObjectReference: policyv1alpha1.ObjectReference{APIVersion: d.Object.APIVersion, Kind: d.Object.Kind, Namespace: d.Object.Namespace, Name: d.Object.Name},
				PlacedBy:        d.Result.Winner.Policy.Ref(),
				Reason:          s.Reason,
			})
		}
	}
	sort.Slice(shadowed, func(i, j int) bool { return objectLess(shadowed[i].ObjectReference, shadowed[j].ObjectReference) })
	if len(shadowed) > policyv1alpha1.MaxShadowedObjects {
		shadowed = shadowed[:policyv1alpha1.MaxShadowedObjects]
	}
	st.ShadowedObjects = shadowed

	matched := metav1.Condition{Type: policyv1alpha1.ConditionMatched, ObservedGeneration: generation}
	switch {
	case st.Placed == 0 && st.Shadowed == 0:
		matched.Status, matched.Reason = metav1.ConditionFalse, policyv1alpha1.ReasonNoMatch
		matched.Message = "the policy selects no object: check resourceSelectors (apiVersion, kind, name, labels)"
		if p.Kind == policyv1alpha1.KindPropagationPolicy {
			matched.Message += " and that the objects are in namespace " + p.Namespace
		}
	default:
		matched.Status, matched.Reason = metav1.ConditionTrue, policyv1alpha1.ReasonMatched
		matched.Message = fmt.Sprintf("selects %d object(s): places %d, shadowed for %d", st.Placed+st.Shadowed, st.Placed, st.Shadowed)
	}
	shadow := metav1.Condition{Type: policyv1alpha1.ConditionShadowed, ObservedGeneration: generation}
	if st.Shadowed == 0 {
		shadow.Status, shadow.Reason = metav1.ConditionFalse, policyv1alpha1.ReasonNotShadowed
		shadow.Message = "no other policy wins for an object this policy selects"
	} else {
		shadow.Status, shadow.Reason = metav1.ConditionTrue, policyv1alpha1.ReasonShadowed
		var names []string
		for i, s := range st.ShadowedObjects {
			if i == 3 {
				names = append(names, fmt.Sprintf("and %d more (status.shadowedObjects)", int(st.Shadowed)-3))
				break
			}
			names = append(names, fmt.Sprintf("%s %s placed by %s (%s)", s.Kind, objectName(s.ObjectReference), s.PlacedBy, s.Reason))
		}
		shadow.Message = fmt.Sprintf("another policy places %d selected object(s): %s", st.Shadowed, strings.Join(names, "; "))
	}
	st.Conditions = []metav1.Condition{matched, shadow}
	return st
}

func objectName(o policyv1alpha1.ObjectReference) string {
	if o.Namespace == "" {
		return o.Name
	}
	return o.Namespace + "/" + o.Name
}

func objectLess(a, b policyv1alpha1.ObjectReference) bool {
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	if a.Kind != b.Kind {
		return a.Kind < b.Kind
	}
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	return a.APIVersion < b.APIVersion
}
