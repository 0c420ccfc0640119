package propagation

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Readiness says whether a member object is ready. Workloads have their
// own rules (the ones kubectl rollout status applies); every other kind
// is ready once it is there.
type Readiness func(obj *unstructured.Unstructured) bool

// readinessFor is a kind's readiness and the spec fields it reads.
func readinessFor(group, kind string) (Readiness, []string) {
	switch group + "/" + kind {
	case "apps/Deployment":
		return deploymentReady, []string{"replicas"}
	case "apps/StatefulSet":
		return statefulSetReady, []string{"replicas"}
	case "apps/DaemonSet":
		return daemonSetReady, nil
	case "batch/Job":
		return jobReady, nil
	}
	return nil, nil
}

func num(obj *unstructured.Unstructured, fields ...string) int64 {
	v, _, _ := unstructured.NestedInt64(obj.Object, fields...)
	return v
}

// observed reports whether the member's controller has seen the object's
// current spec.
func observed(obj *unstructured.Unstructured) bool {
	return num(obj, "status", "observedGeneration") >= obj.GetGeneration()
}

// desiredReplicas is spec.replicas, 1 when unset (the API default).
func desiredReplicas(obj *unstructured.Unstructured) int64 {
	if r, ok, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas"); ok {
		return r
	}
	return 1
}

// deploymentReady: the new replica set has every replica, no old replica
// is left, and all are available.
func deploymentReady(obj *unstructured.Unstructured) bool {
	want := desiredReplicas(obj)
	updated := num(obj, "status", "updatedReplicas")
	return observed(obj) && updated >= want && num(obj, "status", "replicas") <= updated &&
		num(obj, "status", "availableReplicas") >= updated
}

// statefulSetReady: every replica is ready and runs the update revision.
func statefulSetReady(obj *unstructured.Unstructured) bool {
	want := desiredReplicas(obj)
	if !observed(obj) || num(obj, "status", "readyReplicas") < want {
		return false
	}
	cur, _, _ := unstructured.NestedString(obj.Object, "status", "currentRevision")
	upd, _, _ := unstructured.NestedString(obj.Object, "status", "updateRevision")
	if upd != "" {
		return cur == upd || num(obj, "status", "updatedReplicas") >= want
	}
	return true
}

// daemonSetReady: every scheduled pod is updated and available.
func daemonSetReady(obj *unstructured.Unstructured) bool {
	want := num(obj, "status", "desiredNumberScheduled")
	return observed(obj) && num(obj, "status", "updatedNumberScheduled") >= want &&
		num(obj, "status", "numberAvailable") >= want
}

// jobReady: the Job completed.
func jobReady(obj *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Complete" && m["status"] == "True" {
			return true
		}
	}
	return false
}
