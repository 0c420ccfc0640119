package clusters

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cellfed/cellfed/test/framework"
)

// TestWritesAnswerWithMetadata creates and updates a config map in a real
// member through a member's Writes client: the answers carry the
// object's metadata (name, uid, resourceVersion) and none of its data,
// while the Dynamic client still reads whole objects.
func TestWritesAnswerWithMetadata(t *testing.T) {
	member := framework.StartMember(t, "writes")
	dyn, writes, err := dynamicClients(member.RESTConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "web", "namespace": "default"},
		"data":     map[string]any{"payload": "large enough to notice"},
	}}
	metadataOnly := func(what string, got *unstructured.Unstructured) {
		t.Helper()
		if got.GetKind() != "PartialObjectMetadata" || got.GetResourceVersion() == "" || got.GetUID() == "" || got.GetName() != "web" {
			t.Fatalf("%s answered %v, want a PartialObjectMetadata of web with uid and resourceVersion", what, got.Object)
		}
		if _, ok := got.Object["data"]; ok {
			t.Fatalf("%s answered the object's data: %v", what, got.Object)
		}
	}
	created, err := writes.Resource(cms).Namespace("default").Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	metadataOnly("create", created)
	full, err := dyn.Resource(cms).Namespace("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if full.GetKind() != "ConfigMap" || full.Object["data"] == nil || full.GetResourceVersion() != created.GetResourceVersion() {
		t.Fatalf("Dynamic read %v, want the whole ConfigMap at resourceVersion %s", full.Object, created.GetResourceVersion())
	}
	full.Object["data"] = map[string]any{"payload": "changed"}
	updated, err := writes.Resource(cms).Namespace("default").Update(ctx, full, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	metadataOnly("update", updated)
	if updated.GetResourceVersion() == created.GetResourceVersion() {
		t.Fatalf("update answered the old resourceVersion %s", updated.GetResourceVersion())
	}
	// A refused write is still a Kubernetes error the controller can tell.
	if _, err := writes.Resource(cms).Namespace("default").Create(ctx, obj, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: %v, want AlreadyExists", err)
	}
}
