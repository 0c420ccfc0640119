package cells

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	corev1a1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/controller/clusters"
)

func TestLeanRecord(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   any
		want any
	}{
		{
			name: "record: cluster names and metadata kept, versions and managedFields dropped",
			in: &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "core.kubefed.io/v1alpha1", "kind": "PropagatedVersion",
				"metadata": map[string]any{"name": "configmap-a", "namespace": "ns", "resourceVersion": "5",
					"managedFields": []any{map[string]any{"manager": "cellfed-controller"}}},
				"status": map[string]any{"templateVersion": "t", "overrideVersion": "o", "clusterVersions": []any{
					map[string]any{"clusterName": "ns.rz01", "version": "rv:10"},
					map[string]any{"clusterName": "ns.rz02", "version": "rv:11"},
				}},
			}},
			want: &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "core.kubefed.io/v1alpha1", "kind": "PropagatedVersion",
				"metadata": map[string]any{"name": "configmap-a", "namespace": "ns", "resourceVersion": "5"},
				"status": map[string]any{"clusterVersions": []any{
					map[string]any{"clusterName": "ns.rz01"}, map[string]any{"clusterName": "ns.rz02"},
				}},
			}},
		},
		{
			name: "tombstone",
			in:   cache.DeletedFinalStateUnknown{Key: "ns/configmap-a"},
			want: cache.DeletedFinalStateUnknown{Key: "ns/configmap-a"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := leanRecord(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("leanRecord:\n got %v\nwant %v", got, tc.want)
			}
			if u, ok := got.(*unstructured.Unstructured); ok && len(recordClusters(u)) != 2 {
				t.Errorf("recordClusters of the lean record: %v", recordClusters(u))
			}
		})
	}
}

func TestStatusOnly(t *testing.T) {
	cell := func(gen int64, edit func(u *unstructured.Unstructured)) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"objects": int64(1)}}}
		u.SetGeneration(gen)
		u.SetLabels(map[string]string{"zone": "z1"})
		if edit != nil {
			edit(u)
		}
		return u
	}
	for _, tc := range []struct {
		name     string
		old, cur *unstructured.Unstructured
		want     bool
	}{
		{"the count changed", cell(1, nil), cell(1, func(u *unstructured.Unstructured) { u.Object["status"] = map[string]any{"objects": int64(2)} }), true},
		{"the spec changed", cell(1, nil), cell(2, nil), false},
		{"a label changed", cell(1, nil), cell(1, func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"zone": "z2"}) }), false},
		{"being deleted", cell(1, nil), cell(1, func(u *unstructured.Unstructured) { now := metav1.Now(); u.SetDeletionTimestamp(&now) }), false},
		{"a tombstone", cell(1, nil), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cur any = tc.cur
			if tc.cur == nil {
				cur = cache.DeletedFinalStateUnknown{Key: "x"}
			}
			if got := clusters.StatusOnly(tc.old, cur); got != tc.want {
				t.Errorf("statusOnly = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMoveWindow(t *testing.T) {
	keys := func(k ...string) sets.Set[string] { return sets.New(k...) }
	tests := []struct {
		name           string
		onCell, onMove sets.Set[string]
		batch          int
		paused         bool
		stale          sets.Set[string]
		want           sets.Set[string]
	}{
		{name: "the first batch in key order", onCell: keys("d", "a", "c", "b"), onMove: keys(), batch: 2, want: keys("a", "b")},
		{name: "objects in flight count against the batch", onCell: keys("a", "b", "c", "d"), onMove: keys("c"), batch: 2, want: keys("a", "c")},
		{name: "moved objects leave room", onCell: keys("c", "d"), onMove: keys("a", "b", "c"), batch: 2, want: keys("c", "d")},
		{name: "more in flight than the batch (a smaller batch, a restart): none added", onCell: keys("a", "b", "c"), onMove: keys("a", "b"), batch: 1, want: keys("a", "b")},
		{name: "paused: only those in flight", onCell: keys("a", "b", "c"), onMove: keys("b"), batch: 5, paused: true, want: keys("b")},
		{name: "a stuck object stays admitted but leaves its place", onCell: keys("a", "b", "c"), onMove: keys(), batch: 1, stale: keys("a"), want: keys("a", "b")},
		{name: "nothing left", onCell: keys(), onMove: keys("a"), batch: 3, want: keys()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := window(moveCounts{onCell: tc.onCell, onMove: tc.onMove}, tc.batch, tc.paused, tc.stale)
			if !got.Equal(tc.want) {
				t.Errorf("window = %v, want %v", sets.List(got), sets.List(tc.want))
			}
		})
	}
}

func TestCountWait(t *testing.T) {
	now := time.Date(2026, 11, 27, 7, 0, 0, 0, time.UTC)
	ready := metav1.Condition{Type: corev1a1.CellReady, Status: metav1.ConditionTrue, Reason: "ClusterReady"}
	status := func(objects *int32, conds ...metav1.Condition) corev1a1.CellStatus {
		return corev1a1.CellStatus{KubeFedCluster: "shop.rz00", Objects: objects, Conditions: conds}
	}
	for _, tc := range []struct {
		name      string
		cur, next corev1a1.CellStatus
		last      time.Time
		want      time.Duration
	}{
		{"a count changed soon after the last write waits", status(ptr.To[int32](5), ready), status(ptr.To[int32](9), ready), now.Add(-5 * time.Second), 10 * time.Second},
		{"a count changed long after the last write goes", status(ptr.To[int32](5), ready), status(ptr.To[int32](9), ready), now.Add(-time.Minute), 0},
		{"a first count goes whenever the cell was written", status(nil, ready), status(ptr.To[int32](9), ready), time.Time{}, 0},
		{"a count leaving 0 goes: a drain deletes a cell counted 0", status(ptr.To[int32](0), ready), status(ptr.To[int32](2), ready), now.Add(-time.Second), 0},
		{"a count reaching 0 goes", status(ptr.To[int32](5), ready), status(ptr.To[int32](0), ready), now.Add(-time.Second), 0},
		{"a condition change goes with the count", status(ptr.To[int32](5)), status(ptr.To[int32](9), ready), now.Add(-time.Second), 0},
		{"no count change goes", status(ptr.To[int32](5)), status(ptr.To[int32](5), ready), now.Add(-time.Second), 0},
		{"a move change goes", status(ptr.To[int32](5), ready), func() corev1a1.CellStatus {
			s := status(ptr.To[int32](9), ready)
			s.Move = &corev1a1.CellMoveStatus{To: "member-2"}
			return s
		}(), now.Add(-time.Second), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := countWait(tc.cur, tc.next, tc.last, now); got != tc.want {
				t.Errorf("countWait = %v, want %v", got, tc.want)
			}
		})
	}
}
