package clusters

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/cellfed/cellfed/test/framework"
)

// answerTypes records the Content-Type of every answer to a POST or PUT.
type answerTypes struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen []string
}

func (a *answerTypes) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := a.next.RoundTrip(req)
	if err == nil && (req.Method == http.MethodPost || req.Method == http.MethodPut) {
		a.mu.Lock()
		a.seen = append(a.seen, resp.Header.Get("Content-Type"))
		a.mu.Unlock()
	}
	return resp, err
}

// TestWritesAnswerWithMetadata creates and updates objects in a real
// member through a member's Writes client: the member answers in
// protobuf, the answers carry the object's identity and versions (name,
// uid, resourceVersion, generation) and none of its content, refusals are
// Kubernetes errors the controller can tell apart, and the Dynamic client
// still reads whole objects.
func TestWritesAnswerWithMetadata(t *testing.T) {
	member := framework.StartMember(t, "writes")
	cfg := member.RESTConfig(t)
	types := &answerTypes{}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { types.next = rt; return types }
	dyn, writes, err := dynamicClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "web", "namespace": "default", "labels": map[string]any{"app": "web"}},
		"data":     map[string]any{"payload": "large enough to notice"},
	}}
	metadataOnly := func(what string, got *unstructured.Unstructured) {
		t.Helper()
		if got.GetKind() != "ConfigMap" || got.GetResourceVersion() == "" || got.GetUID() == "" || got.GetName() != "web" || got.GetNamespace() != "default" {
			t.Fatalf("%s answered %v, want web's name, namespace, uid and resourceVersion", what, got.Object)
		}
		if _, ok := got.Object["data"]; ok || got.GetLabels() != nil || got.GetManagedFields() != nil {
			t.Fatalf("%s answered more than the object's versions: %v", what, got.Object)
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
	if full.GetKind() != "ConfigMap" || full.Object["data"] == nil || full.GetResourceVersion() != created.GetResourceVersion() || full.GetUID() != created.GetUID() {
		t.Fatalf("Dynamic read %v, want the whole ConfigMap at resourceVersion %s", full.Object, created.GetResourceVersion())
	}
	stale := full.DeepCopy()
	full.Object["data"] = map[string]any{"payload": "changed"}
	updated, err := writes.Resource(cms).Namespace("default").Update(ctx, full, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	metadataOnly("update", updated)
	if updated.GetResourceVersion() == created.GetResourceVersion() {
		t.Fatalf("update answered the old resourceVersion %s", updated.GetResourceVersion())
	}
	types.mu.Lock()
	for _, ct := range types.seen {
		if !strings.HasPrefix(ct, "application/vnd.kubernetes.protobuf") {
			t.Errorf("a write was answered in %q, want protobuf", ct)
		}
	}
	if len(types.seen) != 2 {
		t.Errorf("saw %d write answers, want 2", len(types.seen))
	}
	types.mu.Unlock()

	// A create from an encoding made once sends that encoding.
	enc, ok := writes.Resource(cms).Namespace("default").(EncodedCreator)
	if !ok {
		t.Fatal("the writes client's resources are not EncodedCreators")
	}
	shared := obj.DeepCopy()
	shared.SetName("shared")
	body, err := shared.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := enc.CreateEncoded(ctx, shared, body, metav1.CreateOptions{}); err != nil || got.GetName() != "shared" || got.GetUID() == "" {
		t.Fatalf("CreateEncoded: %v, %v", got, err)
	}
	if got, err := dyn.Resource(cms).Namespace("default").Get(ctx, "shared", metav1.GetOptions{}); err != nil || got.Object["data"] == nil {
		t.Fatalf("the object created from its encoding reads %v, %v", got, err)
	}

	// A generation is read back where the kind has one; a cluster-scoped
	// object has no namespace.
	crs := schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	role := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": "web"},
	}}
	gotRole, err := writes.Resource(crs).Create(ctx, role, metav1.CreateOptions{})
	if err != nil || gotRole.GetName() != "web" || gotRole.GetNamespace() != "" || gotRole.GetResourceVersion() == "" {
		t.Fatalf("cluster-scoped create: %v, %v", gotRole, err)
	}
	deploys := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	deploy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "default"},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "web", "image": "nginx"}}},
			},
		},
	}}
	gotDeploy, err := writes.Resource(deploys).Namespace("default").Create(ctx, deploy, metav1.CreateOptions{})
	if err != nil || gotDeploy.GetGeneration() != 1 {
		t.Fatalf("deployment create: %v, %v; want generation 1", gotDeploy, err)
	}

	// A refused write is still a Kubernetes error the controller can tell.
	for _, tc := range []struct {
		name  string
		write func() error
		is    func(error) bool
	}{
		{"create of an existing object", func() error {
			_, err := writes.Resource(cms).Namespace("default").Create(ctx, obj, metav1.CreateOptions{})
			return err
		}, apierrors.IsAlreadyExists},
		{"create in a missing namespace", func() error {
			elsewhere := obj.DeepCopy()
			elsewhere.SetNamespace("nowhere")
			_, err := writes.Resource(cms).Namespace("nowhere").Create(ctx, elsewhere, metav1.CreateOptions{})
			return err
		}, apierrors.IsNotFound},
		{"update at a stale resourceVersion", func() error {
			_, err := writes.Resource(cms).Namespace("default").Update(ctx, stale, metav1.UpdateOptions{})
			return err
		}, apierrors.IsConflict},
		{"invalid object", func() error {
			bad := obj.DeepCopy()
			bad.SetName("Not_A_Name")
			_, err := writes.Resource(cms).Namespace("default").Create(ctx, bad, metav1.CreateOptions{})
			return err
		}, apierrors.IsInvalid},
		{"dry run writes nothing", func() error {
			dry := obj.DeepCopy()
			dry.SetName("dry")
			got, err := writes.Resource(cms).Namespace("default").Create(ctx, dry, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				return err
			}
			if got.GetName() != "dry" {
				t.Errorf("dry run answered %v", got.Object)
			}
			_, err = dyn.Resource(cms).Namespace("default").Get(ctx, "dry", metav1.GetOptions{})
			return err
		}, apierrors.IsNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.write(); !tc.is(err) {
				t.Fatalf("got %v", err)
			}
		})
	}
}

// TestWritesAnswerFallback: a member (or a front) that does not transform
// its answers sends the whole object, or a PartialObjectMetadata, in
// JSON; both are read for the object's versions, and an answer that
// names no object is an error, not an empty version.
func TestWritesAnswerFallback(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		wantRV       string
		wantErr      bool
	}{
		{"whole object", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","namespace":"default","uid":"u-1","resourceVersion":"7"},"data":{"k":"v"}}`, "7", false},
		{"metadata in JSON", `{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadata","metadata":{"name":"web","namespace":"default","uid":"u-1","resourceVersion":"8"}}`, "8", false},
		{"no object", `{"apiVersion":"v1","kind":"ConfigMap"}`, "", true},
		{"not JSON", `<html>`, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.URL.Path != "/api/v1/namespaces/default/configmaps" {
					http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusBadRequest)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusCreated)
				_, _ = w.Write([]byte(tc.answer))
			}))
			defer srv.Close()
			_, writes, err := dynamicClients(&rest.Config{Host: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "web", "namespace": "default"},
			}}
			got, err := writes.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("default").
				Create(context.Background(), obj, metav1.CreateOptions{})
			if tc.wantErr {
				if err == nil {
					t.Fatalf("answered %v, want an error", got.Object)
				}
				return
			}
			if err != nil || got.GetResourceVersion() != tc.wantRV || got.GetUID() != "u-1" || got.Object["data"] != nil {
				t.Fatalf("got %v, %v; want web at resourceVersion %s without data", got, err, tc.wantRV)
			}
		})
	}
}
