package board

import (
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestClusterLines(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	cluster := func(name string, labels map[string]any, spec map[string]any, conds ...any) unstructured.Unstructured {
		u := unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": name, "labels": labels},
			"spec":     spec,
			"status":   map[string]any{"conditions": conds},
		}}
		return u
	}
	ready := func(status, reason string, ago time.Duration) map[string]any {
		return map[string]any{"type": "Ready", "status": status, "reason": reason, "lastTransitionTime": now.Add(-ago).Format(time.RFC3339)}
	}
	got := ClusterLines([]unstructured.Unstructured{
		cluster("member-2", nil, map[string]any{"apiEndpoint": "https://10.0.0.2"}, ready("True", "ClusterReady", 3*time.Hour)),
		cluster("edge-1", map[string]any{"cellfed.io/tunnelled": "true", "cellfed.io/tenant": "acme"}, map[string]any{"proxyURL": "http://hub"}, ready("False", "ClusterNotReachable", 45*time.Second)),
		cluster("shop.rz00a", map[string]any{"cellfed.io/topology-type": "cell"}, nil, ready("True", "ClusterReady", time.Minute)),
		cluster("member-9", nil, map[string]any{"proxyURL": "http://hub"}),
	}, now)
	want := []ClusterLine{
		{Name: "edge-1", Reached: "tunnel", Ready: "False", Reason: "ClusterNotReachable", Since: "45s", Tenant: "acme"},
		{Name: "member-2", Reached: "direct", Ready: "True", Reason: "ClusterReady", Since: "3h"},
		{Name: "member-9", Reached: "tunnel", Ready: "Unknown"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}
