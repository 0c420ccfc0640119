// The registration fixture: a plane with agent registration enabled and
// its cellfedctl.

package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/registration"
	"github.com/cellfed/cellfed/test/framework"
)

// regFixture is a plane with short agent certificates, its cellfedctl, and
// a tenant workspace.
type regFixture struct {
	plane *framework.Server
	ctl   cellfedctl
	dyn   dynamic.Interface
	// agentKubeconfig is the credential-less plane kubeconfig `token
	// create --agent-kubeconfig` wrote.
	agentKubeconfig string
}

// startRegistrationPlane starts a plane with extraArgs and creates the
// tenant workspace acme-prod.
func startRegistrationPlane(t *testing.T, extraArgs ...string) *regFixture {
	t.Helper()
	plane := framework.StartPlane(t, framework.PlaneOptions{Args: extraArgs})
	f := &regFixture{plane: plane, ctl: newCellfedctl(t, plane.Kubeconfig)}
	dyn, err := dynamic.NewForConfig(plane.RESTConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	f.dyn = dyn
	f.ctl.ok(t, "tenant", "create", "acme-prod", "--tenant=acme", "--workspace=prod")
	f.agentKubeconfig = filepath.Join(t.TempDir(), "plane-agent.kubeconfig")
	return f
}

// token runs `token create` and returns the token.
func (f *regFixture) token(t *testing.T, args ...string) string {
	t.Helper()
	out := f.ctl.ok(t, append([]string{"token", "create", "--quiet", "--agent-kubeconfig=" + f.agentKubeconfig}, args...)...)
	tok := strings.TrimSpace(out)
	if _, err := registration.ParseToken(tok); err != nil {
		t.Fatalf("token create printed %q: %v", out, err)
	}
	return tok
}

// registration reads the ClusterRegistration name.
func (f *regFixture) registration(t *testing.T, name string) *cellv1alpha1.ClusterRegistration {
	t.Helper()
	u, err := f.dyn.Resource(cellv1alpha1.ClusterRegistrationsResource).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("ClusterRegistration %s: %v", name, err)
	}
	var r cellv1alpha1.ClusterRegistration
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// waitPhase waits up to controllerTimeout for the registration to reach
// phase want.
func (f *regFixture) waitPhase(t *testing.T, name string, want cellv1alpha1.RegistrationPhase) *cellv1alpha1.ClusterRegistration {
	t.Helper()
	var last *cellv1alpha1.ClusterRegistration
	err := framework.Poll(context.Background(), 100*time.Millisecond, controllerTimeout, func(ctx context.Context) (bool, error) {
		u, err := f.dyn.Resource(cellv1alpha1.ClusterRegistrationsResource).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		var r cellv1alpha1.ClusterRegistration
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
			return false, err
		}
		last = &r
		return r.Status.Phase == want, nil
	})
	if err != nil {
		t.Fatalf("registration %s did not reach phase %s: %v (last status %+v)", name, want, err, last)
	}
	return last
}
