package board

import (
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/registration"
)

// ClusterLine is one physical KubeFedCluster on the cells page: how the
// plane reaches it and what its last health probe said.
type ClusterLine struct {
	Name string
	// Reached is "tunnel" for a cluster reached through its agent's
	// reverse tunnel (registered, or with a proxyURL), else "direct".
	Reached string
	// Ready is the Ready condition's status (Unknown without one), Reason
	// its reason, and Since the age of its last change.
	Ready, Reason, Since string
	Tenant               string
}

// ClusterLines are the physical clusters among KubeFedClusters (per-cell
// clusters are left out: the cells table shows them), by name; now dates
// the conditions.
func ClusterLines(clusters []unstructured.Unstructured, now time.Time) []ClusterLine {
	var out []ClusterLine
	for _, u := range clusters {
		lbls := u.GetLabels()
		if lbls[cellv1alpha1.LabelTopologyType] != "" {
			continue // a per-cell cluster
		}
		l := ClusterLine{Name: u.GetName(), Reached: "direct", Ready: "Unknown", Tenant: lbls[cellv1alpha1.LabelTenant]}
		if proxyURL, _, _ := unstructured.NestedString(u.Object, "spec", "proxyURL"); proxyURL != "" || lbls[registration.LabelTunnelled] == "true" {
			l.Reached = "tunnel"
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, ok := c.(map[string]any)
			if !ok || m["type"] != "Ready" {
				continue
			}
			l.Ready, _ = m["status"].(string)
			l.Reason, _ = m["reason"].(string)
			if ts, _ := m["lastTransitionTime"].(string); ts != "" {
				if t, err := time.Parse(time.RFC3339, ts); err == nil {
					l.Since = age(now.Sub(t))
				}
			}
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
