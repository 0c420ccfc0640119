// The soak's measurements and report: RSS of the plane replicas and the
// controller sampled from /proc, the machine's load, and summary.md,
// rss.csv and rss.png in the output directory.

package soak

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cellfed/cellfed/test/benchplot"
	"github.com/cellfed/cellfed/test/framework"
)

const sampleEvery = 3 * time.Second

// sampler records the RSS of the plane replicas and the controller, and
// the load average, every sampleEvery.
type sampler struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex
	rss  map[string][]RSSSample
	load []RSSSample // the 1-minute load average in MiB's place
}

func startSampler(ctx context.Context, f *soakFederation) *sampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &sampler{cancel: cancel, done: make(chan struct{}), rss: map[string][]RSSSample{}}
	procs := map[string]*framework.Process{"plane A": f.planes[0].Process, "plane B": f.planes[1].Process, "controller": f.controller.Process}
	start := time.Now()
	go func() {
		defer close(s.done)
		tick := time.NewTicker(sampleEvery)
		defer tick.Stop()
		for {
			at := time.Since(start)
			s.mu.Lock()
			for name, p := range procs {
				if exited, _ := p.Exited(); exited {
					continue
				}
				b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid()))
				if err != nil {
					continue
				}
				if mib, err := ParseVmRSS(string(b)); err == nil {
					s.rss[name] = append(s.rss[name], RSSSample{At: at, MiB: mib})
				}
			}
			if l := loadAverage(); !math.IsNaN(l) {
				s.load = append(s.load, RSSSample{At: at, MiB: l})
			}
			s.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// Stop ends sampling and returns the RSS samples by process.
func (s *sampler) Stop() map[string][]RSSSample {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rss
}

// loadAverage is the 1-minute load average (NaN if unreadable).
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return math.NaN()
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return math.NaN()
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

// report is what the soak writes.
type report struct {
	Duration               time.Duration
	Seed                   uint64
	Started                time.Time
	SetupTook              time.Duration
	WorkloadStart          time.Time
	WorkloadEnd            time.Time
	FaultsStopped          time.Time
	ConvergedAt, DeletedAt time.Time
	Faults                 []fault
	Restarts               map[string]int
	Violations             []Violation
	Objects                []Object
	Acked, Failed          map[string]int
	Sightings              int
	RSS                    map[string][]RSSSample
	Load                   []RSSSample
	LoadStart, LoadEnd     float64
	// Flood is what the flooding tenant did; Releases how long the
	// other tenants' creates took to reach their members.
	Flood    string
	Releases []ReleaseTime
}

func (r *report) write(dir string) error {
	var csv bytes.Buffer
	csv.WriteString("seconds,process,rss_mib\n")
	var panels []benchplot.Series
	for _, name := range sortedKeys(r.RSS) {
		s := benchplot.Series{Name: name}
		for _, p := range r.RSS[name] {
			fmt.Fprintf(&csv, "%.0f,%s,%.1f\n", p.At.Seconds(), name, p.MiB)
			s.X, s.Y = append(s.X, p.At.Minutes()), append(s.Y, p.MiB)
		}
		panels = append(panels, s)
	}
	load := benchplot.Series{Name: "load average (1 min)"}
	for _, p := range r.Load {
		load.X, load.Y = append(load.X, p.At.Minutes()), append(load.Y, p.MiB)
	}
	if err := os.WriteFile(filepath.Join(dir, "rss.csv"), csv.Bytes(), 0o644); err != nil {
		return err
	}
	var png bytes.Buffer
	if err := benchplot.Render(&png,
		benchplot.Panel{Title: "RSS (MiB)", XLabel: "minutes since start", Series: panels},
		benchplot.Panel{Title: "machine load average", XLabel: "minutes since start", Series: []benchplot.Series{load}},
	); err != nil {
		return fmt.Errorf("plotting RSS: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rss.png"), png.Bytes(), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "summary.md"), []byte(r.summary()), 0o644)
}

func (r *report) summary() string {
	var b strings.Builder
	since := func(t time.Time) string {
		if t.IsZero() {
			return "never (within the look)"
		}
		return t.Sub(r.FaultsStopped).Round(100 * time.Millisecond).String()
	}
	verdict := "PASS"
	if len(r.Violations) > 0 {
		verdict = "FAIL"
	}
	fmt.Fprintf(&b, "# Soak run of %s: %s\n\n", r.Started.UTC().Format("2006-01-02 15:04 MST"), verdict)
	fmt.Fprintf(&b, "Workload and faults for %s (asked: %s; then up to %s of wind-down under faults), seed %d; set-up took %s.\n",
		r.FaultsStopped.Sub(r.WorkloadStart).Round(time.Second), r.Duration, windDownTime, r.Seed, r.SetupTook.Round(time.Second))
	maxLoad := 0.0
	for _, l := range r.Load {
		maxLoad = max(maxLoad, l.MiB)
	}
	fmt.Fprintf(&b, "Machine: %d cores, load average (1 min) %.1f at the start, %.1f at most, %.1f at the end.\n\n", numCPU(), r.LoadStart, maxLoad, r.LoadEnd)

	b.WriteString("## Invariant violations\n\n| invariant | violations |\n|---|---|\n")
	counts := Count(r.Violations)
	for _, inv := range Invariants {
		fmt.Fprintf(&b, "| %s | %d |\n", inv, counts[inv])
	}
	fmt.Fprintf(&b, "| **total** | **%d** |\n\n", len(r.Violations))

	b.WriteString("## After the faults stopped\n\n")
	var lastEnd time.Time
	for _, fl := range r.Faults {
		if fl.End.After(lastEnd) {
			lastEnd = fl.End
		}
	}
	if !lastEnd.IsZero() {
		fmt.Fprintf(&b, "The last fault was repaired %s before the faults stopped.\n", r.FaultsStopped.Sub(lastEnd).Round(100*time.Millisecond))
	}
	fmt.Fprintf(&b, "- every member at the final templates: **%s** after the faults stopped (limit %s)\n", since(r.ConvergedAt), convergeDeadline)
	fmt.Fprintf(&b, "- every deletion finished (plane and members): **%s** (limit %s)\n\n", since(r.DeletedAt), deleteDeadline)

	b.WriteString("## Faults injected\n\n| fault | count | outage (median) | back to ready (median, max) |\n|---|---|---|---|\n")
	byKind := map[string][]fault{}
	for _, fl := range r.Faults {
		byKind[fl.Kind] = append(byKind[fl.Kind], fl)
	}
	for _, k := range faultKinds {
		fs := byKind[k]
		var out, rec []float64
		for _, fl := range fs {
			out = append(out, fl.End.Sub(fl.Start).Seconds())
			rec = append(rec, fl.Recovered.Seconds())
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s |\n", k, len(fs), secs(out, false), secs(rec, true))
	}
	fmt.Fprintf(&b, "| **total** | **%d** | | |\n\n", len(r.Faults))
	if len(r.Restarts) > 0 {
		b.WriteString("Processes that exited on their own and were restarted (as a pod's container would be):")
		for _, name := range sortedKeys(r.Restarts) {
			fmt.Fprintf(&b, " %s %d×;", name, r.Restarts[name])
		}
		b.WriteString(" cellfed-controller exits by design when it cannot renew its leader Lease (a frozen database).\n\n")
	}
	var errs []string
	for _, fl := range r.Faults {
		if fl.Err != "" {
			errs = append(errs, fmt.Sprintf("- %s %s at %s: %s", fl.Kind, fl.Target, fl.Start.Sub(r.WorkloadStart).Round(time.Second), fl.Err))
		}
	}
	if len(errs) > 0 {
		b.WriteString("Faults whose repair or recovery reported a problem:\n\n" + strings.Join(errs, "\n") + "\n\n")
	}

	b.WriteString("## Workload (3 tenants, FederatedConfigMaps on 2 cells each)\n\n| operation | acknowledged | failed attempts (retried) |\n|---|---|---|\n")
	for _, op := range []string{opCreate, opUpdate, opMask, opUnmask, opRolloutStart, opRolloutFinish, opDelete} {
		fmt.Fprintf(&b, "| %s | %d | %d |\n", op, r.Acked[op], r.Failed[op])
	}
	live := 0
	for _, o := range r.Objects {
		if o.DeleteAcked.IsZero() && o.CreateAcked {
			live++
		}
	}
	fmt.Fprintf(&b, "\n%d objects created, %d live at the end; the member watchers saw %d member objects.\n\n", len(r.Objects), live, r.Sightings)
	if r.Flood != "" {
		fmt.Fprintf(&b, "Besides its releases, %s; the other tenants' creates must reach each member within %s of their acknowledgement, outages apart", r.Flood, heldBackBound)
		if len(r.Releases) > 0 {
			var took []float64
			for _, rt := range r.Releases {
				took = append(took, rt.Took.Seconds())
			}
			fmt.Fprintf(&b, ": %d reached, in %s (median, max)", len(took), secs(took, true))
		}
		b.WriteString(".\n\n")
	}

	b.WriteString("## Memory\n\n| process | first | median | peak | last (MiB) | verdict |\n|---|---|---|---|---|---|\n")
	for _, name := range sortedKeys(r.RSS) {
		s := r.RSS[name]
		if len(s) == 0 {
			continue
		}
		var v []float64
		peak := 0.0
		for _, p := range s {
			v = append(v, p.MiB)
			peak = max(peak, p.MiB)
		}
		bad, why := Unbounded(s)
		verdict := "bounded"
		if bad {
			verdict = "GROWS"
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.0f | %.0f | %s: %s |\n", name, s[0].MiB, median(v), peak, s[len(s)-1].MiB, verdict, why)
	}
	b.WriteString("\n![RSS over time](rss.png) (samples every 3 s in rss.csv; a killed process restarts small)\n")

	if len(r.Violations) > 0 {
		b.WriteString("\n## Violations\n\n")
		for i, v := range r.Violations {
			if i == 50 {
				fmt.Fprintf(&b, "- … %d more\n", len(r.Violations)-50)
				break
			}
			fmt.Fprintf(&b, "- %s (at +%s)\n", v, v.At.Sub(r.WorkloadStart).Round(time.Second))
		}
	}
	return b.String()
}

// secs is the median (and, with withMax, the maximum) of durations in s.
func secs(v []float64, withMax bool) string {
	if len(v) == 0 {
		return "-"
	}
	m := 0.0
	for _, x := range v {
		m = max(m, x)
	}
	if withMax {
		return fmt.Sprintf("%.1f s, %.1f s", median(v), m)
	}
	return fmt.Sprintf("%.1f s", median(v))
}

func numCPU() int { return runtime.NumCPU() }
