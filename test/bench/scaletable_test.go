package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cellfed/cellfed/test/benchplot"
)

// replotScale rewrites the results of a recorded run from its scale.json
// (CELLFED_SCALE_REPLOT), without running anything: the run's sizes must
// be given again in the CELLFED_SCALE_* variables for the header.
func replotScale(b *testing.B, path string) {
	raw, err := os.ReadFile(path)
	if err != nil {
		b.Fatalf("CELLFED_SCALE_REPLOT: %v", err)
	}
	var points []scalePoint
	if err := json.Unmarshal(raw, &points); err != nil || len(points) == 0 {
		b.Fatalf("CELLFED_SCALE_REPLOT: %s holds no scale points: %v", path, err)
	}
	var started, ended time.Time
	if st, err := os.Stat(path); err == nil {
		ended = st.ModTime()
	}
	if t, err := time.Parse(time.RFC3339, points[0].At); err == nil {
		started = t
	}
	writeScaleResults(b, points, started, ended, points[len(points)-1].Cells)
}

// writeScaleResults writes scale.json, scale-data.md (the table and the
// fitted growth) and images/scale-cells.png, images/scale-placements.png
// to the output directory.
func writeScaleResults(b *testing.B, points []scalePoint, started, ended time.Time, lastCells int) {
	dir := scaleOutDir(b)
	raw, err := json.MarshalIndent(points, "", "  ")
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scale.json"), append(raw, '\n'), 0o644); err != nil {
		b.Fatal(err)
	}
	cells, placed := scaleCurves(points, lastCells)
	for _, f := range []struct {
		name   string
		panels []benchplot.Panel
	}{
		{"scale-cells.png", scalePanels(cells, "cells", true, func(p scalePoint) float64 { return float64(p.Cells) })},
		{"scale-placements.png", scalePanels(placed, fmt.Sprintf("placements on %d cells", lastCells), false, func(p scalePoint) float64 { return float64(p.Placements) })},
	} {
		if len(f.panels) == 0 {
			continue
		}
		var buf bytes.Buffer
		if err := benchplot.Render(&buf, f.panels...); err != nil {
			b.Errorf("plot %s: %v", f.name, err)
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, "images", f.name), buf.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	md := scaleMarkdown(points, cells, placed, started, ended, lastCells)
	path := filepath.Join(dir, "scale-data.md")
	if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
		b.Fatal(err)
	}
	fmt.Printf("scale: results in %s (scale-data.md, scale.json, images/)\n", dir)
}

// scaleCurves splits the points into the cells curve and the placements
// curve; the last cells step starts the placements curve.
func scaleCurves(points []scalePoint, lastCells int) (cells, placed []scalePoint) {
	for _, p := range points {
		if p.Curve == "cells" {
			cells = append(cells, p)
		}
		if p.Cells == lastCells {
			placed = append(placed, p)
		}
	}
	return cells, placed
}

func scalePanels(points []scalePoint, xlabel string, logX bool, x func(scalePoint) float64) []benchplot.Panel {
	if len(points) < 2 {
		return nil
	}
	series := func(name string, y func(scalePoint) float64) benchplot.Series {
		s := benchplot.Series{Name: name}
		for _, p := range points {
			v := y(p)
			if v == 0 {
				v = math.NaN()
			}
			s.X, s.Y = append(s.X, x(p)), append(s.Y, v)
		}
		return s
	}
	return []benchplot.Panel{
		{Title: "latency to every placed cell (ms)", XLabel: xlabel, LogX: logX, Series: []benchplot.Series{
			series("p50", func(p scalePoint) float64 { return p.P50 }),
			series("p99", func(p scalePoint) float64 { return p.P99 }),
		}},
		{Title: "controller CPU idle (ms per s)", XLabel: xlabel, LogX: logX, Series: []benchplot.Series{
			series("idle", func(p scalePoint) float64 { return p.IdleCPU }),
		}},
		{Title: "controller CPU per placement (us)", XLabel: xlabel, LogX: logX, Series: []benchplot.Series{
			series("latency phase", func(p scalePoint) float64 { return p.CPUPerPlacement * 1000 }),
			series("fill", func(p scalePoint) float64 { return p.FillCPUPerPlacement * 1000 }),
		}},
		{Title: "controller RSS (MiB)", XLabel: xlabel, LogX: logX, Series: []benchplot.Series{
			series("RSS", func(p scalePoint) float64 { return p.RSS }),
			series("peak", func(p scalePoint) float64 { return p.Peak }),
		}},
	}
}

// growth describes how y grows with x: flat when the linear fit moves y
// by less than 15% of its mean over the range, else the best of linear,
// n log n and quadratic least-squares fits (linear unless another fits
// better by more than 0.02 of R²), with the log-log exponent.
func growth(xs, ys []float64) string {
	var x, y []float64
	for i := range xs {
		if ys[i] > 0 && xs[i] > 0 {
			x, y = append(x, xs[i]), append(y, ys[i])
		}
	}
	if len(x) < 3 {
		return "too few points to fit"
	}
	k, kr2, err := benchplot.Exponent(x, y)
	if err != nil {
		return err.Error()
	}
	lin, _ := benchplot.Linear(x, y)
	nlogn, _ := benchplot.NLogN(x, y)
	quad, _ := benchplot.Quadratic(x, y)
	mean, lo, hi := 0.0, x[0], x[0]
	for i := range x {
		mean += y[i] / float64(len(y))
		lo, hi = math.Min(lo, x[i]), math.Max(hi, x[i])
	}
	shape := "linear"
	switch {
	case math.Abs(lin.B*(hi-lo)) < 0.15*mean:
		shape = "flat"
	case lin.B < 0:
		shape = "falling"
	case quad.R2 > lin.R2+0.02 && quad.R2 > nlogn.R2:
		shape = "quadratic"
	case nlogn.R2 > lin.R2+0.02:
		shape = "n log n"
	}
	return fmt.Sprintf("**%s**: linear fit %.4g + %.4g·x (R² %.3f), n log n R² %.3f, quadratic R² %.3f; log-log exponent %.2f (R² %.2f)",
		shape, lin.A, lin.B, lin.R2, nlogn.R2, quad.R2, k, kr2)
}

func scaleMarkdown(points, cells, placed []scalePoint, started, ended time.Time, lastCells int) string {
	var md strings.Builder
	fmt.Fprintf(&md, "# Scale simulation: measured data\n\nGenerated by `BenchmarkScale` (test/bench/scale_bench_test.go); what it simulates and how to read it: [scale.md](scale.md).\n\n")
	fmt.Fprintf(&md, "- date: %s (UTC), %.0f min\n", started.UTC().Format("2006-01-02 15:04"), ended.Sub(started).Minutes())
	fmt.Fprintf(&md, "- members: %d logical members on %d real kube-apiservers (test/simfront); cell steps %v, placement steps %v; %d latency objects per step at %d placements/s\n",
		scaleMembers, scaleRealMembers, scaleCellSteps, scalePlacementSteps, scaleSamples, scaleRate)
	fmt.Fprintf(&md, "- machine: %d CPUs, %s memory, shared: load average at each step in the table\n", runtime.NumCPU(), memTotal())
	fmt.Fprintf(&md, "- command: `CELLFED_SCALE_CELLS=%s CELLFED_SCALE_PLACEMENTS=%s CELLFED_SCALE_MEMBERS=%d CELLFED_SCALE_REAL_MEMBERS=%d CELLFED_SCALE_SAMPLES=%d CELLFED_SCALE_RATE=%d go test ./test/bench -run XXX -bench BenchmarkScale -benchtime 1x -timeout 60m`\n\n",
		joinInts(scaleCellSteps), joinInts(scalePlacementSteps), scaleMembers, scaleRealMembers, scaleSamples, scaleRate)
	md.WriteString("| curve | cells | members | placements | cells per object | latency p50 (ms) | latency p99 (ms) | missing | controller's p50 / p99 (ms) | settled (s) | idle CPU (ms/s) | CPU per placement (µs) | fill (placements/s) | fill CPU per placement (µs): controller / members / fronts + bench | RSS (MiB) | peak RSS (MiB) | members' idle CPU (ms/s) | fronts + bench idle CPU (ms/s) | load average |\n")
	md.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, p := range points {
		fill, fillCPU := "–", "–"
		if p.Filled > 0 {
			fill = fmt.Sprintf("%.0f", p.FillRate)
			fillCPU = fmt.Sprintf("%.0f / %.0f / %.0f", p.FillCPUPerPlacement*1000, p.FillMemberCPUPerPlacement*1000, p.FillBenchCPUPerPlacement*1000)
		}
		fmt.Fprintf(&md, "| %s | %d | %d | %d | %d | %.0f | %.0f | %d of %d | %.0f / %.0f | %.0f | %.0f | %.0f | %s | %s | %.0f | %.0f | %.0f | %.0f | %s |\n",
			p.Curve, p.Cells, p.Members, p.Placements, p.Fanout, p.P50, p.P99, p.Missing, p.Samples, p.HistP50, p.HistP99,
			p.Settle, p.IdleCPU, p.CPUPerPlacement*1000, fill, fillCPU, p.RSS, p.Peak, p.MemberIdleCPU, p.BenchIdleCPU, p.Load)
	}
	md.WriteString("\nPlacements: (object, cell) pairs present before the step's latency phase. Latency: from the create request of a FederatedConfigMap placed on every cell of its workspace (up to one per member) to the object in the last of those members (the bench's watches on the real kube-apiservers), objects arriving at the stated rate. Settled: after the step's change (new cells, a fill), the wait until the controller's CPU rate held steady over two 5 s windows; idle CPU is then measured over 15 s. CPU per placement: the controller's CPU over the latency phase, its idle rate taken out, per placement made. Fill: objects created in bulk (8 at a time) before the step, the rate at which their placements reached the members. CPU from /proc (user+system), RSS from /proc/<pid>/status.\n\n")
	md.WriteString("## Fitted growth\n\n")
	fit := func(name string, ps []scalePoint, x, y func(scalePoint) float64) {
		var xs, ys []float64
		for _, p := range ps {
			xs, ys = append(xs, x(p)), append(ys, y(p))
		}
		fmt.Fprintf(&md, "- %s: %s\n", name, growth(xs, ys))
	}
	cx := func(p scalePoint) float64 { return float64(p.Cells) }
	px := func(p scalePoint) float64 { return float64(p.Placements) }
	fit("idle controller CPU (ms/s) against cells", cells, cx, func(p scalePoint) float64 { return p.IdleCPU })
	fit("controller RSS (MiB) against cells", cells, cx, func(p scalePoint) float64 { return p.RSS })
	fit("latency p99 (ms) against cells", cells, cx, func(p scalePoint) float64 { return p.P99 })
	fit(fmt.Sprintf("controller RSS (MiB) against placements on %d cells", lastCells), placed, px, func(p scalePoint) float64 { return p.RSS })
	fit(fmt.Sprintf("idle controller CPU (ms/s) against placements on %d cells", lastCells), placed, px, func(p scalePoint) float64 { return p.IdleCPU })
	fit(fmt.Sprintf("latency p99 (ms) against placements on %d cells", lastCells), placed, px, func(p scalePoint) float64 { return p.P99 })
	for _, p := range points {
		if p.IdleProfile != "" {
			fmt.Fprintf(&md, "\n### Controller CPU while idle, %s step: %d cells, %d placements (top 10)\n\n```\n%s\n```\n", p.Curve, p.Cells, p.Placements, p.IdleProfile)
		}
	}
	md.WriteString("\n![against cells](images/scale-cells.png)\n\n![against placements](images/scale-placements.png)\n")
	return md.String()
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ",")
}
