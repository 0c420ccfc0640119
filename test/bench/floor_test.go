package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/cellfed/cellfed/test/framework"
)

// TestFloorPropagates checks that the race's floor (test/bench/floor) is a
// correct propagator, so that what it costs is a floor and not a shortcut:
// it creates a cell-placed FederatedConfigMap's object on the cell's
// member, writes the status, follows a template update, and writes the
// object again when someone else changes or deletes it on the member.
func TestFloorPropagates(t *testing.T) {
	t.Parallel()
	plane, members := framework.StartPlaneWithMembers(t, framework.PlaneOptions{}, 1)
	member := members[0]
	framework.JoinMember(t, plane, member, "member-0")
	const ns = "floor-shop"
	k := framework.Kubectl{Kubeconfig: plane.Kubeconfig}
	k.MustRun(t, tenantNamespace(ns, "acme")+cellYAML(ns, 0), "apply", "-f", "-")
	mc := member.Client(t)
	ctx := context.Background()
	if _, err := mc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	bin := buildFloor(t)
	framework.StartProcess(t, "floor", filepath.Join(t.TempDir(), "floor.log"), bin,
		"--kubeconfig", plane.Kubeconfig, "--member", "member-0="+member.Kubeconfig)

	dyn := dynamic.NewForConfigOrDie(plane.RESTConfig(t))
	createFedConfigMap(t, dyn, ns, "app", cellNames(1))
	waitData := func(what, want string) {
		t.Helper()
		var got string
		if err := framework.Poll(ctx, 100*time.Millisecond, 2*time.Minute, func(ctx context.Context) (bool, error) {
			cm, err := mc.CoreV1().ConfigMaps(ns).Get(ctx, "app", metav1.GetOptions{})
			if err != nil {
				got = err.Error()
				return false, nil
			}
			got = cm.Data["key"]
			return got == want && cm.Labels["kubefed.io/managed"] == "true", nil
		}); err != nil {
			t.Fatalf("%s: the member's app config map holds key=%q, want %q (managed label set): %v", what, got, want, err)
		}
	}
	waitData("created", "app")
	var status string
	if err := framework.Poll(ctx, 100*time.Millisecond, 2*time.Minute, func(ctx context.Context) (bool, error) {
		o, err := dyn.Resource(fedConfigMaps).Namespace(ns).Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st, _, _ := unstructured.NestedMap(o.Object, "status")
		status = fmt.Sprint(st)
		p, _, _ := unstructured.NestedString(o.Object, "status", "propagated")
		return p == "1/1", nil
	}); err != nil {
		t.Fatalf("the federated object's status is %s, want propagated 1/1: %v", status, err)
	}

	patchFedConfigMap(t, dyn, ns, "app", `{"spec":{"template":{"data":{"key":"v2"}}}}`)
	waitData("template updated", "v2")

	cm, err := mc.CoreV1().ConfigMaps(ns).Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["key"] = "drifted"
	if _, err := mc.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitData("changed on the member", "v2")

	if err := mc.CoreV1().ConfigMaps(ns).Delete(ctx, "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitData("deleted on the member", "v2")
}
