package gcsettings

import (
	"strings"
	"testing"
)

func TestDecide(t *testing.T) {
	const gib = 1 << 30
	for _, c := range []struct {
		name             string
		o                Options
		gogc, gomemlimit string
		container        int64
		wantPercent      int
		setPercent       bool
		wantLimit        int64
		setLimit         bool
		wantErr, wantWhy string
	}{
		{name: "defaults in a container of 1 GiB", o: DefaultOptions(), container: gib,
			wantPercent: 100, setPercent: true, wantLimit: 966367641, setLimit: true, wantWhy: "90% of the container's 1073741824 bytes"},
		{name: "defaults without a container limit", o: DefaultOptions(),
			wantPercent: 100, setPercent: true, wantWhy: "the container has no memory limit"},
		{name: "a quantity", o: Options{Percent: 200, MemoryLimit: "900Mi", AutoFraction: 0.9}, container: gib,
			wantPercent: 200, setPercent: true, wantLimit: 900 << 20, setLimit: true},
		{name: "none", o: Options{Percent: 150, MemoryLimit: LimitNone, AutoFraction: 0.9}, container: gib,
			wantPercent: 150, setPercent: true, wantWhy: "memory-limit=none"},
		{name: "the environment wins", o: Options{Percent: 200, MemoryLimit: "900Mi", AutoFraction: 0.9}, gogc: "50", gomemlimit: "300MiB",
			wantWhy: "GOGC=50 from the environment; GOMEMLIMIT=300MiB from the environment"},
		{name: "off with a limit", o: Options{Percent: -1, MemoryLimit: LimitAuto, AutoFraction: 0.5}, container: gib,
			wantPercent: -1, setPercent: true, wantLimit: gib / 2, setLimit: true},
		{name: "off without any limit", o: Options{Percent: -1, MemoryLimit: LimitAuto, AutoFraction: 0.9},
			wantErr: "--gc-percent=-1 needs a memory limit"},
		{name: "off and none", o: Options{Percent: -1, MemoryLimit: LimitNone, AutoFraction: 0.9},
			wantErr: "never collects garbage"},
		{name: "a bad percentage", o: Options{Percent: -5, MemoryLimit: LimitAuto, AutoFraction: 0.9},
			wantErr: "--gc-percent=-5"},
		{name: "a bad quantity", o: Options{Percent: 100, MemoryLimit: "lots", AutoFraction: 0.9},
			wantErr: `--memory-limit="lots": give "auto", "none" or a positive quantity`},
		{name: "a zero quantity", o: Options{Percent: 100, MemoryLimit: "0", AutoFraction: 0.9},
			wantErr: `--memory-limit="0"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := Decide(c.o, c.gogc, c.gomemlimit, c.container)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Percent != c.wantPercent || d.SetPercent != c.setPercent || d.Limit != c.wantLimit || d.SetLimit != c.setLimit {
				t.Errorf("got percent %d (set %v), limit %d (set %v); want %d (%v), %d (%v)",
					d.Percent, d.SetPercent, d.Limit, d.SetLimit, c.wantPercent, c.setPercent, c.wantLimit, c.setLimit)
			}
			if !strings.Contains(d.Why, c.wantWhy) {
				t.Errorf("why %q, want it to contain %q", d.Why, c.wantWhy)
			}
		})
	}
}

func TestParseCgroupLimit(t *testing.T) {
	for in, want := range map[string]int64{
		"1073741824\n":          1 << 30,
		"max\n":                 0,
		"9223372036854771712\n": 0, // cgroup v1's "unlimited"
		"":                      0,
		"-1":                    0,
	} {
		if got := parseCgroupLimit(in); got != want {
			t.Errorf("parseCgroupLimit(%q) = %d, want %d", in, got, want)
		}
	}
}
