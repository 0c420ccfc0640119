package bench

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
)

// planeCost is what a phase of the race cost the plane, from its
// /metrics: writes per resource, subresource and verb (e.g.
// "federatedconfigmaps/status PUT", with the code when it is not 2xx,
// e.g. "… PUT 409") for the federated type and the
// propagation records, and the conversion webhook calls made.
type planeCost struct {
	writes      map[string]int
	conversions int
}

// planeWriteResources are the resources whose writes a race counts (cells:
// cellfed-controller recounts the objects on each cell).
var planeWriteResources = []string{"federatedconfigmaps", "propagatedversions", "cells"}

func readPlaneCost(b *testing.B, c kubernetes.Interface) planeCost {
	raw, err := c.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatalf("reading the plane's /metrics: %v", err)
	}
	pc := planeCost{writes: map[string]int{}}
	samples(raw, func(line string, n float64) {
		switch {
		case strings.HasPrefix(line, "apiserver_crd_conversion_webhook_duration_seconds_count{"):
			pc.conversions += int(n)
		case strings.HasPrefix(line, "apiserver_request_total{"):
			verb := label(line, "verb")
			if verb != "POST" && verb != "PUT" && verb != "PATCH" && verb != "DELETE" && verb != "APPLY" {
				return
			}
			res := label(line, "resource")
			if !slices.Contains(planeWriteResources, res) {
				return
			}
			if sub := label(line, "subresource"); sub != "" {
				res += "/" + sub
			}
			key := res + " " + verb
			if code := label(line, "code"); code != "" && code[0] != '2' {
				key += " " + code
			}
			pc.writes[key] += int(n)
		}
	})
	return pc
}

// samples calls f with each sample line of a /metrics page (Prometheus
// text format) and its value.
func samples(raw []byte, f func(line string, value float64)) {
	for _, line := range strings.Split(string(raw), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		n, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			continue
		}
		f(line, n)
	}
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

// controllerMetrics is what cellfed-controller's /metrics said at one
// moment: the propagation latency histogram (cumulative counts by upper
// bound, all types) and the plane writes by kind.
type controllerMetrics struct {
	buckets map[float64]float64
	writes  map[string]int
	// memberGets are the controller's GETs of member objects.
	memberGets int
}

func readControllerMetrics(b *testing.B, url string) controllerMetrics {
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		b.Fatalf("reading the controller's /metrics: %v", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("reading the controller's /metrics: %d %v", resp.StatusCode, err)
	}
	cm := controllerMetrics{buckets: map[float64]float64{}, writes: map[string]int{}}
	samples(raw, func(line string, n float64) {
		switch {
		case strings.HasPrefix(line, "cellfed_controller_propagation_latency_seconds_bucket{"):
			le, err := strconv.ParseFloat(label(line, "le"), 64)
			if err != nil {
				le = math.Inf(1)
			}
			cm.buckets[le] += n
		case strings.HasPrefix(line, "cellfed_controller_plane_writes_total{"):
			cm.writes[label(line, "kind")] += int(n)
		case strings.HasPrefix(line, "cellfed_controller_member_request_duration_seconds_count{") && label(line, "verb") == "get":
			cm.memberGets += int(n)
		}
	})
	return cm
}

// quantile estimates the q-quantile of the observations between earlier
// and cm from the histogram, interpolating within a bucket as Prometheus'
// histogram_quantile does; ok is false without observations.
func (cm controllerMetrics) quantile(earlier controllerMetrics, q float64) (time.Duration, bool) {
	les := slices.Sorted(maps.Keys(cm.buckets))
	total := cm.buckets[math.Inf(1)] - earlier.buckets[math.Inf(1)]
	if total <= 0 {
		return 0, false
	}
	rank, prevLE, prevCount := q*total, 0.0, 0.0
	for _, le := range les {
		count := cm.buckets[le] - earlier.buckets[le]
		if count >= rank {
			if math.IsInf(le, 1) {
				return time.Duration(prevLE * float64(time.Second)), true
			}
			frac := 1.0
			if count > prevCount {
				frac = (rank - prevCount) / (count - prevCount)
			}
			return time.Duration((prevLE + (le-prevLE)*frac) * float64(time.Second)), true
		}
		prevLE, prevCount = le, count
	}
	return 0, false
}

// writesSince are the plane writes by kind from earlier to cm.
func (cm controllerMetrics) writesSince(earlier controllerMetrics) map[string]int {
	d := map[string]int{}
	for k, n := range cm.writes {
		if n -= earlier.writes[k]; n != 0 {
			d[k] = n
		}
	}
	return d
}
