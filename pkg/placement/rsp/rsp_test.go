package rsp

import (
	"maps"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	fedschedulingv1a1 "sigs.k8s.io/kubefed/pkg/apis/scheduling/v1alpha1"
)

type prefs = map[string]fedschedulingv1a1.ClusterPreferences

func ready(names ...string) []Cluster {
	var out []Cluster
	for _, n := range names {
		out = append(out, Cluster{Name: n, Ready: true, Labels: map[string]string{}})
	}
	return out
}

func TestSchedule(t *testing.T) {
	twoClusters := ready("c1", "c2")
	labelled := []Cluster{{Name: "c1", Ready: true, Labels: map[string]string{"foo": "bar"}}, {Name: "c2", Ready: true}}
	tests := []struct {
		name string
		in   Input
		want map[string]int64
	}{
		// KubeFed's own e2e cases (test/e2e/scheduling.go).
		{"no preferences spread evenly", Input{Spec: spec(4, nil), Clusters: twoClusters},
			map[string]int64{"c1": 2, "c2": 2}},
		{"weights 2:1", Input{Spec: spec(6, prefs{"c1": {Weight: 2}, "c2": {Weight: 1}}), Clusters: twoClusters},
			map[string]int64{"c1": 4, "c2": 2}},
		{"min replicas win over weights", Input{Spec: spec(6, prefs{"c1": {Weight: 2, MinReplicas: 3}, "c2": {Weight: 1, MinReplicas: 3}}), Clusters: twoClusters},
			map[string]int64{"c1": 3, "c2": 3}},
		{"intersection with the placement's selector", Input{
			Spec:     withIntersect(spec(6, prefs{"c1": {Weight: 2, MinReplicas: 3}, "c2": {Weight: 1, MinReplicas: 3}})),
			Clusters: labelled, Selector: labels.SelectorFromSet(labels.Set{"foo": "bar"})},
			map[string]int64{"c1": 6}},
		{"intersection with the clusters named when there is no selector", Input{
			Spec: withIntersect(spec(5, nil)), Clusters: ready("c1", "c2", "c3"), Named: []string{"c2", "c3"}},
			map[string]int64{"c2": 3, "c3": 2}},

		{"max caps a cluster and the rest goes elsewhere", Input{Spec: spec(10, prefs{"c1": {Weight: 1, MaxReplicas: ptr.To[int64](2)}, "c2": {Weight: 1}}), Clusters: twoClusters},
			map[string]int64{"c1": 2, "c2": 8}},
		{"a candidate with no preference and no wildcard is left out", Input{Spec: spec(4, prefs{"c1": {Weight: 1}}), Clusters: twoClusters},
			map[string]int64{"c1": 4}},
		{"a named cluster given nothing is placed with 0", Input{Spec: spec(4, prefs{"c1": {Weight: 1}, "c2": {}}), Clusters: twoClusters},
			map[string]int64{"c1": 4, "c2": 0}},
		{"wildcard for the unnamed", Input{Spec: spec(6, prefs{"c1": {Weight: 2}, "*": {Weight: 1}}), Clusters: ready("c1", "c2", "c3")},
			map[string]int64{"c1": 3, "c2": 2, "c3": 1}},
		{"an unready cluster is no candidate", Input{Spec: spec(4, nil), Clusters: append(ready("c1"), Cluster{Name: "c2"})},
			map[string]int64{"c1": 4}},
		{"rebalance false keeps running replicas", Input{Spec: spec(6, prefs{"c1": {Weight: 1}, "c2": {Weight: 1}}), Clusters: twoClusters,
			Current: map[string]int64{"c1": 5, "c2": 1}},
			map[string]int64{"c1": 5, "c2": 1}},
		{"rebalance false adds new replicas by weight", Input{Spec: spec(8, prefs{"c1": {Weight: 1}, "c2": {Weight: 1}}), Clusters: twoClusters,
			Current: map[string]int64{"c1": 5, "c2": 1}},
			map[string]int64{"c1": 5, "c2": 3}},
		{"rebalance true divides afresh", Input{Spec: withRebalance(spec(6, prefs{"c1": {Weight: 1}, "c2": {Weight: 1}})), Clusters: twoClusters,
			Current: map[string]int64{"c1": 5, "c2": 1}},
			map[string]int64{"c1": 3, "c2": 3}},
		{"rebalance false still honours max", Input{Spec: spec(6, prefs{"c1": {Weight: 1, MaxReplicas: ptr.To[int64](2)}, "c2": {Weight: 1}}), Clusters: twoClusters,
			Current: map[string]int64{"c1": 5}},
			map[string]int64{"c1": 2, "c2": 4}},
		{"another tenant's dedicated cluster and another namespace's cell are skipped", Input{
			Namespace: "shop", Tenant: "acme", Spec: spec(4, prefs{"*": {Weight: 1}, "shop2.rz00a": {Weight: 1}}),
			Clusters: []Cluster{{Name: "c1", Ready: true}, {Name: "c2", Ready: true, Labels: map[string]string{"cellfed.io/tenant": "beta"}}, {Name: "shop2.rz00a", Ready: true}}},
			map[string]int64{"c1": 4}},
		{"a cell of the namespace only when named", Input{
			Namespace: "shop", Spec: spec(4, prefs{"*": {Weight: 1}, "shop.rz10a": {Weight: 1}}),
			Clusters: ready("c1", "shop.rz00a", "shop.rz10a")},
			map[string]int64{"c1": 2, "shop.rz10a": 2}},
		{"no candidate", Input{Spec: spec(4, nil), Clusters: []Cluster{{Name: "c1"}}},
			map[string]int64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Key = "ns/web"
			got, err := Schedule(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("Schedule = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestScheduleScaleUpByOneMovesOneCluster(t *testing.T) {
	in := Input{Key: "ns/web", Spec: withRebalance(spec(10, prefs{"c1": {Weight: 1}, "c2": {Weight: 2}, "c3": {Weight: 2}})), Clusters: ready("c1", "c2", "c3")}
	before, err := Schedule(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int64{"c1": 2, "c2": 4, "c3": 4}; !maps.Equal(before, want) {
		t.Fatalf("10 replicas 1:2:2 = %v, want %v", before, want)
	}
	in.Spec.TotalReplicas = 11
	after, err := Schedule(in)
	if err != nil {
		t.Fatal(err)
	}
	moved := 0
	for n := range after {
		if after[n] < before[n] {
			t.Errorf("scale-up took a replica from %s: %v -> %v", n, before, after)
		}
		if after[n] != before[n] {
			moved++
		}
	}
	if moved != 1 {
		t.Errorf("scale-up by one changed %d clusters: %v -> %v", moved, before, after)
	}
}

func TestScheduleRejectsNegatives(t *testing.T) {
	for _, s := range []fedschedulingv1a1.ReplicaSchedulingPreferenceSpec{
		spec(-1, nil),
		spec(3, prefs{"c1": {Weight: -1}}),
		spec(3, prefs{"c1": {Weight: 1, MaxReplicas: ptr.To[int64](-2)}}),
	} {
		if _, err := Schedule(Input{Spec: s, Clusters: ready("c1")}); err == nil {
			t.Errorf("Schedule(%+v) accepted a negative number", s)
		}
	}
}

func TestApply(t *testing.T) {
	obj := func(spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	}
	tests := []struct {
		name        string
		spec        map[string]any
		schedule    map[string]int64
		wantChanged bool
		wantSpec    map[string]any
	}{
		{"fresh object gets placement and overrides",
			map[string]any{"template": map[string]any{}},
			map[string]int64{"c2": 2, "c1": 4}, true,
			map[string]any{"template": map[string]any{},
				"placement": map[string]any{"clusters": []any{map[string]any{"name": "c1"}, map[string]any{"name": "c2"}}},
				"overrides": []any{
					map[string]any{"clusterName": "c1", "clusterOverrides": []any{map[string]any{"path": "/spec/replicas", "value": int64(4)}}},
					map[string]any{"clusterName": "c2", "clusterOverrides": []any{map[string]any{"path": "/spec/replicas", "value": int64(2)}}},
				}}},
		{"already scheduled: no change",
			map[string]any{
				"placement": map[string]any{"clusters": []any{map[string]any{"name": "c2"}, map[string]any{"name": "c1"}}},
				"overrides": []any{
					map[string]any{"clusterName": "c1", "clusterOverrides": []any{map[string]any{"path": "/spec/replicas", "value": int64(4)}}},
					map[string]any{"clusterName": "c2", "clusterOverrides": []any{map[string]any{"path": "/spec/replicas", "value": int64(2)}}},
				}},
			map[string]int64{"c2": 2, "c1": 4}, false, nil},
		{"other overrides and the selector stay; an unscheduled cluster loses only its replicas",
			map[string]any{
				"placement": map[string]any{"clusterSelector": map[string]any{"matchLabels": map[string]any{"foo": "bar"}}, "clusters": []any{map[string]any{"name": "c1"}, map[string]any{"name": "c2"}}},
				"overrides": []any{
					map[string]any{"clusterName": "c1", "clusterOverrides": []any{map[string]any{"path": "/spec/replicas", "value": int64(3)}, map[string]any{"path": "/metadata/labels/x", "value": "y"}}},
					map[string]any{"clusterName": "c2", "clusterOverrides": []any{map[string]any{"path": "/spec/replicas", "value": int64(3)}}},
				}},
			map[string]int64{"c1": 6}, true,
			map[string]any{
				"placement": map[string]any{"clusterSelector": map[string]any{"matchLabels": map[string]any{"foo": "bar"}}, "clusters": []any{map[string]any{"name": "c1"}}},
				"overrides": []any{
					map[string]any{"clusterName": "c1", "clusterOverrides": []any{map[string]any{"path": "/spec/replicas", "value": int64(6)}, map[string]any{"path": "/metadata/labels/x", "value": "y"}}},
				}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := obj(tt.spec)
			before := o.DeepCopy()
			changed, err := Apply(o, tt.schedule)
			if err != nil {
				t.Fatal(err)
			}
			if changed != tt.wantChanged {
				t.Fatalf("changed = %v, want %v", changed, tt.wantChanged)
			}
			want := tt.wantSpec
			if !tt.wantChanged {
				want = before.Object["spec"].(map[string]any)
			}
			if got := o.Object["spec"]; !reflect.DeepEqual(got, want) {
				t.Errorf("spec = %#v\nwant %#v", got, want)
			}
			if cur := Current(o); !maps.Equal(cur, tt.schedule) {
				t.Errorf("Current after Apply = %v, want %v", cur, tt.schedule)
			}
		})
	}
}

func spec(total int32, p prefs) fedschedulingv1a1.ReplicaSchedulingPreferenceSpec {
	return fedschedulingv1a1.ReplicaSchedulingPreferenceSpec{TargetKind: KindFederatedDeployment, TotalReplicas: total, Clusters: p}
}

func withIntersect(s fedschedulingv1a1.ReplicaSchedulingPreferenceSpec) fedschedulingv1a1.ReplicaSchedulingPreferenceSpec {
	s.IntersectWithClusterSelector = true
	return s
}

func withRebalance(s fedschedulingv1a1.ReplicaSchedulingPreferenceSpec) fedschedulingv1a1.ReplicaSchedulingPreferenceSpec {
	s.Rebalance = true
	return s
}
