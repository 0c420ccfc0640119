package bench

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cellfed/cellfed/test/framework"
)

// raceValue is one row of the race's table for one controller and run.
type raceValue struct {
	label string
	unit  string
	prec  int // decimals
	v     float64
}

// values are the race's table rows for one controller's run, in order.
func (r raceResult) values() []raceValue {
	var vs []raceValue
	add := func(label, unit string, prec int, v float64) {
		vs = append(vs, raceValue{label, unit, prec, v})
	}
	cellsObjs := float64(raceObjects * raceMembers)
	for _, n := range phases(raceMembers) {
		if l, ok := r.latency[n]; ok {
			add(fmt.Sprintf("latency to %d cells p50", n), "ms", 1, ms(l[0]))
			add(fmt.Sprintf("latency to %d cells p99", n), "ms", 1, ms(l[1]))
			add(fmt.Sprintf("latency samples to %d cells missing after 2 min (of %d)", n, raceLatencies), "", 0, float64(r.latMissing[n]))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(r.latency)) {
		if n > raceMembers {
			l := r.latency[n]
			add(fmt.Sprintf("latency to %d of %d cells (on %d members) p50", min(10, raceMembers), n, raceMembers), "ms", 1, ms(l[0]))
			add(fmt.Sprintf("latency to %d of %d cells (on %d members) p99", min(10, raceMembers), n, raceMembers), "ms", 1, ms(l[1]))
			add(fmt.Sprintf("latency samples to %d of %d cells missing after 2 min (of %d)", min(10, raceMembers), n, raceLatencies), "", 0, float64(r.latMissing[n]))
		}
	}
	if !r.ran() {
		return vs
	}
	add(fmt.Sprintf("convergence, %d objects × %d cells", raceObjects, raceMembers), "s", 1, r.converge.Seconds())
	add(fmt.Sprintf("member objects converged (of %d)", raceObjects*raceMembers), "", 0, float64(r.converged))
	for _, p := range []struct {
		name string
		w    framework.Writes
	}{{"convergence", r.writes}, {"template update", r.updates}, {"15 s idle + no-op", r.noop}} {
		add("member writes, "+p.name+": create", "", 0, float64(p.w.Creates))
		add("member writes, "+p.name+": update", "", 0, float64(p.w.Updates))
		add("member writes, "+p.name+": delete", "", 0, float64(p.w.Deletes))
	}
	// The bench's own creates and patches are not the controller's.
	add("plane writes per object, new", "", 2, float64(r.planeNew.total()-raceObjects)/float64(raceObjects))
	add("plane writes per object, template update", "", 2, float64(r.planeUpdate.total()-raceObjects)/float64(raceObjects))
	add("plane writes per object, no-op", "", 2, float64(r.planeNoop.total()-raceObjects)/float64(raceObjects))
	add("conversion webhook calls per object, new", "", 2, float64(r.planeNew.conversions)/float64(raceObjects))
	add("conversion webhook calls per object, template update", "", 2, float64(r.planeUpdate.conversions)/float64(raceObjects))
	add("controller CPU, convergence", "s", 1, r.convCPU.Seconds())
	add("controller CPU per (object × cell), convergence", "ms", 3, float64(r.convCPU.Milliseconds())/cellsObjs)
	add("controller CPU, whole race (latency phases to no-op)", "s", 1, r.cpu.Seconds())
	add("member CPU (all kube-apiservers), convergence", "s", 1, r.memberConvCPU.Seconds())
	add("member CPU (all kube-apiservers), whole race", "s", 1, r.memberCPU.Seconds())
	add("controller RSS, members joined, no objects", "MiB", 0, r.baseRSS)
	add("… of it anonymous (RssAnon: heap, stacks)", "MiB", 0, r.baseAnon)
	add("… of it file pages (RssFile: the binary)", "MiB", 0, r.baseFile)
	add("controller peak RSS", "MiB", 0, r.peakRSS)
	add("controller RSS growth per (object × cell)", "KiB", 2, (r.peakRSS-r.baseRSS)*1024/cellsObjs)
	add("controller RSS growth per (object × cell), after the no-op", "KiB", 2, (r.endRSS-r.baseRSS)*1024/cellsObjs)
	if r.ctrlNew != nil {
		// cellfed-controller's own count (KubeFed's is not measured).
		add("member GETs, convergence + template update + no-op (cellfed's /metrics)", "", 0, float64(r.getsNew+r.getsUpdate+r.getsNoop))
	}
	return vs
}

// ran reports whether the controller raced (KubeFed may be skipped).
func (r raceResult) ran() bool { return r.planeNew.writes != nil }

// total is the number of writes.
func (pc planeCost) total() int {
	n := 0
	for _, v := range pc.writes {
		n += v
	}
	return n
}

// raceTable is the markdown table of the runs: the median of each row for
// each contestant (KubeFed, cellfed-controller and the floor, a
// propagator doing only what correctness needs: test/bench/floor), with
// the range when there are several runs, and the ratios of cellfed's
// median to KubeFed's and to the floor's. A contestant with no runs is
// left out.
func raceTable(kfs, cfs, fls []raceResult) string {
	var labels []string
	cols := [][]raceResult{kfs, cfs, fls}
	rows := map[string][3][]float64{}
	spec := map[string]raceValue{}
	for c, rs := range cols {
		for _, r := range rs {
			for _, v := range r.values() {
				if _, ok := spec[v.label]; !ok {
					labels = append(labels, v.label)
					spec[v.label] = v
				}
				row := rows[v.label]
				row[c] = append(row[c], v.v)
				rows[v.label] = row
			}
		}
	}
	names := []string{"KubeFed v0.10.0", "cellfed-controller", "floor"}
	for c, rs := range cols {
		if len(rs) > 0 {
			names[c] = rs[0].name
		}
	}
	hasKF, hasFloor := len(kfs) > 0, len(fls) > 0
	var s strings.Builder
	s.WriteString("| |")
	align := "|---|"
	if hasKF {
		s.WriteString(" " + names[0] + " |")
		align += "---:|"
	}
	s.WriteString(" " + names[1] + " |")
	align += "---:|"
	if hasFloor {
		s.WriteString(" " + names[2] + " |")
		align += "---:|"
	}
	if hasKF {
		s.WriteString(" cellfed/KubeFed |")
		align += "---:|"
	}
	if hasFloor {
		s.WriteString(" cellfed/floor |")
		align += "---:|"
	}
	s.WriteString("\n" + align + "\n")
	for _, l := range labels {
		sp := spec[l]
		label := l
		if sp.unit != "" {
			label += " (" + sp.unit + ")"
		}
		cell := func(vs []float64) (string, float64, bool) {
			if len(vs) == 0 {
				return "n/a", 0, false
			}
			sorted := slices.Sorted(slices.Values(vs))
			med := sorted[len(sorted)/2]
			if len(sorted)%2 == 0 {
				med = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
			}
			out := fmt.Sprintf("%.*f", sp.prec, med)
			if len(sorted) > 1 {
				out += fmt.Sprintf(" (%.*f–%.*f)", sp.prec, sorted[0], sp.prec, sorted[len(sorted)-1])
			}
			return out, med, true
		}
		ratio := func(num, den float64, ok bool) string {
			if !ok || den == 0 {
				return "–"
			}
			return fmt.Sprintf("%.2f", num/den)
		}
		kc, km, kok := cell(rows[l][0])
		cc, cm, cok := cell(rows[l][1])
		fc, fm, fok := cell(rows[l][2])
		s.WriteString("| " + label + " |")
		if hasKF {
			s.WriteString(" " + kc + " |")
		}
		s.WriteString(" " + cc + " |")
		if hasFloor {
			s.WriteString(" " + fc + " |")
		}
		if hasKF {
			s.WriteString(" " + ratio(cm, km, kok && cok) + " |")
		}
		if hasFloor {
			s.WriteString(" " + ratio(cm, fm, fok && cok) + " |")
		}
		s.WriteString("\n")
	}
	return s.String()
}

// report prints one run's table and what does not fit in it: the
// controller's own histogram and plane write counts, the plane's writes
// by resource and verb, the profiles' tops and notes.
func report(b *testing.B, run int, kf, cf, fl raceResult) {
	var s strings.Builder
	fmt.Fprintf(&s, "\nrace run %d of %d (%d members × %d objects):\n\n%s\n", run, raceRuns, raceMembers, raceObjects,
		raceTable(ranOnly(kf), []raceResult{cf}, ranOnly(fl)))
	for _, n := range slices.Sorted(maps.Keys(cf.histLatency)) {
		l := cf.histLatency[n]
		fmt.Fprintf(&s, "cellfed-controller's propagation_latency_seconds (observed → written) to %d cells: p50 %.1f ms, p99 %.1f ms\n", n, ms(l[0]), ms(l[1]))
	}
	if cf.ctrlNew != nil {
		fmt.Fprintf(&s, "cellfed-controller's plane_writes_total: new %v, update %v, no-op %v\n", cf.ctrlNew, cf.ctrlUpdate, cf.ctrlNoop)
	}
	for _, r := range []raceResult{kf, cf, fl} {
		if !r.ran() {
			continue
		}
		fmt.Fprintf(&s, "plane, %s, %d new objects (incl. the bench's creates): %s\n", r.name, raceObjects, r.planeNew.String(raceObjects))
		fmt.Fprintf(&s, "plane, %s, %d template updates (incl. the bench's patches): %s\n", r.name, raceObjects, r.planeUpdate.String(raceObjects))
		fmt.Fprintf(&s, "plane, %s, %d no-op annotation patches (incl. the bench's patches): %s\n", r.name, raceObjects, r.planeNoop.String(raceObjects))
	}
	if cf.cpuTop != "" {
		fmt.Fprintf(&s, "cellfed-controller CPU profile over the convergence, top 10:\n%s\n", cf.cpuTop)
	}
	if cf.heapTop != "" {
		fmt.Fprintf(&s, "cellfed-controller heap profile after the convergence, top 10:\n%s\n", cf.heapTop)
	}
	for _, n := range slices.Concat(kf.notes, cf.notes, fl.notes) {
		fmt.Fprintf(&s, "note: %s\n", n)
	}
	b.Log(s.String())
	fmt.Print(s.String())
}

// ranOnly is r as a column of the table, none when r did not run (its
// contestant was skipped).
func ranOnly(r raceResult) []raceResult {
	if !r.ran() {
		return nil
	}
	return []raceResult{r}
}

// writeRaceTable prints the table of all runs and writes it, with what
// was run where, to race.md in a new directory outside the tree (see
// benchOutputDir), so a bench run leaves the checkout clean. Only when
// asked with CELLFED_BENCH_TABLE=<path> (a relative path is relative to
// the repository root) does it write there: CELLFED_BENCH_TABLE=docs/race.md
// regenerates the published table.
func writeRaceTable(b *testing.B, kfs, cfs, fls []raceResult, started time.Time) {
	path := os.Getenv("CELLFED_BENCH_TABLE")
	switch {
	case path == "":
		path = filepath.Join(benchOutputDir(b, "cellfed-race-table-"), "race.md")
	case !filepath.IsAbs(path):
		path = filepath.Join(framework.RepoRoot(b), path)
	}
	var env []string
	for _, e := range os.Environ() {
		if strings.HasPrefix(e, "CELLFED_BENCH_") {
			env = append(env, e)
		}
	}
	slices.Sort(env)
	timeout := "10m"
	if f := flag.Lookup("test.timeout"); f != nil {
		timeout = f.Value.String()
	}
	cmd := strings.TrimSpace(strings.Join(env, " ") + " go test ./test/bench -run XXX -bench BenchmarkControllerRace -benchtime 1x -timeout " + timeout)
	var s strings.Builder
	fmt.Fprintf(&s, "# The controller race: upstream KubeFed v0.10.0, cellfed-controller and the floor\n\n")
	fmt.Fprintf(&s, "Generated by `BenchmarkControllerRace` (test/bench/controller_bench_test.go); see docs/performance.md.\n\n")
	fmt.Fprintf(&s, "- date: %s (UTC), %.0f min\n", started.UTC().Format("2006-01-02 15:04"), time.Since(started).Minutes())
	fmt.Fprintf(&s, "- size: %d members × %d objects (one cell per member), %d latency samples per phase, %d run(s): each cell is the median", raceMembers, raceObjects, raceLatencies, len(cfs))
	if len(cfs) > 1 {
		fmt.Fprintf(&s, " (range in brackets)")
	}
	fmt.Fprintf(&s, "\n- machine: %d CPUs (nproc), %s memory, load average at the end %s\n", runtime.NumCPU(), memTotal(), loadAvg())
	fmt.Fprintf(&s, "- command: `%s`\n\n", cmd)
	fmt.Fprintf(&s, "%s\n", raceTable(kfs, cfs, fls))
	fmt.Fprintf(&s, "Latency: from the create request to the object in every placed member (the bench's own watches), one object every 50 ms. ")
	fmt.Fprintf(&s, "Member writes: configmap create/update/delete requests the members answered, summed over all members. ")
	fmt.Fprintf(&s, "Plane writes: writes to the federated type and PropagatedVersions, the bench's own create or patch of each object left out; conversion calls include the bench's requests. ")
	fmt.Fprintf(&s, "CPU: user+system from /proc; the members' is the sum over the member kube-apiservers. ")
	fmt.Fprintf(&s, "RSS growth: peak RSS minus the RSS once the members were joined, before any object. ")
	fmt.Fprintf(&s, "The floor (test/bench/floor) is the least a correct propagator does: one plane watch decoded into the typed v1beta2 struct with the template as raw bytes, "+
		"each member object created in protobuf, one metadata-only watch per member keeping a resourceVersion and a 64-bit hash per placement, one status write per generation.\n")
	var notes []string
	for _, rs := range [][]raceResult{kfs, cfs, fls} {
		for _, r := range rs {
			notes = append(notes, r.notes...)
		}
	}
	if len(notes) > 0 {
		fmt.Fprintf(&s, "\nNotes:\n\n")
		for _, n := range notes {
			fmt.Fprintf(&s, "- %s\n", n)
		}
	}
	if last := cfs[len(cfs)-1]; last.cpuTop != "" || last.heapTop != "" {
		fmt.Fprintf(&s, "\n## cellfed-controller profiles (last run)\n\nCPU over the convergence, top 10:\n\n```\n%s\n```\n\nHeap after the convergence (inuse_space), top 10:\n\n```\n%s\n```\n", last.cpuTop, last.heapTop)
		if last.baseHeapTop != "" {
			fmt.Fprintf(&s, "\nHeap with the members joined, before any object (inuse_space), top 10:\n\n```\n%s\n```\n", last.baseHeapTop)
		}
	}
	fmt.Print("\n" + s.String())
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.Fatalf("writing the race table: %v", err)
	}
	if err := os.WriteFile(path, []byte(s.String()), 0o644); err != nil {
		b.Fatalf("writing the race table: %v", err)
	}
	fmt.Printf("race: table written to %s\n", path)
}

func memTotal() string {
	raw, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(raw), "\n") {
		var kb int
		if _, err := fmt.Sscanf(line, "MemTotal: %d kB", &kb); err == nil {
			return fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
		}
	}
	return "?"
}

func loadAvg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(raw))[:3], " ")
}

// raceProfileDir is CELLFED_BENCH_PROFILE_DIR, else a new directory from
// benchOutputDir.
func raceProfileDir(b *testing.B) string {
	dir := os.Getenv("CELLFED_BENCH_PROFILE_DIR")
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatalf("profile dir: %v", err)
		}
		return dir
	}
	return benchOutputDir(b, "cellfed-race-profiles-")
}

// benchOutputDir is a new directory named pattern* under -test.outputdir
// when go test was given -outputdir, else under the system's temporary
// directory: never in the checkout. It outlives the benchmark.
func benchOutputDir(b *testing.B, pattern string) string {
	parent := ""
	if f := flag.Lookup("test.outputdir"); f != nil {
		parent = f.Value.String()
	}
	dir, err := os.MkdirTemp(parent, pattern)
	if err != nil {
		b.Fatalf("bench output dir: %v", err)
	}
	return dir
}

// cpuProfiler fetches the controller's CPU profile in 5 s pieces until
// stop, and finish merges them: the profile covers a phase whose length
// is not known in advance (and the last piece runs up to 5 s past it).
type cpuProfiler struct {
	dir   string
	once  sync.Once
	stop  chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	files []string
	err   error
}

func startCPUProfile(url, dir string) *cpuProfiler {
	p := &cpuProfiler{dir: dir, stop: make(chan struct{}), done: make(chan struct{})}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		p.err = err
		close(p.done)
		return p
	}
	go func() {
		defer close(p.done)
		for i := 0; ; i++ {
			select {
			case <-p.stop:
				return
			default:
			}
			f := filepath.Join(dir, fmt.Sprintf("cpu-%03d.pb.gz", i))
			if err := fetch(url+"/debug/pprof/profile?seconds=5", f); err != nil {
				p.mu.Lock()
				p.err = err
				p.mu.Unlock()
				return
			}
			p.mu.Lock()
			p.files = append(p.files, f)
			p.mu.Unlock()
		}
	}()
	return p
}

// end lets the piece being fetched be the last.
func (p *cpuProfiler) end() { p.once.Do(func() { close(p.stop) }) }

// finish ends the profile, waits for the last piece, merges the pieces
// into cpu.pb.gz and returns its top 10; errors become notes.
func (p *cpuProfiler) finish(notes *[]string) string {
	p.end()
	<-p.done
	if p.err != nil {
		*notes = append(*notes, fmt.Sprintf("CPU profile: %v", p.err))
	}
	if len(p.files) == 0 {
		return ""
	}
	merged := filepath.Join(p.dir, "cpu.pb.gz")
	if out, err := exec.Command("go", append([]string{"tool", "pprof", "-proto", "-output=" + merged}, p.files...)...).CombinedOutput(); err != nil {
		*notes = append(*notes, fmt.Sprintf("merging the CPU profile: %v: %s", err, out))
		return ""
	}
	for _, f := range p.files {
		_ = os.Remove(f)
	}
	return pprofTop(merged, notes)
}

// heapProfile fetches the controller's heap profile into dir/name and
// returns its top 10; errors become notes.
func heapProfile(url, dir, name string, notes *[]string) string {
	f := filepath.Join(dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		*notes = append(*notes, fmt.Sprintf("heap profile: %v", err))
		return ""
	}
	if err := fetch(url+"/debug/pprof/heap", f); err != nil {
		*notes = append(*notes, fmt.Sprintf("heap profile: %v", err))
		return ""
	}
	return pprofTop(f, notes)
}

func pprofTop(file string, notes *[]string) string {
	out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=10", file).CombinedOutput()
	if err != nil {
		*notes = append(*notes, fmt.Sprintf("go tool pprof -top %s: %v: %s", file, err, out))
		return ""
	}
	return fmt.Sprintf("(%s)\n%s", file, bytes.TrimSpace(out))
}

// fetch GETs url into the file path.
func fetch(url, path string) error {
	resp, err := http.Get(url)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return f.Close()
}
