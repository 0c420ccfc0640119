package cellproxy

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestWatchLimit(t *testing.T) {
	for _, tc := range []struct {
		name      string
		max       int
		acquire   int // by alice, before the checked one
		wantOpen  bool
		wantAfter int // alice's open watches after releasing all
	}{
		{"under the limit", 3, 2, true, 0},
		{"at the limit", 3, 3, false, 0},
		{"no limit", 0, 500, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := NewWatchLimit(tc.max)
			var releases []func()
			for i := 0; i < tc.acquire; i++ {
				rel, refusal := l.Acquire("alice")
				if refusal != nil {
					t.Fatalf("watch %d refused: %s", i+1, refusal.Message)
				}
				releases = append(releases, rel)
			}
			rel, refusal := l.Acquire("alice")
			if (refusal == nil) != tc.wantOpen {
				t.Fatalf("watch %d: refusal %v, want open %v", tc.acquire+1, refusal, tc.wantOpen)
			}
			if refusal != nil {
				if refusal.Code != http.StatusTooManyRequests || refusal.RetryAfter != 10*time.Second || !strings.Contains(refusal.Message, "--api-proxy-max-watches-per-user") {
					t.Errorf("refusal %+v", refusal)
				}
				if _, other := l.Acquire("bob"); other != nil {
					t.Errorf("bob is refused for alice's watches: %s", other.Message)
				}
			} else {
				releases = append(releases, rel)
			}
			for _, r := range releases {
				r()
				r() // a second release counts nothing
			}
			if tc.max > 0 {
				if got := l.Open("alice"); got != tc.wantAfter {
					t.Errorf("alice holds %d after releasing all, want %d", got, tc.wantAfter)
				}
			}
		})
	}
}
