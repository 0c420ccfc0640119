// Package selection decides which propagation policy places a native
// object: every policy whose selectors match it is a candidate, and one
// rule picks the winner, the same everywhere (the controller, its status,
// the docs):
//
//  1. the highest spec.priority;
//  2. the most specific matching selector: by name, then by
//     labelSelector, then by kind only;
//  3. a namespace's own PropagationPolicy before a
//     ClusterPropagationPolicy;
//  4. the first name in alphabetical order.
//
// Its functions are pure: no clients, no clocks.
package selection

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1alpha1 "github.com/cellfed/cellfed/pkg/apis/policy/v1alpha1"
)

// Object is what selection needs of a native object.
type Object struct {
	APIVersion string
	Kind       string
	// Namespace is empty for a cluster-scoped object.
	Namespace string
	Name      string
	Labels    map[string]string
}

// String names the object as kind namespace/name (or kind name).
func (o Object) String() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// Policy is what selection needs of a PropagationPolicy or a
// ClusterPropagationPolicy.
type Policy struct {
	// Kind is PropagationPolicy or ClusterPropagationPolicy.
	Kind string
	// Namespace is the PropagationPolicy's; empty for a
	// ClusterPropagationPolicy.
	Namespace string
	Name      string
	Priority  int32
	Selectors []policyv1alpha1.ResourceSelector
}

// FromPropagationPolicy returns the selection view of p.
func FromPropagationPolicy(p *policyv1alpha1.PropagationPolicy) Policy {
	return Policy{Kind: policyv1alpha1.KindPropagationPolicy, Namespace: p.Namespace, Name: p.Name,
		Priority: p.Spec.Priority, Selectors: p.Spec.ResourceSelectors}
}

// FromClusterPropagationPolicy returns the selection view of p.
func FromClusterPropagationPolicy(p *policyv1alpha1.ClusterPropagationPolicy) Policy {
	return Policy{Kind: policyv1alpha1.KindClusterPropagationPolicy, Name: p.Name,
		Priority: p.Spec.Priority, Selectors: p.Spec.ResourceSelectors}
}

// Ref is the policy as cellfed records it on the objects it places:
// PropagationPolicy/<namespace>/<name> or ClusterPropagationPolicy/<name>.
func (p Policy) Ref() string {
	if p.Kind == policyv1alpha1.KindClusterPropagationPolicy {
		return p.Kind + "/" + p.Name
	}
	return p.Kind + "/" + p.Namespace + "/" + p.Name
}

// Specificity is how closely a selector names an object.
type Specificity int

// Specificities, from no match to a match by name.
const (
	NoMatch Specificity = iota
	ByKind
	ByLabels
	ByName
)

func (s Specificity) String() string {
	switch s {
	case ByKind:
		return "kind only"
	case ByLabels:
		return "labelSelector"
	case ByName:
		return "name"
	}
	return "no match"
}

// Match returns how specifically p selects o: the most specific of its
// matching selectors, NoMatch when none matches. A PropagationPolicy
// selects objects of its own namespace only (never cluster-scoped ones);
// a ClusterPropagationPolicy, objects of every namespace and
// cluster-scoped ones. A selector's apiVersion matches by group: the
// version is ignored, as one object is served in each version of its
// group. An invalid labelSelector is an error (and matches nothing).
func Match(p Policy, o Object) (Specificity, error) {
	if p.Kind != policyv1alpha1.KindClusterPropagationPolicy && (o.Namespace == "" || o.Namespace != p.Namespace) {
		return NoMatch, nil
	}
	objGroup, err := group(o.APIVersion)
	if err != nil {
		return NoMatch, fmt.Errorf("object %s: %w", o, err)
	}
	best := NoMatch
	for i, s := range p.Selectors {
		g, err := group(s.APIVersion)
		if err != nil {
			return NoMatch, fmt.Errorf("%s resourceSelectors[%d]: %w", p.Ref(), i, err)
		}
		if g != objGroup || s.Kind != o.Kind {
			continue
		}
		var spec Specificity
		switch {
		case s.Name != "":
			if s.Name != o.Name {
				continue
			}
			spec = ByName
		case s.LabelSelector != nil:
			sel, err := metav1.LabelSelectorAsSelector(s.LabelSelector)
			if err != nil {
				return NoMatch, fmt.Errorf("%s resourceSelectors[%d].labelSelector: %w", p.Ref(), i, err)
			}
			if !sel.Matches(labels.Set(o.Labels)) {
				continue
			}
			spec = ByLabels
		default:
			spec = ByKind
		}
		best = max(best, spec)
	}
	return best, nil
}

func group(apiVersion string) (string, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return "", fmt.Errorf("apiVersion %q: %w", apiVersion, err)
	}
	return gv.Group, nil
}

// Candidate is a policy that matches an object, with how specifically.
type Candidate struct {
	Policy      Policy
	Specificity Specificity
}

// Shadowed is a matching policy that lost, and why the winner won.
type Shadowed struct {
	Policy Policy
	Reason string
}

// Result is the decision for one object.
type Result struct {
	// Winner places the object; nil when no policy matches it.
	Winner *Candidate
	// Shadowed are the other matching policies, in rule order.
	Shadowed []Shadowed
	// Errors are the policies that could not be matched (an invalid
	// selector), which take no part.
	Errors []error
}

// Select picks the policy that places o among policies, by the package
// rule.
func Select(o Object, policies []Policy) Result {
	var res Result
	var cands []Candidate
	for _, p := range policies {
		spec, err := Match(p, o)
		if err != nil {
			res.Errors = append(res.Errors, err)
			continue
		}
		if spec != NoMatch {
			cands = append(cands, Candidate{Policy: p, Specificity: spec})
		}
	}
	if len(cands) == 0 {
		return res
	}
	sort.SliceStable(cands, func(i, j int) bool { return before(cands[i], cands[j]) })
	res.Winner = &cands[0]
	for _, c := range cands[1:] {
		res.Shadowed = append(res.Shadowed, Shadowed{Policy: c.Policy, Reason: Why(cands[0], c)})
	}
	return res
}

// before reports whether a wins over b.
func before(a, b Candidate) bool {
	if a.Policy.Priority != b.Policy.Priority {
		return a.Policy.Priority > b.Policy.Priority
	}
	if a.Specificity != b.Specificity {
		return a.Specificity > b.Specificity
	}
	if ac, bc := a.Policy.Kind == policyv1alpha1.KindClusterPropagationPolicy, b.Policy.Kind == policyv1alpha1.KindClusterPropagationPolicy; ac != bc {
		return !ac
	}
	return a.Policy.Name < b.Policy.Name
}

// Why says, in a few words, why winner wins over loser.
func Why(winner, loser Candidate) string {
	w, l := winner.Policy, loser.Policy
	switch {
	case w.Priority != l.Priority:
		return fmt.Sprintf("priority %d > %d", w.Priority, l.Priority)
	case winner.Specificity != loser.Specificity:
		return fmt.Sprintf("equal priority %d; selects by %s, more specific than %s", w.Priority, winner.Specificity, loser.Specificity)
	case w.Kind != l.Kind:
		return fmt.Sprintf("equal priority %d and specificity; a PropagationPolicy wins over a ClusterPropagationPolicy", w.Priority)
	default:
		return fmt.Sprintf("equal priority %d, specificity and kind; name %q sorts before %q", w.Priority, w.Name, l.Name)
	}
}
