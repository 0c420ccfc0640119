package board

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEventLines(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	ev := func(kind, name, reason string, ago time.Duration, count int32) corev1.Event {
		return corev1.Event{
			InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name},
			Type:           corev1.EventTypeNormal, Reason: reason, Message: reason + " happened", Count: count,
			LastTimestamp: metav1.NewTime(now.Add(-ago)),
		}
	}
	events := []corev1.Event{
		ev("FederatedDeployment", "web", "CreateInCluster", 3*time.Hour, 2),
		ev("FederatedDeployment", "web", "UpdateInCluster", 45*time.Second, 0),
		ev("FederatedDeployment", "api", "CreateInCluster", time.Second, 1), // another object
		ev("Deployment", "web", "ScalingReplicaSet", time.Second, 1),        // another kind
		ev("FederatedDeployment", "web", "RolloutStep", 12*time.Minute, 1),
		ev("FederatedDeployment", "web", "Old", 72*time.Hour, 1),
	}
	tests := []struct {
		name  string
		limit int
		want  []EventLine
	}{
		{"newest first, only this object", 10, []EventLine{
			{Age: "45s", Type: "Normal", Reason: "UpdateInCluster", Message: "UpdateInCluster happened", Count: 1},
			{Age: "12m", Type: "Normal", Reason: "RolloutStep", Message: "RolloutStep happened", Count: 1},
			{Age: "3h", Type: "Normal", Reason: "CreateInCluster", Message: "CreateInCluster happened", Count: 2},
			{Age: "3d", Type: "Normal", Reason: "Old", Message: "Old happened", Count: 1},
		}},
		{"at most the limit", 1, []EventLine{
			{Age: "45s", Type: "Normal", Reason: "UpdateInCluster", Message: "UpdateInCluster happened", Count: 1},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EventLines(events, "FederatedDeployment", "web", tt.limit, now); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
	if got := EventLines(nil, "FederatedDeployment", "web", 10, now); len(got) != 0 {
		t.Errorf("no events gave %+v", got)
	}
}
