package framework

import (
	"net"
	"strconv"
	"testing"
)

func TestFreePortIsBelowTheEphemeralRange(t *testing.T) {
	lo, hi := portRange()
	seen := map[int]bool{}
	for range 50 {
		p := FreePort(t)
		if hi-lo >= 1000 && (p < lo || p >= hi) {
			t.Fatalf("FreePort = %d, want it in %d-%d, below the kernel's ephemeral ports", p, lo, hi-1)
		}
		if seen[p] {
			t.Fatalf("FreePort returned %d twice in 50 calls", p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d from FreePort: %v", p, err)
		}
		l.Close()
	}
}
