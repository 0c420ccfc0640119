package rolloutcontroller

import (
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cellfed/cellfed/pkg/rollout"
)

// TestReleaseState: rollouts are counted by workspace and state (no
// state yet reads Waiting) and their cells summed: placed, released
// (outside the mask), ready and held back; an object not under a
// rollout counts nowhere.
func TestReleaseState(t *testing.T) {
	first := object("app:2", []string{"a"}, map[string]string{rollout.AnnotationState: rollout.StateProgressing})
	second := object("app:2", []string{"a", "b"}, nil)
	second.SetName("api")
	other := object("app:2", []string{"a"}, nil)
	other.SetNamespace("bank")
	other.SetLabels(nil)
	placed := func(*unstructured.Unstructured) []string { return []string{"a", "b", "c"} }
	states, cells := releaseState("federateddeployments", []any{first, second, other}, placed)
	shop := workspaceKey{"federateddeployments", "shop"}
	if want := map[workspaceKey]map[string]int{shop: {rollout.StateProgressing: 1, rollout.StateWaiting: 1}}; !reflect.DeepEqual(states, want) {
		t.Errorf("states = %v, want %v", states, want)
	}
	if want := map[workspaceKey]cellCounts{shop: {placed: 6, released: 3, ready: 3, heldBack: 3}}; !reflect.DeepEqual(cells, want) {
		t.Errorf("cells = %+v, want %+v", cells, want)
	}
}

// TestPauseReason: the deadline's pause and a failure's pause are told
// apart by the decision itself.
func TestPauseReason(t *testing.T) {
	deadline := rollout.Settings{Auto: true, BatchSize: 1, ProgressDeadline: 30 * time.Second, ProgressSince: now.Add(-time.Minute)}
	failure := rollout.Settings{Auto: true, BatchSize: 1, PauseOnFailure: true}
	for _, tc := range []struct {
		name   string
		set    rollout.Settings
		status string
		want   string
	}{
		{"a batch past its deadline", deadline, "OK", pauseDeadline},
		{"a failed cell", failure, "UpdateFailed", pauseFailure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := object("app:2", []string{"a", "b"}, nil)
			tops, _, _ := unstructured.NestedSlice(obj.Object, "status", "topologies")
			tops[1].(map[string]any)["status"], tops[1].(map[string]any)["ready"] = tc.status, false
			if err := unstructured.SetNestedSlice(obj.Object, tops, "status", "topologies"); err != nil {
				t.Fatal(err)
			}
			fed, err := rollout.Decode(obj)
			if err != nil {
				t.Fatal(err)
			}
			placed := []string{"a", "b", "c"}
			d := rollout.Decide(rollout.Input{Settings: tc.set, Placed: placed, Mask: []string{"a", "b"}, Rows: rollout.Rows(fed, placed), Hash: "new", Now: now})
			if d.Step != rollout.Pause {
				t.Fatalf("step = %s (%s), want pause", d.Step, d.Message)
			}
			if got := pauseReason(d); got != tc.want {
				t.Errorf("pause reason = %s, want %s (%s)", got, tc.want, d.Message)
			}
		})
	}
}
