package apiserver

import (
	"context"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// grants is an authorizer for the test: a user may do what its entries
// list, as "verb group/resource ns" (ns "*" for every namespace).
type grants map[string][]string

func (g grants) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	for _, r := range g[a.GetUser().GetName()] {
		if r == a.GetVerb()+" "+a.GetAPIGroup()+"/"+a.GetResource()+" "+a.GetNamespace() ||
			r == a.GetVerb()+" "+a.GetAPIGroup()+"/"+a.GetResource()+" *" {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func TestSecretReads(t *testing.T) {
	rbac := grants{
		// a viewer: reads every federated type, no Secrets.
		"vera": {"get types.kubefed.io/federatedsecrets shop", "list types.kubefed.io/federatedsecrets shop",
			"watch types.kubefed.io/federatedsecrets shop", "get types.kubefed.io/federateddeployments shop",
			"get types.kubefed.io/federatedsecrets shop"},
		// an app team: reads federated types and may get Secrets in shop.
		"alice": {"get types.kubefed.io/federatedsecrets shop", "list types.kubefed.io/federatedsecrets shop",
			"list types.kubefed.io/federatedsecrets ", "get /secrets shop", "update types.kubefed.io/federatedsecrets shop"},
		"admin": {"list types.kubefed.io/federatedsecrets ", "get /secrets *"},
	}
	for _, tc := range []struct {
		user, verb, resource, subresource, ns string
		want                                  authorizer.Decision
	}{
		{"vera", "get", "federatedsecrets", "", "shop", authorizer.DecisionDeny},
		{"vera", "list", "federatedsecrets", "", "shop", authorizer.DecisionDeny},
		{"vera", "watch", "federatedsecrets", "", "shop", authorizer.DecisionDeny},
		{"vera", "get", "federateddeployments", "", "shop", authorizer.DecisionAllow},
		{"vera", "get", "federatedsecrets", "", "billing", authorizer.DecisionNoOpinion},
		{"alice", "get", "federatedsecrets", "", "shop", authorizer.DecisionAllow},
		{"alice", "list", "federatedsecrets", "", "shop", authorizer.DecisionAllow},
		{"alice", "update", "federatedsecrets", "", "shop", authorizer.DecisionAllow},
		// across namespaces needs get secrets in every namespace
		{"alice", "list", "federatedsecrets", "", "", authorizer.DecisionDeny},
		{"admin", "list", "federatedsecrets", "", "", authorizer.DecisionAllow},
	} {
		a := secretReads{rbac}
		got, reason, err := a.Authorize(context.Background(), authorizer.AttributesRecord{
			User: &user.DefaultInfo{Name: tc.user}, Verb: tc.verb, Namespace: tc.ns,
			APIGroup: "types.kubefed.io", Resource: tc.resource, Subresource: tc.subresource, ResourceRequest: true,
		})
		if err != nil {
			t.Fatalf("%s %s %s in %q: %v", tc.user, tc.verb, tc.resource, tc.ns, err)
		}
		if got != tc.want {
			t.Errorf("%s %s %s in %q: decision %v (%s), want %v", tc.user, tc.verb, tc.resource, tc.ns, got, reason, tc.want)
		}
	}
}
