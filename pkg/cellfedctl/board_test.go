package cellfedctl

import (
	"strings"
	"testing"
)

func TestBoardAddress(t *testing.T) {
	for _, tc := range []struct {
		addr, wantErr string
	}{
		{"127.0.0.1:8765", ""},
		{"localhost:0", ""},
		{"[::1]:8765", ""},
		{"0.0.0.0:8765", "is not a loopback address"},
		{"10.0.0.5:80", "is not a loopback address"},
		{"8765", "is not host:port"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			err := loopback(tc.addr)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("loopback(%q) = %v, want %q", tc.addr, err, tc.wantErr)
			}
		})
	}
}
