package federatedtypeconfig

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/pkg/controller/informers"
	"github.com/cellfed/cellfed/pkg/controller/propagation"
	"github.com/cellfed/cellfed/pkg/controller/rolloutcontroller"
)

// A FederatedTypeConfig whose propagation is disabled runs nothing and
// reports NotRunning with its generation, as KubeFed's controller-manager
// does (kubefedctl disable waits for it).
func TestDisabledTypeReportsNotRunning(t *testing.T) {
	ftc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "core.kubefed.io/v1beta1", "kind": "FederatedTypeConfig",
		"metadata": map[string]any{"name": "configmaps", "namespace": "kube-federation-system", "generation": int64(3)},
		"spec":     map[string]any{"propagation": "Disabled"},
	}}
	plane := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{kubefed.FederatedTypeConfigsResource: "FederatedTypeConfigList"}, ftc)
	kube := kubefake.NewSimpleClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{cellv1alpha1.LabelTenant: "a"}}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	caches := informers.New(plane, kube, "kube-federation-system")
	c := New(ctx, plane, caches, nil, record.NewFakeRecorder(10), propagation.Options{}, rolloutcontroller.DefaultOptions())
	go func() { _ = c.Run(ctx) }()
	caches.Start(ctx.Done())

	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := plane.Resource(kubefed.FederatedTypeConfigsResource).Namespace("kube-federation-system").Get(ctx, "configmaps", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		state, _, _ := unstructured.NestedString(got.Object, "status", "propagationController")
		gen, _, _ := unstructured.NestedInt64(got.Object, "status", "observedGeneration")
		return state == "NotRunning" && gen == 3, nil
	})
	if err != nil {
		t.Fatalf("status never said NotRunning at generation 3: %v", err)
	}
	c.mu.Lock()
	running := len(c.running)
	c.mu.Unlock()
	if running != 0 {
		t.Errorf("%d types run, want none", running)
	}

	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return c.namespaces.HasSynced(), nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ ns, want string }{
		{"team-a", "a"},
		{"unknown", ""},
	} {
		t.Run("tenant of "+tc.ns, func(t *testing.T) {
			got, err := c.tenantOf(tc.ns)
			if err != nil || got != tc.want {
				t.Fatalf("tenantOf(%s) = %q, %v; want %q", tc.ns, got, err, tc.want)
			}
		})
	}
}
