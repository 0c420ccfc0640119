package rollout

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
	"github.com/cellfed/cellfed/pkg/placement"
)

// top is a status topology: name, status, generation, ready ("" unknown,
// "y", "n") and optional remote status JSON.
func top(name, status string, gen int64, ready string, remote ...string) typesv1beta2.TopologyStatus {
	ts := typesv1beta2.TopologyStatus{Name: name, Cluster: "shop." + name, Status: status, Generation: gen}
	switch ready {
	case "y":
		ts.Ready = ptr.To(true)
	case "n":
		ts.Ready = ptr.To(false)
	}
	if len(remote) > 0 {
		ts.RemoteStatus = &runtime.RawExtension{Raw: []byte(remote[0])}
	}
	return ts
}

func fedObject(gen, observed int64, placed, mask []string, tops ...typesv1beta2.TopologyStatus) *typesv1beta2.FederatedObject {
	f := &typesv1beta2.FederatedObject{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Generation: gen}}
	for _, p := range placed {
		f.Spec.Placement.Topologies = append(f.Spec.Placement.Topologies, typesv1beta2.Topology{Name: p})
	}
	if mask != nil {
		f.Spec.PlacementMask = &typesv1beta2.PlacementMask{Topologies: []typesv1beta2.Topology{}}
		for _, m := range mask {
			f.Spec.PlacementMask.Topologies = append(f.Spec.PlacementMask.Topologies, typesv1beta2.Topology{Name: m})
		}
	}
	f.Status = &typesv1beta2.Status{ObservedGeneration: observed, Topologies: tops}
	return f
}

func states(rows []Row) string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Cell+"="+string(r.State))
	}
	return strings.Join(out, ",")
}

func TestRows(t *testing.T) {
	placed := []string{"rz20a", "rz00a", "rz10a"} // placement order, not name order
	deploy := func(ready, replicas int) string {
		return fmt.Sprintf(`{"replicas":%d,"readyReplicas":%d,"updatedReplicas":%d,"observedGeneration":2}`, replicas, ready, replicas)
	}
	cases := []struct {
		name         string
		fed          *typesv1beta2.FederatedObject
		want         string
		wantReplicas string // of the first row
		done         bool
	}{
		{
			name: "no mask, all updated and ready",
			fed:  fedObject(3, 3, placed, nil, top("rz00a", "OK", 3, "y"), top("rz10a", "OK", 3, "y"), top("rz20a", "OK", 3, "y", deploy(2, 2))),
			want: "rz20a=updated,rz00a=updated,rz10a=updated", wantReplicas: "2/2", done: true,
		},
		{
			name: "mask: released cell updated, others held back at their old generation",
			fed:  fedObject(4, 4, placed, []string{"rz20a"}, top("rz20a", "OK", 4, "y"), top("rz00a", "HeldBack", 2, "y"), top("rz10a", "HeldBack", 2, "n")),
			want: "rz20a=updated,rz00a=held back,rz10a=held back", done: true,
		},
		{
			name: "released cell not yet at the current generation",
			fed:  fedObject(4, 4, placed, []string{"rz20a"}, top("rz20a", "OK", 3, "y"), top("rz00a", "HeldBack", 2, "y"), top("rz10a", "HeldBack", 2, "y")),
			want: "rz20a=updating,rz00a=held back,rz10a=held back",
		},
		{
			name: "controller has not observed the generation yet",
			fed:  fedObject(5, 4, placed, []string{"rz20a"}, top("rz20a", "OK", 5, "y")),
			want: "rz20a=updating,rz00a=held back,rz10a=held back",
		},
		{
			name: "current but not ready, and readiness unknown",
			fed:  fedObject(4, 4, placed, []string{"rz20a", "rz00a"}, top("rz20a", "OK", 4, "n", deploy(1, 2)), top("rz00a", "OK", 4, "")),
			want: "rz20a=not ready,rz00a=not ready,rz10a=held back", wantReplicas: "1/2",
		},
		{
			name: "propagation failure",
			fed:  fedObject(4, 4, placed, []string{"rz20a", "rz00a"}, top("rz20a", "OK", 4, "y"), top("rz00a", "UpdateFailed", 2, "")),
			want: "rz20a=updated,rz00a=failed,rz10a=held back",
		},
		{
			name: "member reports its progress deadline exceeded",
			fed: fedObject(4, 4, placed, []string{"rz20a"}, top("rz20a", "OK", 4, "n",
				`{"replicas":2,"readyReplicas":0,"conditions":[{"type":"Progressing","status":"False","reason":"ProgressDeadlineExceeded"}]}`)),
			want: "rz20a=failed,rz00a=held back,rz10a=held back", wantReplicas: "0/2",
		},
		{
			name: "a placed cell the status does not list yet",
			fed:  fedObject(2, 2, placed, nil, top("rz20a", "OK", 2, "y"), top("rz00a", "OK", 2, "y")),
			want: "rz20a=updated,rz00a=updated,rz10a=updating",
		},
		{
			name: "cluster not ready",
			fed:  fedObject(2, 2, placed, nil, top("rz20a", "ClusterNotReady", 1, "y"), top("rz00a", "OK", 2, "y"), top("rz10a", "OK", 2, "y")),
			want: "rz20a=failed,rz00a=updated,rz10a=updated",
		},
		{
			name: "a member slow to answer a write is updating, not failed",
			fed:  fedObject(2, 2, placed, nil, top("rz20a", StatusWriteInProgress, 1, "y"), top("rz00a", "OK", 2, "y"), top("rz10a", "OK", 2, "y")),
			want: "rz20a=updating,rz00a=updated,rz10a=updated",
		},
		{
			name: "empty mask releases nothing",
			fed:  fedObject(2, 2, placed, []string{}, top("rz20a", "HeldBack", 1, "y")),
			want: "rz20a=held back,rz00a=held back,rz10a=held back", done: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rows := Rows(tc.fed, placed)
			if got := states(rows); got != tc.want {
				t.Errorf("states = %s, want %s", got, tc.want)
			}
			if tc.wantReplicas != "" && rows[0].Replicas != tc.wantReplicas {
				t.Errorf("replicas = %q, want %q", rows[0].Replicas, tc.wantReplicas)
			}
			if got := Summarize(rows).Done; got != tc.done {
				t.Errorf("done = %v, want %v", got, tc.done)
			}
		})
	}
}

func TestBatches(t *testing.T) {
	placed := []string{"c", "a", "b", "d"}
	cases := []struct {
		name       string
		mask       []string
		n          int
		next, wide []string
	}{
		{"first batch", nil, 1, []string{"c"}, []string{"c"}},
		{"next two in placement order", []string{"c"}, 2, []string{"a", "b"}, []string{"c", "a", "b"}},
		{"skips released cells wherever they are", []string{"a"}, 2, []string{"c", "b"}, []string{"c", "a", "b"}},
		{"batch larger than what is left", []string{"c", "a", "b"}, 5, []string{"d"}, placed},
		{"nothing left", placed, 1, nil, placed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next := NextBatch(placed, tc.mask, tc.n)
			if !slices.Equal(next, tc.next) {
				t.Errorf("NextBatch = %v, want %v", next, tc.next)
			}
			if wide := Widen(placed, tc.mask, next); !slices.Equal(wide, tc.wide) {
				t.Errorf("Widen = %v, want %v", wide, tc.wide)
			}
		})
	}
	if got := Widen([]string{"a", "b"}, []string{"x", "a"}, []string{"b"}); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Widen drops mask entries no longer placed: %v", got)
	}
}

func TestDecide(t *testing.T) {
	placed := []string{"a", "b", "c"}
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	auto := Settings{Active: true, Auto: true, BatchSize: 1, BaselineHash: "old", ProgressSince: now.Add(-time.Minute)}
	with := func(f func(*Settings)) Settings { s := auto; f(&s); return s }
	ok := func(n string) typesv1beta2.TopologyStatus { return top(n, "OK", 5, "y") }
	cases := []struct {
		name  string
		set   Settings
		mask  []string
		tops  []typesv1beta2.TopologyStatus
		hash  string
		step  Step
		mask2 []string
		msg   string
		after time.Duration
	}{
		{name: "manual rollout: nothing", set: with(func(s *Settings) { s.Auto = false }), mask: []string{"a"}, tops: []typesv1beta2.TopologyStatus{ok("a")}, hash: "new", step: Wait},
		{name: "paused: nothing", set: with(func(s *Settings) { s.Paused = true }), mask: []string{"a"}, tops: []typesv1beta2.TopologyStatus{ok("a")}, hash: "new", step: Wait},
		{name: "template unchanged: wait without deadline", set: with(func(s *Settings) { s.ProgressDeadline = time.Second }), mask: []string{"a"},
			tops: []typesv1beta2.TopologyStatus{ok("a")}, hash: "old", step: Wait, msg: "waiting for a new template"},
		{name: "batch done: advance", set: auto, mask: []string{"a"}, tops: []typesv1beta2.TopologyStatus{ok("a")}, hash: "new",
			step: Advance, mask2: []string{"a", "b"}, msg: "released b (2 of 3"},
		{name: "batch of two", set: with(func(s *Settings) { s.BatchSize = 2 }), mask: []string{"a"}, tops: []typesv1beta2.TopologyStatus{ok("a")}, hash: "new",
			step: Advance, mask2: []string{"a", "b", "c"}},
		{name: "last batch done: finish", set: auto, mask: placed, tops: []typesv1beta2.TopologyStatus{ok("a"), ok("b"), ok("c")}, hash: "new",
			step: Finish, msg: "released to all 3 placed cells"},
		{name: "waiting within the deadline: requeue at the deadline", set: with(func(s *Settings) { s.ProgressDeadline = 5 * time.Minute }),
			mask: []string{"a", "b"}, tops: []typesv1beta2.TopologyStatus{ok("a"), top("b", "OK", 5, "n")}, hash: "new",
			step: Wait, msg: "waiting for b (not ready)", after: 4 * time.Minute},
		{name: "deadline missed: pause", set: with(func(s *Settings) { s.ProgressDeadline = 30 * time.Second }),
			mask: []string{"a", "b"}, tops: []typesv1beta2.TopologyStatus{ok("a"), top("b", "OK", 4, "y")}, hash: "new",
			step: Pause, msg: "progress deadline 30s exceeded: b (updating)"},
		{name: "failure with pause-on-failure: pause", set: with(func(s *Settings) { s.PauseOnFailure = true }),
			mask: []string{"a", "b"}, tops: []typesv1beta2.TopologyStatus{ok("a"), top("b", "UpdateFailed", 4, "")}, hash: "new",
			step: Pause, msg: "paused on failure: b: UpdateFailed"},
		{name: "failure without pause-on-failure: keep waiting", set: auto,
			mask: []string{"a", "b"}, tops: []typesv1beta2.TopologyStatus{ok("a"), top("b", "UpdateFailed", 4, "")}, hash: "new",
			step: Wait, msg: "waiting for b (failed)"},
		{name: "mask removed by hand: finish", set: auto, mask: nil, tops: []typesv1beta2.TopologyStatus{ok("a")}, hash: "new", step: Finish},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fed := fedObject(5, 5, placed, tc.mask, tc.tops...)
			d := Decide(Input{Settings: tc.set, Placed: placed, Mask: placement.Mask(fed), Rows: Rows(fed, placed), Hash: tc.hash, Now: now})
			if d.Step != tc.step {
				t.Fatalf("step = %s (%s), want %s", d.Step, d.Message, tc.step)
			}
			if tc.mask2 != nil && !slices.Equal(d.Mask, tc.mask2) {
				t.Errorf("mask = %v, want %v", d.Mask, tc.mask2)
			}
			if !strings.Contains(d.Message, tc.msg) {
				t.Errorf("message = %q, want it to contain %q", d.Message, tc.msg)
			}
			if d.RequeueAfter != tc.after {
				t.Errorf("requeue after %s, want %s", d.RequeueAfter, tc.after)
			}
		})
	}
}

func TestSettingsAndEnd(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "web", "labels": map[string]any{LabelActive: "true", "app": "web"}},
		"spec":     map[string]any{"placementMask": map[string]any{"topologies": []any{}}},
	}}
	SetAnnotations(obj, map[string]string{AnnotationAuto: "true", AnnotationBatchSize: "2", AnnotationProgressDeadline: "5m", AnnotationProgressSince: "2026-11-23T10:00:00Z", "other": "kept"})
	s, err := SettingsOf(obj)
	if err != nil || !s.Active || !s.Auto || s.BatchSize != 2 || s.ProgressDeadline != 5*time.Minute || s.ProgressSince.IsZero() {
		t.Fatalf("SettingsOf = %+v, %v", s, err)
	}
	for ann, val := range map[string]string{AnnotationBatchSize: "0", AnnotationProgressDeadline: "soon", AnnotationProgressSince: "yesterday"} {
		bad := obj.DeepCopy()
		SetAnnotations(bad, map[string]string{ann: val})
		if _, err := SettingsOf(bad); err == nil || !strings.Contains(err.Error(), ann) {
			t.Errorf("%s=%q: error %v, want one naming the annotation", ann, val, err)
		}
	}
	End(obj, StateFinished, "done")
	if _, has, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "placementMask"); has {
		t.Errorf("End kept the mask")
	}
	ann := obj.GetAnnotations()
	if ann[AnnotationAuto] != "" || ann[AnnotationState] != StateFinished || ann["other"] != "kept" || obj.GetLabels()[LabelActive] != "" || obj.GetLabels()["app"] != "web" {
		t.Errorf("after End: annotations %v labels %v", ann, obj.GetLabels())
	}
}

func TestTemplateHash(t *testing.T) {
	mk := func(tmpl map[string]any, ovr []any) *unstructured.Unstructured {
		spec := map[string]any{"template": tmpl}
		if ovr != nil {
			spec["overrides"] = ovr
		}
		return &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	}
	a := TemplateHash(mk(map[string]any{"spec": map[string]any{"replicas": int64(2), "x": "y"}}, nil))
	b := TemplateHash(mk(map[string]any{"spec": map[string]any{"x": "y", "replicas": float64(2)}}, []any{}))
	c := TemplateHash(mk(map[string]any{"spec": map[string]any{"replicas": int64(3), "x": "y"}}, nil))
	d := TemplateHash(mk(map[string]any{"spec": map[string]any{"replicas": int64(2), "x": "y"}}, []any{map[string]any{"topologyName": "a"}}))
	if a != b {
		t.Errorf("equal content (key order, number type, empty overrides) hashes differently")
	}
	if a == c || a == d {
		t.Errorf("different template or overrides hash alike")
	}
}

func TestImages(t *testing.T) {
	got := Images([]byte(`{"spec":{"template":{"spec":{"initContainers":[{"image":"init:1"}],"containers":[{"image":"app:2"},{"image":"side:1"}]}}}}`))
	if !slices.Equal(got, []string{"app:2", "init:1", "side:1"}) {
		t.Errorf("Images = %v", got)
	}
}
