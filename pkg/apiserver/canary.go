package apiserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// encryptionCanary is a Secret the plane keeps so that the database always
// holds an encrypted row: a replica started with other KMS keys is refused
// at start (setupEncryption cannot decrypt it), and one that raced the
// first replica on an empty database stops here, when it cannot read the
// canary the other wrote.
const encryptionCanary = "cellfed-encryption-canary"

type canaryHook struct{}

func (h canaryHook) start(hookCtx genericapiserver.PostStartHookContext) error {
	cfg := rest.CopyConfig(hookCtx.LoopbackClientConfig)
	cfg.UserAgent = "cellfed-encryption-canary"
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("encryption canary: %w", err)
	}
	return checkCanary(hookCtx.Context, kube, 200*time.Millisecond, time.Minute)
}

// canaryMismatches is how many reads in a row must fail to decrypt the
// canary, while the database answers, before the plane gives up.
const canaryMismatches = 3

// checkCanary reads the canary, creating it when there is none, polling
// every interval for up to timeout. A database error reaches the plane's
// client as an internal error too (kine's "Too many connections", a
// dropped connection): a read that fails while an unencrypted object
// (the kube-system namespace) cannot be read either is retried, and only
// canaryMismatches failures in a row with the database answering count as
// keys that differ.
func checkCanary(ctx context.Context, kube kubernetes.Interface, interval, timeout time.Duration) error {
	secrets := kube.CoreV1().Secrets(metav1.NamespaceSystem)
	var last error
	mismatches := 0
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := secrets.Get(ctx, encryptionCanary, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			b := make([]byte, 16)
			_, _ = rand.Read(b)
			_, err = secrets.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: encryptionCanary, Namespace: metav1.NamespaceSystem,
					Annotations: map[string]string{"cellfed.io/purpose": "proves that every replica of the plane decrypts what the others encrypt; do not delete"}},
				Data: map[string][]byte{"canary": []byte(hex.EncodeToString(b))},
			}, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return false, nil // another replica won; read its canary
			}
		}
		if err == nil {
			return true, nil
		}
		last = err
		if !apierrors.IsInternalError(err) {
			mismatches = 0
			return false, nil
		}
		if _, dbErr := kube.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{}); dbErr != nil {
			mismatches = 0 // the database does not answer either
			return false, nil
		}
		if mismatches++; mismatches < canaryMismatches {
			return false, nil
		}
		// The value could not be transformed from storage.
		return false, fmt.Errorf("this plane cannot decrypt the Secret kube-system/%s another replica wrote (%v): replicas on one database must share the KMS keys — give every replica the same --kms-key-file (one Secret) or the same --kms-endpoint", encryptionCanary, err)
	})
	if err != nil && last != nil && !strings.Contains(err.Error(), encryptionCanary) {
		return fmt.Errorf("encryption canary: %w (last error: %v)", err, last)
	}
	return err
}
