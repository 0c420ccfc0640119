// Waiting in the e2e tests: every wait polls with a deadline
// (controllerTimeout unless a test says otherwise) and reports what it saw
// last; the waits several tests share are here.

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cellfed/cellfed/test/framework"
)

// controllerTimeout is how long a wait gives the plane, its controllers
// and cellfed-controller: what takes a second here can take a minute on a
// CI machine running four tests at a time at three times the load.
const controllerTimeout = 150 * time.Second

// waitFor polls cond every 100 ms until it holds, failing the test after
// controllerTimeout with cond's last error.
func waitFor(t *testing.T, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	if err := framework.Poll(context.Background(), 100*time.Millisecond, controllerTimeout, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// eventually is waitFor for conditions that explain themselves: while
// cond is false, its message is what a timeout reports.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	waitFor(t, what, func(context.Context) (bool, error) {
		ok, msg := cond()
		if ok {
			return true, nil
		}
		return false, errors.New(msg)
	})
}

// waitDeployment waits until a member holds shop/web with image and replicas.
func waitDeployment(t *testing.T, c kubernetes.Interface, image string, replicas int32) {
	t.Helper()
	waitFor(t, fmt.Sprintf("deployment shop/web with %s × %d", image, replicas), func(ctx context.Context) (bool, error) {
		d, err := c.AppsV1().Deployments("shop").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got := d.Spec.Template.Spec.Containers[0].Image
		if got != image || *d.Spec.Replicas != replicas {
			return false, fmt.Errorf("member has %s × %d", got, *d.Spec.Replicas)
		}
		return true, nil
	})
}

// waitTopologyStatus waits until KubeFed reports the object propagated
// (condition Propagation True, current generation) to exactly the cells
// want, read in v1beta2.
func waitTopologyStatus(t *testing.T, k framework.Kubectl, resource, name string, want []string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%s %s status on %v", resource, name, want), func(ctx context.Context) (bool, error) {
		out, err := k.Run(ctx, "", "-n", "shop", "get", resource, name, "-o", "json")
		if err != nil {
			return false, err
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(out), &obj); err != nil {
			return false, err
		}
		got := names(field(obj, "status", "topologies"), "name")
		slices.Sort(got)
		propagated := false
		conds, _ := field(obj, "status", "conditions").([]any)
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Propagation" && m["status"] == "True" {
				propagated = true
			}
		}
		current := field(obj, "status", "observedGeneration") == field(obj, "metadata", "generation")
		if !propagated || !current || !reflect.DeepEqual(got, want) {
			return false, fmt.Errorf("status: %s", mustJSON(t, field(obj, "status")))
		}
		return true, nil
	})
}
