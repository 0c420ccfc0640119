package e2e

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/cellfed/cellfed/pkg/controller/clusters"
)

// TestDeletionWaitsForAPlacedCellItKnowsNothingOf: a member object the
// propagation record does not list (a create that landed after the
// controller that sent it died, as the soak found) sits on a placed cell
// whose member is down when the federated object is deleted. The
// deletion must wait for the member instead of letting the object go,
// then remove the member object once the member is back.
func TestDeletionWaitsForAPlacedCellItKnowsNothingOf(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := startFederation(t, 2)
	cells := []string{"rz00a", "rz10a"}
	// rz10a (member-1) is placed but held back: nothing is written there
	// and nothing recorded.
	f.kubectl.MustRun(t, masked("late", "app:1", cells, []string{"rz00a"}), "apply", "-f", "-")
	f.waitSettled(t, fedDeployV2, "shop", "late", map[string]string{"rz00a": "OK", "rz10a": "HeldBack"})

	// The create a dead controller sent lands on member-1.
	m1 := f.memberKube[1]
	if _, err := m1.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "late"}
	late := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: "shop", Labels: map[string]string{clusters.ManagedLabel: "true"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
			},
		},
	}
	if _, err := m1.AppsV1().Deployments("shop").Create(ctx, late, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	f.members[1].Kill()
	eventually(t, "member-1 not ready in the plane", func() (bool, string) {
		st, err := clusterCondition(ctx, f.dyn, "member-1", "Ready")
		return err == nil && st != "True", fmt.Sprintf("Ready=%q err=%v", st, err)
	})
	f.kubectl.MustRun(t, "", "delete", "federateddeployments.v1beta2.types.kubefed.io", "-n", "shop", "late", "--wait=false")
	gone := func() bool {
		_, err := f.dyn.Resource(fedDeployV2).Namespace("shop").Get(ctx, "late", metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("reading the federated object: %v", err)
		}
		return apierrors.IsNotFound(err)
	}
	eventually(t, "the deletion waiting for rz10a", func() (bool, string) {
		if gone() {
			t.Fatal("the federated object is gone while member-1 is down: its member object there is left behind")
		}
		_, _, got, _ := f.fedStatus(t, fedDeployV2, "shop", "late")
		return got["rz10a"].Status == "WaitingForRemoval", fmt.Sprintf("rz10a: %+v", got["rz10a"])
	})

	f.members[1].RestartAndWait(t)
	eventually(t, "member-1's object removed and the federated object gone", func() (bool, string) {
		if f.memberObject(t, 1, deployments, "shop", "late") != nil {
			return false, "member-1 still holds shop/late"
		}
		return gone(), "the federated object is still there"
	})
}
