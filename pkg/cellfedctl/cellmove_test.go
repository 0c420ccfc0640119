package cellfedctl

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

func TestMoveFlags(t *testing.T) {
	tests := []struct {
		name     string
		m        moveOptions
		batchSet bool
		want     string // "" for valid
	}{
		{name: "a move", m: moveOptions{to: "member3", batch: 10}},
		{name: "nothing asked", m: moveOptions{batch: 10}, want: "say what to do"},
		{name: "two requests", m: moveOptions{to: "member3", undo: true, batch: 10}, want: "exclude each other"},
		{name: "a per-cell cluster", m: moveOptions{to: "shop.rz00a", batch: 10}, want: "not a physical cluster name"},
		{name: "batch with pause", m: moveOptions{pause: true, batch: 3}, batchSet: true, want: "--batch applies to --to or --resume"},
		{name: "batch with resume", m: moveOptions{resume: true, batch: 3}, batchSet: true},
		{name: "batch zero", m: moveOptions{to: "member3", batch: 0}, batchSet: true, want: "at least one object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.m.validate(tc.batchSet)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("validate: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("validate = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestMoveState(t *testing.T) {
	start := metav1.NewTime(time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC))
	end := metav1.NewTime(start.Add(25 * time.Second))
	done := &cellv1alpha1.CellMoveStatus{From: "m1", To: "m3", Phase: cellv1alpha1.MovePhaseCompleted, Objects: 50, Copied: 50, Moved: 50, StartTime: &start, CompletionTime: &end}
	tests := []struct {
		name     string
		s        moveState
		to       string
		ended    bool
		phase    string
		progress string
	}{
		{name: "not started", s: moveState{moving: true}, to: "m3", progress: "waiting for cellfed-controller to start the move"},
		{name: "under way", s: moveState{moving: true, status: &cellv1alpha1.CellMoveStatus{From: "m1", To: "m3", Phase: "Moving", Objects: 50, Copied: 12, Moved: 10}}, to: "m3", progress: "moving: 12/50 objects copied to m3, 10 moved"},
		{name: "undoing", s: moveState{moving: true, undo: true, status: &cellv1alpha1.CellMoveStatus{To: "m3", Phase: "RollingBack", Copied: 7}}, to: "m3", progress: "rollingback: 7 objects left on m3"},
		{name: "ended", s: moveState{status: done}, to: "m3", ended: true, phase: cellv1alpha1.MovePhaseCompleted},
		{name: "an earlier move to another cluster is not this one", s: moveState{status: done}, to: "m4"},
		{name: "spec.move still set", s: moveState{moving: true, status: done}, to: "m3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ended, phase := tc.s.ended(tc.to)
			if ended != tc.ended || phase != tc.phase {
				t.Errorf("ended = %v %q, want %v %q", ended, phase, tc.ended, tc.phase)
			}
			if tc.progress != "" && !strings.Contains(tc.s.progress("shop", "rz00a"), tc.progress) {
				t.Errorf("progress = %q, want it to say %q", tc.s.progress("shop", "rz00a"), tc.progress)
			}
		})
	}
}

func TestPrintCellStatus(t *testing.T) {
	start := metav1.NewTime(time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC))
	end := metav1.NewTime(start.Add(25 * time.Second))
	cell := &cellv1alpha1.Cell{
		ObjectMeta: metav1.ObjectMeta{Name: "rz00a", Namespace: "shop", Labels: map[string]string{"zone": "z0"}},
		Spec:       cellv1alpha1.CellSpec{Cluster: "m3"},
		Status: cellv1alpha1.CellStatus{
			Conditions: []metav1.Condition{{Type: cellv1alpha1.CellReady, Status: metav1.ConditionTrue}},
			Move:       &cellv1alpha1.CellMoveStatus{From: "m1", To: "m3", Phase: cellv1alpha1.MovePhaseCompleted, Objects: 50, Copied: 50, Moved: 50, StartTime: &start, CompletionTime: &end},
		},
	}
	var b strings.Builder
	if err := PrintCellStatus(&b, cell, end.Time); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"shop/rz00a", "Cluster:", "m3", "zone=z0", "Ready:", "True", "Objects:", "not counted yet", "m1 → m3, Completed", "50 (ready on m3, removed from m1)", "25s"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("cell status lacks %q:\n%s", want, b.String())
		}
	}
}

func TestClusterSpecificOverrides(t *testing.T) {
	obj := map[string]any{"spec": map[string]any{"overrides": []any{
		map[string]any{"topologyName": "rz00a", "clusterOverrides": []any{
			map[string]any{"path": "/spec/replicas", "value": int64(3)},
			map[string]any{"path": "/spec/template/spec/nodeSelector", "value": map[string]any{"disk": "ssd"}},
			map[string]any{"path": "/spec/volumeClaimTemplates/0/spec/storageClassName", "value": "fast"},
		}},
		map[string]any{"topologyName": "rz00b", "clusterOverrides": []any{
			map[string]any{"path": "/spec/template/spec/affinity"},
		}},
	}}}
	got := ClusterSpecificOverrides(obj, "rz00a")
	want := []string{"/spec/template/spec/nodeSelector", "/spec/volumeClaimTemplates/0/spec/storageClassName"}
	if !slices.Equal(got, want) {
		t.Errorf("rz00a: %v, want %v", got, want)
	}
	if got := ClusterSpecificOverrides(obj, "rz00c"); got != nil {
		t.Errorf("rz00c, with no overrides: %v", got)
	}
}
