package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/cellfed/cellfed/test/framework"
)

// TestRaceTableColumns checks the race table's columns: each contestant
// that ran, and cellfed's ratios to KubeFed and to the floor.
func TestRaceTableColumns(t *testing.T) {
	run := func(name string, cpu time.Duration) raceResult {
		return raceResult{name: name, latency: map[int][2]time.Duration{},
			convCPU: cpu, planeNew: planeCost{writes: map[string]int{}}, writes: framework.Writes{Creates: 1}}
	}
	cpuRow := func(table string) string {
		for _, l := range strings.Split(table, "\n") {
			if strings.HasPrefix(l, "| controller CPU, convergence (s)") {
				return l
			}
		}
		t.Fatalf("no convergence CPU row in:\n%s", table)
		return ""
	}
	for _, tc := range []struct {
		name          string
		kfs, cfs, fls []raceResult
		header, row   string
	}{{
		name:   "all three",
		kfs:    []raceResult{run("KubeFed v0.10.0", 8*time.Second)},
		cfs:    []raceResult{run("cellfed-controller", 4*time.Second)},
		fls:    []raceResult{run("floor", 2*time.Second)},
		header: "| | KubeFed v0.10.0 | cellfed-controller | floor | cellfed/KubeFed | cellfed/floor |",
		row:    "| controller CPU, convergence (s) | 8.0 | 4.0 | 2.0 | 0.50 | 2.00 |",
	}, {
		name:   "KubeFed skipped",
		cfs:    []raceResult{run("cellfed-controller", 3*time.Second), run("cellfed-controller", 5*time.Second), run("cellfed-controller", 4*time.Second)},
		fls:    []raceResult{run("floor", 2*time.Second), run("floor", 4*time.Second), run("floor", 3*time.Second)},
		header: "| | cellfed-controller | floor | cellfed/floor |",
		row:    "| controller CPU, convergence (s) | 4.0 (3.0–5.0) | 3.0 (2.0–4.0) | 1.33 |",
	}, {
		name:   "floor skipped",
		kfs:    []raceResult{run("KubeFed v0.10.0", 8*time.Second)},
		cfs:    []raceResult{run("cellfed-controller", 2*time.Second)},
		header: "| | KubeFed v0.10.0 | cellfed-controller | cellfed/KubeFed |",
		row:    "| controller CPU, convergence (s) | 8.0 | 2.0 | 0.25 |",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			table := raceTable(tc.kfs, tc.cfs, tc.fls)
			if got, _, _ := strings.Cut(table, "\n"); got != tc.header {
				t.Errorf("header = %q, want %q", got, tc.header)
			}
			if got := cpuRow(table); got != tc.row {
				t.Errorf("row = %q, want %q", got, tc.row)
			}
		})
	}
}
