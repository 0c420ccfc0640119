package cellfedctl

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	policyv1alpha1 "github.com/cellfed/cellfed/pkg/apis/policy/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/types"
	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
	"github.com/cellfed/cellfed/pkg/policy/federate"
)

// fedType is an enabled federated type, from its FederatedTypeConfig.
type fedType struct {
	// Name is the FederatedTypeConfig's name (deployments.apps).
	Name string
	// Kind, Plural, Group of the federated type (FederatedDeployment,
	// federateddeployments, types.kubefed.io).
	Kind, Plural, Group string
	// The target type (Deployment, deployments, apps, v1).
	TargetKind, TargetPlural, TargetGroup, TargetVersion string
	Namespaced                                           bool
	Enabled                                              bool
}

// Resource is the federated type's v1beta2 resource, the version rollout
// works in.
func (t fedType) Resource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: t.Group, Version: typesv1beta2.Version, Resource: t.Plural}
}

// TargetResource is the target (native) type's resource.
func (t fedType) TargetResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: t.TargetGroup, Version: t.TargetVersion, Resource: t.TargetPlural}
}

// namesTarget reports whether kind spells t's target type (deployment,
// deployments.apps), not its federated type.
func (t fedType) namesTarget(kind string) bool {
	return slices.Contains(spellings(t.TargetKind, t.TargetPlural, t.TargetGroup), strings.ToLower(kind))
}

// ref is "federateddeployment/web".
func (t fedType) ref(name string) string { return strings.ToLower(t.Kind) + "/" + name }

func fedTypeOf(u *unstructured.Unstructured) fedType {
	s := func(fields ...string) string {
		v, _, _ := unstructured.NestedString(u.Object, append([]string{"spec"}, fields...)...)
		return v
	}
	return fedType{
		Name: u.GetName(),
		Kind: s("federatedType", "kind"), Plural: s("federatedType", "pluralName"), Group: s("federatedType", "group"),
		TargetKind: s("targetType", "kind"), TargetPlural: s("targetType", "pluralName"), TargetGroup: s("targetType", "group"),
		TargetVersion: s("targetType", "version"),
		Namespaced:    s("federatedType", "scope") != "Cluster",
		Enabled:       s("propagation") != "Disabled",
	}
}

// names are the spellings of a type kubectl accepts: kind, singular and
// plural, each also with the group.
func spellings(kind, plural, group string) []string {
	kind, plural = strings.ToLower(kind), strings.ToLower(plural)
	out := []string{kind, plural}
	if group != "" {
		out = append(out, kind+"."+group, plural+"."+group)
	}
	return out
}

// matchTypes are the types whose federated or target type the <kind>
// part of a rollout argument names.
func matchTypes(kind string, types []fedType) []fedType {
	kind = strings.ToLower(kind)
	var out []fedType
	for _, t := range types {
		names := append(spellings(t.Kind, t.Plural, t.Group), spellings(t.TargetKind, t.TargetPlural, t.TargetGroup)...)
		for _, n := range names {
			if n == kind {
				out = append(out, t)
				break
			}
		}
	}
	return out
}

// splitRef splits "<kind>/<name>".
func splitRef(arg string) (kind, name string, err error) {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok || kind == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("%q is not <kind>/<name>; name the object as e.g. federateddeployment/web or deployment/web", arg)
	}
	return kind, name, nil
}

// resolveType finds the federated type a <kind> names: a federated or
// target type of a FederatedTypeConfig in the federation namespace, by
// kind, singular or plural name (optionally with the group); else what
// the plane's discovery (kubectl's RESTMapper) makes of it, when that is
// a federated type or the target of one.
func resolveType(ctx context.Context, c *planeClients, kind, fedNamespace string) (fedType, error) {
	list, err := c.Dynamic.Resource(kubefed.FederatedTypeConfigsResource).Namespace(fedNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fedType{}, apiError(err, "listing FederatedTypeConfigs in "+fedNamespace)
	}
	var all []fedType
	for i := range list.Items {
		all = append(all, fedTypeOf(&list.Items[i]))
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	matches := matchTypes(kind, all)
	if len(matches) == 0 {
		if gr, ok := discoverResource(c, kind); ok {
			for _, t := range all {
				if (gr.Group == t.Group && gr.Resource == t.Plural) || (gr.Group == t.TargetGroup && gr.Resource == t.TargetPlural) {
					matches = append(matches, t)
				}
			}
			if len(matches) == 0 && gr.Group == types.GroupName {
				return fedType{}, fmt.Errorf("%s.%s is not enabled: it has no FederatedTypeConfig in %s; enable its target type with `cellfedctl enable <type>`", gr.Resource, gr.Group, fedNamespace)
			}
		}
	}
	switch len(matches) {
	case 0:
		var known []string
		for _, t := range all {
			known = append(known, strings.ToLower(t.Kind)+" ("+strings.ToLower(t.TargetKind)+")")
		}
		return fedType{}, fmt.Errorf("unknown kind %q: no enabled federated type is or targets it; name a federated type or its target, one of: %s (list them with `kubectl get federatedtypeconfigs -n %s`)",
			kind, joinOr(known, "none enabled"), fedNamespace)
	case 1:
	default:
		var names []string
		for _, t := range matches {
			names = append(names, strings.ToLower(t.Plural)+"."+t.Group+" (target "+t.Name+")")
		}
		return fedType{}, fmt.Errorf("kind %q is ambiguous: it names %s; name the federated type with its group, e.g. %s", kind, strings.Join(names, ", "), strings.ToLower(matches[0].Plural)+"."+matches[0].Group)
	}
	t := matches[0]
	if !t.Enabled {
		return fedType{}, fmt.Errorf("propagation of %s is disabled (FederatedTypeConfig %s/%s): nothing would reach the cells; enable it with `cellfedctl enable %s`", t.Name, fedNamespace, t.Name, t.Name)
	}
	if t.Group != types.GroupName {
		return fedType{}, fmt.Errorf("federated type %s.%s is not in %s: cellfedctl rollout works with cellfed's multi-topology types; re-enable %s with `cellfedctl enable %s`", t.Plural, t.Group, types.GroupName, t.Name, t.Name)
	}
	return t, nil
}

// discoverResource maps a kind or resource name through the plane's
// discovery, as kubectl does (short names and every spelling kubectl
// accepts).
func discoverResource(c *planeClients, kind string) (schema.GroupResource, bool) {
	dc, err := discovery.NewDiscoveryClientForConfig(c.config)
	if err != nil {
		return schema.GroupResource{}, false
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	full, gr := schema.ParseResourceArg(strings.ToLower(kind))
	var gvr schema.GroupVersionResource
	if full != nil {
		if gvr, err = mapper.ResourceFor(*full); err == nil {
			return gvr.GroupResource(), true
		}
	}
	if gvr, err = mapper.ResourceFor(gr.WithVersion("")); err == nil {
		return gvr.GroupResource(), true
	}
	return schema.GroupResource{}, false
}

func joinOr(list []string, none string) string {
	if len(list) == 0 {
		return none
	}
	return strings.Join(list, ", ")
}

// checkNative decides whether a command that named native object n (by
// its target kind: deployment/web) acts on fed, the federated object of
// the same name (nil: there is none): the one a propagation policy made
// for n (recorded on n as cellfed.io/placed-by-policy, and owning fed),
// or a wrapper of that name when no policy places n. A native object no
// policy places, and a policy's object not made yet or taken by another,
// are errors saying so. A command that named no native object (n nil:
// none on the plane) works on fed as before.
func checkNative(t fedType, n, fed *unstructured.Unstructured) error {
	if n == nil {
		return nil
	}
	what := t.TargetKind + " " + nsName(n.GetNamespace(), n.GetName())
	fedRef := strings.ToLower(t.Kind) + " " + nsName(n.GetNamespace(), n.GetName())
	policy := n.GetAnnotations()[policyv1alpha1.AnnotationPlacedByPolicy]
	describe := "kubectl describe " + strings.ToLower(t.TargetKind) + " " + n.GetName()
	if n.GetNamespace() != "" {
		describe += " -n " + n.GetNamespace()
	}
	switch {
	case fed != nil && madeFor(fed, n):
		return nil
	case fed != nil && federate.PolicyOf(fed) == "" && policy == "":
		return nil // a wrapper of that name, as before policies
	case fed != nil:
		return fmt.Errorf("%s exists but no propagation policy made it for %s; name it as %s/%s to act on it, or delete it to let the policy make one",
			fedRef, what, strings.ToLower(t.Kind), n.GetName())
	case policy != "":
		return fmt.Errorf("%s is placed by %s, but its federated object %s does not exist yet; wait for cellfed-controller to make it (`%s` shows its events)",
			what, strings.Replace(policy, "/", " ", 1), fedRef, describe)
	}
	return fmt.Errorf("%s is placed by no propagation policy, so it has no federated object to act on; select it with a PropagationPolicy (docs/native-objects.md), `%s` says why it stays on the plane",
		what, describe)
}

// madeFor reports whether fed is the federated object a policy made for
// n: it names a policy and n (by uid) owns it.
func madeFor(fed, n *unstructured.Unstructured) bool {
	if federate.PolicyOf(fed) == "" {
		return false
	}
	return slices.ContainsFunc(fed.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.UID == n.GetUID() })
}

func nsName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}
