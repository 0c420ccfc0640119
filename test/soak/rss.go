package soak

import (
	"bufio"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// RSSSample is one process's resident set size at a moment of the soak.
type RSSSample struct {
	At  time.Duration // since the soak started
	MiB float64
}

// ParseVmRSS reads VmRSS (in MiB) from the text of /proc/<pid>/status.
func ParseVmRSS(status string) (float64, error) {
	sc := bufio.NewScanner(strings.NewReader(status))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("VmRSS line %q: want <n> kB", sc.Text())
		}
		kb, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return 0, fmt.Errorf("VmRSS %q: %w", f[0], err)
		}
		return kb / 1024, nil
	}
	return 0, fmt.Errorf("no VmRSS line (a kernel thread, or the process exited)")
}

// Growth bounds, see Unbounded.
const (
	growthFactor = 1.5
	growthSlack  = 64.0 // MiB
)

// Unbounded decides whether a process's memory grows without bound over
// a run: the median RSS of the run's last quarter exceeds 1.5× the
// median of its second quarter plus 64 MiB (the first quarter is
// warm-up: caches filling, informers listing). It needs samples spread
// over the run; fewer than 8 decide nothing. A process the soak killed
// restarts small, which can hide growth: the summary's plot shows each
// process's curve.
func Unbounded(samples []RSSSample) (bool, string) {
	if len(samples) < 8 {
		return false, fmt.Sprintf("%d samples: too few to judge", len(samples))
	}
	end := samples[len(samples)-1].At
	var q2, q4 []float64
	for _, s := range samples {
		switch {
		case s.At >= end/4 && s.At < end/2:
			q2 = append(q2, s.MiB)
		case s.At >= end*3/4:
			q4 = append(q4, s.MiB)
		}
	}
	if len(q2) == 0 || len(q4) == 0 {
		return false, "samples not spread over the run: cannot judge"
	}
	m2, m4 := median(q2), median(q4)
	limit := m2*growthFactor + growthSlack
	return m4 > limit, fmt.Sprintf("median %.0f MiB in the 2nd quarter, %.0f MiB in the last (limit %.0f)", m2, m4, limit)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
