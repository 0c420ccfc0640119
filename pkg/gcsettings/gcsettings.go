// Package gcsettings sets the Go garbage collector of a long-running
// cellfed process from its flags, its environment (GOGC, GOMEMLIMIT) and
// its container's memory limit.
//
// Decide is the pure decision; Apply reads the container's limit and
// applies what Decide says.
package gcsettings

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Values of Options.MemoryLimit besides a quantity.
const (
	// LimitAuto takes AutoFraction of the container's memory limit, and
	// sets no limit when the container has none.
	LimitAuto = "auto"
	// LimitNone sets no limit.
	LimitNone = "none"
)

// Options are the collector's settings.
type Options struct {
	// Percent is the collector's target (GOGC): the heap may grow by
	// this percentage of the live heap before the next collection.
	// -1 turns the target off (collections only near MemoryLimit).
	Percent int
	// MemoryLimit is the soft memory limit (GOMEMLIMIT): LimitAuto,
	// LimitNone or a quantity such as 900Mi.
	MemoryLimit string
	// AutoFraction is the share of the container's limit that
	// LimitAuto takes, leaving the rest for what the Go runtime does
	// not count (thread stacks outside the heap, cgo, the page cache
	// the container is charged for).
	AutoFraction float64
}

// DefaultOptions are the defaults: Go's target, and a soft limit at 90%
// of the container's memory limit, so that the process collects harder
// instead of being killed when it nears it.
func DefaultOptions() Options {
	return Options{Percent: 100, MemoryLimit: LimitAuto, AutoFraction: 0.9}
}

// AddFlags registers the options as --gc-percent and --memory-limit.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.Percent, "gc-percent", o.Percent, "the garbage collector's target, as GOGC: the heap grows by this percentage of the live heap between collections (-1: collect only near --memory-limit); the GOGC environment variable wins")
	fs.StringVar(&o.MemoryLimit, "memory-limit", o.MemoryLimit, `soft memory limit of the Go runtime, as GOMEMLIMIT: "auto" (90% of the container's memory limit, none without one), "none", or a quantity such as 900Mi; the GOMEMLIMIT environment variable wins`)
}

// Validate reports options that cannot work.
func (o Options) Validate() error {
	var errs []error
	if o.Percent < -1 {
		errs = append(errs, fmt.Errorf("--gc-percent=%d: give -1 (off) or a percentage of 0 or more", o.Percent))
	}
	if _, err := parseLimit(o.MemoryLimit); err != nil {
		errs = append(errs, err)
	}
	if o.Percent == -1 && o.MemoryLimit == LimitNone {
		errs = append(errs, errors.New("--gc-percent=-1 with --memory-limit=none never collects garbage: give a memory limit, or a percentage"))
	}
	return errors.Join(errs...)
}

// parseLimit returns the limit in bytes a quantity names, 0 for
// LimitNone and -1 for LimitAuto.
func parseLimit(s string) (int64, error) {
	switch s {
	case LimitAuto:
		return -1, nil
	case LimitNone:
		return 0, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() <= 0 {
		return 0, fmt.Errorf(`--memory-limit=%q: give "auto", "none" or a positive quantity such as 900Mi`, s)
	}
	return q.Value(), nil
}

// Decision is what Apply sets.
type Decision struct {
	// Percent is set as the collector's target unless GOGC is set.
	Percent    int
	SetPercent bool
	// Limit, in bytes, is set as the soft memory limit when SetLimit.
	Limit    int64
	SetLimit bool
	// Why says where each value comes from, for the start-up log.
	Why string
}

// Decide is what to set for o, given the environment's GOGC and
// GOMEMLIMIT (which the Go runtime has applied already and which win)
// and the container's memory limit in bytes (0: none).
func Decide(o Options, gogc, gomemlimit string, containerLimit int64) (Decision, error) {
	if err := o.Validate(); err != nil {
		return Decision{}, err
	}
	var d Decision
	var why []string
	if gogc != "" {
		why = append(why, "GOGC="+gogc+" from the environment")
	} else {
		d.Percent, d.SetPercent = o.Percent, true
		why = append(why, "gc-percent="+strconv.Itoa(o.Percent))
	}
	limit, _ := parseLimit(o.MemoryLimit)
	switch {
	case gomemlimit != "":
		why = append(why, "GOMEMLIMIT="+gomemlimit+" from the environment")
	case limit > 0:
		d.Limit, d.SetLimit = limit, true
		why = append(why, "memory-limit="+o.MemoryLimit)
	case limit < 0 && containerLimit > 0:
		d.Limit, d.SetLimit = int64(math.Floor(float64(containerLimit)*o.AutoFraction)), true
		why = append(why, fmt.Sprintf("memory-limit=auto: %.0f%% of the container's %d bytes", o.AutoFraction*100, containerLimit))
	case limit < 0:
		why = append(why, "memory-limit=auto: the container has no memory limit")
	default:
		why = append(why, "memory-limit=none")
	}
	if d.SetPercent && d.Percent == -1 && !d.SetLimit && gomemlimit == "" {
		return Decision{}, errors.New("--gc-percent=-1 needs a memory limit, and this container has none: give --memory-limit=<quantity>, or a percentage")
	}
	d.Why = strings.Join(why, "; ")
	return d, nil
}

// Apply decides for o in this process and sets the collector.
func Apply(o Options) (Decision, error) {
	d, err := Decide(o, os.Getenv("GOGC"), os.Getenv("GOMEMLIMIT"), ContainerMemoryLimit())
	if err != nil {
		return d, err
	}
	if d.SetPercent {
		debug.SetGCPercent(d.Percent)
	}
	if d.SetLimit {
		debug.SetMemoryLimit(d.Limit)
	}
	return d, nil
}

// cgroupLimitFiles hold the container's memory limit: cgroup v2's, then
// v1's.
var cgroupLimitFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// ContainerMemoryLimit is the memory limit of this process's cgroup in
// bytes, 0 when there is none or it cannot be read.
func ContainerMemoryLimit() int64 {
	for _, f := range cgroupLimitFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		return parseCgroupLimit(string(b))
	}
	return 0
}

// parseCgroupLimit reads a cgroup limit file's content: "max" (v2) and
// v1's page-rounded "unlimited" (above 2^62) mean none.
func parseCgroupLimit(s string) int64 {
	s = strings.TrimSpace(s)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n >= 1<<62 {
		return 0
	}
	return n
}
