package e2e

import (
	"context"
	"errors"
	"syscall"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/cellfed/cellfed/test/framework"
)

// TestMemberHarness starts three real kube-apiservers, creates a Deployment
// and a Service in each with client-go, and checks that no member process
// outlives the test that started it.
func TestMemberHarness(t *testing.T) {
	t.Parallel()
	var pids []int
	t.Run("three members", func(t *testing.T) {
		members := framework.StartMembers(t, 3)
		ctx := context.Background()
		labels := map[string]string{"app": "web"}
		for _, m := range members {
			pids = append(pids, m.Pid())
			c := m.Client(t)
			// Creating the same namespace in every member also proves that
			// each member has its own store: a shared one answers AlreadyExists.
			if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
				t.Fatalf("%s: creating namespace: %v", m.Name, err)
			}
			deploy := &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
				Spec: appsv1.DeploymentSpec{
					Replicas: ptr.To[int32](2),
					Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: labels},
						Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
					},
				},
			}
			if _, err := c.AppsV1().Deployments("shop").Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
				t.Fatalf("%s: creating deployment: %v", m.Name, err)
			}
			svc := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
				Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
			}
			created, err := c.CoreV1().Services("shop").Create(ctx, svc, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("%s: creating service: %v", m.Name, err)
			}
			if created.Spec.ClusterIP == "" {
				t.Errorf("%s: service got no cluster IP: a real kube-apiserver allocates one", m.Name)
			}
			got, err := c.AppsV1().Deployments("shop").Get(ctx, "web", metav1.GetOptions{})
			if err != nil || *got.Spec.Replicas != 2 {
				t.Errorf("%s: reading deployment back: %v", m.Name, err)
			}
		}
	})
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("member process %d still exists after its test ended (kill -0: %v)", pid, err)
		}
	}
}
