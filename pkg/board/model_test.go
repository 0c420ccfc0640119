package board

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/cellfed/cellfed/pkg/placement"
	"github.com/cellfed/cellfed/pkg/rollout"
)

func TestRevisionLabel(t *testing.T) {
	revs := []Revision{{Number: 1, Generation: 1}, {Number: 2, Generation: 3}, {Number: 4, Generation: 5}}
	for _, tc := range []struct {
		name string
		gen  int64
		revs []Revision
		want string
	}{
		{"never received", 0, revs, ""},
		{"exact revision", 3, revs, "r2"},
		{"between revisions: the one recorded before", 4, revs, "r2"},
		{"newest", 9, revs, "r4"},
		{"no history: the generation", 7, nil, "g7"},
		{"older than every revision", 1, []Revision{{Number: 3, Generation: 2}}, "g1"},
		{"undo renumbers: highest number at one generation", 5, []Revision{{Number: 1, Generation: 5}, {Number: 6, Generation: 5}}, "r6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RevisionLabel(tc.gen, tc.revs); got != tc.want {
				t.Errorf("RevisionLabel(%d) = %q, want %q", tc.gen, got, tc.want)
			}
		})
	}
}

func TestSquareOf(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		name string
		row  rollout.Row
		want Square
	}{
		{"held back keeps its revision", rollout.Row{State: rollout.HeldBack, Generation: 1}, Square{State: Held, Revision: "g1"}},
		{"updated and ready with replicas", rollout.Row{State: rollout.Updated, Generation: 2, Ready: &yes, Replicas: "2/2"}, Square{State: Ready, Revision: "g2", Replicas: "2/2"}},
		{"not ready is released", rollout.Row{State: rollout.NotReady, Generation: 2, Replicas: "0/2"}, Square{State: Released, Revision: "g2", Replicas: "0/2"}},
		{"updating never received", rollout.Row{State: rollout.Updating}, Square{State: Updating}},
		{"failed with detail", rollout.Row{State: rollout.Failed, Generation: 2, Detail: "UpdateFailed"}, Square{State: Failed, Revision: "g2", Detail: "UpdateFailed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SquareOf(tc.row, nil); got != tc.want {
				t.Errorf("SquareOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// fedDeployment is a v1beta2 object at generation gen placed on cells,
// with a mask (nil: none) and per-cell status "cell=status@gen[+ready]".
func fedDeployment(gen int64, cells, mask []string, status map[string]map[string]any) *unstructured.Unstructured {
	var tops []any
	for _, c := range cells {
		tops = append(tops, map[string]any{"name": c})
	}
	spec := map[string]any{"placement": map[string]any{"topologyType": "cell", "topologies": tops}, "template": map[string]any{}}
	if mask != nil {
		var m []any
		for _, c := range mask {
			m = append(m, map[string]any{"name": c})
		}
		spec["placementMask"] = map[string]any{"topologies": m}
	}
	var sts []any
	for _, c := range cells {
		if st, ok := status[c]; ok {
			st["name"] = c
			sts = append(sts, st)
		}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta2", "kind": "FederatedDeployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "generation": gen, "uid": "u1"},
		"spec":     spec,
		"status":   map[string]any{"observedGeneration": gen, "topologies": sts},
	}}
	return obj
}

func TestRowOf(t *testing.T) {
	typ := Type{Kind: "FederatedDeployment", Resource: "federateddeployments"}
	cells := []placement.Topology{{Name: "rz00a"}, {Name: "rz10a"}, {Name: "rz20a"}}
	ready := func(gen int64) map[string]any {
		return map[string]any{"status": "OK", "generation": gen, "ready": true,
			"remoteStatus": map[string]any{"replicas": int64(2), "readyReplicas": int64(2)}}
	}
	for _, tc := range []struct {
		name                              string
		obj                               *unstructured.Unstructured
		revs                              []Revision
		want                              map[string]Square
		placed, released, updated, readyN int
	}{
		{
			name:   "everything released and ready",
			obj:    fedDeployment(1, []string{"rz00a", "rz10a"}, nil, map[string]map[string]any{"rz00a": ready(1), "rz10a": ready(1)}),
			want:   map[string]Square{"rz00a": {State: Ready, Revision: "g1", Replicas: "2/2"}, "rz10a": {State: Ready, Revision: "g1", Replicas: "2/2"}},
			placed: 2, released: 2, updated: 2, readyN: 2,
		},
		{
			name: "grayscale: one cell released and updating, two held back at the old revision",
			obj: fedDeployment(2, []string{"rz00a", "rz10a", "rz20a"}, []string{"rz00a"}, map[string]map[string]any{
				"rz00a": ready(1), "rz10a": {"status": "HeldBack", "generation": int64(1)}, "rz20a": {"status": "HeldBack", "generation": int64(1)}}),
			revs:   []Revision{{Number: 1, Generation: 1}, {Number: 2, Generation: 2}},
			want:   map[string]Square{"rz00a": {State: Updating, Revision: "r1", Replicas: "2/2"}, "rz10a": {State: Held, Revision: "r1"}, "rz20a": {State: Held, Revision: "r1"}},
			placed: 3, released: 1, updated: 0, readyN: 0,
		},
		{
			name:   "a failed cell",
			obj:    fedDeployment(1, []string{"rz00a"}, nil, map[string]map[string]any{"rz00a": {"status": "ClusterNotReady", "generation": int64(0)}}),
			want:   map[string]Square{"rz00a": {State: Failed, Detail: "ClusterNotReady"}},
			placed: 1, released: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row := RowOf(typ, tc.obj, cells, tc.revs)
			if row.Error != "" {
				t.Fatalf("RowOf: error %s", row.Error)
			}
			if !reflect.DeepEqual(row.Squares, tc.want) {
				t.Errorf("squares = %+v\nwant %+v", row.Squares, tc.want)
			}
			if row.Placed != tc.placed || row.Released != tc.released || row.Updated != tc.updated || row.Ready != tc.readyN {
				t.Errorf("summary placed/released/updated/ready = %d/%d/%d/%d, want %d/%d/%d/%d",
					row.Placed, row.Released, row.Updated, row.Ready, tc.placed, tc.released, tc.updated, tc.readyN)
			}
			if row.Key != "federateddeployments/web" {
				t.Errorf("key = %q", row.Key)
			}
		})
	}
	t.Run("a malformed object is shown with its error", func(t *testing.T) {
		obj := fedDeployment(1, []string{"rz00a"}, nil, nil)
		obj.Object["spec"] = "not an object"
		if row := RowOf(typ, obj, cells, nil); row.Error == "" {
			t.Errorf("no error for a malformed object")
		}
	})
}

func TestColumns(t *testing.T) {
	rows := []Row{{Squares: map[string]Square{"member-9": {}, "rz00a": {}}}}
	got := Columns([]string{"rz10a", "rz00a"}, rows)
	want := []string{"rz00a", "rz10a", "member-9"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Columns = %v, want %v", got, want)
	}
}

func TestActions(t *testing.T) {
	verbs := func(as []Action) []string {
		var out []string
		for _, a := range as {
			out = append(out, a.Verb)
		}
		return out
	}
	for _, tc := range []struct {
		name             string
		active, paused   bool
		placed, released int
		want             []string
	}{
		{"no rollout: start", false, false, 3, 3, []string{"start"}},
		{"under way", true, false, 3, 1, []string{"next", "pause", "finish", "undo"}},
		{"every cell released: no next", true, false, 3, 3, []string{"pause", "finish", "undo"}},
		{"paused", true, true, 3, 1, []string{"resume", "finish", "undo"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := verbs(Actions("federateddeployment/web", tc.active, tc.paused, tc.placed, tc.released)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Actions = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRolloutArgs(t *testing.T) {
	for _, tc := range []struct {
		name, verb, batch string
		want              []string
		wantErr           bool
	}{
		{"next defaults to one cell", "next", "", []string{"rollout", "next", "federateddeployment/web", "-n", "shop", "--batch=1"}, false},
		{"start with a batch", "start", "2", []string{"rollout", "start", "federateddeployment/web", "-n", "shop", "--batch=2"}, false},
		{"finish", "finish", "", []string{"rollout", "finish", "federateddeployment/web", "-n", "shop"}, false},
		{"bad batch", "next", "x", nil, true},
		{"unknown verb", "delete", "", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RolloutArgs(tc.verb, "shop", "FederatedDeployment", "web", tc.batch)
			if (err != nil) != tc.wantErr || (!tc.wantErr && !reflect.DeepEqual(got, tc.want)) {
				t.Errorf("RolloutArgs = %v, %v; want %v (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
	if _, err := RegistrationArgs("revoke", "edge-1"); err == nil {
		t.Errorf("RegistrationArgs(revoke): no error; the board only approves and denies")
	}
}

func TestNativeOf(t *testing.T) {
	made := fedDeployment(1, []string{"rz00a"}, nil, nil)
	made.SetAnnotations(map[string]string{"policy.cellfed.io/policy": "PropagationPolicy/shop/web"})
	made.SetOwnerReferences([]metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "o"},
		{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "n1", Controller: ptr.To(true)},
	})
	cluster := fedDeployment(1, []string{"rz00a"}, nil, nil)
	cluster.SetAnnotations(map[string]string{"policy.cellfed.io/policy": "ClusterPropagationPolicy/everywhere"})
	for _, tc := range []struct {
		name                   string
		obj                    *unstructured.Unstructured
		wantNative, wantPolicy string
	}{
		{"made by a policy from a Deployment", made, "Deployment web", "PropagationPolicy shop/web"},
		{"made by a cluster policy, owner not set", cluster, "", "ClusterPropagationPolicy everywhere"},
		{"a wrapper", fedDeployment(1, []string{"rz00a"}, nil, nil), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			native, policy := NativeOf(tc.obj)
			if native != tc.wantNative || policy != tc.wantPolicy {
				t.Errorf("NativeOf = %q, %q; want %q, %q", native, policy, tc.wantNative, tc.wantPolicy)
			}
			if row := RowOf(Type{Kind: "FederatedDeployment", Resource: "federateddeployments"}, tc.obj, nil, nil); row.Native != tc.wantNative || row.Policy != tc.wantPolicy {
				t.Errorf("row native, policy = %q, %q; want %q, %q", row.Native, row.Policy, tc.wantNative, tc.wantPolicy)
			}
		})
	}
}
