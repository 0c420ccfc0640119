// The soak's fault injector: one fault at a time, at random intervals,
// each repaired after a random outage and followed by a wait until every
// part answers again.

package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/cellfed/cellfed/test/framework"
)

// Fault kinds, as the summary counts them.
const (
	faultKillPlane      = "SIGKILL plane replica"
	faultKillController = "SIGKILL cellfed-controller"
	faultKillAgent      = "SIGKILL agent"
	faultKillMember     = "SIGKILL member"
	faultFreezeDB       = "SIGSTOP MariaDB 5-20 s"
	faultDropTunnel     = "silent drop of the tunnel link"
)

var faultKinds = []string{faultKillPlane, faultKillController, faultKillAgent, faultKillMember, faultFreezeDB, faultDropTunnel}

// fault is one injected fault.
type fault struct {
	Kind, Target string
	Start, End   time.Time // broken at Start, repaired at End
	Recovered    time.Duration
	Err          string
}

type injector struct {
	f   *soakFederation
	rng *rand.Rand

	mu     sync.Mutex
	faults []fault
}

// Faults are those injected so far.
func (in *injector) Faults() []fault {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]fault(nil), in.faults...)
}

// run injects faults until ctx ends; a fault under way is always
// repaired before run returns.
func (in *injector) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(5+in.rng.IntN(20)) * time.Second):
		}
		fl := in.inject(faultKinds[in.rng.IntN(len(faultKinds))])
		in.mu.Lock()
		in.faults = append(in.faults, fl)
		in.mu.Unlock()
		klog.Infof("soak fault: %s %s for %s, recovered %s after%s", fl.Kind, fl.Target, fl.End.Sub(fl.Start).Round(100*time.Millisecond), fl.Recovered.Round(100*time.Millisecond), errSuffix(fl.Err))
	}
}

func errSuffix(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// inject breaks something, waits, repairs it and waits until every part
// answers again.
func (in *injector) inject(kind string) fault {
	f := in.f
	fl := fault{Kind: kind, Start: time.Now()}
	outage := time.Duration(in.rng.IntN(5000)) * time.Millisecond
	var repair func() error
	kill := func(p *framework.Process) {
		p.Kill()
		repair = p.Restart
	}
	switch kind {
	case faultKillPlane:
		i := in.rng.IntN(len(f.planes))
		fl.Target = []string{"A", "B"}[i]
		kill(f.planes[i].Process)
	case faultKillController:
		kill(f.controller.Process)
	case faultKillAgent:
		fl.Target = edgeName
		kill(f.agent)
	case faultKillMember:
		names := sortedKeys(f.members)
		fl.Target = names[in.rng.IntN(len(names))]
		kill(f.members[fl.Target].Process)
	case faultFreezeDB:
		outage = time.Duration(5000+in.rng.IntN(15001)) * time.Millisecond
		f.db.Signal(syscall.SIGSTOP) // the soak's own mariadbd, never the shared one
		repair = func() error { f.db.Signal(syscall.SIGCONT); return nil }
	case faultDropTunnel:
		outage = time.Duration(5000+in.rng.IntN(25001)) * time.Millisecond
		fl.Target = edgeName
		if err := f.ns.Link(false); err != nil {
			fl.Err = err.Error()
		}
		repair = func() error { return f.ns.Link(true) }
	}
	time.Sleep(outage) // the outage itself, not a synchronisation
	if err := repair(); err != nil {
		fl.Err = fmt.Sprintf("repair: %v", err)
	}
	fl.End = time.Now()
	if err := f.waitHealthy(context.Background(), 3*time.Minute); err != nil {
		fl.Err += fmt.Sprintf(" not healthy again: %v", err)
	}
	fl.Recovered = time.Since(fl.End)
	return fl
}

// waitHealthy waits until both plane replicas, the controller and every
// member answer as ready.
func (f *soakFederation) waitHealthy(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for i, p := range f.planes {
		if err := p.WaitReady(ctx); err != nil {
			return fmt.Errorf("plane replica %d: %w", i, err)
		}
	}
	if err := f.controller.WaitReady(ctx, timeout); err != nil {
		return fmt.Errorf("cellfed-controller: %w", err)
	}
	for _, name := range sortedKeys(f.members) {
		if err := f.members[name].WaitReady(ctx); err != nil {
			return fmt.Errorf("member %s: %w", name, err)
		}
	}
	return nil
}
