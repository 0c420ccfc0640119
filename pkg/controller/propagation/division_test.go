package propagation

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	typesv1b1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
	typesv1b2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
)

func TestDivide(t *testing.T) {
	weights := &typesv1b2.Spec{ReplicaDivision: &typesv1b2.ReplicaDivision{Mode: typesv1b2.DivisionDivide, Topologies: []typesv1b2.DivisionTopology{
		{Name: "a", Weight: ptr.To[int32](1)}, {Name: "b", Weight: ptr.To[int32](2)}, {Name: "c", Weight: ptr.To[int32](2)},
	}}}
	failover := &typesv1b2.Spec{ReplicaDivision: &typesv1b2.ReplicaDivision{Mode: typesv1b2.DivisionDivide, Failover: true}}
	tmpl := func(n int64) map[string]any { return map[string]any{"spec": map[string]any{"replicas": n}} }
	ensure := func(cl, status string) Intent {
		return Intent{Verb: Ensure, Member: cl, Clusters: []string{cl}, Writer: cl, Status: status, Report: true}
	}
	held := func(cl string) Intent {
		return Intent{Verb: Leave, Member: cl, Clusters: []string{cl}, Writer: cl, Status: StatusHeldBack, Report: true}
	}
	all := []Intent{ensure("shop.a", ""), ensure("shop.b", ""), ensure("shop.c", "")}
	// was is a status where each cluster was assigned and runs (ready)
	// the counts given.
	was := func(assigned, ready map[string]int32) typesv1b1.Status {
		var st typesv1b1.Status
		for _, cl := range []string{"shop.a", "shop.b", "shop.c"} {
			cs := typesv1b1.ClusterStatus{Name: cl}
			if n, ok := assigned[cl]; ok {
				cs.Replicas = ptr.To(n)
				cs.RemoteStatus = &runtime.RawExtension{Raw: fmt.Appendf(nil, `{"replicas":%d,"readyReplicas":%d,"availableReplicas":%d}`, n, ready[cl], ready[cl])}
			}
			st.Clusters = append(st.Clusters, cs)
		}
		return st
	}
	steady := map[string]int32{"shop.a": 2, "shop.b": 4, "shop.c": 4}
	tests := []struct {
		name      string
		spec      *typesv1b2.Spec
		replicas  int64
		cur       typesv1b1.Status
		intents   []Intent
		overrides []typesv1b1.Override
		fresh     map[string]observation
		want      map[string]int32
	}{
		{"no division", nil, 10, typesv1b1.Status{}, all, nil, nil, nil},
		{"first write: weights 1:2:2", weights, 10, typesv1b1.Status{}, all, nil, nil, steady},
		{"scale to 11: one cell gets the extra", weights, 11, was(steady, steady), all, nil, nil, map[string]int32{"shop.a": 2, "shop.b": 5, "shop.c": 4}},
		{"a held cell keeps what it runs", weights, 11, was(steady, steady),
			[]Intent{ensure("shop.a", ""), held("shop.b"), ensure("shop.c", "")}, nil, nil, steady},
		{"an explicit replicas override wins", weights, 10, was(steady, steady), all,
			[]typesv1b1.Override{{ClusterName: "shop.a", ClusterOverrides: []typesv1b1.ClusterOverride{{Path: "/spec/replicas", Value: &runtime.RawExtension{Raw: []byte("6")}}}}}, nil,
			map[string]int32{"shop.a": 6, "shop.b": 2, "shop.c": 2}},
		{"failover raises the others first, keeps the failing cell's replicas", failover, 9,
			was(map[string]int32{"shop.a": 3, "shop.b": 3, "shop.c": 3}, map[string]int32{"shop.a": 3, "shop.b": 3, "shop.c": 3}),
			[]Intent{ensure("shop.a", ""), ensure("shop.b", ""), ensure("shop.c", StatusClusterNotReady)}, nil, nil,
			map[string]int32{"shop.a": 4, "shop.b": 3, "shop.c": 3}},
		{"a step follows what the member's cache shows now, not the last status", failover, 9,
			was(map[string]int32{"shop.a": 4, "shop.b": 3, "shop.c": 3}, map[string]int32{"shop.a": 3, "shop.b": 3, "shop.c": 3}),
			[]Intent{ensure("shop.a", ""), ensure("shop.b", ""), ensure("shop.c", StatusClusterNotReady)}, nil,
			map[string]observation{"shop.a": {state: observedPresent, remoteStatus: &runtime.RawExtension{Raw: []byte(`{"replicas":4,"readyReplicas":4}`)}}},
			map[string]int32{"shop.a": 4, "shop.b": 4, "shop.c": 2}},
		{"failover lowers the failing cell once the others are ready", failover, 9,
			was(map[string]int32{"shop.a": 4, "shop.b": 5, "shop.c": 3}, map[string]int32{"shop.a": 4, "shop.b": 5, "shop.c": 3}),
			[]Intent{ensure("shop.a", ""), ensure("shop.b", ""), ensure("shop.c", StatusClusterNotReady)}, nil, nil,
			map[string]int32{"shop.a": 4, "shop.b": 5, "shop.c": 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, moving, _, err := divide("shop/web", tc.spec, "shop", tmpl(tc.replicas), "/spec/replicas", tc.cur, tc.intents, tc.overrides, tc.fresh, clockInput{Now: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			if wantMoving := strings.Contains(tc.name, "step") || strings.Contains(tc.name, "failover raises"); moving != wantMoving {
				t.Errorf("moving = %v, want %v", moving, wantMoving)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("divide = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestUnreadyFailing(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC)
	after := 10 * time.Second
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	tests := []struct {
		name        string
		clock       unreadyTimer
		current     int32
		ready       *int32
		now         time.Time
		wantFailing bool
		wantClock   unreadyTimer
		wantWake    time.Duration
	}{
		{"all ready: no clock", unreadyTimer{}, 3, ptr.To[int32](3), t0, false, unreadyTimer{}, 0},
		{"no status reported: no clock", unreadyTimer{}, 3, nil, t0, false, unreadyTimer{}, 0},
		{"nothing assigned: no clock", unreadyTimer{}, 0, ptr.To[int32](0), t0, false, unreadyTimer{}, 0},
		{"first seen unready: the clock starts", unreadyTimer{}, 3, ptr.To[int32](1), t0, false, unreadyTimer{since: t0}, after},
		{"still unready within the window", unreadyTimer{since: t0}, 3, ptr.To[int32](1), at(4), false, unreadyTimer{since: t0}, 6 * time.Second},
		{"ready again: the clock stops", unreadyTimer{since: t0}, 3, ptr.To[int32](3), at(4), false, unreadyTimer{}, 0},
		{"unready for the whole window: fails", unreadyTimer{since: t0}, 3, ptr.To[int32](0), at(10), true, unreadyTimer{failedAt: at(10)}, after},
		{"failed: stays failed while cooling down", unreadyTimer{failedAt: t0}, 0, ptr.To[int32](0), at(3), true, unreadyTimer{failedAt: t0}, 7 * time.Second},
		{"cooled down: tried again", unreadyTimer{failedAt: t0}, 0, ptr.To[int32](0), at(10), false, unreadyTimer{}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			failing, clock, wake := unreadyFailing(tc.clock, tc.current, tc.ready, after, tc.now)
			if failing != tc.wantFailing || clock != tc.wantClock || wake != tc.wantWake {
				t.Errorf("unreadyFailing = %v, %+v, %v; want %v, %+v, %v", failing, clock, wake, tc.wantFailing, tc.wantClock, tc.wantWake)
			}
		})
	}
}

// TestDivideFailsOverUnreadyReplicas: a cell whose replicas stay unready
// for failoverAfterSeconds loses its share, as an offline one does.
func TestDivideFailsOverUnreadyReplicas(t *testing.T) {
	spec := &typesv1b2.Spec{ReplicaDivision: &typesv1b2.ReplicaDivision{Mode: typesv1b2.DivisionDivide, Failover: true, FailoverAfterSeconds: ptr.To[int32](60)}}
	intents := []Intent{}
	var st typesv1b1.Status
	for _, cl := range []string{"shop.a", "shop.b", "shop.c"} {
		intents = append(intents, Intent{Verb: Ensure, Member: cl, Clusters: []string{cl}, Writer: cl, Report: true})
		ready := 3
		if cl == "shop.c" {
			ready = 0
		}
		st.Clusters = append(st.Clusters, typesv1b1.ClusterStatus{Name: cl, Replicas: ptr.To[int32](3),
			RemoteStatus: &runtime.RawExtension{Raw: fmt.Appendf(nil, `{"replicas":3,"readyReplicas":%d}`, ready)}})
	}
	tmpl := map[string]any{"spec": map[string]any{"replicas": int64(9)}}
	t0 := time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC)

	got, _, clocks, err := divide("shop/web", spec, "shop", tmpl, "/spec/replicas", st, intents, nil, nil, clockInput{Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int32{"shop.a": 3, "shop.b": 3, "shop.c": 3}; !reflect.DeepEqual(got, want) {
		t.Fatalf("within the window: %v, want %v", got, want)
	}
	if clocks.Wake != time.Minute || clocks.Timers["shop.c"].since != t0 || len(clocks.Timers) != 1 {
		t.Fatalf("clocks after the first look: %+v", clocks)
	}
	got, _, clocks, err = divide("shop/web", spec, "shop", tmpl, "/spec/replicas", st, intents, nil, nil, clockInput{Now: t0.Add(time.Minute), Timers: clocks.Timers})
	if err != nil {
		t.Fatal(err)
	}
	// shop.c's unready replicas go at once; the others gain (one step,
	// maxSurge 1 above the total).
	if got["shop.c"] != 0 || got["shop.a"]+got["shop.b"] < 6 {
		t.Fatalf("after the window: %v, want shop.c at 0", got)
	}
	if clocks.Timers["shop.c"].failedAt != t0.Add(time.Minute) {
		t.Fatalf("clocks after failover: %+v", clocks)
	}
}

// TestDivideReplicasPath: a type whose replicas live elsewhere
// (FederatedTypeConfig spec.replicasPath) is divided from that field, and
// an override of that path is the explicit per-cell count.
func TestDivideReplicasPath(t *testing.T) {
	spec := &typesv1b2.Spec{ReplicaDivision: &typesv1b2.ReplicaDivision{Mode: typesv1b2.DivisionDivide}}
	var intents []Intent
	for _, cl := range []string{"shop.a", "shop.b"} {
		intents = append(intents, Intent{Verb: Ensure, Member: cl, Clusters: []string{cl}, Writer: cl, Report: true})
	}
	tmpl := map[string]any{"spec": map[string]any{"replicas": int64(2), "workers": map[string]any{"count": int64(8)}}}
	got, _, _, err := divide("shop/web", spec, "shop", tmpl, "/spec/workers/count", typesv1b1.Status{}, intents, nil, nil, clockInput{Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int32{"shop.a": 4, "shop.b": 4}; !reflect.DeepEqual(got, want) {
		t.Errorf("8 workers on 2 cells: %v, want %v", got, want)
	}
	over := []typesv1b1.Override{{ClusterName: "shop.a", ClusterOverrides: []typesv1b1.ClusterOverride{{Path: "/spec/workers/count", Value: &runtime.RawExtension{Raw: []byte("6")}}}}}
	got, _, _, err = divide("shop/web", spec, "shop", tmpl, "/spec/workers/count", typesv1b1.Status{}, intents, over, nil, clockInput{Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int32{"shop.a": 6, "shop.b": 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("with an override of the path on shop.a: %v, want %v", got, want)
	}
	if op := divisionOp("/spec/workers/count", 3); op.Path != "/spec/workers/count" || string(op.Value.Raw) != "3" {
		t.Errorf("divisionOp = %+v", op)
	}
	if _, _, _, err := divide("shop/web", spec, "shop", tmpl, "spec.workers", typesv1b1.Status{}, intents, nil, nil, clockInput{}); err == nil {
		t.Error("a path that is not a JSON pointer was accepted")
	}
}

func TestDivisionSpec(t *testing.T) {
	tests := []struct {
		name string
		obj  string
		want bool
	}{
		{"v1beta2 Divide", `{"apiVersion":"types.kubefed.io/v1beta2","kind":"FederatedDeployment","metadata":{"namespace":"shop"},"spec":{"placement":{"topologyType":"cell"},"replicaDivision":{"mode":"Divide"}}}`, true},
		{"v1beta2 Duplicate", `{"apiVersion":"types.kubefed.io/v1beta2","kind":"FederatedDeployment","metadata":{"namespace":"shop"},"spec":{"replicaDivision":{"mode":"Duplicate"}}}`, false},
		{"v1beta2 without", `{"apiVersion":"types.kubefed.io/v1beta2","kind":"FederatedDeployment","metadata":{"namespace":"shop"},"spec":{}}`, false},
		{"v1beta1 with the stash", `{"apiVersion":"types.kubefed.io/v1beta1","kind":"FederatedDeployment","metadata":{"namespace":"shop","annotations":{"conversion.cellfed.io/v1beta2-spec":"{\"placement\":{\"topologyType\":\"cell\",\"topologies\":[{\"name\":\"a\"}]},\"replicaDivision\":{\"mode\":\"Divide\"}}"}},"spec":{"placement":{"clusters":[{"name":"shop.a"}]}}}`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON([]byte(tc.obj)); err != nil {
				t.Fatal(err)
			}
			got, err := divisionSpec(u)
			if err != nil {
				t.Fatal(err)
			}
			if (got != nil) != tc.want {
				t.Errorf("divisionSpec = %+v, want a division: %v", got, tc.want)
			}
		})
	}
}
