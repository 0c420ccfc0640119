package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
)

// planeCost is what a phase of the race cost the plane, from its
// /metrics: writes per resource, subresource and verb (e.g.
// "federatedconfigmaps/status PUT") for the federated type and the
// propagation records, and the conversion webhook calls made.
type planeCost struct {
	writes      map[string]int
	conversions int
}

// planeWriteResources are the resources whose writes a race counts.
var planeWriteResources = []string{"federatedconfigmaps", "propagatedversions"}

func readPlaneCost(b *testing.B, c kubernetes.Interface) planeCost {
	raw, err := c.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatalf("reading the plane's /metrics: %v", err)
	}
	pc := planeCost{writes: map[string]int{}}
	for _, line := range strings.Split(string(raw), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		n, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(line, "apiserver_crd_conversion_webhook_duration_seconds_count{"):
			pc.conversions += int(n)
		case strings.HasPrefix(line, "apiserver_request_total{"):
			verb := label(line, "verb")
			if verb != "POST" && verb != "PUT" && verb != "PATCH" && verb != "DELETE" && verb != "APPLY" {
				continue
			}
			res := label(line, "resource")
			if !slices.Contains(planeWriteResources, res) {
				continue
			}
			if sub := label(line, "subresource"); sub != "" {
				res += "/" + sub
			}
			pc.writes[res+" "+verb] += int(n)
		}
	}
	return pc
}

// label is the value of a metric line's label, "" without it.
func label(line, name string) string {
	_, rest, ok := strings.Cut(line, name+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// since is the cost from earlier to pc.
func (pc planeCost) since(earlier planeCost) planeCost {
	d := planeCost{writes: map[string]int{}, conversions: pc.conversions - earlier.conversions}
	for k, n := range pc.writes {
		if n -= earlier.writes[k]; n != 0 {
			d.writes[k] = n
		}
	}
	return d
}

// String lists the writes, per object when per > 0.
func (pc planeCost) String(per int) string {
	var s []string
	total := 0
	for _, k := range slices.Sorted(maps.Keys(pc.writes)) {
		total += pc.writes[k]
		s = append(s, fmt.Sprintf("%s %s", k, perObject(pc.writes[k], per)))
	}
	return fmt.Sprintf("%s writes (%s), %s conversions", perObject(total, per), strings.Join(s, ", "), perObject(pc.conversions, per))
}

func perObject(n, per int) string {
	if per <= 0 {
		return strconv.Itoa(n)
	}
	return fmt.Sprintf("%d=%.2f/obj", n, float64(n)/float64(per))
}

// waitPlaneQuiet polls the plane's cost until no write and no conversion
// happened for quiet (at most timeout) and returns it.
func waitPlaneQuiet(b *testing.B, c kubernetes.Interface, quiet, timeout time.Duration) planeCost {
	last := readPlaneCost(b, c)
	since := time.Now()
	deadline := since.Add(timeout)
	for time.Since(since) < quiet && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond) // polling the plane's counters, which are the sync
		pc := readPlaneCost(b, c)
		if d := pc.since(last); len(d.writes) > 0 || d.conversions > 0 {
			last, since = pc, time.Now()
		}
	}
	return last
}
