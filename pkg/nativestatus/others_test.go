package nativestatus

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func aggregate(t *testing.T, kind schema.GroupKind, gen int64, spec map[string]any, cells ...Cell) map[string]any {
	t.Helper()
	st, ok := Aggregate(Input{Kind: kind, Generation: gen, Spec: spec, Divided: true, Cells: cells, Now: t0})
	if !ok {
		t.Fatalf("%s not aggregated", kind)
	}
	return st
}

// kubectlStatefulSetDone is kubectl rollout status' rule for a
// StatefulSet with the RollingUpdate strategy (partition 0, as the API
// defaults it).
func kubectlStatefulSetDone(gen, want int64, st map[string]any) bool {
	return num(st, "observedGeneration") >= gen && num(st, "readyReplicas") >= want && num(st, "updatedReplicas") >= want
}

// kstatusStatefulSetCurrent is kstatus' rule without a partition.
func kstatusStatefulSetCurrent(gen, want int64, st map[string]any) bool {
	return num(st, "observedGeneration") >= gen && num(st, "replicas") == want && num(st, "readyReplicas") >= want &&
		num(st, "currentReplicas") >= want && st["currentRevision"] == st["updateRevision"]
}

func TestStatefulSet(t *testing.T) {
	sts := schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	done := func(gen, n int64, rev string) map[string]any {
		return map[string]any{"observedGeneration": gen, "replicas": n, "readyReplicas": n, "availableReplicas": n, "currentReplicas": n,
			"updatedReplicas": n, "currentRevision": rev, "updateRevision": rev}
	}
	rolling := func(gen, n, updated int64, cur, upd string) map[string]any {
		return map[string]any{"observedGeneration": gen, "replicas": n, "readyReplicas": n, "availableReplicas": n, "currentReplicas": n - updated,
			"updatedReplicas": updated, "currentRevision": cur, "updateRevision": upd}
	}
	spec := map[string]any{"replicas": int64(4)}
	tests := []struct {
		name    string
		cells   []Cell
		want    map[string]int64
		done    bool
		kstatus bool
	}{
		{
			name:  "rolled out everywhere",
			cells: []Cell{{Name: "a", Current: true, MemberGeneration: 2, Status: done(2, 2, "web-new")}, {Name: "b", Current: true, MemberGeneration: 5, Status: done(5, 2, "web-new")}},
			want:  map[string]int64{"observedGeneration": 3, "replicas": 4, "readyReplicas": 4, "updatedReplicas": 4, "currentReplicas": 4},
			done:  true, kstatus: true,
		},
		{
			name:  "a cell reports an older observedGeneration",
			cells: []Cell{{Name: "a", Current: true, MemberGeneration: 2, Status: done(2, 2, "web-new")}, {Name: "b", Current: true, MemberGeneration: 5, Status: done(4, 2, "web-old")}},
			want:  map[string]int64{"observedGeneration": 2, "updatedReplicas": 2},
		},
		{
			name:  "a cell mid rolling update",
			cells: []Cell{{Name: "a", Current: true, MemberGeneration: 2, Status: done(2, 2, "web-new")}, {Name: "b", Current: true, MemberGeneration: 5, Status: rolling(5, 2, 1, "web-old", "web-new")}},
			want:  map[string]int64{"observedGeneration": 3, "updatedReplicas": 3, "currentReplicas": 3},
		},
		{
			name:  "a held-back cell on an older template",
			cells: []Cell{{Name: "a", Current: true, MemberGeneration: 2, Status: done(2, 2, "web-new")}, {Name: "b", HeldBack: true, MemberGeneration: 4, Status: done(4, 2, "web-old")}},
			want:  map[string]int64{"observedGeneration": 3, "updatedReplicas": 2, "readyReplicas": 4},
		},
		{
			name:  "an offline cell",
			cells: []Cell{{Name: "a", Current: true, MemberGeneration: 2, Status: done(2, 2, "web-new")}, {Name: "b", Offline: true, Current: true, MemberGeneration: 5, Status: done(5, 2, "web-new")}},
			want:  map[string]int64{"observedGeneration": 3, "updatedReplicas": 4, "readyReplicas": 2, "availableReplicas": 2},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := aggregate(t, sts, 3, spec, tc.cells...)
			for k, v := range tc.want {
				if got := num(st, k); got != v {
					t.Errorf("%s = %d, want %d", k, got, v)
				}
			}
			if got := kubectlStatefulSetDone(3, 4, st); got != tc.done {
				t.Errorf("kubectl rollout status done = %v, want %v (%v)", got, tc.done, st)
			}
			if got := kstatusStatefulSetCurrent(3, 4, st); got != tc.kstatus {
				t.Errorf("kstatus Current = %v, want %v (%v)", got, tc.kstatus, st)
			}
		})
	}
}

func TestDaemonSet(t *testing.T) {
	ds := schema.GroupKind{Group: "apps", Kind: "DaemonSet"}
	status := func(gen, desired, updated, available int64) map[string]any {
		return map[string]any{"observedGeneration": gen, "desiredNumberScheduled": desired, "currentNumberScheduled": desired,
			"numberReady": available, "updatedNumberScheduled": updated, "numberAvailable": available, "numberUnavailable": desired - available}
	}
	// kubectl rollout status' rule for a DaemonSet.
	kubectlDone := func(gen int64, st map[string]any) bool {
		return num(st, "observedGeneration") >= gen && num(st, "updatedNumberScheduled") >= num(st, "desiredNumberScheduled") &&
			num(st, "numberAvailable") >= num(st, "desiredNumberScheduled")
	}
	tests := []struct {
		name  string
		cells []Cell
		want  map[string]int64
		done  bool
	}{
		{"rolled out everywhere", []Cell{{Name: "a", Current: true, MemberGeneration: 1, Status: status(1, 3, 3, 3)}, {Name: "b", Current: true, MemberGeneration: 1, Status: status(1, 5, 5, 5)}},
			map[string]int64{"observedGeneration": 2, "desiredNumberScheduled": 8, "updatedNumberScheduled": 8, "numberAvailable": 8}, true},
		{"a cell reports an older observedGeneration", []Cell{{Name: "a", Current: true, MemberGeneration: 2, Status: status(1, 3, 3, 3)}, {Name: "b", Current: true, MemberGeneration: 1, Status: status(1, 5, 5, 5)}},
			map[string]int64{"observedGeneration": 1, "updatedNumberScheduled": 5}, false},
		{"a held-back cell on an older template", []Cell{{Name: "a", HeldBack: true, MemberGeneration: 1, Status: status(1, 3, 3, 3)}, {Name: "b", Current: true, MemberGeneration: 1, Status: status(1, 5, 5, 5)}},
			map[string]int64{"observedGeneration": 2, "desiredNumberScheduled": 8, "updatedNumberScheduled": 5}, false},
		{"an offline cell", []Cell{{Name: "a", Offline: true, Current: true, MemberGeneration: 1, Status: status(1, 3, 3, 3)}, {Name: "b", Current: true, MemberGeneration: 1, Status: status(1, 5, 5, 5)}},
			map[string]int64{"observedGeneration": 2, "numberAvailable": 5, "numberUnavailable": 3, "numberReady": 5}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := aggregate(t, ds, 2, nil, tc.cells...)
			for k, v := range tc.want {
				if got := num(st, k); got != v {
					t.Errorf("%s = %d, want %d", k, got, v)
				}
			}
			if got := kubectlDone(2, st); got != tc.done {
				t.Errorf("kubectl rollout status done = %v, want %v (%v)", got, tc.done, st)
			}
		})
	}
}

func TestReplicaSet(t *testing.T) {
	rs := schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}
	status := func(gen, n int64) map[string]any {
		return map[string]any{"observedGeneration": gen, "replicas": n, "fullyLabeledReplicas": n, "readyReplicas": n, "availableReplicas": n}
	}
	tests := []struct {
		name  string
		cells []Cell
		want  map[string]int64
	}{
		{"every cell current", []Cell{{Name: "a", Current: true, MemberGeneration: 1, Status: status(1, 2)}, {Name: "b", Current: true, MemberGeneration: 3, Status: status(3, 1)}},
			map[string]int64{"observedGeneration": 2, "replicas": 3, "readyReplicas": 3, "availableReplicas": 3, "fullyLabeledReplicas": 3}},
		// No updated count says it: observedGeneration does.
		{"a held-back cell on an older template", []Cell{{Name: "a", HeldBack: true, MemberGeneration: 1, Status: status(1, 2)}, {Name: "b", Current: true, MemberGeneration: 3, Status: status(3, 1)}},
			map[string]int64{"observedGeneration": 1, "replicas": 3}},
		{"an offline cell", []Cell{{Name: "a", Offline: true, Current: true, MemberGeneration: 1, Status: status(1, 2)}, {Name: "b", Current: true, MemberGeneration: 3, Status: status(3, 1)}},
			map[string]int64{"observedGeneration": 2, "replicas": 3, "readyReplicas": 1, "availableReplicas": 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := aggregate(t, rs, 2, map[string]any{"replicas": int64(3)}, tc.cells...)
			for k, v := range tc.want {
				if got := num(st, k); got != v {
					t.Errorf("%s = %d, want %d", k, got, v)
				}
			}
		})
	}
}

func TestJob(t *testing.T) {
	jobKind := schema.GroupKind{Group: "batch", Kind: "Job"}
	complete := func(succeeded int64, start, end string) map[string]any {
		return map[string]any{"succeeded": succeeded, "startTime": start, "completionTime": end,
			"conditions": []any{cond("SuccessCriteriaMet", "True", "CompletionsReached"), cond("Complete", "True", "CompletionsReached")}}
	}
	running := map[string]any{"active": int64(2), "ready": int64(2), "startTime": "2026-12-07T05:00:00Z"}
	failed := map[string]any{"failed": int64(7), "startTime": "2026-12-07T05:00:00Z",
		"conditions": []any{cond("FailureTarget", "True", "BackoffLimitExceeded"), cond("Failed", "True", "BackoffLimitExceeded")}}
	tests := []struct {
		name       string
		cells      []Cell
		want       map[string]int64
		condition  string // the Complete or Failed condition set, "" for none
		reason     string
		completion string
	}{
		{"complete everywhere", []Cell{{Name: "a", Current: true, Status: complete(1, "2026-12-07T05:00:00Z", "2026-12-07T05:02:00Z")}, {Name: "b", Current: true, Status: complete(1, "2026-12-07T05:01:00Z", "2026-12-07T05:04:00Z")}},
			map[string]int64{"succeeded": 2}, "Complete", "CompletionsReached", "2026-12-07T05:04:00Z"},
		{"still running in a cell", []Cell{{Name: "a", Current: true, Status: complete(1, "2026-12-07T05:00:00Z", "2026-12-07T05:02:00Z")}, {Name: "b", Current: true, Status: running}},
			map[string]int64{"succeeded": 1, "active": 2, "ready": 2}, "", "", ""},
		{"failed in a cell", []Cell{{Name: "a", Current: true, Status: complete(1, "2026-12-07T05:00:00Z", "2026-12-07T05:02:00Z")}, {Name: "b", Current: true, Status: failed}},
			map[string]int64{"succeeded": 1, "failed": 7}, "Failed", "BackoffLimitExceeded", ""},
		{"held back before it ever ran there: not complete", []Cell{{Name: "a", Current: true, Status: complete(1, "2026-12-07T05:00:00Z", "2026-12-07T05:02:00Z")}, {Name: "b", HeldBack: true}},
			map[string]int64{"succeeded": 1}, "", "", ""},
		{"held back, complete where it ran", []Cell{{Name: "a", Current: true, Status: complete(1, "2026-12-07T05:00:00Z", "2026-12-07T05:02:00Z")}, {Name: "b", HeldBack: true, Status: complete(1, "2026-12-07T04:00:00Z", "2026-12-07T04:01:00Z")}},
			map[string]int64{"succeeded": 2}, "Complete", "CompletionsReached", "2026-12-07T05:02:00Z"},
		{"offline: counts as last known, no pod ready", []Cell{{Name: "a", Current: true, Status: complete(1, "2026-12-07T05:00:00Z", "2026-12-07T05:02:00Z")}, {Name: "b", Offline: true, Current: true, Status: running}},
			map[string]int64{"succeeded": 1, "active": 2, "ready": 0}, "", "", ""},
		{"not created in a cell yet", []Cell{{Name: "a", Current: true, Status: complete(1, "2026-12-07T05:00:00Z", "2026-12-07T05:02:00Z")}, {Name: "b"}},
			map[string]int64{"succeeded": 1}, "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := aggregate(t, jobKind, 1, nil, tc.cells...)
			for k, v := range tc.want {
				if got := num(st, k); got != v {
					t.Errorf("%s = %d, want %d", k, got, v)
				}
			}
			for _, typ := range []string{"Complete", "Failed"} {
				c := find(st, typ)
				switch {
				case typ == tc.condition && (c == nil || c["status"] != "True" || c["reason"] != tc.reason):
					t.Errorf("%s = %v, want True reason %s", typ, c, tc.reason)
				case typ != tc.condition && c != nil:
					t.Errorf("%s = %v, want none", typ, c)
				}
			}
			if got, _ := st["completionTime"].(string); got != tc.completion {
				t.Errorf("completionTime = %q, want %q", got, tc.completion)
			}
			if got := st["startTime"]; got == nil {
				t.Error("no startTime")
			}
		})
	}
}

func TestCronJob(t *testing.T) {
	ref := func(name string) any { return map[string]any{"kind": "Job", "namespace": "shop", "name": name} }
	st := aggregate(t, schema.GroupKind{Group: "batch", Kind: "CronJob"}, 1, nil,
		Cell{Name: "b", Current: true, Status: map[string]any{"active": []any{ref("nightly-2")}, "lastScheduleTime": "2026-12-07T05:00:00Z", "lastSuccessfulTime": "2026-12-06T05:03:00Z"}},
		Cell{Name: "a", Current: true, Status: map[string]any{"active": []any{ref("nightly-1")}, "lastScheduleTime": "2026-12-07T04:00:00Z", "lastSuccessfulTime": "2026-12-07T04:01:00Z"}},
		Cell{Name: "c", HeldBack: true},
	)
	want := map[string]any{
		"active":           []any{ref("nightly-1"), ref("nightly-2")},
		"lastScheduleTime": "2026-12-07T05:00:00Z", "lastSuccessfulTime": "2026-12-07T04:01:00Z",
	}
	if !reflect.DeepEqual(st, want) {
		t.Errorf("CronJob status = %v, want %v", st, want)
	}
}

func TestService(t *testing.T) {
	svc := schema.GroupKind{Kind: "Service"}
	lb := func(ips ...string) map[string]any {
		var ing []any
		for _, ip := range ips {
			ing = append(ing, map[string]any{"ip": ip})
		}
		return map[string]any{"loadBalancer": map[string]any{"ingress": ing}}
	}
	tests := []struct {
		name  string
		cells []Cell
		want  []string
	}{
		{"an ingress per cell, each once, in cell order", []Cell{{Name: "b", Current: true, Status: lb("10.0.0.2", "10.0.0.9")}, {Name: "a", Current: true, Status: lb("10.0.0.1", "10.0.0.9")}},
			[]string{"10.0.0.1", "10.0.0.9", "10.0.0.2"}},
		{"a cell without one yet: none until every cell has one", []Cell{{Name: "a", Current: true, Status: lb("10.0.0.1")}, {Name: "b", Current: true, Status: map[string]any{"loadBalancer": map[string]any{}}}}, nil},
		{"held back before it ran there: not waited for", []Cell{{Name: "a", Current: true, Status: lb("10.0.0.1")}, {Name: "b", HeldBack: true}}, []string{"10.0.0.1"}},
		{"offline: its last known ingress", []Cell{{Name: "a", Current: true, Status: lb("10.0.0.1")}, {Name: "b", Offline: true, Status: lb("10.0.0.2")}}, []string{"10.0.0.1", "10.0.0.2"}},
		{"ClusterIP Services have none", []Cell{{Name: "a", Current: true, Status: map[string]any{"loadBalancer": map[string]any{}}}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := aggregate(t, svc, 1, nil, tc.cells...)
			lbst, ok := st["loadBalancer"].(map[string]any)
			if !ok {
				t.Fatalf("no status.loadBalancer: %v", st)
			}
			var got []string
			ing, _ := lbst["ingress"].([]any)
			for _, e := range ing {
				got = append(got, e.(map[string]any)["ip"].(string))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ingress = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHPA(t *testing.T) {
	hpaKind := schema.GroupKind{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}
	status := func(gen, cur, desired int64, limited string) map[string]any {
		return map[string]any{"observedGeneration": gen, "currentReplicas": cur, "desiredReplicas": desired, "lastScaleTime": "2026-12-07T05:00:00Z",
			"conditions": []any{cond("AbleToScale", "True", "ReadyForNewScale"), cond("ScalingActive", "True", "ValidMetricFound"), cond("ScalingLimited", limited, "DesiredWithinRange")}}
	}
	noMetrics := status(1, 2, 2, "False")
	noMetrics["conditions"] = []any{cond("AbleToScale", "True", "ReadyForNewScale"), cond("ScalingActive", "False", "FailedGetResourceMetric")}
	tests := []struct {
		name                              string
		cells                             []Cell
		want                              map[string]int64
		active, limited, activeReasonWant string
	}{
		{"scaling in every cell", []Cell{{Name: "a", Current: true, MemberGeneration: 1, Status: status(1, 2, 3, "False")}, {Name: "b", Current: true, MemberGeneration: 1, Status: status(1, 4, 4, "False")}},
			map[string]int64{"observedGeneration": 2, "currentReplicas": 6, "desiredReplicas": 7}, "True", "False", "ValidMetricFound"},
		{"a cell without metrics", []Cell{{Name: "a", Current: true, MemberGeneration: 1, Status: status(1, 2, 3, "False")}, {Name: "b", Current: true, MemberGeneration: 1, Status: noMetrics}},
			map[string]int64{"observedGeneration": 2}, "False", "False", "FailedGetResourceMetric"},
		{"limited in a cell", []Cell{{Name: "a", Current: true, MemberGeneration: 1, Status: status(1, 2, 3, "True")}, {Name: "b", Current: true, MemberGeneration: 1, Status: status(1, 4, 4, "False")}},
			map[string]int64{"observedGeneration": 2}, "True", "True", "ValidMetricFound"},
		{"a held-back cell on an older spec", []Cell{{Name: "a", HeldBack: true, MemberGeneration: 1, Status: status(1, 2, 3, "False")}, {Name: "b", Current: true, MemberGeneration: 1, Status: status(1, 4, 4, "False")}},
			map[string]int64{"observedGeneration": 1, "currentReplicas": 6}, "True", "False", "ValidMetricFound"},
		{"an offline cell: its conditions do not speak", []Cell{{Name: "a", Offline: true, Current: true, MemberGeneration: 1, Status: noMetrics}, {Name: "b", Current: true, MemberGeneration: 1, Status: status(1, 4, 4, "False")}},
			map[string]int64{"observedGeneration": 2, "currentReplicas": 6}, "True", "False", "ValidMetricFound"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := aggregate(t, hpaKind, 2, nil, tc.cells...)
			for k, v := range tc.want {
				if got := num(st, k); got != v {
					t.Errorf("%s = %d, want %d", k, got, v)
				}
			}
			if c := find(st, "ScalingActive"); c == nil || c["status"] != tc.active || c["reason"] != tc.activeReasonWant {
				t.Errorf("ScalingActive = %v, want %s %s", c, tc.active, tc.activeReasonWant)
			}
			if c := find(st, "ScalingLimited"); c == nil || c["status"] != tc.limited {
				t.Errorf("ScalingLimited = %v, want %s", c, tc.limited)
			}
		})
	}
}

func TestPDB(t *testing.T) {
	pdbKind := schema.GroupKind{Group: "policy", Kind: "PodDisruptionBudget"}
	status := func(healthy, desired, expected, allowed int64) map[string]any {
		s := "True"
		if allowed == 0 {
			s = "False"
		}
		return map[string]any{"observedGeneration": int64(1), "currentHealthy": healthy, "desiredHealthy": desired, "expectedPods": expected,
			"disruptionsAllowed": allowed, "conditions": []any{cond("DisruptionAllowed", s, "SufficientPods")}}
	}
	tests := []struct {
		name    string
		cells   []Cell
		want    map[string]int64
		allowed string
		names   string
	}{
		{"allowed everywhere", []Cell{{Name: "a", Current: true, MemberGeneration: 1, Status: status(3, 2, 3, 1)}, {Name: "b", Current: true, MemberGeneration: 1, Status: status(3, 2, 3, 1)}},
			map[string]int64{"currentHealthy": 6, "desiredHealthy": 4, "expectedPods": 6, "disruptionsAllowed": 2, "observedGeneration": 1}, "True", ""},
		{"not allowed in a cell", []Cell{{Name: "a", Current: true, MemberGeneration: 1, Status: status(3, 2, 3, 1)}, {Name: "b", Current: true, MemberGeneration: 1, Status: status(2, 2, 3, 0)}},
			map[string]int64{"currentHealthy": 5, "disruptionsAllowed": 1}, "False", "b"},
		{"an offline cell allows nothing", []Cell{{Name: "a", Current: true, MemberGeneration: 1, Status: status(3, 2, 3, 1)}, {Name: "b", Offline: true, Current: true, MemberGeneration: 1, Status: status(3, 2, 3, 1)}},
			map[string]int64{"currentHealthy": 3, "expectedPods": 6, "disruptionsAllowed": 1}, "False", "b"},
		{"a held-back cell on an older spec", []Cell{{Name: "a", Current: true, MemberGeneration: 1, Status: status(3, 2, 3, 1)}, {Name: "b", HeldBack: true, MemberGeneration: 1, Status: status(3, 2, 3, 1)}},
			map[string]int64{"observedGeneration": 0, "disruptionsAllowed": 2}, "True", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := aggregate(t, pdbKind, 1, nil, tc.cells...)
			for k, v := range tc.want {
				if got := num(st, k); got != v {
					t.Errorf("%s = %d, want %d", k, got, v)
				}
			}
			c := find(st, "DisruptionAllowed")
			if c == nil || c["status"] != tc.allowed {
				t.Fatalf("DisruptionAllowed = %v, want %s", c, tc.allowed)
			}
			if msg, _ := c["message"].(string); tc.names != "" && !strings.Contains(msg, tc.names) {
				t.Errorf("DisruptionAllowed message %q does not name %s", msg, tc.names)
			}
		})
	}
}

func TestKindsWithoutStatus(t *testing.T) {
	for _, k := range []schema.GroupKind{{Kind: "ConfigMap"}, {Kind: "Secret"}, {Group: "rbac.authorization.k8s.io", Kind: "Role"}} {
		if st, ok := Aggregate(Input{Kind: k, Generation: 1, Cells: []Cell{{Name: "a", Current: true}}, Now: t0}); ok || st != nil {
			t.Errorf("%s aggregated to %v; its status should stay as it is", k, st)
		}
		if Supported(k) {
			t.Errorf("Supported(%s) = true", k)
		}
	}
}

// TestAggregateIsStable: the same input gives the same status, whatever
// the order of the cells, and a second pass over the first result
// changes nothing (one write per change).
func TestAggregateIsStable(t *testing.T) {
	cells := []Cell{
		{Name: "rz01a", HeldBack: true, MemberGeneration: 1, Status: rolledOut(1, 3)},
		{Name: "rz00a", Current: true, MemberGeneration: 7, Status: rolledOut(7, 3)},
		{Name: "rz02a", Offline: true, Current: true, MemberGeneration: 3, Status: rolledOut(3, 3)},
	}
	in := Input{Kind: deploymentKind, Generation: 4, Spec: map[string]any{"replicas": int64(9)}, Divided: true, Cells: cells, Now: t0}
	first, _ := Aggregate(in)
	in.Cells = []Cell{cells[2], cells[0], cells[1]}
	in.Previous, in.Now = first, t0.Add(time.Minute)
	second, _ := Aggregate(in)
	if !reflect.DeepEqual(first, second) {
		t.Errorf("aggregate changed:\n%v\n%v", first, second)
	}
}
