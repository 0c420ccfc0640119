package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	certutil "k8s.io/client-go/util/cert"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/pki"
	"github.com/cellfed/cellfed/test/framework"
)

// TestRegistrationNameEndpointCSR is issue #40's item 11 against a real
// plane and member: `cellfedctl join X` over a pending registration X is
// refused and leaves its token Secret alone; a registration naming the
// plane's own address, and one with a junk CSR, are refused with the
// field named and no ASN.1 internals.
func TestRegistrationNameEndpointCSR(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var members []*framework.Server
	done := make(chan struct{})
	go func() { defer close(done); members = framework.StartMembers(t, 1) }()
	f := startRegistrationPlane(t)
	<-done
	kube := f.plane.Client(t)

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "member-ca"}, key)
	if err != nil {
		t.Fatal(err)
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})
	create := func(name, endpoint string, csr []byte) error {
		if csr == nil {
			_, csr, err = pki.NewAgentKeyAndCSR(name)
			if err != nil {
				t.Fatal(err)
			}
		}
		reg := &cellv1alpha1.ClusterRegistration{
			TypeMeta:   metav1.TypeMeta{APIVersion: cellv1alpha1.SchemeGroupVersion.String(), Kind: "ClusterRegistration"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       cellv1alpha1.ClusterRegistrationSpec{APIEndpoint: endpoint, CABundle: caPEM, CSR: csr, Tenant: "acme"},
		}
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(reg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.dyn.Resource(cellv1alpha1.ClusterRegistrationsResource).Create(ctx, &unstructured.Unstructured{Object: content}, metav1.CreateOptions{})
		return err
	}

	t.Run("join over a pending registration", func(t *testing.T) {
		if err := create("edge-1", "https://10.9.8.7:6443", nil); err != nil {
			t.Fatalf("creating registration edge-1: %v", err)
		}
		// The token Secret the agent handed over for edge-1.
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "edge-1-token", Namespace: framework.KubeFedNamespace}, StringData: map[string]string{"token": "the-agents-token"}}
		if _, err := kube.CoreV1().Secrets(framework.KubeFedNamespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		f.ctl.fails(t, "cluster name edge-1 is taken by a pending registration (ClusterRegistration edge-1, tenant \"acme\"): joining would overwrite its token Secret kube-federation-system/edge-1-token; approve or deny it first",
			"join", "edge-1", "--kubeconfig-member="+members[0].Kubeconfig)
		s, err := kube.CoreV1().Secrets(framework.KubeFedNamespace).Get(ctx, "edge-1-token", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := string(s.Data["token"]); got != "the-agents-token" {
			t.Errorf("edge-1's token Secret holds %q after the refused join, want the agent's token", got)
		}
		// Under another name, the member joins.
		f.ctl.ok(t, "join", "edge-1b", "--kubeconfig-member="+members[0].Kubeconfig)
	})

	t.Run("a registration naming the plane", func(t *testing.T) {
		for _, endpoint := range []string{fmt.Sprintf("https://127.0.0.1:%d", f.plane.Port), fmt.Sprintf("https://localhost:%d", f.plane.Port)} {
			err := create("edge-2", endpoint, nil)
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("spec.apiEndpoint: Invalid value: %q: %s is the plane's own address", endpoint, endpoint)) {
				t.Errorf("registration with apiEndpoint %s: %v, want refused as the plane's own address", endpoint, err)
			}
		}
	})

	t.Run("a junk CSR", func(t *testing.T) {
		junk := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: []byte("junk, not DER")})
		err := create("edge-3", "https://10.9.8.7:6443", junk)
		if err == nil || !strings.Contains(err.Error(), `spec.csr: Invalid value: "<PEM>": not a PEM-encoded certificate request`) || strings.Contains(err.Error(), "asn1") {
			t.Errorf("registration with a junk CSR: %v, want spec.csr refused as not a PEM-encoded certificate request, without asn1 internals", err)
		}
	})
}
