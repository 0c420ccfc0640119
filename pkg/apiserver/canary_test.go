package apiserver

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestCheckCanary: only a canary that cannot be decrypted while the
// database answers stops the plane; a database error at start (which
// reaches the client as an internal error too) is waited out.
func TestCheckCanary(t *testing.T) {
	decryptErr := apierrors.NewInternalError(errors.New("unable to transform: no matching key"))
	dbErr := apierrors.NewInternalError(errors.New("rpc error: code = Unknown desc = Error 1040: Too many connections"))
	for _, c := range []struct {
		name string
		// secret and namespace answer the n-th read (from 0): an error,
		// or nil for success.
		secret, namespace func(n int) error
		wantErr           string // "": the check passes
	}{
		{name: "the canary reads", secret: func(int) error { return nil }, namespace: func(int) error { return nil }},
		{name: "keys that differ", secret: func(int) error { return decryptErr }, namespace: func(int) error { return nil },
			wantErr: "this plane cannot decrypt the Secret kube-system/cellfed-encryption-canary"},
		{name: "a database error at start, then the canary reads",
			secret:    func(n int) error { return map[bool]error{true: dbErr, false: nil}[n < 5] },
			namespace: func(n int) error { return map[bool]error{true: dbErr, false: nil}[n < 5] }},
		{name: "a database that stays down", secret: func(int) error { return dbErr }, namespace: func(int) error { return dbErr },
			wantErr: "encryption canary: context deadline exceeded"},
		{name: "one failed decryption, then the canary reads",
			secret:    func(n int) error { return map[bool]error{true: decryptErr, false: nil}[n < 1] },
			namespace: func(int) error { return nil }},
	} {
		t.Run(c.name, func(t *testing.T) {
			kube := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: encryptionCanary, Namespace: metav1.NamespaceSystem}})
			var secretReads, nsReads int
			kube.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
				err := c.secret(secretReads)
				secretReads++
				return err != nil, nil, err
			})
			kube.PrependReactor("get", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
				err := c.namespace(nsReads)
				nsReads++
				return true, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metav1.NamespaceSystem}}, err
			})
			err := checkCanary(context.Background(), kube, time.Millisecond, 2*time.Second)
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("checkCanary: %v, want it to pass", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("checkCanary: %v, want an error containing %q", err, c.wantErr)
			}
			if c.name == "keys that differ" && secretReads != canaryMismatches {
				t.Errorf("gave up after %d reads of the canary, want %d", secretReads, canaryMismatches)
			}
		})
	}
}
