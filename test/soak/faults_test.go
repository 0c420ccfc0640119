// The soak's fault injector: one fault at a time, at random intervals,
// each repaired after a random outage and followed by a wait until every
// part answers again.

package soak

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
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
	sup *supervisor

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
// repaired before run returns. The kinds come in rounds, each a random
// order of every kind, so even a short soak injects each of them.
func (in *injector) run(ctx context.Context) {
	var round []string
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(5+in.rng.IntN(20)) * time.Second):
		}
		if len(round) == 0 {
			round = slices.Clone(faultKinds)
			in.rng.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		}
		kind := round[0]
		round = round[1:]
		fl := in.inject(kind)
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
		in.sup.hold(p, true) // the injector restarts it, after the outage
		p.Kill()
		repair = func() error {
			defer in.sup.hold(p, false)
			return p.Restart()
		}
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
		klog.Errorf("soak fault: %s %s: not healthy again: %v", kind, fl.Target, err)
		fl.Err += fmt.Sprintf(" not healthy again: %v", err)
	}
	fl.Recovered = time.Since(fl.End)
	// One short line for the summary; the log has the rest.
	fl.Err, _, _ = strings.Cut(strings.TrimSpace(fl.Err), "\n")
	if len(fl.Err) > 200 {
		fl.Err = fl.Err[:200] + " …"
	}
	return fl
}

// waitHealthy waits until both plane replicas, the controller and every
// member answer as ready. A process that exits meanwhile is waited for
// again: the supervisor restarts it.
func (f *soakFederation) waitHealthy(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	again := func(what string, wait func(context.Context) error) error {
		for {
			err := wait(ctx)
			if err == nil {
				return nil
			}
			if ctx.Err() != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second): // the supervisor's restart
			}
		}
	}
	for i, p := range f.planes {
		if err := again(fmt.Sprintf("plane replica %d", i), p.WaitReady); err != nil {
			return err
		}
	}
	if err := again("cellfed-controller", func(ctx context.Context) error { return f.controller.WaitReady(ctx, timeout) }); err != nil {
		return err
	}
	for _, name := range sortedKeys(f.members) {
		if err := again("member "+name, f.members[name].WaitReady); err != nil {
			return err
		}
	}
	return nil
}

// supervisor restarts any process of the federation that exits on its
// own, as Kubernetes restarts a pod's container: cellfed-controller exits
// when it loses its leader Lease (a frozen database), by design.
type supervisor struct {
	procs map[string]*framework.Process

	mu       sync.Mutex
	held     map[*framework.Process]bool
	restarts map[string]int
}

func newSupervisor(f *soakFederation) *supervisor {
	procs := map[string]*framework.Process{"plane A": f.planes[0].Process, "plane B": f.planes[1].Process,
		"cellfed-controller": f.controller.Process, "agent " + edgeName: f.agent}
	for name, m := range f.members {
		procs["member "+name] = m.Process
	}
	return &supervisor{procs: procs, held: map[*framework.Process]bool{}, restarts: map[string]int{}}
}

// hold keeps the supervisor off p while the injector has it down.
func (s *supervisor) hold(p *framework.Process, held bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held[p] = held
}

// run restarts exited processes every 500 ms until ctx ends.
func (s *supervisor) run(ctx context.Context) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for name, p := range s.procs {
			s.mu.Lock()
			if exited, err := p.Exited(); exited && !s.held[p] {
				klog.Infof("soak supervisor: %s exited on its own (%v); restarting it. Last log lines:\n%s", name, err, p.Tail(5))
				if rerr := p.Restart(); rerr != nil {
					klog.Errorf("soak supervisor: restarting %s: %v", name, rerr)
				} else {
					s.restarts[name]++
				}
			}
			s.mu.Unlock()
		}
	}
}

// Restarts are the restarts the supervisor made, by process.
func (s *supervisor) Restarts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.restarts)
}
