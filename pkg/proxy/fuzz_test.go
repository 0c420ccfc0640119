package proxy

import (
	"encoding/base64"
	"net/url"
	"strings"
	"testing"

	"google.golang.org/grpc/metadata"
	"k8s.io/apimachinery/pkg/util/validation"
)

// FuzzAgentMetadata: an agent whose certificate names cluster is admitted
// only with one agent ID <cluster>/<suffix> and identifiers that route
// nothing but host=<cluster> to it, whatever else it announces.
func FuzzAgentMetadata(f *testing.F) {
	f.Add("alpha", "alpha/1", "host=alpha", false)
	f.Add("alpha", "alpha/1", "host=alpha&host=alpha", false)
	f.Add("alpha", "alpha/1", "host=alpha&ipv4=10.0.0.1", false)
	f.Add("alpha", "alpha-2/1", "host=alpha", false)
	f.Add("alpha", "alpha/1", "host=alpha%26host%3Dbeta", false)
	f.Add("alpha", "alpha/1", "host=alpha;host=beta", true)
	f.Fuzz(func(t *testing.T, cluster, agentID, idents string, twoIDs bool) {
		if len(validation.IsDNS1123Subdomain(cluster)) > 0 {
			return // pki.ClusterFromAgentCert refuses such certificates first
		}
		md := metadata.Pairs("agentID", agentID, "agentIdentifiers", idents)
		if twoIDs {
			md.Append("agentID", cluster+"/2")
		}
		id, err := checkAgentMetadata(cluster, md)
		if err != nil {
			return
		}
		if twoIDs {
			t.Fatal("admitted an agent announcing two agent IDs")
		}
		if id != agentID || !strings.HasPrefix(id, cluster+"/") || id == cluster+"/" {
			t.Fatalf("admitted agent ID %q for cluster %q", id, cluster)
		}
		// ANP parses the identifiers the same way to route dials: what it
		// would route to this agent must be this cluster only.
		values, perr := url.ParseQuery(idents)
		if perr != nil {
			t.Fatalf("admitted identifiers ANP cannot parse: %v", perr)
		}
		for k, vs := range values {
			for _, v := range vs {
				if k != identifierHost || v != cluster {
					t.Fatalf("cluster %q admitted with identifier %s=%q", cluster, k, v)
				}
			}
		}
	})
}

// FuzzConnectAuth: a Proxy-Authorization header opens the CONNECT
// frontend only for the cluster whose credential it carries, and the
// header Go's HTTP client builds from a cluster's proxy URL opens exactly
// that cluster.
func FuzzConnectAuth(f *testing.F) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	f.Add("alpha", "Basic "+base64.StdEncoding.EncodeToString([]byte("alpha:"+ConnectCredential(secret, "alpha", 0))))
	f.Add("alpha.cell-1", "Basic "+base64.StdEncoding.EncodeToString([]byte("beta:"+ConnectCredential(secret, "alpha", 0))))
	f.Add("alpha", "basic  "+base64.StdEncoding.EncodeToString([]byte("alpha:x")))
	f.Add("alpha", "Bearer abc")
	f.Fuzz(func(t *testing.T, cluster, header string) {
		if user, password, ok := parseProxyAuthorization(header); ok && checkConnectCredential(secret, user, 0, password) {
			if password != ConnectCredential(secret, user, 0) {
				t.Fatalf("header %q opens %q without its credential", header, user)
			}
			if user != cluster && password == ConnectCredential(secret, cluster, 0) {
				t.Fatalf("the credential of %q opens %q", cluster, user)
			}
		}
		if len(validation.IsDNS1123Subdomain(cluster)) > 0 {
			return
		}
		u, err := url.Parse(ConnectProxyURL(secret, "127.0.0.1:8132", cluster, 0, false))
		if err != nil {
			t.Fatalf("proxy URL of %q does not parse: %v", cluster, err)
		}
		if got, ok := ClusterFromProxyURL(u.String()); !ok || got != cluster {
			t.Fatalf("proxy URL of %q names %q", cluster, got)
		}
		// What net/http's Transport sends for a proxy URL with user info.
		password, _ := u.User.Password()
		sent := "Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+password))
		user, pw, ok := parseProxyAuthorization(sent)
		if !ok || user != cluster || !checkConnectCredential(secret, user, 0, pw) {
			t.Fatalf("the proxy URL of %q does not open it (user %q, ok %v)", cluster, user, ok)
		}
	})
}
