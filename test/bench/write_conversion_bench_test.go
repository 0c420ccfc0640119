package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/cellfed/cellfed/test/framework"
)

// BenchmarkWriteConversions counts the conversion webhook calls the plane
// makes per request on FederatedDeployments stored as v1beta2, by the
// version a client talks: a read, a status write and a write of the
// object (a label, as a finalizer write would be), in v1beta1 (what
// cellfed-controller and KubeFed speak) and in v1beta2 (the storage
// version). No watch runs; each v1beta1 watcher adds one call per event.
// The steps run in order on the same objects, so the later ones see the
// managedFields the earlier ones left.
func BenchmarkWriteConversions(b *testing.B) {
	const n = 50
	for range b.N {
		plane := framework.StartPlane(b, framework.PlaneOptions{})
		framework.Kubectl{Kubeconfig: plane.Kubeconfig}.MustRun(b, framework.Tenancy, "apply", "-f", "-")
		dyn := dynamic.NewForConfigOrDie(plane.RESTConfig(b))
		kube := plane.Client(b)
		ctx := context.Background()
		res := func(v string) dynamic.ResourceInterface {
			return dyn.Resource(fedResource("federateddeployments", v)).Namespace("shop")
		}
		var s strings.Builder
		step := func(what string, f func(i int) error) {
			before := readPlaneCost(b, kube)
			for i := range n {
				if err := f(i); err != nil {
					b.Fatalf("%s: %v", what, err)
				}
			}
			d := readPlaneCost(b, kube).since(before)
			fmt.Fprintf(&s, "%-48s %5.2f conversions/request\n", what, float64(d.conversions)/n)
		}
		step("create v1beta2", func(i int) error {
			_, err := res("v1beta2").Create(ctx, federatedDeployment(i), metav1.CreateOptions{})
			return err
		})
		for round, versions := range [][]string{{"v1beta2", "v1beta1"}, {"v1beta2", "v1beta1"}} {
			for _, v := range versions {
				step(fmt.Sprintf("get %s", v), func(i int) error {
					_, err := res(v).Get(ctx, fmt.Sprintf("web-%04d", i), metav1.GetOptions{})
					return err
				})
				step(fmt.Sprintf("get+status write %s (round %d)", v, round+1), func(i int) error {
					obj, err := res(v).Get(ctx, fmt.Sprintf("web-%04d", i), metav1.GetOptions{})
					if err != nil {
						return err
					}
					obj.Object["status"] = map[string]any{"observedGeneration": int64(10*round + len(v))}
					_, err = res(v).UpdateStatus(ctx, obj, metav1.UpdateOptions{})
					return err
				})
				step(fmt.Sprintf("get+label write %s (round %d)", v, round+1), func(i int) error {
					obj, err := res(v).Get(ctx, fmt.Sprintf("web-%04d", i), metav1.GetOptions{})
					if err != nil {
						return err
					}
					lbls := obj.GetLabels()
					if lbls == nil {
						lbls = map[string]string{}
					}
					lbls["bench"] = fmt.Sprintf("%s-%d", v, round)
					obj.SetLabels(lbls)
					_, err = res(v).Update(ctx, obj, metav1.UpdateOptions{})
					return err
				})
			}
		}
		b.Log("\n" + s.String())
		fmt.Print(s.String())
	}
}
