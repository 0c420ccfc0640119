package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/pki"
)

// TestRegistrationTokenSingleUse: a bootstrap token registers exactly one
// cluster however many registrations race for it. Twenty registrations
// created at once with one token: one is created, nineteen are refused,
// in every round (before, a check-then-create let two pass in theory).
func TestRegistrationTokenSingleUse(t *testing.T) {
	t.Parallel()
	f := startRegistrationPlane(t, "--default-federated-types=") // registers, federates nothing
	const racers = 20
	for round := range 3 {
		tok := f.token(t, "--tenant=acme") // also writes the agent kubeconfig
		kc, err := clientcmd.BuildConfigFromFlags("", f.agentKubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		dyn, err := dynamic.NewForConfig(&rest.Config{Host: kc.Host, BearerToken: tok, TLSClientConfig: rest.TLSClientConfig{CAData: kc.CAData}, QPS: -1})
		if err != nil {
			t.Fatal(err)
		}
		regs := dyn.Resource(cellv1alpha1.ClusterRegistrationsResource)
		var wg sync.WaitGroup
		errs := make([]error, racers)
		start := make(chan struct{})
		for i := range racers {
			name := fmt.Sprintf("race-%d-%d", round, i)
			_, csr, err := pki.NewAgentKeyAndCSR(name)
			if err != nil {
				t.Fatal(err)
			}
			reg := &cellv1alpha1.ClusterRegistration{
				TypeMeta:   metav1.TypeMeta{APIVersion: cellv1alpha1.SchemeGroupVersion.String(), Kind: "ClusterRegistration"},
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec:       cellv1alpha1.ClusterRegistrationSpec{APIEndpoint: "https://127.0.0.1:6443", CABundle: kc.CAData, CSR: csr},
			}
			obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(reg)
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = regs.Create(context.Background(), &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
			}()
		}
		close(start)
		wg.Wait()
		created := 0
		for i, err := range errs {
			switch {
			case err == nil:
				created++
			case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "was already used to register cluster race-"):
			case apierrors.IsConflict(err) && strings.Contains(err.Error(), "is being claimed concurrently; retry"):
			default:
				t.Errorf("round %d, registration %d: unexpected error %v", round, i, err)
			}
		}
		if created != 1 {
			t.Errorf("round %d: %d of %d registrations with one token were created, want exactly 1", round, created, racers)
		}
	}
}
