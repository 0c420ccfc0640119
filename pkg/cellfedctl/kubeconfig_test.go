package cellfedctl

import (
	"strings"
	"testing"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func TestProxyKubeconfig(t *testing.T) {
	raw := clientcmdapi.Config{
		CurrentContext: "plane",
		Clusters: map[string]*clientcmdapi.Cluster{
			"plane": {Server: "https://127.0.0.1:6443", CertificateAuthorityData: []byte("CA")},
			"other": {Server: "https://other:6443"},
		},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{"alice": {Token: "t"}, "bob": {Token: "b"}},
		Contexts: map[string]*clientcmdapi.Context{
			"plane": {Cluster: "plane", AuthInfo: "alice"},
			"other": {Cluster: "other", AuthInfo: "bob"},
		},
	}
	for _, tc := range []struct {
		name, context, ns, cell, cluster string
		as                               Impersonation
		server, ctxName, err             string
	}{
		{name: "cell as vera", ns: "shop", cell: "rz10a", as: Impersonation{User: "vera", Groups: []string{"team-a"}}, ctxName: "cell-shop-rz10a",
			server: "https://127.0.0.1:6443/apis/proxy.cellfed.io/v1alpha1/namespaces/shop/cells/rz10a/proxy"},
		{name: "a group without a user", ns: "shop", cell: "rz10a", as: Impersonation{Groups: []string{"team-a"}}, err: "--as-group and --as-uid need --as=<user>"},
		{name: "cell", ns: "shop", cell: "rz10a", ctxName: "cell-shop-rz10a",
			server: "https://127.0.0.1:6443/apis/proxy.cellfed.io/v1alpha1/namespaces/shop/cells/rz10a/proxy"},
		{name: "cluster", cluster: "member-1", ctxName: "cluster-member-1",
			server: "https://127.0.0.1:6443/apis/proxy.cellfed.io/v1alpha1/clusters/member-1/proxy"},
		{name: "named context", context: "other", cluster: "m", ctxName: "cluster-m",
			server: "https://other:6443/apis/proxy.cellfed.io/v1alpha1/clusters/m/proxy"},
		{name: "missing context", context: "nope", cluster: "m", err: `kubeconfig has no context "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := ProxyKubeconfig(*raw.DeepCopy(), tc.context, tc.ns, tc.cell, tc.cluster, tc.as)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c := out.Contexts[out.CurrentContext]
			if out.CurrentContext != tc.ctxName || c.Namespace != tc.ns || out.Clusters[c.Cluster].Server != tc.server {
				t.Fatalf("got context %s %+v server %s", out.CurrentContext, c, out.Clusters[c.Cluster].Server)
			}
			if len(out.AuthInfos) != 1 || out.AuthInfos[c.AuthInfo] == nil {
				t.Fatalf("credentials %v, want only the context's", out.AuthInfos)
			}
			if a := out.AuthInfos[c.AuthInfo]; a.Impersonate != tc.as.User || strings.Join(a.ImpersonateGroups, ",") != strings.Join(tc.as.Groups, ",") {
				t.Fatalf("acts as %q %v, want %q %v", a.Impersonate, a.ImpersonateGroups, tc.as.User, tc.as.Groups)
			}
			if raw.AuthInfos["alice"].Impersonate != "" {
				t.Fatal("the given kubeconfig changed")
			}
		})
	}
}
