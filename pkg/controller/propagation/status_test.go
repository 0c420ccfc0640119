package propagation

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	typesv1b1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
	"github.com/cellfed/cellfed/pkg/conversion"
)

func TestSameStatus(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Hour))
	base := func() typesv1b1.Status {
		return typesv1b1.Status{
			ObservedGeneration: 3,
			Conditions: []typesv1b1.Condition{
				{Type: PropagationCondition, Status: "False", Reason: "CheckClusters", Message: "1 of 2", LastUpdateTime: t0, LastTransitionTime: t0},
			},
			Clusters: []typesv1b1.ClusterStatus{{Name: "a", Status: StatusOK}, {Name: "b", Status: StatusClusterNotReady,
				RemoteStatus: &runtime.RawExtension{Raw: []byte(`{"readyReplicas":1,"replicas":1}`)}}},
		}
	}
	tests := []struct {
		name string
		edit func(s *typesv1b1.Status)
		same bool
	}{
		{"identical", func(*typesv1b1.Status) {}, true},
		{"times differ", func(s *typesv1b1.Status) {
			s.Conditions[0].LastUpdateTime, s.Conditions[0].LastTransitionTime = t1, t1
		}, true},
		{"remote status differs", func(s *typesv1b1.Status) {
			s.Clusters[0].RemoteStatus = &runtime.RawExtension{Raw: []byte(`{}`)}
		}, false},
		{"remote status in another key order", func(s *typesv1b1.Status) {
			s.Clusters[1].RemoteStatus = &runtime.RawExtension{Raw: []byte(`{"replicas":1,"readyReplicas":1}`)}
		}, true},
		{"generation", func(s *typesv1b1.Status) { s.Clusters[0].Generation = 2 }, false},
		{"ready", func(s *typesv1b1.Status) { s.Clusters[0].Ready = ptr.To(false) }, false},
		{"counts", func(s *typesv1b1.Status) { s.Propagated = "1/2" }, false},
		{"released count", func(s *typesv1b1.Status) { s.Released = "1/2" }, false},
		{"observed generation", func(s *typesv1b1.Status) { s.ObservedGeneration = 4 }, false},
		{"condition type", func(s *typesv1b1.Status) { s.Conditions[0].Type = "Other" }, false},
		{"condition status", func(s *typesv1b1.Status) { s.Conditions[0].Status = "True" }, false},
		{"condition reason", func(s *typesv1b1.Status) { s.Conditions[0].Reason = "InvalidObject" }, false},
		{"condition message", func(s *typesv1b1.Status) { s.Conditions[0].Message = "2 of 2" }, false},
		{"extra condition", func(s *typesv1b1.Status) {
			s.Conditions = append(s.Conditions, typesv1b1.Condition{Type: "Other", Status: "True"})
		}, false},
		{"no conditions", func(s *typesv1b1.Status) { s.Conditions = nil }, false},
		{"cluster status", func(s *typesv1b1.Status) { s.Clusters[1].Status = StatusOK }, false},
		{"cluster name", func(s *typesv1b1.Status) { s.Clusters[1].Name = "c" }, false},
		{"cluster missing", func(s *typesv1b1.Status) { s.Clusters = s.Clusters[:1] }, false},
		{"no clusters", func(s *typesv1b1.Status) { s.Clusters = nil }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := base(), base()
			tc.edit(&b)
			if got := sameStatus(a, b); got != tc.same {
				t.Errorf("sameStatus(a, b) = %v, want %v", got, tc.same)
			}
			if got := sameStatus(b, a); got != tc.same {
				t.Errorf("sameStatus(b, a) = %v, want %v", got, tc.same)
			}
		})
	}
	if !sameStatus(typesv1b1.Status{}, typesv1b1.Status{Clusters: []typesv1b1.ClusterStatus{}}) {
		t.Errorf("nil and empty cluster lists differ")
	}
}

// fedWithStatus is a FederatedDeployment at generation 2 holding status
// (nil: none).
func fedWithStatus(t *testing.T, st *typesv1b1.Status) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta1",
		"kind":       "FederatedDeployment",
		"metadata":   map[string]any{"name": "web", "namespace": "ns1", "generation": int64(2), "resourceVersion": "5"},
		"spec":       map[string]any{},
	}}
	if st != nil {
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(st)
		if err != nil {
			t.Fatal(err)
		}
		u.Object["status"] = content
	}
	return u
}

// kubefedOK is how the stored v1beta1 status says OK: KubeFed's
// ClusterPropagationOK, no status at all.
const kubefedOK = ""

func TestWriteStatus(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	okCond := typesv1b1.Condition{Type: PropagationCondition, Status: "True", LastUpdateTime: t0, LastTransitionTime: t0}
	readyCond := typesv1b1.Condition{Type: ReadyCondition, Status: "True", LastUpdateTime: t0, LastTransitionTime: t0}
	otherCond := typesv1b1.Condition{Type: "Other", Status: "True", Reason: "Kept", LastUpdateTime: t0, LastTransitionTime: t0}
	type want struct {
		write bool
		// cond is the expected Propagation condition; updated and
		// transitioned say whether its times are new (else t0).
		cond                    typesv1b1.Condition
		updated, transitioned   bool
		clusters                []typesv1b1.ClusterStatus
		extraConditions         []typesv1b1.Condition
		observedGeneration      int64
		propagated, released    string
		missingObjectIsNotError bool
	}
	tests := []struct {
		name     string
		cur      *typesv1b1.Status
		clusters []typesv1b1.ClusterStatus
		failure  string
		absent   bool // the object is gone from the plane
		placed   []string
		want     want
	}{
		{
			name: "identical status is not written",
			cur: &typesv1b1.Status{ObservedGeneration: 2, Conditions: []typesv1b1.Condition{okCond, readyCond}, Released: "2/2", Propagated: "2/2",
				Clusters: []typesv1b1.ClusterStatus{{Name: "a", Status: kubefedOK, Generation: 2, Ready: ptr.To(true)}, {Name: "b", Status: kubefedOK, Generation: 2, Ready: ptr.To(true)}}},
			clusters: []typesv1b1.ClusterStatus{{Name: "b", Status: StatusOK, Generation: 2, Ready: ptr.To(true)}, {Name: "a", Status: StatusOK, Generation: 2, Ready: ptr.To(true)}},
			placed:   []string{"a", "b"},
			want:     want{write: false},
		},
		{
			name:     "identical status with no clusters is not written",
			cur:      &typesv1b1.Status{ObservedGeneration: 2, Conditions: []typesv1b1.Condition{okCond, readyCond}, Released: "0/0", Propagated: "0/0"},
			clusters: nil,
			want:     want{write: false},
		},
		{
			name:     "first status",
			cur:      nil,
			clusters: []typesv1b1.ClusterStatus{{Name: "b", Status: StatusOK}, {Name: "a", Status: StatusOK}},
			want: want{write: true, cond: typesv1b1.Condition{Type: PropagationCondition, Status: "True"}, updated: true, transitioned: true,
				clusters: []typesv1b1.ClusterStatus{{Name: "a", Status: kubefedOK}, {Name: "b", Status: kubefedOK}}, observedGeneration: 2},
		},
		{
			name:     "new generation keeps the condition's times",
			cur:      &typesv1b1.Status{ObservedGeneration: 1, Conditions: []typesv1b1.Condition{okCond}, Clusters: []typesv1b1.ClusterStatus{{Name: "a", Status: kubefedOK}}},
			clusters: []typesv1b1.ClusterStatus{{Name: "a", Status: StatusOK}},
			want: want{write: true, cond: typesv1b1.Condition{Type: PropagationCondition, Status: "True"},
				clusters: []typesv1b1.ClusterStatus{{Name: "a", Status: kubefedOK}}, observedGeneration: 2},
		},
		{
			name:     "a cluster failing turns the condition False with the clusters listed",
			cur:      &typesv1b1.Status{ObservedGeneration: 2, Conditions: []typesv1b1.Condition{okCond}, Clusters: []typesv1b1.ClusterStatus{{Name: "a", Status: kubefedOK}}},
			clusters: []typesv1b1.ClusterStatus{{Name: "c", Status: StatusUpdateFailed}, {Name: "a", Status: StatusOK}, {Name: "b", Status: StatusClusterNotReady}},
			want: want{write: true, cond: typesv1b1.Condition{Type: PropagationCondition, Status: "False", Reason: "CheckClusters",
				Message: "2 of 3 clusters not propagated: b: ClusterNotReady, c: UpdateFailed"}, updated: true, transitioned: true,
				clusters: []typesv1b1.ClusterStatus{{Name: "a", Status: kubefedOK}, {Name: "b", Status: StatusClusterNotReady}, {Name: "c", Status: StatusUpdateFailed}}, observedGeneration: 2},
		},
		{
			name: "a changed message keeps the transition time",
			cur: &typesv1b1.Status{ObservedGeneration: 2, Conditions: []typesv1b1.Condition{{Type: PropagationCondition, Status: "False", Reason: "CheckClusters",
				Message: "1 of 1 clusters not propagated: a: ClusterNotReady", LastUpdateTime: t0, LastTransitionTime: t0}}, Clusters: []typesv1b1.ClusterStatus{{Name: "a", Status: StatusClusterNotReady}}},
			clusters: []typesv1b1.ClusterStatus{{Name: "a", Status: StatusUpdateFailed}},
			want: want{write: true, cond: typesv1b1.Condition{Type: PropagationCondition, Status: "False", Reason: "CheckClusters",
				Message: "1 of 1 clusters not propagated: a: UpdateFailed"}, updated: true,
				clusters: []typesv1b1.ClusterStatus{{Name: "a", Status: StatusUpdateFailed}}, observedGeneration: 2},
		},
		{
			name:     "a failure of the object itself",
			cur:      &typesv1b1.Status{ObservedGeneration: 2, Conditions: []typesv1b1.Condition{okCond}, Clusters: []typesv1b1.ClusterStatus{{Name: "a", Status: kubefedOK}}},
			failure:  "spec: bad placement",
			clusters: nil,
			want: want{write: true, cond: typesv1b1.Condition{Type: PropagationCondition, Status: "False", Reason: "InvalidObject", Message: "spec: bad placement"},
				updated: true, transitioned: true, observedGeneration: 2},
		},
		{
			name: "other conditions are kept after ours",
			cur:  &typesv1b1.Status{ObservedGeneration: 1, Conditions: []typesv1b1.Condition{otherCond, okCond}},
			want: want{write: true, cond: typesv1b1.Condition{Type: PropagationCondition, Status: "True"},
				extraConditions: []typesv1b1.Condition{otherCond}, observedGeneration: 2},
		},
		{
			name: "held back clusters keep the condition True and count as not propagated",
			cur:  &typesv1b1.Status{ObservedGeneration: 1, Conditions: []typesv1b1.Condition{okCond, readyCond}},
			clusters: []typesv1b1.ClusterStatus{
				{Name: "a", Status: StatusOK, Generation: 2, Ready: ptr.To(true)},
				{Name: "b", Status: StatusHeldBack, Generation: 1, Ready: ptr.To(true)},
				{Name: "c", Status: StatusHeldBack, Generation: 1},
			},
			placed: []string{"a", "b"},
			want: want{write: true, cond: typesv1b1.Condition{Type: PropagationCondition, Status: "True", Reason: "PlacementMask",
				Message: "2 of 3 clusters held back by the placement mask: b, c"}, updated: true,
				clusters: []typesv1b1.ClusterStatus{
					{Name: "a", Status: kubefedOK, Generation: 2, Ready: ptr.To(true)},
					{Name: "b", Status: StatusHeldBack, Generation: 1, Ready: ptr.To(true)},
					{Name: "c", Status: StatusHeldBack, Generation: 1},
				},
				propagated: "1/2", released: "1/2", observedGeneration: 2},
		},
		{
			name:     "an object gone from the plane is no error",
			cur:      nil,
			clusters: []typesv1b1.ClusterStatus{{Name: "a", Status: StatusOK}},
			absent:   true,
			want:     want{write: true, missingObjectIsNotError: true},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The plane stores v1beta2; the controller decides from its
			// v1beta1 view.
			stored := fedWithStatus(t, tc.cur)
			if err := conversion.Convert(stored.Object, "types.kubefed.io/v1beta2"); err != nil {
				t.Fatal(err)
			}
			var plane *dynamicfake.FakeDynamicClient
			if tc.absent {
				plane = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
					map[schema.GroupVersionResource]string{deploymentType.Stored: "FederatedDeploymentList"})
			} else {
				plane = dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), stored.DeepCopy())
			}
			plane.ClearActions()
			c := &Controller{typ: deploymentType, env: Env{Plane: plane}, objs: newObjects()}
			fed, err := c.view(stored)
			if err != nil {
				t.Fatal(err)
			}
			before := time.Now().Add(-time.Second)
			var fail failure
			if tc.failure != "" {
				fail = failure{"InvalidObject", tc.failure}
			}
			err = c.writeStatus(context.Background(), stored, fed, report{clusters: tc.clusters, placed: sets.New(tc.placed...), fail: fail})
			if err != nil {
				t.Fatalf("writeStatus: %v", err)
			}
			var updates []clienttesting.UpdateAction
			for _, a := range plane.Actions() {
				if u, ok := a.(clienttesting.UpdateAction); ok && a.GetSubresource() == "status" {
					updates = append(updates, u)
				} else {
					t.Errorf("unexpected action %s %s/%s", a.GetVerb(), a.GetResource().Resource, a.GetSubresource())
				}
			}
			if !tc.want.write {
				if len(updates) != 0 {
					t.Fatalf("status written although unchanged: %v", updates[0].GetObject())
				}
				return
			}
			if len(updates) != 1 {
				t.Fatalf("%d status writes, want 1", len(updates))
			}
			if tc.want.missingObjectIsNotError {
				return
			}
			if v := updates[0].GetResource().Version; v != "v1beta2" {
				t.Errorf("status written in %s, want the storage version v1beta2", v)
			}
			// What a v1beta1 reader sees: the plane's conversion of it.
			obj := updates[0].GetObject().(*unstructured.Unstructured).DeepCopy()
			if err := conversion.Convert(obj.Object, "types.kubefed.io/v1beta1"); err != nil {
				t.Fatalf("converting the written status to v1beta1: %v", err)
			}
			if obj.GetNamespace() != "ns1" || obj.GetName() != "web" || obj.GetResourceVersion() != "5" {
				t.Errorf("wrote %s/%s at resourceVersion %q, want ns1/web at 5", obj.GetNamespace(), obj.GetName(), obj.GetResourceVersion())
			}
			raw, _, _ := unstructured.NestedMap(obj.Object, "status")
			var got typesv1b1.Status
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &got); err != nil {
				t.Fatal(err)
			}
			if got.ObservedGeneration != tc.want.observedGeneration {
				t.Errorf("observedGeneration = %d, want %d", got.ObservedGeneration, tc.want.observedGeneration)
			}
			if !reflect.DeepEqual(got.Clusters, tc.want.clusters) {
				t.Errorf("clusters = %+v, want %+v", got.Clusters, tc.want.clusters)
			}
			if want := tc.want.propagated; want != "" && got.Propagated != want {
				t.Errorf("propagated = %q, want %q", got.Propagated, want)
			}
			if want := tc.want.released; want != "" && got.Released != want {
				t.Errorf("released = %q, want %q", got.Released, want)
			}
			if len(got.Conditions) != 2+len(tc.want.extraConditions) || got.Conditions[1].Type != ReadyCondition {
				t.Fatalf("conditions = %+v", got.Conditions)
			}
			cond := got.Conditions[0]
			w := tc.want.cond
			if cond.Type != w.Type || cond.Status != w.Status || cond.Reason != w.Reason || cond.Message != w.Message {
				t.Errorf("condition = %+v, want %+v", cond, w)
			}
			checkTime := func(what string, got metav1.Time, fresh bool) {
				t.Helper()
				if fresh && got.Time.Before(before) {
					t.Errorf("%s = %v, want now", what, got)
				}
				if !fresh && !got.Equal(&t0) {
					t.Errorf("%s = %v, want the old %v", what, got, t0)
				}
			}
			checkTime("lastUpdateTime", cond.LastUpdateTime, tc.want.updated)
			checkTime("lastTransitionTime", cond.LastTransitionTime, tc.want.transitioned)
			for i, x := range tc.want.extraConditions {
				y := got.Conditions[2+i]
				if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || !x.LastTransitionTime.Equal(&y.LastTransitionTime) {
					t.Errorf("condition %d = %+v, want %+v", 2+i, y, x)
				}
			}
			// Writing the written status again is a no-op.
			plane.ClearActions()
			written := updates[0].GetObject().(*unstructured.Unstructured)
			if err := c.writeStatus(context.Background(), written, obj, report{clusters: tc.clusters, placed: sets.New(tc.placed...), fail: fail}); err != nil {
				t.Fatal(err)
			}
			if n := len(plane.Actions()); n != 0 {
				t.Errorf("rewriting the status just written made %d requests", n)
			}
		})
	}
}

// TestNextStatus: the status rules as a pure function, one row each.
func TestNextStatus(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := metav1.NewTime(t0.Add(time.Hour))
	ok := func(name string, gen int64, ready *bool) typesv1b1.ClusterStatus {
		return typesv1b1.ClusterStatus{Name: name, Status: StatusOK, Generation: gen, Ready: ready}
	}
	type want struct {
		cond, ready                  typesv1b1.Condition // times: t0 when kept, now otherwise
		clusters                     []string            // name:status as written, in order
		released, propagated, readyN string
	}
	tests := []struct {
		name      string
		cur       typesv1b1.Status
		rep       report
		readiness bool
		want      want
	}{
		{
			name:      "all propagated and ready: counts over the placed clusters, OK said as no status",
			rep:       report{clusters: []typesv1b1.ClusterStatus{ok("b", 2, ptr.To(true)), ok("a", 2, ptr.To(true))}, placed: sets.New("a", "b")},
			readiness: true,
			want: want{cond: typesv1b1.Condition{Type: PropagationCondition, Status: "True", LastTransitionTime: now},
				ready:    typesv1b1.Condition{Type: ReadyCondition, Status: "True", LastTransitionTime: now},
				clusters: []string{"a:", "b:"}, released: "2/2", propagated: "2/2", readyN: "2/2"},
		},
		{
			name: "an older generation counts as released, not propagated; no readiness, no ready count",
			rep:  report{clusters: []typesv1b1.ClusterStatus{ok("a", 1, nil), ok("b", 2, nil)}, placed: sets.New("a", "b")},
			want: want{cond: typesv1b1.Condition{Type: PropagationCondition, Status: "True", LastTransitionTime: now},
				ready: typesv1b1.Condition{Type: ReadyCondition, Status: "False", Reason: "NotReady",
					Message: "2 of 2 placed clusters not ready: a, b", LastTransitionTime: now},
				clusters: []string{"a:", "b:"}, released: "2/2", propagated: "1/2"},
		},
		{
			name: "a failed cluster, with its detail",
			rep: report{clusters: []typesv1b1.ClusterStatus{ok("a", 2, nil), {Name: "b", Status: StatusCreationFailed}},
				placed: sets.New("a", "b"), details: map[string]string{"b": "quota"}},
			want: want{cond: typesv1b1.Condition{Type: PropagationCondition, Status: "False", Reason: "CheckClusters",
				Message: "1 of 2 clusters not propagated: b: CreationFailed (quota)", LastTransitionTime: now},
				ready: typesv1b1.Condition{Type: ReadyCondition, Status: "False", Reason: "NotReady",
					Message: "2 of 2 placed clusters not ready: a, b", LastTransitionTime: now},
				clusters: []string{"a:", "b:CreationFailed"}, released: "2/2", propagated: "1/2"},
		},
		{
			name: "an unplaced cluster being removed is listed but not counted",
			rep: report{clusters: []typesv1b1.ClusterStatus{ok("a", 2, ptr.To(true)), {Name: "z", Status: StatusWaitingForRemoval}},
				placed: sets.New("a")},
			want: want{cond: typesv1b1.Condition{Type: PropagationCondition, Status: "False", Reason: "CheckClusters",
				Message: "1 of 2 clusters not propagated: z: WaitingForRemoval", LastTransitionTime: now},
				ready:    typesv1b1.Condition{Type: ReadyCondition, Status: "True", LastTransitionTime: now},
				clusters: []string{"a:", "z:WaitingForRemoval"}, released: "1/1", propagated: "1/1"},
		},
		{
			name: "the object's own failure: Ready is Unknown",
			rep:  report{fail: failure{"InvalidObject", "spec: bad"}, placed: sets.New[string]()},
			want: want{cond: typesv1b1.Condition{Type: PropagationCondition, Status: "False", Reason: "InvalidObject", Message: "spec: bad", LastTransitionTime: now},
				ready: typesv1b1.Condition{Type: ReadyCondition, Status: "Unknown", Reason: "InvalidObject",
					Message: "the object is not propagated as asked", LastTransitionTime: now},
				clusters: []string{}, released: "0/0", propagated: "0/0"},
		},
		{
			name: "unchanged conditions keep both times",
			cur: typesv1b1.Status{Conditions: []typesv1b1.Condition{
				{Type: PropagationCondition, Status: "True", LastUpdateTime: t0, LastTransitionTime: t0},
				{Type: ReadyCondition, Status: "True", LastUpdateTime: t0, LastTransitionTime: t0}}},
			rep: report{clusters: []typesv1b1.ClusterStatus{ok("a", 2, ptr.To(true))}, placed: sets.New("a")},
			want: want{cond: typesv1b1.Condition{Type: PropagationCondition, Status: "True", LastTransitionTime: t0},
				ready:    typesv1b1.Condition{Type: ReadyCondition, Status: "True", LastTransitionTime: t0},
				clusters: []string{"a:"}, released: "1/1", propagated: "1/1"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.rep.clusters)
			got := nextStatus(tc.cur, 2, tc.rep, tc.readiness, now)
			if !reflect.DeepEqual(tc.rep.clusters, in) {
				t.Errorf("nextStatus changed the report's clusters")
			}
			if got.ObservedGeneration != 2 {
				t.Errorf("observedGeneration = %d, want 2", got.ObservedGeneration)
			}
			clusters := []string{}
			for _, cs := range got.Clusters {
				clusters = append(clusters, cs.Name+":"+cs.Status)
			}
			if !reflect.DeepEqual(clusters, tc.want.clusters) {
				t.Errorf("clusters = %v, want %v", clusters, tc.want.clusters)
			}
			if got.Released != tc.want.released || got.Propagated != tc.want.propagated || got.Ready != tc.want.readyN {
				t.Errorf("released/propagated/ready = %q %q %q, want %q %q %q", got.Released, got.Propagated, got.Ready,
					tc.want.released, tc.want.propagated, tc.want.readyN)
			}
			if len(got.Conditions) != 2 {
				t.Fatalf("conditions = %+v", got.Conditions)
			}
			for i, w := range []typesv1b1.Condition{tc.want.cond, tc.want.ready} {
				c := got.Conditions[i]
				if c.Type != w.Type || c.Status != w.Status || c.Reason != w.Reason || c.Message != w.Message || !c.LastTransitionTime.Equal(&w.LastTransitionTime) {
					t.Errorf("condition %d = %+v\nwant %+v", i, c, w)
				}
			}
		})
	}
}
