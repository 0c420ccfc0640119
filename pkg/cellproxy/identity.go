package cellproxy

import (
	"net/http"
	"net/url"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

// ServiceAccount is the proxy's own identity in every member: it may only
// impersonate (ProxyRules), and it is not the propagation controller's.
const ServiceAccount = "cellfed-proxy"

// TenantExtra is the impersonated user's extra naming the cell's tenant.
const TenantExtra = cellv1alpha1.LabelTenant

// ProxyRules are the member rights of the proxy's identity: impersonating
// users, groups and service accounts (any name: the plane's users are not
// known in advance) and the one extra it sets, cellfed.io/tenant. It can
// do nothing else on the member as itself.
var ProxyRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"users", "groups", "serviceaccounts"}, Verbs: []string{"impersonate"}},
	{APIGroups: []string{authenticationv1.GroupName}, Resources: []string{"userextras/" + TenantExtra}, Verbs: []string{"impersonate"}},
}

// Scrub removes what the caller sent to authenticate to the plane (its
// bearer token, basic credentials, cookies) and any impersonation header:
// none of them may reach the member.
func Scrub(h http.Header) {
	for k := range h {
		ck := http.CanonicalHeaderKey(k)
		if ck == "Authorization" || ck == "Proxy-Authorization" || ck == "Cookie" || strings.HasPrefix(ck, "Impersonate-") {
			delete(h, k)
		}
	}
}

// ForgedImpersonation is the first impersonation header in h, or "". The
// plane's own impersonation filter consumes (or refuses) the caller's
// headers, so any left when the proxy runs is refused.
func ForgedImpersonation(h http.Header) string {
	for k := range h {
		if strings.HasPrefix(http.CanonicalHeaderKey(k), "Impersonate-") {
			return k
		}
	}
	return ""
}

// Impersonate sets the member request's credentials: the proxy's token
// and the caller as the impersonated user, with its groups and, for a
// cell, the tenant extra. Other extras of the caller stay on the plane.
func Impersonate(h http.Header, token string, u user.Info, tenant string) {
	h.Set("Authorization", "Bearer "+token)
	h.Set(authenticationv1.ImpersonateUserHeader, u.GetName())
	for _, g := range u.GetGroups() {
		if g == user.AllAuthenticated {
			continue // the member adds it to every impersonated user
		}
		h.Add(authenticationv1.ImpersonateGroupHeader, g)
	}
	if tenant != "" {
		h.Set(authenticationv1.ImpersonateUserExtraHeaderPrefix+url.PathEscape(TenantExtra), tenant)
	}
}
