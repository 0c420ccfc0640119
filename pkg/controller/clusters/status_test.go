package clusters

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kubefed/pkg/apis/core/common"
	fedv1b1 "sigs.k8s.io/kubefed/pkg/apis/core/v1beta1"
)

// memberWith is a member (never started, never dialled) whose probes
// found h.
func memberWith(t *testing.T, h Health) *Member {
	t.Helper()
	m, err := newMember("key", Access{Endpoint: "https://127.0.0.1:1", Token: "t"}, DefaultOptions(), func(*Member) {})
	if err != nil {
		t.Fatal(err)
	}
	m.health = h
	return m
}

func strp(s string) *string { return &s }

type wantCond struct {
	status  corev1.ConditionStatus
	reason  string
	message string
	// probe and transition are the expected times.
	probe, transition metav1.Time
}

func checkCond(t *testing.T, got fedv1b1.ClusterCondition, typ common.ClusterConditionType, w wantCond) {
	t.Helper()
	if got.Type != typ || got.Status != w.status || deref(got.Reason) != w.reason || deref(got.Message) != w.message {
		t.Errorf("%s condition = %s/%s/%q, want %s/%s/%q", typ, got.Status, deref(got.Reason), deref(got.Message), w.status, w.reason, w.message)
	}
	if got.Reason == nil {
		t.Errorf("%s condition has no reason", typ)
	}
	if w.message == "" && got.Message != nil {
		t.Errorf("%s condition has an empty message set", typ)
	}
	if !got.LastProbeTime.Equal(&w.probe) {
		t.Errorf("%s lastProbeTime = %v, want %v", typ, got.LastProbeTime, w.probe)
	}
	if got.LastTransitionTime == nil || !got.LastTransitionTime.Equal(&w.transition) {
		t.Errorf("%s lastTransitionTime = %v, want %v", typ, got.LastTransitionTime, w.transition)
	}
}

func TestDesiredStatus(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := metav1.NewTime(t0.Add(time.Hour))
	cond := func(typ common.ClusterConditionType, status corev1.ConditionStatus, reason, msg string) fedv1b1.ClusterCondition {
		c := fedv1b1.ClusterCondition{Type: typ, Status: status, Reason: strp(reason), LastProbeTime: t0, LastTransitionTime: &t0}
		if msg != "" {
			c.Message = strp(msg)
		}
		return c
	}
	readyStatus := fedv1b1.KubeFedClusterStatus{
		KubernetesVersion: "v1.35.0",
		Zones:             []string{"z1"},
		Region:            strp("r1"),
		Conditions: []fedv1b1.ClusterCondition{
			cond(common.ClusterReady, corev1.ConditionTrue, ReasonReady, "/readyz responded with ok"),
			cond(common.ClusterOffline, corev1.ConditionFalse, ReasonReachable, ""),
		},
	}
	notReadyStatus := fedv1b1.KubeFedClusterStatus{
		KubernetesVersion: "v1.35.0",
		Conditions: []fedv1b1.ClusterCondition{
			cond(common.ClusterReady, corev1.ConditionFalse, ReasonNotReady, "/readyz answered 500: etcd"),
			cond(common.ClusterOffline, corev1.ConditionFalse, ReasonReachable, ""),
		},
	}
	tests := []struct {
		name          string
		cluster       func(t *testing.T) *Cluster
		cur           fedv1b1.KubeFedClusterStatus
		ready, off    wantCond
		version       string
		unchanged     bool // statusEqual(cur, desired)
		keepsLocation bool
	}{
		{
			name: "config error",
			cluster: func(*testing.T) *Cluster {
				return &Cluster{Name: "c", ConfigError: errors.New(`secret ns/x has no key "token"`)}
			},
			ready: wantCond{corev1.ConditionFalse, ReasonConfigMalformed, `secret ns/x has no key "token"`, now, now},
			off:   wantCond{corev1.ConditionUnknown, ReasonConfigMalformed, "", now, now},
		},
		{
			name:    "config error keeps the last known version",
			cluster: func(*testing.T) *Cluster { return &Cluster{Name: "c", ConfigError: errors.New("bad")} },
			cur:     readyStatus,
			ready:   wantCond{corev1.ConditionFalse, ReasonConfigMalformed, "bad", now, now},
			off:     wantCond{corev1.ConditionUnknown, ReasonConfigMalformed, "", now, now},
			version: "v1.35.0", keepsLocation: true,
		},
		{
			name:    "not probed yet",
			cluster: func(t *testing.T) *Cluster { return &Cluster{Name: "c", Member: memberWith(t, Health{})} },
			ready:   wantCond{corev1.ConditionUnknown, ReasonNotProbed, "", now, now},
			off:     wantCond{corev1.ConditionUnknown, ReasonNotProbed, "", now, now},
		},
		{
			name: "ready",
			cluster: func(t *testing.T) *Cluster {
				return &Cluster{Name: "c", Member: memberWith(t, Health{Probed: true, Ready: true, Reachable: true, Version: "v1.36.4"})}
			},
			ready:   wantCond{corev1.ConditionTrue, ReasonReady, "/readyz responded with ok", now, now},
			off:     wantCond{corev1.ConditionFalse, ReasonReachable, "", now, now},
			version: "v1.36.4",
		},
		{
			name: "still ready keeps both conditions' times",
			cluster: func(t *testing.T) *Cluster {
				return &Cluster{Name: "c", Member: memberWith(t, Health{Probed: true, Ready: true, Reachable: true, Version: "v1.35.0"})}
			},
			cur:     readyStatus,
			ready:   wantCond{corev1.ConditionTrue, ReasonReady, "/readyz responded with ok", t0, t0},
			off:     wantCond{corev1.ConditionFalse, ReasonReachable, "", t0, t0},
			version: "v1.35.0", unchanged: true, keepsLocation: true,
		},
		{
			name: "still ready, version unknown to the member keeps the recorded one",
			cluster: func(t *testing.T) *Cluster {
				return &Cluster{Name: "c", Member: memberWith(t, Health{Probed: true, Ready: true, Reachable: true})}
			},
			cur:     readyStatus,
			ready:   wantCond{corev1.ConditionTrue, ReasonReady, "/readyz responded with ok", t0, t0},
			off:     wantCond{corev1.ConditionFalse, ReasonReachable, "", t0, t0},
			version: "v1.35.0", unchanged: true, keepsLocation: true,
		},
		{
			name: "upgraded member changes only the version",
			cluster: func(t *testing.T) *Cluster {
				return &Cluster{Name: "c", Member: memberWith(t, Health{Probed: true, Ready: true, Reachable: true, Version: "v1.36.0"})}
			},
			cur:     readyStatus,
			ready:   wantCond{corev1.ConditionTrue, ReasonReady, "/readyz responded with ok", t0, t0},
			off:     wantCond{corev1.ConditionFalse, ReasonReachable, "", t0, t0},
			version: "v1.36.0", keepsLocation: true,
		},
		{
			name: "reachable but not ready",
			cluster: func(t *testing.T) *Cluster {
				return &Cluster{Name: "c", Member: memberWith(t, Health{Probed: true, Reachable: true, Message: "/readyz answered 500: etcd"})}
			},
			cur:     readyStatus,
			ready:   wantCond{corev1.ConditionFalse, ReasonNotReady, "/readyz answered 500: etcd", now, now},
			off:     wantCond{corev1.ConditionFalse, ReasonReachable, "", t0, t0},
			version: "v1.35.0", keepsLocation: true,
		},
		{
			name: "not ready with a new message keeps the transition time",
			cluster: func(t *testing.T) *Cluster {
				return &Cluster{Name: "c", Member: memberWith(t, Health{Probed: true, Reachable: true, Message: "/readyz answered 503: starting"})}
			},
			cur:     notReadyStatus,
			ready:   wantCond{corev1.ConditionFalse, ReasonNotReady, "/readyz answered 503: starting", now, t0},
			off:     wantCond{corev1.ConditionFalse, ReasonReachable, "", t0, t0},
			version: "v1.35.0",
		},
		{
			name: "unreachable",
			cluster: func(t *testing.T) *Cluster {
				return &Cluster{Name: "c", Member: memberWith(t, Health{Probed: true, Message: "/readyz: connection refused"})}
			},
			cur:     notReadyStatus,
			ready:   wantCond{corev1.ConditionFalse, ReasonNotReachable, "/readyz: connection refused", now, t0},
			off:     wantCond{corev1.ConditionTrue, ReasonNotReachable, "", now, now},
			version: "v1.35.0",
		},
		{
			name: "unreachable but still ready within the failure threshold",
			cluster: func(t *testing.T) *Cluster {
				return &Cluster{Name: "c", Member: memberWith(t, Health{Probed: true, Ready: true, Message: "/readyz: timeout"})}
			},
			cur:     readyStatus,
			ready:   wantCond{corev1.ConditionTrue, ReasonReady, "/readyz responded with ok", t0, t0},
			off:     wantCond{corev1.ConditionFalse, ReasonReachable, "", t0, t0},
			version: "v1.35.0", unchanged: true, keepsLocation: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cur := *tc.cur.DeepCopy()
			got := desiredStatus(tc.cluster(t), tc.cur, now)
			if len(got.Conditions) != 2 {
				t.Fatalf("conditions = %+v, want Ready and Offline", got.Conditions)
			}
			checkCond(t, got.Conditions[0], common.ClusterReady, tc.ready)
			checkCond(t, got.Conditions[1], common.ClusterOffline, tc.off)
			if got.KubernetesVersion != tc.version {
				t.Errorf("kubernetesVersion = %q, want %q", got.KubernetesVersion, tc.version)
			}
			if tc.keepsLocation && (len(got.Zones) != 1 || got.Zones[0] != "z1" || deref(got.Region) != "r1") {
				t.Errorf("zones/region not kept: %v %v", got.Zones, deref(got.Region))
			}
			if eq := statusEqual(tc.cur, got); eq != tc.unchanged {
				t.Errorf("statusEqual(cur, desired) = %v, want %v", eq, tc.unchanged)
			}
			// desiredStatus is idempotent: the status it computes is
			// what it computes again at a later probe.
			later := metav1.NewTime(now.Add(time.Minute))
			again := desiredStatus(tc.cluster(t), got, later)
			if !statusEqual(got, again) {
				t.Errorf("second round differs: %+v", again)
			}
			for i := range again.Conditions {
				if !again.Conditions[i].LastProbeTime.Equal(&got.Conditions[i].LastProbeTime) ||
					!again.Conditions[i].LastTransitionTime.Equal(got.Conditions[i].LastTransitionTime) {
					t.Errorf("second round moved the times of %s", again.Conditions[i].Type)
				}
			}
			if cur.KubernetesVersion != tc.cur.KubernetesVersion || len(cur.Conditions) != len(tc.cur.Conditions) {
				t.Errorf("desiredStatus modified the current status")
			}
		})
	}
}

func TestStatusEqual(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Hour))
	base := func() fedv1b1.KubeFedClusterStatus {
		return fedv1b1.KubeFedClusterStatus{
			KubernetesVersion: "v1.36.4",
			Conditions: []fedv1b1.ClusterCondition{
				{Type: common.ClusterReady, Status: corev1.ConditionFalse, Reason: strp(ReasonNotReady), Message: strp("down"), LastProbeTime: t0, LastTransitionTime: &t0},
				{Type: common.ClusterOffline, Status: corev1.ConditionFalse, Reason: strp(ReasonReachable), LastProbeTime: t0, LastTransitionTime: &t0},
			},
		}
	}
	tests := []struct {
		name  string
		edit  func(s *fedv1b1.KubeFedClusterStatus)
		equal bool
	}{
		{"identical", func(*fedv1b1.KubeFedClusterStatus) {}, true},
		{"times differ", func(s *fedv1b1.KubeFedClusterStatus) {
			s.Conditions[0].LastProbeTime, s.Conditions[0].LastTransitionTime = t1, &t1
			s.Conditions[1].LastTransitionTime = nil
		}, true},
		{"zones and region are not ours", func(s *fedv1b1.KubeFedClusterStatus) { s.Zones, s.Region = []string{"z"}, strp("r") }, true},
		{"nil and empty message", func(s *fedv1b1.KubeFedClusterStatus) { s.Conditions[1].Message = strp("") }, true},
		{"version", func(s *fedv1b1.KubeFedClusterStatus) { s.KubernetesVersion = "v1.36.5" }, false},
		{"status", func(s *fedv1b1.KubeFedClusterStatus) { s.Conditions[0].Status = corev1.ConditionTrue }, false},
		{"reason", func(s *fedv1b1.KubeFedClusterStatus) { s.Conditions[0].Reason = strp(ReasonNotReachable) }, false},
		{"nil reason", func(s *fedv1b1.KubeFedClusterStatus) { s.Conditions[0].Reason = nil }, false},
		{"message", func(s *fedv1b1.KubeFedClusterStatus) { s.Conditions[0].Message = strp("still down") }, false},
		{"nil message", func(s *fedv1b1.KubeFedClusterStatus) { s.Conditions[0].Message = nil }, false},
		{"type", func(s *fedv1b1.KubeFedClusterStatus) { s.Conditions[1].Type = common.ClusterConfigMalformed }, false},
		{"order", func(s *fedv1b1.KubeFedClusterStatus) {
			s.Conditions[0], s.Conditions[1] = s.Conditions[1], s.Conditions[0]
		}, false},
		{"fewer conditions", func(s *fedv1b1.KubeFedClusterStatus) { s.Conditions = s.Conditions[:1] }, false},
		{"no conditions", func(s *fedv1b1.KubeFedClusterStatus) { s.Conditions = nil }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := base(), base()
			tc.edit(&b)
			if got := statusEqual(a, b); got != tc.equal {
				t.Errorf("statusEqual(a, b) = %v, want %v", got, tc.equal)
			}
			if got := statusEqual(b, a); got != tc.equal {
				t.Errorf("statusEqual(b, a) = %v, want %v", got, tc.equal)
			}
		})
	}
}
