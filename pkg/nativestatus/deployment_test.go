package nativestatus

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	deploymentKind = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	t0             = time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)
)

// cond is a member status condition.
func cond(t, s, reason string) any {
	return map[string]any{"type": t, "status": s, "reason": reason}
}

// rolledOut is a cell's Deployment status after a finished rollout of
// its member generation gen with n replicas.
func rolledOut(gen, n int64) map[string]any {
	return map[string]any{
		"observedGeneration": gen, "replicas": n, "updatedReplicas": n, "readyReplicas": n, "availableReplicas": n,
		"conditions": []any{cond("Available", "True", "MinimumReplicasAvailable"), cond("Progressing", "True", "NewReplicaSetAvailable")},
	}
}

// midRollout is a cell's Deployment status while its member generation
// gen rolls out: n replicas, u of them updated, a available.
func midRollout(gen, n, u, a int64) map[string]any {
	return map[string]any{
		"observedGeneration": gen, "replicas": n, "updatedReplicas": u, "readyReplicas": a, "availableReplicas": a,
		"unavailableReplicas": n - a,
		"conditions":          []any{cond("Available", "True", "MinimumReplicasAvailable"), cond("Progressing", "True", "ReplicaSetUpdated")},
	}
}

// kubectlRolloutStatus is what kubectl rollout status decides for a
// Deployment (its DeploymentStatusViewer): done, still waiting, or an
// error (the progress deadline).
func kubectlRolloutStatus(gen, specReplicas int64, st map[string]any) (done bool, failed bool) {
	if gen > num(st, "observedGeneration") {
		return false, false
	}
	if p := find(st, "Progressing"); p != nil && p["reason"] == ReasonProgressDeadlineExceeded {
		return false, true
	}
	switch {
	case num(st, "updatedReplicas") < specReplicas:
		return false, false
	case num(st, "replicas") > num(st, "updatedReplicas"):
		return false, false
	case num(st, "availableReplicas") < num(st, "updatedReplicas"):
		return false, false
	}
	return true, false
}

// kstatusCurrent is what kstatus (Helm v4's --wait) decides for a
// Deployment: Current, InProgress or Failed.
func kstatusCurrent(gen, specReplicas int64, st map[string]any) string {
	if num(st, "observedGeneration") < gen {
		return "InProgress"
	}
	progressing, available := false, false
	for _, c := range conditionsOf(st) {
		switch c["type"] {
		case "Progressing":
			if c["reason"] == ReasonProgressDeadlineExceeded {
				return "Failed"
			}
			progressing = c["status"] == "True" && c["reason"] == ReasonNewReplicaSetAvailable
		case "Available":
			available = c["status"] == "True"
		}
	}
	r, u, ready, a := num(st, "replicas"), num(st, "updatedReplicas"), num(st, "readyReplicas"), num(st, "availableReplicas")
	if specReplicas > r || specReplicas > u || r > specReplicas || u > a || specReplicas > ready || !progressing || !available {
		return "InProgress"
	}
	return "Current"
}

func TestDeployment(t *testing.T) {
	const gen = 4
	spec := map[string]any{"replicas": int64(6)}
	heldBackSince := func(ago time.Duration) map[string]any {
		ts := t0.Add(-ago).Format(time.RFC3339)
		return map[string]any{
			"observedGeneration": int64(gen), "replicas": int64(6), "updatedReplicas": int64(3), "readyReplicas": int64(6), "availableReplicas": int64(6),
			"conditions": []any{map[string]any{"type": "Progressing", "status": "True", "reason": ReasonHeldBack, "lastUpdateTime": ts, "lastTransitionTime": ts,
				"message": "3 of 6 replicas run the current template; held back by the placement mask, not running the current template: rz01a."}},
		}
	}
	tests := []struct {
		name     string
		spec     map[string]any
		cells    []Cell
		previous map[string]any
		// want: fields of the aggregate (conditions apart).
		want          map[string]int64
		available     string
		progressing   string // reason
		mentions      string // in the Progressing message
		kubectlDone   bool
		kubectlFailed bool
		kstatus       string
	}{
		{
			name: "every cell runs the current template",
			cells: []Cell{
				{Name: "rz00a", Current: true, MemberGeneration: 7, Status: rolledOut(7, 3)},
				{Name: "rz01a", Current: true, MemberGeneration: 2, Status: rolledOut(2, 3)},
			},
			want:      map[string]int64{"observedGeneration": gen, "replicas": 6, "updatedReplicas": 6, "readyReplicas": 6, "availableReplicas": 6},
			available: "True", progressing: ReasonNewReplicaSetAvailable, kubectlDone: true, kstatus: "Current",
		},
		{
			name: "a cell reports an older observedGeneration: its member has not seen the write",
			cells: []Cell{
				{Name: "rz00a", Current: true, MemberGeneration: 7, Status: rolledOut(7, 3)},
				{Name: "rz01a", Current: true, MemberGeneration: 3, Status: rolledOut(2, 3)},
			},
			previous:  map[string]any{"observedGeneration": int64(3)},
			want:      map[string]int64{"observedGeneration": 3, "replicas": 6, "updatedReplicas": 3, "readyReplicas": 6, "availableReplicas": 6},
			available: "True", progressing: ReasonReplicaSetUpdated, mentions: "not running the current template yet: rz01a", kstatus: "InProgress",
		},
		{
			name: "the controller has not written the current template to a cell yet",
			cells: []Cell{
				{Name: "rz00a", Current: true, MemberGeneration: 7, Status: rolledOut(7, 3)},
				{Name: "rz01a", Current: false, MemberGeneration: 2, Status: rolledOut(2, 3)},
			},
			want:      map[string]int64{"observedGeneration": gen - 1, "replicas": 6, "updatedReplicas": 3, "readyReplicas": 6, "availableReplicas": 6},
			available: "True", progressing: ReasonReplicaSetUpdated, mentions: "rz01a", kstatus: "InProgress",
		},
		{
			name: "a cell's member has not written a status yet (just created)",
			cells: []Cell{
				{Name: "rz00a", Current: true, MemberGeneration: 7, Status: rolledOut(7, 3)},
				{Name: "rz01a", Current: true, MemberGeneration: 1, Status: map[string]any{}},
			},
			want:      map[string]int64{"observedGeneration": gen - 1, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3},
			available: "False", progressing: ReasonReplicaSetUpdated, mentions: "rz01a", kstatus: "InProgress",
		},
		{
			name: "a cell still rolling out",
			cells: []Cell{
				{Name: "rz00a", Current: true, MemberGeneration: 7, Status: rolledOut(7, 3)},
				{Name: "rz01a", Current: true, MemberGeneration: 2, Status: midRollout(2, 4, 2, 3)},
			},
			want:      map[string]int64{"observedGeneration": gen, "replicas": 7, "updatedReplicas": 5, "readyReplicas": 6, "availableReplicas": 6, "unavailableReplicas": 1},
			available: "True", progressing: ReasonReplicaSetUpdated, kstatus: "InProgress",
		},
		{
			name: "a held-back cell runs an older template: observed, not updated, HeldBack",
			cells: []Cell{
				{Name: "rz00a", Current: true, MemberGeneration: 7, Status: rolledOut(7, 3)},
				{Name: "rz01a", HeldBack: true, MemberGeneration: 1, Status: rolledOut(1, 3)},
			},
			want:      map[string]int64{"observedGeneration": gen, "replicas": 6, "updatedReplicas": 3, "readyReplicas": 6, "availableReplicas": 6},
			available: "True", progressing: ReasonHeldBack, mentions: "held back by the placement mask, not running the current template: rz01a", kstatus: "InProgress",
		},
		{
			name: "held back past the progress deadline without progress: ProgressDeadlineExceeded",
			cells: []Cell{
				{Name: "rz00a", Current: true, MemberGeneration: 7, Status: rolledOut(7, 3)},
				{Name: "rz01a", HeldBack: true, MemberGeneration: 1, Status: rolledOut(1, 3)},
			},
			previous:  heldBackSince(11 * time.Minute),
			want:      map[string]int64{"observedGeneration": gen, "replicas": 6, "updatedReplicas": 3, "readyReplicas": 6, "availableReplicas": 6},
			available: "True", progressing: ReasonProgressDeadlineExceeded, mentions: "rz01a", kubectlFailed: true, kstatus: "Failed",
		},
		{
			name: "held back within the progress deadline: still HeldBack",
			cells: []Cell{
				{Name: "rz00a", Current: true, MemberGeneration: 7, Status: rolledOut(7, 3)},
				{Name: "rz01a", HeldBack: true, MemberGeneration: 1, Status: rolledOut(1, 3)},
			},
			previous:  heldBackSince(9 * time.Minute),
			want:      map[string]int64{"observedGeneration": gen},
			available: "True", progressing: ReasonHeldBack, kstatus: "InProgress",
		},
		{
			name: "a longer progressDeadlineSeconds waits longer",
			spec: map[string]any{"replicas": int64(6), "progressDeadlineSeconds": int64(3600)},
			cells: []Cell{
				{Name: "rz00a", Current: true, MemberGeneration: 7, Status: rolledOut(7, 3)},
				{Name: "rz01a", HeldBack: true, MemberGeneration: 1, Status: rolledOut(1, 3)},
			},
			previous:  heldBackSince(59 * time.Minute),
			want:      map[string]int64{"observedGeneration": gen},
			available: "True", progressing: ReasonHeldBack, kstatus: "InProgress",
		},
		{
			name: "the mask lifted: the held-back cell rolls out, done",
			cells: []Cell{
				{Name: "rz00a", Current: true, MemberGeneration: 7, Status: rolledOut(7, 3)},
				{Name: "rz01a", Current: true, MemberGeneration: 2, Status: rolledOut(2, 3)},
			},
			previous:  heldBackSince(30 * time.Minute),
			want:      map[string]int64{"observedGeneration": gen, "updatedReplicas": 6},
			available: "True", progressing: ReasonNewReplicaSetAvailable, kubectlDone: true, kstatus: "Current",
		},
		{
			name: "a cell held back before the object ever ran there",
			cells: []Cell{
				{Name: "rz00a", Current: true, MemberGeneration: 1, Status: rolledOut(1, 3)},
				{Name: "rz01a", HeldBack: true},
			},
			want:      map[string]int64{"observedGeneration": gen, "replicas": 3, "updatedReplicas": 3, "availableReplicas": 3},
			available: "True", progressing: ReasonHeldBack, mentions: "rz01a", kstatus: "InProgress",
		},
		{
			name: "a held-back cell scaled to zero at an older template: not done either",
			spec: map[string]any{"replicas": int64(3)},
			cells: []Cell{
				{Name: "rz00a", Current: true, MemberGeneration: 7, Status: rolledOut(7, 3)},
				{Name: "rz01a", HeldBack: true, MemberGeneration: 1, Status: map[string]any{"observedGeneration": int64(1),
					"conditions": []any{cond("Available", "True", "MinimumReplicasAvailable"), cond("Progressing", "True", "NewReplicaSetAvailable")}}},
			},
			want:      map[string]int64{"observedGeneration": gen, "replicas": 3, "updatedReplicas": 3},
			available: "True", progressing: ReasonHeldBack, mentions: "rz01a", kubectlDone: true, kstatus: "InProgress",
		},
		{
			name: "an offline cell: its pods are neither ready nor available",
			cells: []Cell{
				{Name: "rz00a", Current: true, MemberGeneration: 7, Status: rolledOut(7, 3)},
				{Name: "rz01a", Offline: true, Current: true, MemberGeneration: 2, Status: rolledOut(2, 3)},
			},
			want:      map[string]int64{"observedGeneration": gen, "replicas": 6, "updatedReplicas": 6, "readyReplicas": 3, "availableReplicas": 3, "unavailableReplicas": 3},
			available: "False", progressing: ReasonReplicaSetUpdated, mentions: "offline (last known status counted, no pod available): rz01a", kstatus: "InProgress",
		},
		{
			name: "a cell exceeded its own progress deadline",
			cells: []Cell{
				{Name: "rz00a", Current: true, MemberGeneration: 7, Status: rolledOut(7, 3)},
				{Name: "rz01a", Current: true, MemberGeneration: 2, Status: map[string]any{
					"observedGeneration": int64(2), "replicas": int64(4), "updatedReplicas": int64(1), "readyReplicas": int64(3), "availableReplicas": int64(3),
					"conditions": []any{cond("Available", "True", "MinimumReplicasAvailable"), cond("Progressing", "False", ReasonProgressDeadlineExceeded)}}},
			},
			want:      map[string]int64{"observedGeneration": gen, "updatedReplicas": 4},
			available: "True", progressing: ReasonProgressDeadlineExceeded, mentions: "rz01a", kubectlFailed: true, kstatus: "Failed",
		},
		{
			name: "a cell not available by its own rule",
			cells: []Cell{
				{Name: "rz00a", Current: true, MemberGeneration: 7, Status: rolledOut(7, 3)},
				{Name: "rz01a", Current: true, MemberGeneration: 2, Status: map[string]any{
					"observedGeneration": int64(2), "replicas": int64(3), "updatedReplicas": int64(3), "unavailableReplicas": int64(3),
					"conditions": []any{cond("Available", "False", "MinimumReplicasUnavailable"), cond("Progressing", "True", "ReplicaSetUpdated")}}},
			},
			want:      map[string]int64{"observedGeneration": gen, "updatedReplicas": 6, "availableReplicas": 3},
			available: "False", progressing: ReasonReplicaSetUpdated, kstatus: "InProgress",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sp := spec
			if tc.spec != nil {
				sp = tc.spec
			}
			st, ok := Aggregate(Input{Kind: deploymentKind, Generation: gen, Spec: sp, Divided: true, Cells: tc.cells, Previous: tc.previous, Now: t0})
			if !ok {
				t.Fatal("Deployment not aggregated")
			}
			for k, v := range tc.want {
				if got := num(st, k); got != v {
					t.Errorf("%s = %d, want %d", k, got, v)
				}
			}
			if a := find(st, "Available"); a == nil || a["status"] != tc.available {
				t.Errorf("Available = %v, want status %s", a, tc.available)
			}
			p := find(st, "Progressing")
			if p == nil || p["reason"] != tc.progressing {
				t.Errorf("Progressing = %v, want reason %s", p, tc.progressing)
			} else if msg, _ := p["message"].(string); !strings.Contains(msg, tc.mentions) {
				t.Errorf("Progressing message %q does not say %q", msg, tc.mentions)
			}
			want := specInt(sp, 1, "replicas")
			done, failed := kubectlRolloutStatus(gen, want, st)
			if done != tc.kubectlDone || failed != tc.kubectlFailed {
				t.Errorf("kubectl rollout status: done %v failed %v, want done %v failed %v", done, failed, tc.kubectlDone, tc.kubectlFailed)
			}
			if got := kstatusCurrent(gen, want, st); got != tc.kstatus {
				t.Errorf("kstatus = %s, want %s", got, tc.kstatus)
			}
		})
	}
}

// TestDeploymentConditionTimes: a condition that holds keeps its times,
// so an unchanged aggregate is written once; progress moves
// Progressing's lastUpdateTime (the clock of the progress deadline).
func TestDeploymentConditionTimes(t *testing.T) {
	cells := []Cell{
		{Name: "rz00a", Current: true, MemberGeneration: 7, Status: rolledOut(7, 3)},
		{Name: "rz01a", HeldBack: true, MemberGeneration: 1, Status: rolledOut(1, 3)},
	}
	in := Input{Kind: deploymentKind, Generation: 4, Spec: map[string]any{"replicas": int64(6)}, Divided: true, Cells: cells, Now: t0}
	first, _ := Aggregate(in)
	in.Previous, in.Now = first, t0.Add(5*time.Minute)
	second, _ := Aggregate(in)
	for _, typ := range []string{"Available", "Progressing"} {
		if a, b := find(first, typ), find(second, typ); a["lastUpdateTime"] != b["lastUpdateTime"] || a["lastTransitionTime"] != b["lastTransitionTime"] {
			t.Errorf("%s times moved without a change: %v, then %v", typ, a, b)
		}
	}
	// Progress: the released cell gains a replica.
	cells[0].Status = rolledOut(7, 4)
	in.Previous, in.Now = second, t0.Add(20*time.Minute)
	third, _ := Aggregate(in)
	p := find(third, "Progressing")
	if p["reason"] != ReasonHeldBack || p["lastUpdateTime"] != in.Now.Format(time.RFC3339) {
		t.Errorf("Progressing after progress = %v, want HeldBack updated at %s", p, in.Now.Format(time.RFC3339))
	}
}
