package cellproxy

import (
	"fmt"
	"net/http"
	"sync"
	"time"
)

// DefaultMaxWatchesPerUser is how many watches one user may hold open
// through the proxy at once by default.
const DefaultMaxWatchesPerUser = 100

// watchRetryAfter is what a refused watch is told to wait.
const watchRetryAfter = 10 * time.Second

// WatchLimit bounds the watches each user holds open through the proxy:
// every open watch holds a member connection's stream and the plane's
// buffers, so one user cannot take them all.
type WatchLimit struct {
	max  int
	mu   sync.Mutex
	open map[string]int
}

// NewWatchLimit allows max watches per user; max < 1 allows any number.
func NewWatchLimit(max int) *WatchLimit {
	return &WatchLimit{max: max, open: map[string]int{}}
}

// Acquire counts one more watch of user, or refuses it (429) when user
// already holds the maximum. release ends it; call it once.
func (l *WatchLimit) Acquire(user string) (release func(), refusal *Refusal) {
	if l == nil || l.max < 1 {
		return func() {}, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[user] >= l.max {
		return nil, &Refusal{Code: http.StatusTooManyRequests, RetryAfter: watchRetryAfter, Message: fmt.Sprintf(
			"user %q already holds %d watches open through the API proxy, its limit (cellfed-apiserver --api-proxy-max-watches-per-user); close some (e.g. stopped kubectl get -w) and retry",
			user, l.max)}
	}
	l.open[user]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.open[user]--; l.open[user] <= 0 {
				delete(l.open, user)
			}
		})
	}, nil
}

// Open is how many watches user holds open.
func (l *WatchLimit) Open(user string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open[user]
}
