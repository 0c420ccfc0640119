package agent

import (
	"testing"

	clientproto "sigs.k8s.io/apiserver-network-proxy/konnectivity-client/proto/client"
)

func TestRewriteDial(t *testing.T) {
	const target = "127.0.0.1:6443"
	tests := []struct {
		name, protocol, address string
		wantAddress             string
		refused                 bool
	}{
		{"own cluster", "tcp", "alpha:443", target, false},
		{"own cluster, other port", "tcp", "alpha:6443", target, false},
		{"own cluster without port", "tcp", "alpha", target, false},
		{"another cluster", "tcp", "beta:443", "", true},
		{"an IP", "tcp", "10.0.0.1:443", "", true},
		{"the target itself", "tcp", target, "", true},
		{"a longer name", "tcp", "alpha.evil:443", "", true},
		{"udp", "udp", "alpha:443", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &clientproto.DialRequest{Protocol: tt.protocol, Address: tt.address}
			rewriteDial(req, "alpha", target)
			if tt.refused {
				if req.Protocol != refusedNetwork || req.Address != "" {
					t.Fatalf("not refused: %s %s", req.Protocol, req.Address)
				}
				return
			}
			if req.Protocol != "tcp" || req.Address != tt.wantAddress {
				t.Fatalf("got %s %s, want tcp %s", req.Protocol, req.Address, tt.wantAddress)
			}
		})
	}
}
