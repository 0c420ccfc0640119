package agent

import (
	"math"
	"testing"
	"time"

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

func TestRefusalDelay(t *testing.T) {
	const base, limit = 500 * time.Millisecond, time.Minute
	tests := []struct {
		refusals int
		want     time.Duration
	}{
		{0, 0},
		{1, 500 * time.Millisecond},
		{2, 750 * time.Millisecond},
		{3, 1125 * time.Millisecond},
		{11, time.Duration(float64(base) * math.Pow(1.5, 10))},
		{12, time.Duration(float64(base) * math.Pow(1.5, 11))},
		{13, limit},
		{1000, limit},
	}
	for _, tt := range tests {
		if got := refusalDelay(base, limit, tt.refusals); got != tt.want {
			t.Errorf("refusalDelay after %d refusals = %v, want %v", tt.refusals, got, tt.want)
		}
	}
}
