package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cellfed/cellfed/test/framework"
)

// TestWorkspaceFairness: a workspace's backlog does not hold back
// another workspace's object (issue 40). While cellfed-controller is
// down, workspace shop gets 300 FederatedConfigMaps and then shop2 one;
// the controller restarts with one worker, so every key is queued at
// once, shop's first. shop2's object must reach its member after at most
// 20 of shop's (the queue serves shop2 after at most one of shop's once
// both are queued; 1 and 2 in two runs, where the single FIFO queue
// before took it after 98 and 251).
func TestWorkspaceFairness(t *testing.T) {
	t.Parallel()
	const flood, maxAhead = 300, 20
	f := startFederation(t, 1, "--workers=1")
	f.controller.Stop(10 * time.Second)
	fcm := fedResource("federatedconfigmaps", "v1beta2")
	create := func(ns, name string) error {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "types.kubefed.io/v1beta2", "kind": "FederatedConfigMap",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec": map[string]any{
				"placement": map[string]any{"topologies": []any{map[string]any{"name": "rz00a"}}},
				"template":  map[string]any{"data": map[string]any{"v": "1"}},
			},
		}}
		_, err := f.dyn.Resource(fcm).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{})
		return err
	}
	errs := make(chan error, flood)
	for i := range flood {
		go func() { errs <- create("shop", fmt.Sprintf("flood-%03d", i)) }()
	}
	for range flood {
		if err := <-errs; err != nil {
			t.Fatalf("creating shop's flood: %v", err)
		}
	}
	if err := create("shop2", "quiet"); err != nil {
		t.Fatal(err)
	}
	f.controller = framework.StartController(t, f.plane, "--workers=1")

	member := f.memberKube[0]
	if err := framework.Poll(context.Background(), 20*time.Millisecond, 3*time.Minute, func(ctx context.Context) (bool, error) {
		_, err := member.CoreV1().ConfigMaps("shop2").Get(ctx, "quiet", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("shop2/quiet not on member-0: %v\ncontroller log:\n%s", err, f.controller.Tail(20))
	}
	l, err := member.CoreV1().ConfigMaps("shop").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ahead := 0
	for _, cm := range l.Items {
		if strings.HasPrefix(cm.Name, "flood-") {
			ahead++
		}
	}
	t.Logf("shop2/quiet reached member-0 after %d of shop's %d objects", ahead, flood)
	if ahead > maxAhead {
		t.Errorf("shop2/quiet reached member-0 after %d of shop's %d objects: held back by another workspace's backlog (want at most %d)", ahead, flood, maxAhead)
	}
}
