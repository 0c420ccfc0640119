package agent

import (
	"net"
	"testing"

	clientproto "sigs.k8s.io/apiserver-network-proxy/konnectivity-client/proto/client"
)

// FuzzRewriteDial: whatever dial request the hub sends, the agent either
// points it at its own API server (and then the request named its own
// cluster, over TCP) or makes it fail without connecting anywhere.
func FuzzRewriteDial(f *testing.F) {
	for _, s := range [][3]string{
		{"alpha", "tcp", "alpha:443"},
		{"alpha", "tcp", "alpha"},
		{"alpha", "tcp", "[alpha]:443"},
		{"alpha", "tcp", "alpha.evil:443"},
		{"alpha", "udp", "alpha:443"},
		{"alpha", "tcp", "127.0.0.1:6443"},
		{"alpha", "tcp", ""},
		{"", "tcp", ":443"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	const target = "127.0.0.1:6443"
	f.Fuzz(func(t *testing.T, cluster, protocol, address string) {
		if cluster == "" {
			return // the agent's options require its cluster name
		}
		req := &clientproto.DialRequest{Protocol: protocol, Address: address}
		rewriteDial(req, cluster, target)
		switch {
		case req.Protocol == refusedNetwork:
			if req.Address != "" {
				t.Fatalf("refused dial keeps address %q", req.Address)
			}
		case req.Address == target:
			if protocol != "tcp" {
				t.Fatalf("dial of protocol %q reached the API server", protocol)
			}
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				host = address
			}
			if host != cluster {
				t.Fatalf("dial for %q reached the API server of cluster %q", address, cluster)
			}
		default:
			t.Fatalf("dial %s %q became %s %q: neither the API server nor refused", protocol, address, req.Protocol, req.Address)
		}
	})
}
