// What the benchmarks measure with: sizes from the environment,
// percentiles, and a process's CPU time and memory from /proc.

package bench

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cellfed/cellfed/test/framework"
)

// envInt is the positive integer in the environment variable name, else
// def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// percentile is the p-th percentile (nearest rank) of d.
func percentile(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	if i > 0 {
		i--
	}
	return s[i]
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// procStatusMiB reads a size field of a process's /proc status, e.g.
// VmRSS: (resident set) or VmHWM: (its peak).
func procStatusMiB(b *testing.B, pid int, field string) float64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatalf("reading /proc/%d/status: %v", pid, err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field {
			kb, err := strconv.Atoi(f[1])
			if err != nil {
				b.Fatal(err)
			}
			return float64(kb) / 1024
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// cpuTime is a process's user+system CPU time from /proc.
func cpuTime(b *testing.B, pid int) time.Duration {
	d, err := framework.ProcessCPU(pid)
	if err != nil {
		b.Fatal(err)
	}
	return d
}
