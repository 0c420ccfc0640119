// Package statemetrics exports, on cellfed-controller's /metrics, the
// federation state that alerts and dashboards need, read from the
// controller's plane caches at each scrape: whether each KubeFedCluster
// and each Cell is Ready, how many objects each cell holds, and when the
// CA certificate each member is verified with expires.
package statemetrics

import (
	"encoding/base64"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/cellfed/cellfed/pkg/certexpiry"
)

var (
	clusterReadyDesc = metrics.NewDesc("cellfed_cluster_ready",
		"1 when a KubeFedCluster's Ready condition is True, else 0, by cluster (physical clusters and the per-cell clusters alike).",
		[]string{"cluster"}, nil, metrics.ALPHA, "")
	clusterCAExpiryDesc = metrics.NewDesc("cellfed_cluster_ca_expiry_timestamp_seconds",
		"When the first certificate of a KubeFedCluster's caBundle (the member API server's CA) expires (Unix seconds), by cluster.",
		[]string{"cluster"}, nil, metrics.ALPHA, "")
	cellReadyDesc = metrics.NewDesc("cellfed_cell_ready",
		"1 when a Cell's Ready condition is True, else 0, by workspace namespace, cell and the physical cluster it is on.",
		[]string{"namespace", "cell", "cluster"}, nil, metrics.ALPHA, "")
	cellObjectsDesc = metrics.NewDesc("cellfed_cell_objects",
		"Federated objects a Cell holds or is to hold (held-back ones included), by workspace namespace and cell; absent until counted.",
		[]string{"namespace", "cell"}, nil, metrics.ALPHA, "")
)

// Sample is one gauge value with its label values, in the order of its
// description.
type Sample struct {
	Desc   *metrics.Desc
	Value  float64
	Labels []string
}

// ClusterSamples are the samples of cached KubeFedClusters, a pure
// function.
func ClusterSamples(objs []any) []Sample {
	var out []Sample
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		out = append(out, Sample{clusterReadyDesc, boolValue(ready(u)), []string{u.GetName()}})
		ca, _, _ := unstructured.NestedString(u.Object, "spec", "caBundle")
		if pem, err := base64.StdEncoding.DecodeString(ca); err == nil && len(pem) > 0 {
			if at, err := certexpiry.Earliest(pem); err == nil {
				out = append(out, Sample{clusterCAExpiryDesc, float64(at.Unix()), []string{u.GetName()}})
			}
		}
	}
	return out
}

// CellSamples are the samples of cached Cells, a pure function.
func CellSamples(objs []any) []Sample {
	var out []Sample
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		cluster, _, _ := unstructured.NestedString(u.Object, "spec", "cluster")
		out = append(out, Sample{cellReadyDesc, boolValue(ready(u)), []string{u.GetNamespace(), u.GetName(), cluster}})
		if n, found, err := unstructured.NestedInt64(u.Object, "status", "objects"); found && err == nil {
			out = append(out, Sample{cellObjectsDesc, float64(n), []string{u.GetNamespace(), u.GetName()}})
		}
	}
	return out
}

// ready is whether u's Ready condition is True.
func ready(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			return m["status"] == "True"
		}
	}
	return false
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Lister lists the cached objects of one resource.
type Lister func() []any

// collector turns the listers' objects into samples at each scrape.
type collector struct {
	metrics.BaseStableCollector
	mu              sync.Mutex
	clusters, cells Lister
}

func (c *collector) DescribeWithStability(ch chan<- *metrics.Desc) {
	for _, d := range []*metrics.Desc{clusterReadyDesc, clusterCAExpiryDesc, cellReadyDesc, cellObjectsDesc} {
		ch <- d
	}
}

func (c *collector) CollectWithStability(ch chan<- metrics.Metric) {
	c.mu.Lock()
	clusters, cells := c.clusters, c.cells
	c.mu.Unlock()
	if clusters == nil {
		return
	}
	for _, s := range append(ClusterSamples(clusters()), CellSamples(cells())...) {
		ch <- metrics.NewLazyConstMetric(s.Desc, metrics.GaugeValue, s.Value, s.Labels...)
	}
}

var (
	registerOnce sync.Once
	global       = &collector{}
)

// Register serves the samples of the KubeFedClusters and Cells the
// listers return on /metrics (the legacy registry); a later call
// replaces the listers (the controller builds its caches again after a
// restart of its run).
func Register(clusters, cells Lister) {
	global.mu.Lock()
	global.clusters, global.cells = clusters, cells
	global.mu.Unlock()
	registerOnce.Do(func() { legacyregistry.CustomMustRegister(global) })
}
