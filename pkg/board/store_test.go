package board

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

func cellObject(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "core.cellfed.io/v1alpha1", "kind": "Cell",
		"metadata": map[string]any{"name": name, "namespace": "shop"},
		"spec":     map[string]any{"cluster": "member-1"},
	}}
}

// next waits for the store's next event, at most 5 s.
func next(t *testing.T, ch <-chan Event) Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("the subscription ended")
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
	}
	return Event{}
}

// TestStore feeds a store from client-go's fake dynamic client (a unit
// test of the store's bookkeeping; TestBoard runs it against a plane) and
// checks what it sends: a snapshot, deltas for changed and deleted
// objects, and a new snapshot when the cells change.
func TestStore(t *testing.T) {
	typ := Type{Kind: "FederatedDeployment", Resource: "federateddeployments"}
	ready := func(gen int64) map[string]any {
		return map[string]any{"status": "OK", "generation": gen, "ready": true}
	}
	web := fedDeployment(1, []string{"rz00a", "rz10a"}, nil, map[string]map[string]any{"rz00a": ready(1), "rz10a": ready(1)})
	scheme := runtime.NewScheme()
	lists := map[schema.GroupVersionResource]string{
		cellv1alpha1.CellsResource:             "CellList",
		cellv1alpha1.TemplateRevisionsResource: "TemplateRevisionList",
		typ.GVR():                              "FederatedDeploymentList",
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, lists, cellObject("rz00a"), cellObject("rz10a"), web)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := NewStore("shop", []Type{typ})
	if err := st.Watch(ctx, client); err != nil {
		t.Fatalf("Watch: %v", err)
	}
	events, unsubscribe := st.Subscribe()
	defer unsubscribe()

	ev := next(t, events)
	var snap Snapshot
	if err := json.Unmarshal(ev.Data, &snap); ev.Name != "snapshot" || err != nil {
		t.Fatalf("first event %s (%v), want a snapshot", ev.Name, err)
	}
	if len(snap.Rows) != 1 || snap.Rows[0].Squares["rz10a"].State != Ready || len(snap.Columns) != 2 {
		t.Fatalf("snapshot = %+v", snap)
	}

	t.Run("a change is a delta with the row", func(t *testing.T) {
		masked := fedDeployment(2, []string{"rz00a", "rz10a"}, []string{"rz00a"}, map[string]map[string]any{"rz00a": ready(1), "rz10a": {"status": "HeldBack", "generation": int64(1)}})
		if _, err := client.Resource(typ.GVR()).Namespace("shop").Update(ctx, masked, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		ev := next(t, events)
		var d Delta
		if err := json.Unmarshal(ev.Data, &d); ev.Name != "delta" || err != nil || len(d.Rows) != 1 {
			t.Fatalf("event %s %s, want a delta of one row", ev.Name, ev.Data)
		}
		if got := d.Rows[0].Squares["rz10a"].State; got != Held {
			t.Errorf("rz10a is %s, want held", got)
		}
	})
	t.Run("a new cell is a snapshot with its column", func(t *testing.T) {
		if _, err := client.Resource(cellv1alpha1.CellsResource).Namespace("shop").Create(ctx, cellObject("rz20a"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		ev := next(t, events)
		var snap Snapshot
		if err := json.Unmarshal(ev.Data, &snap); ev.Name != "snapshot" || err != nil || len(snap.Columns) != 3 {
			t.Fatalf("event %s %s, want a snapshot with three columns", ev.Name, ev.Data)
		}
	})
	t.Run("a deleted object is removed", func(t *testing.T) {
		if err := client.Resource(typ.GVR()).Namespace("shop").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		ev := next(t, events)
		var d Delta
		if err := json.Unmarshal(ev.Data, &d); ev.Name != "delta" || err != nil || len(d.Removed) != 1 || d.Removed[0] != "federateddeployments/web" {
			t.Fatalf("event %s %s, want web removed", ev.Name, ev.Data)
		}
	})
}

// TestStoreForbidden: a user who may not list the workspace gets the
// plane's refusal, not an empty board.
func TestStoreForbidden(t *testing.T) {
	typ := Type{Kind: "FederatedDeployment", Resource: "federateddeployments"}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		cellv1alpha1.CellsResource: "CellList", cellv1alpha1.TemplateRevisionsResource: "TemplateRevisionList", typ.GVR(): "FederatedDeploymentList",
	})
	client.PrependReactor("list", "federateddeployments", func(action clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "types.kubefed.io", Resource: "federateddeployments"}, "", errors.New(`User "bert" cannot list`))
	})
	err := NewStore("shop", []Type{typ}).Watch(context.Background(), client)
	if !apierrors.IsForbidden(err) {
		t.Fatalf("Watch = %v, want Forbidden", err)
	}
}

// TestStoreLeavesOffAForbiddenType: a type the user may not list (a
// viewer's FederatedSecrets) is left off the board; the rest is served.
func TestStoreLeavesOffAForbiddenType(t *testing.T) {
	secrets := Type{Kind: "FederatedSecret", Resource: "federatedsecrets"}
	deployments := Type{Kind: "FederatedDeployment", Resource: "federateddeployments"}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		cellv1alpha1.CellsResource: "CellList", cellv1alpha1.TemplateRevisionsResource: "TemplateRevisionList",
		secrets.GVR(): "FederatedSecretList", deployments.GVR(): "FederatedDeploymentList",
	})
	client.PrependReactor("list", "federatedsecrets", func(action clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "types.kubefed.io", Resource: "federatedsecrets"}, "", errors.New(`User "vera" cannot list`))
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := NewStore("shop", []Type{secrets, deployments})
	if err := s.Watch(ctx, client); err != nil {
		t.Fatalf("Watch = %v, want the board without FederatedSecrets", err)
	}
	s.mu.Lock()
	got := s.snapshotLocked().Types
	s.mu.Unlock()
	if len(got) != 1 || got[0].Resource != "federateddeployments" {
		t.Errorf("the board's types are %v, want only federateddeployments", got)
	}
}
