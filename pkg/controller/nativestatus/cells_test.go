package nativestatus

import (
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cellfed/cellfed/pkg/nativestatus"
)

var (
	deploymentGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	t0            = time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)
)

func rolledOut(gen, n int64) map[string]any {
	return map[string]any{
		"observedGeneration": gen, "replicas": n, "updatedReplicas": n, "readyReplicas": n, "availableReplicas": n,
		"conditions": []any{
			map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
			map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
		},
	}
}

// federated is a FederatedDeployment shop/web at generation 3, placed for
// the native Deployment of that name (uid u1), on cells rz00a (current),
// rz01a (held back at generation 2), rz02a (offline), plus rows that are
// never written (a placement conflict and another workspace's cell).
func federated(spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta2", "kind": "FederatedDeployment",
		"metadata": map[string]any{
			"namespace": "shop", "name": "web", "generation": int64(3),
			"ownerReferences": []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u1", "controller": true}},
		},
		"spec": map[string]any{"template": map[string]any{"spec": spec}, "replicaDivision": map[string]any{"mode": "Divide"}},
		"status": map[string]any{
			"topologies": []any{
				map[string]any{"name": "rz00a", "cluster": "shop.rz00a", "status": "OK", "generation": int64(3), "ready": true, "remoteStatus": rolledOut(7, 2)},
				map[string]any{"name": "rz01a", "cluster": "shop.rz01a", "status": "HeldBack", "generation": int64(2), "ready": true, "remoteStatus": rolledOut(4, 2)},
				map[string]any{"name": "rz02a", "cluster": "shop.rz02a", "status": "ClusterNotReady", "generation": int64(3), "remoteStatus": rolledOut(9, 2)},
				map[string]any{"name": "rz03a", "cluster": "shop.rz03a", "status": "PlacementConflict"},
				map[string]any{"name": "rz04a", "cluster": "shop.rz04a", "status": "OutsideWorkspace"},
			},
			"record": map[string]any{"templateVersion": "t", "overridesVersion": "o", "clusterVersions": []any{
				map[string]any{"clusterName": "shop.rz00a", "version": "gen:7"},
				map[string]any{"clusterName": "shop.rz01a", "version": "gen:4"},
				map[string]any{"clusterName": "shop.rz02a", "version": "gen:9"},
			}},
		},
	}}
}

func native(generation int64, spec map[string]any, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"namespace": "shop", "name": "web", "generation": generation, "uid": "u1"},
		"spec":     spec,
	}}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

func TestCells(t *testing.T) {
	fed := federated(map[string]any{"replicas": int64(6)})
	for _, synced := range []bool{true, false} {
		got := Cells(fed, synced)
		want := []nativestatus.Cell{
			{Name: "rz00a", Current: synced, MemberGeneration: 7, Status: rolledOut(7, 2)},
			{Name: "rz01a", HeldBack: true, MemberGeneration: 4, Status: rolledOut(4, 2)},
			{Name: "rz02a", Offline: true, Current: synced, MemberGeneration: 9, Status: rolledOut(9, 2)},
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Cells(synced %v) =\n%+v\nwant\n%+v", synced, got, want)
		}
	}
}

func TestNativeOwner(t *testing.T) {
	tests := []struct {
		name  string
		owner map[string]any
		want  bool
	}{
		{"the Deployment of its name", map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u1"}, true},
		{"another name", map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "api", "uid": "u1"}, false},
		{"another kind", map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "u1"}, false},
		{"another version", map[string]any{"apiVersion": "apps/v1beta1", "kind": "Deployment", "name": "web", "uid": "u1"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fed := federated(nil)
			_ = unstructured.SetNestedSlice(fed.Object, []any{tc.owner}, "metadata", "ownerReferences")
			if _, ok := NativeOwner(fed, deploymentGVK); ok != tc.want {
				t.Errorf("NativeOwner = %v, want %v", ok, tc.want)
			}
		})
	}
}

func TestSynced(t *testing.T) {
	spec := map[string]any{"replicas": int64(6), "template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "web:2"}}}}}
	other := map[string]any{"replicas": int64(6), "template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "web:3"}}}}}
	service := func(spec map[string]any) *unstructured.Unstructured {
		u := native(1, spec, nil)
		u.SetAPIVersion("v1")
		u.SetKind("Service")
		return u
	}
	tests := []struct {
		name    string
		fedSpec map[string]any
		native  *unstructured.Unstructured
		want    bool
	}{
		{"same spec", spec, native(5, spec, nil), true},
		{"same spec, numbers of other types", map[string]any{"replicas": float64(6), "template": spec["template"]}, native(5, spec, nil), true},
		{"the native spec changed since", other, native(5, spec, nil), false},
		{"a Service's cluster IP is the plane's own", map[string]any{"ports": []any{map[string]any{"port": int64(80)}}},
			service(map[string]any{"clusterIP": "10.0.0.7", "clusterIPs": []any{"10.0.0.7"}, "ports": []any{map[string]any{"port": int64(80)}}}), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Synced(federated(tc.fedSpec), tc.native); got != tc.want {
				t.Errorf("Synced = %v, want %v", got, tc.want)
			}
		})
	}
	// Labels are part of the template: a native label not copied yet
	// means the template is behind.
	n := native(5, spec, nil)
	n.SetLabels(map[string]string{"app": "web"})
	if Synced(federated(spec), n) {
		t.Error("Synced with a native label the template lacks")
	}
}

func TestNext(t *testing.T) {
	spec := map[string]any{"replicas": int64(6)}
	fed := federated(spec)
	// Only rz00a runs the current template: rz01a is held back, rz02a
	// offline (its last status counts, none of its pods available).
	st, write, ok := Next(fed, native(5, spec, nil), t0)
	if !ok || !write {
		t.Fatalf("Next: ok %v write %v, want both", ok, write)
	}
	want := map[string]int64{"observedGeneration": 5, "replicas": 6, "updatedReplicas": 4, "readyReplicas": 4, "availableReplicas": 4, "unavailableReplicas": 2}
	for k, v := range want {
		if got, _, _ := unstructured.NestedInt64(st, k); got != v {
			t.Errorf("%s = %d, want %d", k, got, v)
		}
	}
	// The same status again: nothing to write.
	if _, write, _ := Next(fed, native(5, spec, st), t0.Add(time.Minute)); write {
		t.Error("an unchanged status is written again")
	}
	// The native object changed since the template was made: no cell
	// runs its current spec.
	st, _, _ = Next(fed, native(6, map[string]any{"replicas": int64(8)}, st), t0.Add(time.Minute))
	if got, _, _ := unstructured.NestedInt64(st, "observedGeneration"); got != 5 {
		t.Errorf("observedGeneration after a native change = %d, want 5", got)
	}
	if got, _, _ := unstructured.NestedInt64(st, "updatedReplicas"); got != 0 {
		t.Errorf("updatedReplicas after a native change = %d, want 0", got)
	}
	// Kinds without an aggregated status are left alone.
	cm := native(1, nil, nil)
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	if _, _, ok := Next(fed, cm, t0); ok {
		t.Error("a ConfigMap's status is aggregated")
	}
}

func TestRecheckAfter(t *testing.T) {
	progressing := func(reason string, at time.Time) map[string]any {
		return map[string]any{"conditions": []any{map[string]any{"type": "Progressing", "status": "True", "reason": reason, "lastUpdateTime": at.Format(time.RFC3339)}}}
	}
	tests := []struct {
		name   string
		spec   map[string]any
		status map[string]any
		want   time.Duration
	}{
		{"held back: when the default deadline runs out", map[string]any{}, progressing("HeldBack", t0.Add(-4*time.Minute)), 6*time.Minute + time.Second},
		{"a set deadline", map[string]any{"progressDeadlineSeconds": int64(60)}, progressing("ReplicaSetUpdated", t0), 61 * time.Second},
		{"overdue: soon", map[string]any{}, progressing("HeldBack", t0.Add(-time.Hour)), time.Second},
		{"done: never", map[string]any{}, progressing("NewReplicaSetAvailable", t0), 0},
		{"no condition: never", map[string]any{}, map[string]any{}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := RecheckAfter(native(1, tc.spec, nil), tc.status, t0); got != tc.want {
				t.Errorf("RecheckAfter = %v, want %v", got, tc.want)
			}
		})
	}
}
