package storage

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/k3s-io/kine/pkg/drivers"
	"github.com/k3s-io/kine/pkg/server"
)

// Databases are served through these schemes: kine's own driver behind
// checkedCreate and, for the shared ones (MySQL, PostgreSQL), behind
// polledRevision. The endpoint keeps its scheme in logs and flags; only
// the string handed to kine carries the prefix.
const sharedSchemePrefix = "cellfed-"

func init() {
	for _, scheme := range []string{"sqlite", "mysql", "postgres", "postgresql"} {
		inner, ok := drivers.Get(scheme)
		if !ok {
			panic("kine has no driver for " + scheme)
		}
		drivers.Register(sharedSchemePrefix+scheme, func(ctx context.Context, wg *sync.WaitGroup, cfg *drivers.Config) (bool, server.Backend, error) {
			c := *cfg
			c.Scheme = scheme
			c.Endpoint = scheme + "://" + cfg.DataSourceName
			leaderElect, backend, err := inner(ctx, wg, &c)
			if err != nil || backend == nil {
				return leaderElect, backend, err
			}
			if scheme == "sqlite" {
				return leaderElect, checkedCreate{backend}, nil
			}
			return leaderElect, &polledRevision{Backend: checkedCreate{backend}}, nil
		})
	}
}

// polledRevision is a kine backend whose current revision is at least
// the newest one its poll loop has delivered to watches.
//
// kine v0.17.5 keeps the revision in one number that its writes and its
// poll loop each move only from the value they last saw. On a database
// other kines write to as well (plane replicas), a write of this kine
// that lands before its poll loop has read the writes of the others
// leaves the number where the poll loop no longer recognises it, and it
// stays at this kine's last write. kine answers watch progress requests
// with that number, so the API server's watch caches of quiet resources
// never learn a newer revision: consistent reads fall back to the
// database, and watch-list requests (informers starting, a replica
// becoming ready) wait for ever. The poll loop itself is current; its
// batches say where it is.
type polledRevision struct {
	server.Backend
	polled atomic.Int64
}

// Start starts kine, then follows its poll loop for as long as ctx lives.
func (p *polledRevision) Start(ctx context.Context) error {
	if err := p.Backend.Start(ctx); err != nil {
		return err
	}
	w := p.Backend.Watch(ctx, 0)
	go func() {
		for batch := range w.Eventc {
			p.observe(batch.CurrentRev)
		}
	}()
	return nil
}

func (p *polledRevision) observe(rev int64) {
	for {
		cur := p.polled.Load()
		if rev <= cur || p.polled.CompareAndSwap(cur, rev) {
			return
		}
	}
}

// CurrentRevision is kine's, or the poll loop's when that is newer. kine
// answers a progress request only when every watch has been sent the
// revision returned here, so it is never ahead of what watches got.
func (p *polledRevision) CurrentRevision(ctx context.Context) (int64, error) {
	rev, err := p.Backend.CurrentRevision(ctx)
	if err != nil {
		return rev, err
	}
	return max(rev, p.polled.Load()), nil
}
