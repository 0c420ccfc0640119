// Package cellproxy is the plane's API proxy to member clusters: per cell
// (/apis/proxy.cellfed.io/v1alpha1/namespaces/<ns>/cells/<cell>/proxy/…,
// confined to the cell's namespace) and per cluster
// (/apis/proxy.cellfed.io/v1alpha1/clusters/<cluster>/proxy/…, platform
// admins). The plane authenticates the caller; the member sees the caller
// through impersonation by a member identity of the proxy's own that may
// only impersonate. The decisions are pure functions (this file); the
// handler and member connections are in handler.go and members.go.
package cellproxy

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/cellfed/cellfed/pkg/tenancy"
)

// Group and Version are the proxy's API group and version.
const (
	Group   = "proxy.cellfed.io"
	Version = "v1alpha1"
	// Prefix is where the proxy is served.
	Prefix = "/apis/" + Group + "/" + Version + "/"
)

// Scope is what a proxy path names: a cell (Namespace and Cell) or a
// physical cluster (Cluster).
type Scope struct {
	Namespace, Cell, Cluster string
}

// IsCell reports whether the scope is a cell.
func (s Scope) IsCell() bool { return s.Cell != "" }

func (s Scope) String() string {
	if s.IsCell() {
		return "cell " + s.Namespace + "/" + s.Cell
	}
	return "cluster " + s.Cluster
}

// Refusal is a request the plane answers itself, with an HTTP status and
// a message saying what is wrong and what to do instead.
type Refusal struct {
	Code    int
	Message string
	// RetryAfter, when set, is sent as Retry-After.
	RetryAfter time.Duration
}

func (r *Refusal) Error() string { return r.Message }

func refuse(code int, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ParsePath splits a proxy request path into its scope and the member API
// path (always starting with "/"). Member paths with empty, "." or ".."
// segments are refused: what the plane checks must be what the member
// serves.
func ParsePath(p string) (Scope, string, *Refusal) {
	rest, ok := strings.CutPrefix(p, Prefix)
	if !ok {
		return Scope{}, "", refuse(http.StatusNotFound, "%s is not a proxy path; use %snamespaces/<namespace>/cells/<cell>/proxy/<API path> or %sclusters/<cluster>/proxy/<API path>", p, Prefix, Prefix)
	}
	var s Scope
	var member string
	parts := strings.SplitN(rest, "/", 5)
	switch {
	case len(parts) == 5 && parts[0] == "namespaces" && parts[2] == "cells":
		s = Scope{Namespace: parts[1], Cell: parts[3]}
		member, ok = strings.CutPrefix(parts[4], "proxy")
	case len(parts) >= 3 && parts[0] == "clusters":
		s = Scope{Cluster: parts[1]}
		member, ok = strings.CutPrefix(strings.Join(parts[2:], "/"), "proxy")
	default:
		ok = false
	}
	if !ok || (member != "" && !strings.HasPrefix(member, "/")) || (s.IsCell() && s.Namespace == "") || (!s.IsCell() && s.Cluster == "") {
		return Scope{}, "", refuse(http.StatusNotFound, "%s is not a proxy path; use %snamespaces/<namespace>/cells/<cell>/proxy/<API path> or %sclusters/<cluster>/proxy/<API path>", p, Prefix, Prefix)
	}
	if member == "" {
		member = "/"
	}
	segs := strings.Split(strings.TrimSuffix(member[1:], "/"), "/")
	for i, seg := range segs {
		if seg == "." || seg == ".." || (seg == "" && !(i == 0 && len(segs) == 1)) {
			return Scope{}, "", refuse(http.StatusBadRequest, "member path %q has an empty, \".\" or \"..\" segment; send a clean API path", member)
		}
	}
	return s, member, nil
}

// discoveryPaths are the non-resource paths a cell proxy serves (GET only):
// what kubectl reads to learn the member's API.
func isDiscovery(p string) bool {
	p = strings.TrimSuffix(p, "/")
	switch {
	case p == "/api", p == "/apis", p == "/version", p == "/openapi/v2", p == "/openapi/v3":
		return true
	case strings.HasPrefix(p, "/openapi/v3/"):
		return true
	}
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	switch {
	case parts[0] == "api" && len(parts) == 2: // /api/v1
		return true
	case parts[0] == "apis" && (len(parts) == 2 || len(parts) == 3): // /apis/<group>[/<version>]
		return true
	}
	return false
}

var requestInfos = &request.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// selfReviews are the cluster-scoped requests a cell proxy passes on:
// reviews of the caller's own rights and identity.
var selfReviews = sets.New("authorization.k8s.io/selfsubjectaccessreviews", "authorization.k8s.io/selfsubjectrulesreviews",
	"authentication.k8s.io/selfsubjectreviews")

// Target is an allowed member request: what it does, for the audit log.
type Target struct {
	Verb, Resource, Namespace, Name string
}

// DecideCell says whether a request (method, member path and query)
// through a cell of namespace may reach the cell's cluster: discovery,
// and resources in namespace (the namespace the workspace places on its
// members); the namespace object itself may only be read. Everything else
// is refused before it reaches the member.
func DecideCell(s Scope, cluster, method, memberPath string, query url.Values) (Target, *Refusal) {
	req := &http.Request{Method: method, URL: &url.URL{Path: memberPath, RawQuery: query.Encode()}}
	info, err := requestInfos.NewRequestInfo(req)
	if err != nil {
		return Target{}, refuse(http.StatusBadRequest, "cannot read member path %q: %v", memberPath, err)
	}
	ns := s.Namespace
	if !info.IsResourceRequest {
		if (method == http.MethodGet || method == http.MethodHead) && isDiscovery(memberPath) {
			return Target{Verb: "get", Resource: memberPath}, nil
		}
		return Target{}, refuse(http.StatusForbidden,
			"%s %s is not served through %s: it serves API discovery (/api, /apis, /version, /openapi) and resources in namespace %s; a platform admin can use the cluster proxy of %s",
			method, memberPath, s, ns, cluster)
	}
	what := info.Resource
	if info.APIGroup != "" {
		what += "." + info.APIGroup
	}
	t := Target{Verb: info.Verb, Resource: what, Namespace: info.Namespace, Name: info.Name}
	switch {
	case info.Verb == "create" && info.Name == "" && info.Subresource == "" && selfReviews.Has(info.APIGroup+"/"+info.Resource):
		// kubectl auth can-i and auth whoami: the member says what the
		// caller may do, or who it is; nothing is stored.
		return t, nil
	case info.Resource == "namespaces" && info.Namespace == ns && info.Subresource == "" && info.Verb == "get":
		return t, nil
	case info.Resource == "namespaces" && info.Namespace == ns:
		return Target{}, refuse(http.StatusForbidden,
			"%s of namespace %s is refused through %s: the plane manages the namespace; you may only get it", verbSub(info), ns, s)
	case info.Namespace == "":
		return Target{}, refuse(http.StatusForbidden,
			"%s %s across all namespaces or cluster-scoped is refused through %s: it reaches only namespace %s on cluster %s; pass -n %s",
			info.Verb, what, s, ns, cluster, ns)
	case info.Namespace != ns && tenancy.ReservedNamespaceError(info.Namespace) != nil:
		return Target{}, refuse(http.StatusForbidden,
			"namespace %s is refused through %s: it reaches only namespace %s on cluster %s; %s is the cluster's own, no tenant workspace: only a platform admin reaches it, through the cluster proxy of %s",
			info.Namespace, s, ns, cluster, info.Namespace, cluster)
	case info.Namespace != ns:
		return Target{}, refuse(http.StatusForbidden,
			"namespace %s is refused through %s: it reaches only namespace %s on cluster %s; use a cell of the workspace %s",
			info.Namespace, s, ns, cluster, info.Namespace)
	}
	return t, nil
}

func verbSub(info *request.RequestInfo) string {
	if info.Subresource != "" {
		return info.Verb + " " + info.Subresource
	}
	return info.Verb
}

// DecideCluster describes a request through a cluster proxy, which
// reaches the whole member (for platform admins, whom the plane's RBAC
// lets use clusters/proxy).
func DecideCluster(method, memberPath string, query url.Values) Target {
	req := &http.Request{Method: method, URL: &url.URL{Path: memberPath, RawQuery: query.Encode()}}
	info, err := requestInfos.NewRequestInfo(req)
	if err != nil || !info.IsResourceRequest {
		return Target{Verb: strings.ToLower(method), Resource: memberPath}
	}
	what := info.Resource
	if info.APIGroup != "" {
		what += "." + info.APIGroup
	}
	return Target{Verb: info.Verb, Resource: what, Namespace: info.Namespace, Name: info.Name}
}
