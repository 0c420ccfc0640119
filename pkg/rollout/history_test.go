package rollout

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

func fedDeployment(image string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta2", "kind": "FederatedDeployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "uid": "uid-1", "generation": int64(1)},
		"spec": map[string]any{
			"template":  map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": image}}}}}},
			"overrides": []any{map[string]any{"topologyName": "rz10a", "clusterOverrides": []any{map[string]any{"path": "/spec/replicas", "value": int64(5)}}}},
		},
	}}
}

func TestHistory(t *testing.T) {
	ctx := context.Background()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{cellv1alpha1.TemplateRevisionsResource: "TemplateRevisionList"})
	h := History{Client: client, Limit: 3}
	numbers := func(obj *unstructured.Unstructured) (out []string) {
		revs, err := h.List(ctx, obj)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range revs {
			out = append(out, fmt.Sprintf("%d:%s", r.Spec.Revision, Images(r.Spec.Template.Raw)[0]))
		}
		return out
	}
	for _, img := range []string{"app:1", "app:2", "app:2"} {
		if _, err := h.Record(ctx, fedDeployment(img)); err != nil {
			t.Fatal(err)
		}
	}
	if got := numbers(fedDeployment("")); !slices.Equal(got, []string{"1:app:1", "2:app:2"}) {
		t.Fatalf("after app:1, app:2, app:2: %v, want one revision per template", got)
	}
	// Undo brings app:1 back: renumbered, not duplicated.
	rev, err := h.Record(ctx, fedDeployment("app:1"))
	if err != nil || rev.Spec.Revision != 3 {
		t.Fatalf("recording app:1 again: %v, %v", rev, err)
	}
	if got := numbers(fedDeployment("")); !slices.Equal(got, []string{"2:app:2", "3:app:1"}) {
		t.Fatalf("after app:1 came back: %v", got)
	}
	// A stale copy (an older generation than one recorded) records
	// nothing: a cache behind the writer would push its template on top.
	stale := fedDeployment("app:2")
	stale.SetGeneration(0)
	if _, err := h.Record(ctx, stale); err != nil {
		t.Fatal(err)
	}
	if got := numbers(fedDeployment("")); !slices.Equal(got, []string{"2:app:2", "3:app:1"}) {
		t.Fatalf("after a stale copy of app:2: %v", got)
	}
	revs, _ := h.List(ctx, fedDeployment(""))
	if p := Previous(revs, TemplateHash(fedDeployment("app:1"))); p == nil || p.Spec.Revision != 2 {
		t.Errorf("Previous of app:1 = %v, want revision 2", p)
	}
	// Bounded: the oldest go beyond the limit.
	for _, img := range []string{"app:3", "app:4", "app:5"} {
		if _, err := h.Record(ctx, fedDeployment(img)); err != nil {
			t.Fatal(err)
		}
	}
	if got := numbers(fedDeployment("")); !slices.Equal(got, []string{"4:app:3", "5:app:4", "6:app:5"}) {
		t.Fatalf("with limit 3: %v", got)
	}
	// A writer that leaves pruning to the controller prunes nothing.
	if _, err := (History{Client: client, Limit: -1}).Record(ctx, fedDeployment("app:6")); err != nil {
		t.Fatal(err)
	}
	if got := numbers(fedDeployment("")); len(got) != 4 {
		t.Fatalf("Limit -1 pruned: %v", got)
	}
	if _, err := h.Record(ctx, fedDeployment("app:6")); err != nil {
		t.Fatal(err)
	}
	if got := numbers(fedDeployment("")); !slices.Equal(got, []string{"5:app:4", "6:app:5", "7:app:6"}) {
		t.Fatalf("with limit 3 after app:6 (recorded already): %v", got)
	}
	// Restore puts template and overrides back.
	revs, _ = h.List(ctx, fedDeployment(""))
	obj := fedDeployment("app:9")
	unstructured.RemoveNestedField(obj.Object, "spec", "overrides")
	if err := Restore(obj, &revs[0]); err != nil {
		t.Fatal(err)
	}
	if TemplateHash(obj) != revs[0].Spec.Hash {
		t.Errorf("restored object's hash %s, want the revision's %s", ShortHash(TemplateHash(obj)), ShortHash(revs[0].Spec.Hash))
	}
	// Revisions of another object (same name, other UID) are not mixed in.
	other := fedDeployment("app:1")
	other.SetUID(types.UID("uid-2"))
	if got := numbers(other); len(got) != 0 {
		t.Errorf("another object's history: %v, want none", got)
	}
	if RevisionName(other, revs[0].Spec.Hash) == revs[0].Name {
		t.Errorf("two objects' revisions of one template share a name")
	}
	if refs := revs[0].OwnerReferences; len(refs) != 1 || refs[0].UID != "uid-1" || refs[0].Kind != "FederatedDeployment" {
		t.Errorf("owner references %+v, want the federated object", refs)
	}
}
