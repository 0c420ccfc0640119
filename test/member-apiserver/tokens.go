package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/klog/v2"
	serviceaccountcontroller "k8s.io/kubernetes/pkg/controller/serviceaccount"
	"k8s.io/kubernetes/pkg/serviceaccount"

	"github.com/cellfed/cellfed/pkg/pki"
)

// runTokenController runs Kubernetes' service-account token controller
// against this member, as the admin user, once the API server answers. It
// signs legacy tokens with the key the API server verifies them with
// (--service-account-key-file) and adds the member's CA as ca.crt, exactly
// as kube-controller-manager's serviceaccount-token controller does with
// --service-account-private-key-file and --root-ca-file.
func runTokenController(ctx context.Context, kubeconfig string, files pki.Files) error {
	key, err := keyutil.PrivateKeyFromFile(files.ServiceAccountKey())
	if err != nil {
		return fmt.Errorf("reading the service-account key: %w", err)
	}
	rootCA, err := os.ReadFile(files.CACert())
	if err != nil {
		return fmt.Errorf("reading the CA: %w", err)
	}
	generator, err := serviceaccount.JWTTokenGenerator(serviceaccount.LegacyIssuer, key)
	if err != nil {
		return fmt.Errorf("token generator: %w", err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("loading %s: %w", kubeconfig, err)
	}
	cfg.UserAgent = "member-apiserver-token-controller"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	// The API server starts in this process a moment later.
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	})
	if err != nil {
		return nil // stopping
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	tokens, err := serviceaccountcontroller.NewTokensController(klog.FromContext(ctx).WithName("tokens"),
		factory.Core().V1().ServiceAccounts(), factory.Core().V1().Secrets(), client,
		serviceaccountcontroller.TokensControllerOptions{TokenGenerator: generator, RootCA: rootCA})
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	klog.InfoS("Service-account token controller started")
	tokens.Run(ctx, 2)
	return nil
}
