package informers

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

func cell(ns, name, cluster string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": cellv1alpha1.SchemeGroupVersion.String(), "kind": "Cell",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec":     map[string]any{"cluster": cluster},
	}}
}

// TestCellsIndexes: the Cells cache answers both of its indexes (a
// dynamic informer comes with the namespace index, which must not make
// adding the cluster index fail).
func TestCellsIndexes(t *testing.T) {
	plane := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{cellv1alpha1.CellsResource: "CellList"},
		cell("shop", "rz00a", "member-1"), cell("shop", "rz10a", "member-2"), cell("pay", "rz00b", "member-1"))
	f := New(plane, kubefake.NewClientset(), "kube-federation-system")
	cells := f.Cells()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), cells.HasSynced) {
		t.Fatal("the Cells cache did not sync")
	}
	for _, tc := range []struct {
		index, value string
		want         int
	}{
		{CellsByCluster, "member-1", 2},
		{CellsByCluster, "member-2", 1},
		{CellsByCluster, "member-3", 0},
		{cache.NamespaceIndex, "shop", 2},
		{cache.NamespaceIndex, "pay", 1},
	} {
		got, err := cells.GetIndexer().ByIndex(tc.index, tc.value)
		if err != nil {
			t.Fatalf("ByIndex(%s, %s): %v", tc.index, tc.value, err)
		}
		if len(got) != tc.want {
			t.Errorf("ByIndex(%s, %s) = %d cells, want %d", tc.index, tc.value, len(got), tc.want)
		}
	}
	if f.Cells() != cells {
		t.Error("asking again built a second Cells cache")
	}
}
