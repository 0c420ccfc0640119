package cellproxy

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
)

func TestParsePath(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		scope      Scope
		member     string
		refused    string
	}{
		{name: "cell pods", path: Prefix + "namespaces/shop/cells/rz10a/proxy/api/v1/namespaces/shop/pods",
			scope: Scope{Namespace: "shop", Cell: "rz10a"}, member: "/api/v1/namespaces/shop/pods"},
		{name: "cell root", path: Prefix + "namespaces/shop/cells/rz10a/proxy", scope: Scope{Namespace: "shop", Cell: "rz10a"}, member: "/"},
		{name: "cell root slash", path: Prefix + "namespaces/shop/cells/rz10a/proxy/", scope: Scope{Namespace: "shop", Cell: "rz10a"}, member: "/"},
		{name: "cluster", path: Prefix + "clusters/member-1/proxy/apis/apps/v1", scope: Scope{Cluster: "member-1"}, member: "/apis/apps/v1"},
		{name: "cluster trailing slash kept", path: Prefix + "clusters/member-1/proxy/api/", scope: Scope{Cluster: "member-1"}, member: "/api/"},
		{name: "not proxy", path: Prefix + "namespaces/shop/cells/rz10a/proxyx/api", refused: "is not a proxy path"},
		{name: "no subresource", path: Prefix + "namespaces/shop/cells/rz10a", refused: "is not a proxy path"},
		{name: "empty cell", path: Prefix + "namespaces/shop/cells//proxy/api", refused: "is not a proxy path"},
		{name: "empty namespace", path: Prefix + "namespaces//cells/x/proxy/api", refused: "is not a proxy path"},
		{name: "empty cluster", path: Prefix + "clusters//proxy/api", refused: "is not a proxy path"},
		{name: "other group", path: "/apis/core.cellfed.io/v1alpha1/cells", refused: "is not a proxy path"},
		{name: "dot dot", path: Prefix + "namespaces/shop/cells/a/proxy/api/v1/namespaces/shop/../other/pods", refused: `".." segment`},
		{name: "double slash", path: Prefix + "namespaces/shop/cells/a/proxy/api//v1", refused: "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, m, r := ParsePath(tc.path)
			if tc.refused != "" {
				if r == nil || !strings.Contains(r.Message, tc.refused) {
					t.Fatalf("ParsePath(%q) = %+v %q %v, want refusal containing %q", tc.path, s, m, r, tc.refused)
				}
				return
			}
			if r != nil || s != tc.scope || m != tc.member {
				t.Fatalf("ParsePath(%q) = %+v %q %v, want %+v %q", tc.path, s, m, r, tc.scope, tc.member)
			}
		})
	}
}

func TestDecideCell(t *testing.T) {
	cell := Scope{Namespace: "shop", Cell: "rz10a"}
	for _, tc := range []struct {
		name, method, path, query string
		code                      int // 0: allowed
		want                      string
	}{
		{name: "list pods", method: "GET", path: "/api/v1/namespaces/shop/pods", want: "list pods -n shop"},
		{name: "watch pods", method: "GET", path: "/api/v1/namespaces/shop/pods", query: "watch=true", want: "watch pods -n shop"},
		{name: "get deployment", method: "GET", path: "/apis/apps/v1/namespaces/shop/deployments/web", want: "get deployments.apps -n shop web"},
		{name: "logs", method: "GET", path: "/api/v1/namespaces/shop/pods/web-1/log", query: "follow=true", want: "get pods -n shop web-1"},
		{name: "exec", method: "POST", path: "/api/v1/namespaces/shop/pods/web-1/exec", query: "command=echo", want: "create pods -n shop web-1"},
		{name: "port-forward", method: "POST", path: "/api/v1/namespaces/shop/pods/web-1/portforward", want: "create pods -n shop web-1"},
		{name: "create configmap", method: "POST", path: "/api/v1/namespaces/shop/configmaps", want: "create configmaps -n shop"},
		{name: "own namespace read", method: "GET", path: "/api/v1/namespaces/shop", want: "get namespaces -n shop shop"},
		{name: "auth can-i", method: "POST", path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", want: "create selfsubjectaccessreviews.authorization.k8s.io"},
		{name: "auth can-i --list", method: "POST", path: "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", want: "create selfsubjectrulesreviews.authorization.k8s.io"},
		{name: "auth whoami", method: "POST", path: "/apis/authentication.k8s.io/v1/selfsubjectreviews", want: "create selfsubjectreviews.authentication.k8s.io"},
		{name: "review of others", method: "POST", path: "/apis/authorization.k8s.io/v1/subjectaccessreviews", code: 403, want: "create subjectaccessreviews.authorization.k8s.io across all namespaces"},
		{name: "list self reviews", method: "GET", path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", code: 403, want: "list selfsubjectaccessreviews.authorization.k8s.io across all namespaces"},
		{name: "discovery api", method: "GET", path: "/api", want: "get /api"},
		{name: "discovery core", method: "GET", path: "/api/v1", want: "get /api/v1"},
		{name: "discovery apis", method: "GET", path: "/apis", want: "get /apis"},
		{name: "discovery group version", method: "GET", path: "/apis/apps/v1", want: "get /apis/apps/v1"},
		{name: "version", method: "GET", path: "/version", want: "get /version"},
		{name: "openapi v3 doc", method: "GET", path: "/openapi/v3/api/v1", want: "get /openapi/v3/api/v1"},

		{name: "other namespace", method: "GET", path: "/api/v1/namespaces/billing/pods", code: 403,
			want: "namespace billing is refused through cell shop/rz10a: it reaches only namespace shop on cluster member-1; use a cell of the workspace billing"},
		{name: "kube-system", method: "GET", path: "/api/v1/namespaces/kube-system/secrets", code: 403,
			want: "namespace kube-system is refused through cell shop/rz10a: it reaches only namespace shop on cluster member-1; kube-system is the cluster's own, no tenant workspace: only a platform admin reaches it, through the cluster proxy of member-1"},
		{name: "default", method: "GET", path: "/api/v1/namespaces/default/pods", code: 403, want: "default is the cluster's own, no tenant workspace"},
		{name: "all namespaces", method: "GET", path: "/api/v1/pods", code: 403,
			want: "list pods across all namespaces or cluster-scoped is refused through cell shop/rz10a: it reaches only namespace shop on cluster member-1; pass -n shop"},
		{name: "cluster-scoped", method: "GET", path: "/api/v1/nodes", code: 403, want: "list nodes across all namespaces or cluster-scoped"},
		{name: "cluster role", method: "POST", path: "/apis/rbac.authorization.k8s.io/v1/clusterroles", code: 403, want: "create clusterroles.rbac.authorization.k8s.io across all namespaces"},
		{name: "list namespaces", method: "GET", path: "/api/v1/namespaces", code: 403, want: "list namespaces across all namespaces"},
		{name: "delete own namespace", method: "DELETE", path: "/api/v1/namespaces/shop", code: 403,
			want: "delete of namespace shop is refused through cell shop/rz10a: the plane manages the namespace; you may only get it"},
		{name: "finalize own namespace", method: "PUT", path: "/api/v1/namespaces/shop/finalize", code: 403, want: "update finalize of namespace shop"},
		{name: "non-resource", method: "GET", path: "/metrics", code: 403,
			want: "GET /metrics is not served through cell shop/rz10a: it serves API discovery (/api, /apis, /version, /openapi) and resources in namespace shop; a platform admin can use the cluster proxy of member-1"},
		{name: "discovery write", method: "POST", path: "/apis", code: 403, want: "POST /apis is not served"},
		{name: "logs path", method: "GET", path: "/logs/kube-apiserver.log", code: 403, want: "is not served"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, _ := url.ParseQuery(tc.query)
			target, r := DecideCell(cell, "member-1", tc.method, tc.path, q)
			if tc.code != 0 {
				if r == nil || r.Code != tc.code || !strings.Contains(r.Message, tc.want) {
					t.Fatalf("DecideCell(%s %s) = %+v, %v; want refusal %d %q", tc.method, tc.path, target, r, tc.code, tc.want)
				}
				return
			}
			if r != nil || describe(target) != tc.want {
				t.Fatalf("DecideCell(%s %s) = %q, %v; want %q", tc.method, tc.path, describe(target), r, tc.want)
			}
		})
	}
}

func TestHeaders(t *testing.T) {
	h := http.Header{}
	h.Set("Authorization", "Bearer plane-token")
	h.Set("Cookie", "x=y")
	h.Set("Impersonate-User", "root")
	h.Add("Impersonate-Group", "system:masters")
	h.Set("Impersonate-Extra-Scopes", "all")
	h.Set("Accept", "application/json")
	if k := ForgedImpersonation(h); k == "" {
		t.Fatal("ForgedImpersonation found no header")
	}
	Scrub(h)
	if ForgedImpersonation(h) != "" || h.Get("Authorization") != "" || h.Get("Cookie") != "" || h.Get("Accept") == "" {
		t.Fatalf("Scrub left %v", h)
	}
	Impersonate(h, "proxy-token", &user.DefaultInfo{Name: "alice", Groups: []string{"devs", user.AllAuthenticated}, Extra: map[string][]string{"secret": {"x"}}}, "acme")
	want := http.Header{
		"Accept":                                {"application/json"},
		"Authorization":                         {"Bearer proxy-token"},
		"Impersonate-User":                      {"alice"},
		"Impersonate-Group":                     {"devs"},
		"Impersonate-Extra-Cellfed.io%2ftenant": {"acme"},
	}
	if len(h) != len(want) {
		t.Fatalf("headers %v, want %v", h, want)
	}
	for k, v := range want {
		if got := h.Values(k); strings.Join(got, ",") != strings.Join(v, ",") {
			t.Errorf("header %s = %v, want %v (all: %v)", k, got, v, h)
		}
	}
}
