package clusters

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kubefed/pkg/apis/core/common"
	fedv1b1 "sigs.k8s.io/kubefed/pkg/apis/core/v1beta1"
)

// Condition reasons written to KubeFedCluster status, as KubeFed names them.
const (
	ReasonReady           = "ClusterReady"
	ReasonNotReady        = "ClusterNotReady"
	ReasonNotReachable    = "ClusterNotReachable"
	ReasonReachable       = "ClusterReachable"
	ReasonConfigMalformed = "ConfigMalformed"
	ReasonNotProbed       = "NotProbedYet"
)

// desiredStatus is the status a cluster should show. Probe and
// transition times are kept from cur while a condition is unchanged, so
// a healthy cluster costs no status write per probe.
func desiredStatus(c *Cluster, cur fedv1b1.KubeFedClusterStatus, now metav1.Time) fedv1b1.KubeFedClusterStatus {
	out := fedv1b1.KubeFedClusterStatus{KubernetesVersion: cur.KubernetesVersion, Zones: cur.Zones, Region: cur.Region}
	var ready, offline corev1.ConditionStatus
	var readyReason, readyMsg, offlineReason string
	switch {
	case c.ConfigError != nil:
		ready, readyReason, readyMsg = corev1.ConditionFalse, ReasonConfigMalformed, c.ConfigError.Error()
		offline, offlineReason = corev1.ConditionUnknown, ReasonConfigMalformed
	default:
		h := c.Member.Health()
		if h.Version != "" {
			out.KubernetesVersion = h.Version
		}
		switch {
		case !h.Probed:
			ready, readyReason = corev1.ConditionUnknown, ReasonNotProbed
			offline, offlineReason = corev1.ConditionUnknown, ReasonNotProbed
		case h.Ready:
			ready, readyReason, readyMsg = corev1.ConditionTrue, ReasonReady, "/readyz responded with ok"
			offline, offlineReason = corev1.ConditionFalse, ReasonReachable
		case h.Reachable:
			ready, readyReason, readyMsg = corev1.ConditionFalse, ReasonNotReady, h.Message
			offline, offlineReason = corev1.ConditionFalse, ReasonReachable
		default:
			ready, readyReason, readyMsg = corev1.ConditionFalse, ReasonNotReachable, h.Message
			offline, offlineReason = corev1.ConditionTrue, ReasonNotReachable
		}
	}
	out.Conditions = []fedv1b1.ClusterCondition{
		condition(cur, common.ClusterReady, ready, readyReason, readyMsg, now),
		condition(cur, common.ClusterOffline, offline, offlineReason, "", now),
	}
	return out
}

func condition(cur fedv1b1.KubeFedClusterStatus, t common.ClusterConditionType, status corev1.ConditionStatus, reason, msg string, now metav1.Time) fedv1b1.ClusterCondition {
	c := fedv1b1.ClusterCondition{Type: t, Status: status, LastProbeTime: now, LastTransitionTime: &now, Reason: &reason}
	if msg != "" {
		c.Message = &msg
	}
	for _, old := range cur.Conditions {
		if old.Type != t {
			continue
		}
		if old.Status == status {
			c.LastTransitionTime = old.LastTransitionTime
			if deref(old.Reason) == reason && deref(old.Message) == msg {
				c.LastProbeTime = old.LastProbeTime
			}
		}
	}
	return c
}

// statusEqual compares what desiredStatus controls, ignoring times.
func statusEqual(a, b fedv1b1.KubeFedClusterStatus) bool {
	if a.KubernetesVersion != b.KubernetesVersion || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || deref(x.Reason) != deref(y.Reason) || deref(x.Message) != deref(y.Message) {
			return false
		}
	}
	return true
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
