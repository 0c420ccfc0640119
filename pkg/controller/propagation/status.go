package propagation

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	typesv1b1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
)

// failure is a reason the whole object is not propagated as asked, with
// KubeFed's aggregate reasons (InvalidObject, ComputePlacementFailed,
// NamespaceNotFederated).
type failure struct {
	reason, message string
}

// writeStatus sets status.clusters, the Propagation condition and
// observedGeneration, and writes them only when they changed. details
// explain some clusters' statuses in the condition's message.
func (c *Controller) writeStatus(ctx context.Context, fed *unstructured.Unstructured, clusters []typesv1b1.ClusterStatus, details map[string]string, fail failure) error {
	sort.Slice(clusters, func(i, j int) bool { return clusters[i].Name < clusters[j].Name })
	var cur typesv1b1.Status
	if raw, ok, _ := unstructured.NestedMap(fed.Object, "status"); ok {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &cur)
	}
	cond := typesv1b1.Condition{Type: PropagationCondition, Status: "True"}
	var bad []string
	for _, cs := range clusters {
		if cs.Status != StatusOK {
			s := cs.Name + ": " + cs.Status
			if d := details[cs.Name]; d != "" {
				s += " (" + d + ")"
			}
			bad = append(bad, s)
		}
	}
	switch {
	case fail.reason != "" && len(bad) > 0:
		cond.Status, cond.Reason = "False", fail.reason
		cond.Message = fmt.Sprintf("%s; %d of %d clusters not propagated: %s", fail.message, len(bad), len(clusters), strings.Join(bad, ", "))
	case fail.reason != "":
		cond.Status, cond.Reason, cond.Message = "False", fail.reason, fail.message
	case len(bad) > 0:
		cond.Status, cond.Reason = "False", "CheckClusters"
		cond.Message = fmt.Sprintf("%d of %d clusters not propagated: %s", len(bad), len(clusters), strings.Join(bad, ", "))
	}
	now := metav1.Now()
	cond.LastUpdateTime, cond.LastTransitionTime = now, now
	for _, old := range cur.Conditions {
		if old.Type != cond.Type {
			continue
		}
		if old.Status == cond.Status {
			cond.LastTransitionTime = old.LastTransitionTime
			if old.Reason == cond.Reason && old.Message == cond.Message {
				cond.LastUpdateTime = old.LastUpdateTime
			}
		}
	}
	// KubeFed reports a cluster that is OK with no status (its
	// ClusterPropagationOK is ""); v1beta2 readers see "OK".
	reported := make([]typesv1b1.ClusterStatus, len(clusters))
	for i, cs := range clusters {
		reported[i] = cs
		if cs.Status == StatusOK {
			reported[i].Status = ""
		}
	}
	next := typesv1b1.Status{ObservedGeneration: fed.GetGeneration(), Conditions: []typesv1b1.Condition{cond}, Clusters: reported}
	for _, old := range cur.Conditions {
		if old.Type != cond.Type {
			next.Conditions = append(next.Conditions, old)
		}
	}
	if sameStatus(cur, next) {
		return nil
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&next)
	if err != nil {
		return err
	}
	obj := fed.DeepCopy()
	obj.Object["status"] = content
	if _, err := c.resource(fed.GetNamespace()).UpdateStatus(ctx, obj, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("writing status: %w", err)
	}
	return nil
}

func sameStatus(a, b typesv1b1.Status) bool {
	if a.ObservedGeneration != b.ObservedGeneration || len(a.Conditions) != len(b.Conditions) || len(a.Clusters) != len(b.Clusters) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message {
			return false
		}
	}
	for i := range a.Clusters {
		if a.Clusters[i].Name != b.Clusters[i].Name || a.Clusters[i].Status != b.Clusters[i].Status {
			return false
		}
	}
	return true
}
