package apiserver

import (
	"context"

	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// secretReads guards reads of FederatedSecrets. RBAC has no deny, and the
// shipped roles grant reading every federated type (resources "*" of
// types.kubefed.io, so a type enabled later is covered too): alone, that
// would let a viewer, who may not read Secrets, read a FederatedSecret's
// template and so the Secret's data. A get, list or watch of
// federatedsecrets is allowed only to a user who may also get secrets in
// that namespace (every namespace, for a list across namespaces), so
// whoever may read a FederatedSecret may read the Secret it makes anyway.
type secretReads struct {
	authorizer.Authorizer
}

// federatedSecretsGroup and federatedSecrets name the FederatedSecret API
// (KubeFed's; v1beta1 and v1beta2 share the resource).
const (
	federatedSecretsGroup = "types.kubefed.io"
	federatedSecrets      = "federatedsecrets"
)

// Authorize answers the wrapped authorizer's decision, and for a read of
// federatedsecrets that it allows, also requires get on secrets.
func (a secretReads) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	d, reason, err := a.Authorizer.Authorize(ctx, attrs)
	if d != authorizer.DecisionAllow || !readsFederatedSecrets(attrs) {
		return d, reason, err
	}
	sd, _, err := a.Authorizer.Authorize(ctx, secretsGet(attrs))
	if sd == authorizer.DecisionAllow {
		return d, reason, nil
	}
	return authorizer.DecisionDeny, "reading federatedsecrets needs get on secrets in the same namespace: a FederatedSecret holds the Secret's data", err
}

// readsFederatedSecrets tells whether attrs read FederatedSecrets (their
// status subresource holds no data).
func readsFederatedSecrets(attrs authorizer.Attributes) bool {
	if !attrs.IsResourceRequest() || attrs.GetAPIGroup() != federatedSecretsGroup ||
		attrs.GetResource() != federatedSecrets || attrs.GetSubresource() != "" {
		return false
	}
	switch attrs.GetVerb() {
	case "get", "list", "watch":
		return true
	}
	return false
}

// secretsGet is the check a read of federatedsecrets also needs: get on
// core secrets in the same namespace, as the same user.
func secretsGet(attrs authorizer.Attributes) authorizer.Attributes {
	return authorizer.AttributesRecord{
		User:            attrs.GetUser(),
		Verb:            "get",
		Namespace:       attrs.GetNamespace(),
		APIGroup:        "",
		APIVersion:      "v1",
		Resource:        "secrets",
		ResourceRequest: true,
	}
}
