package e2e

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cellfed/cellfed/pkg/controller/clusters"
)

// TestManagedLabelRemovedWithoutFederatedObject: KubeFed's rule ("should
// have the managed label removed if not managed"). A member object
// labelled kubefed.io/managed=true with no federated object loses that
// label and nothing else; a member object that has its federated object
// keeps it.
func TestManagedLabelRemovedWithoutFederatedObject(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := startFederation(t, 1)
	fedConfigMaps := fedResource("federatedconfigmaps", "v1beta2")

	f.kubectl.MustRun(t, configMap("shop", "kept", "a: b", []string{"rz00a"}, ""), "apply", "-f", "-")
	f.waitSettled(t, fedConfigMaps, "shop", "kept", map[string]string{"rz00a": "OK"})

	m0 := f.memberKube[0]
	if _, err := m0.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	orphan := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: "orphan", Namespace: "shop",
			Labels:      map[string]string{clusters.ManagedLabel: "true", "app": "shop"},
			Annotations: map[string]string{"team": "blue"},
		},
		Data: map[string]string{"k": "v"},
	}
	created, err := m0.CoreV1().ConfigMaps("shop").Create(ctx, orphan, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the unfederated member object: %v", err)
	}

	var got *corev1.ConfigMap
	eventually(t, "the managed label removed from shop/orphan in member-0", func() (bool, string) {
		got, err = m0.CoreV1().ConfigMaps("shop").Get(ctx, "orphan", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		_, has := got.Labels[clusters.ManagedLabel]
		return !has, fmt.Sprintf("labels %v", got.Labels)
	})
	// Only the label: everything else is as it was created.
	if got.Labels["app"] != "shop" || len(got.Labels) != 1 {
		t.Errorf("labels = %v, want only app=shop left", got.Labels)
	}
	if got.Annotations["team"] != "blue" || len(got.Annotations) != 1 {
		t.Errorf("annotations = %v, want team=blue untouched", got.Annotations)
	}
	if got.Data["k"] != "v" || len(got.Data) != 1 {
		t.Errorf("data = %v, want k=v untouched", got.Data)
	}
	if got.UID != created.UID {
		t.Errorf("the object was re-created (uid %s, was %s)", got.UID, created.UID)
	}

	// The federated object's own member object keeps its label.
	kept, err := m0.CoreV1().ConfigMaps("shop").Get(ctx, "kept", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if kept.Labels[clusters.ManagedLabel] != "true" {
		t.Errorf("shop/kept, which has its federated object, lost its managed label: %v", kept.Labels)
	}
}
