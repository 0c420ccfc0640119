package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/cellfed/cellfed/manifests"
	"github.com/cellfed/cellfed/pkg/admission"
	"github.com/cellfed/cellfed/pkg/conversion"
	"github.com/cellfed/cellfed/pkg/federatedtypes"
	"github.com/cellfed/cellfed/pkg/pki"
	"github.com/cellfed/cellfed/test/framework"
)

// TestStandaloneWebhookOnCommunityAPIServer installs cellfed's CRDs in a
// plain kube-apiserver, points their conversion and the federation
// admission at cellfed-webhook, and drives it with kubectl: the same
// behaviour as the plane's built-in webhooks.
func TestStandaloneWebhookOnCommunityAPIServer(t *testing.T) {
	t.Parallel()
	member := framework.StartMember(t, "community")
	k := framework.Kubectl{Kubeconfig: member.Kubeconfig}

	// Serving certificate for the webhook, from our own PKI helper.
	files := pki.Files{Dir: filepath.Join(t.TempDir(), "pki")}
	if err := pki.Ensure(files, pki.Options{AdminUser: "unused"}); err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(files.CACert())
	if err != nil {
		t.Fatal(err)
	}
	port := framework.FreePort(t)
	framework.StartProcess(t, "cellfed-webhook", filepath.Join(t.TempDir(), "webhook.log"), framework.Binary(t, "cellfed-webhook"),
		"--kubeconfig="+member.Kubeconfig, "--tls-cert-file="+files.ServingCert(), "--tls-private-key-file="+files.ServingKey(),
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port))
	base := "https://127.0.0.1:" + strconv.Itoa(port)

	// Install, as an operator would for a community cluster.
	ctx := context.Background()
	cfg := member.RESTConfig(t)
	crds, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	core, err := manifests.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range core {
		if err := federatedtypes.ApplyCRD(ctx, crds, crd); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := member.Client(t).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: federatedtypes.DefaultNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, crd := range core {
		if err := federatedtypes.WaitEstablished(ctx, crds, crd.Name); err != nil {
			t.Fatal(err)
		}
	}
	target, err := federatedtypes.LookupBuiltin("deployments.apps")
	if err != nil {
		t.Fatal(err)
	}
	schema, err := federatedtypes.BuiltinSchema(target)
	if err != nil {
		t.Fatal(err)
	}
	convert := &apiextensionsv1.WebhookClientConfig{URL: ptr.To(base + conversion.Path), CABundle: ca}
	if err := federatedtypes.Enable(ctx, federatedtypes.Clients{CRDs: crds, Dynamic: dyn}, target, schema, convert, federatedtypes.DefaultNamespace, nil); err != nil {
		t.Fatal(err)
	}
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"types.kubefed.io", "core.cellfed.io", "core.kubefed.io"}, APIVersions: []string{"*"}, Resources: []string{"*"}},
	}}
	hook := func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(base + path), CABundle: ca}
	}
	none := admissionregistrationv1.SideEffectClassNone
	fail := admissionregistrationv1.Fail
	ar := member.Client(t).AdmissionregistrationV1()
	if _, err := ar.MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "cellfed"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "mutate.cellfed.io", ClientConfig: hook(admission.MutatePath), Rules: rules,
			SideEffects: &none, FailurePolicy: &fail, AdmissionReviewVersions: []string{"v1"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ar.ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "cellfed"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "validate.cellfed.io", ClientConfig: hook(admission.ValidatePath), Rules: rules,
			SideEffects: &none, FailurePolicy: &fail, AdmissionReviewVersions: []string{"v1"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The webhook is ready once its caches are loaded.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if err := framework.Poll(ctx, 100*time.Millisecond, 30*time.Second, func(context.Context) (bool, error) {
		resp, err := client.Get(base + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}); err != nil {
		t.Fatalf("cellfed-webhook not ready: %v", err)
	}
	k.MustRun(t, framework.Tenancy, "apply", "-f", "-")

	// The API server picks the webhook configurations up asynchronously:
	// wait until a bad object is rejected (server-side dry run stores
	// nothing), then check the message.
	bad := "apiVersion: types.kubefed.io/v1beta2\nkind: FederatedDeployment\nmetadata: {name: bad, namespace: shop}\nspec:\n  template: {}\n  placement: {topologies: [{name: rz00a}, {name: rz01a}]}\n"
	var rejection error
	if err := framework.Poll(ctx, 200*time.Millisecond, 30*time.Second, func(ctx context.Context) (bool, error) {
		_, rejection = k.Run(ctx, bad, "apply", "--dry-run=server", "-f", "-")
		return rejection != nil, nil
	}); err != nil {
		t.Fatalf("admission webhook never rejected two cells of one cluster")
	}
	if !strings.Contains(rejection.Error(), `cells "rz00a" and "rz01a" are both on cluster "member1"`) {
		t.Errorf("rejection does not name the cells and cluster: %v", rejection)
	}

	k.MustRun(t, webDeployment, "apply", "-f", "-")
	v1 := getJSON(t, k, "-n", "shop", "get", fdV1beta1, "web")
	if got, want := names(field(v1, "spec", "placement", "clusters"), "name"), []string{"shop.rz00a", "shop.rz10a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("community kube-apiserver serves v1beta1 clusters %v, want %v", got, want)
	}
	if field(v1, "metadata", "labels", "cellfed.io/tenant") != "acme" {
		t.Errorf("mutating webhook did not set the tenant label: %v", field(v1, "metadata", "labels"))
	}
	cell := getJSON(t, k, "-n", "shop", "get", "cells.core.cellfed.io", "rz00a")
	if field(cell, "metadata", "labels", "cellfed.io/workspace") != "prod" {
		t.Errorf("cell not labelled with its workspace: %v", field(cell, "metadata", "labels"))
	}

	// KubeFed's "all clusters" selector is pinned to physical clusters,
	// and a partial KubeFedConfig gets KubeFed's defaults, through the
	// webhook's patches as in the plane.
	k.MustRun(t, "apiVersion: types.kubefed.io/v1beta1\nkind: FederatedDeployment\nmetadata: {name: everywhere, namespace: shop}\nspec:\n  template: {}\n  placement: {clusterSelector: {}}\n", "apply", "-f", "-")
	all := getJSON(t, k, "-n", "shop", "get", fdV1beta1, "everywhere")
	if got := fmt.Sprint(field(all, "spec", "placement", "clusterSelector", "matchExpressions")); !strings.Contains(got, "cellfed.io/topology-type") || !strings.Contains(got, "DoesNotExist") {
		t.Errorf("clusterSelector {} was not pinned to physical clusters: %v", got)
	}
	k.MustRun(t, "apiVersion: core.kubefed.io/v1beta1\nkind: KubeFedConfig\nmetadata: {name: kubefed, namespace: kube-federation-system}\nspec: {scope: Cluster}\n", "apply", "-f", "-")
	kfc := getJSON(t, k, "-n", "kube-federation-system", "get", "kubefedconfigs", "kubefed")
	if field(kfc, "spec", "leaderElect", "resourceLock") != "configmaps" || field(kfc, "spec", "syncController", "adoptResources") != "Enabled" {
		t.Errorf("KubeFedConfig not defaulted through the webhook: %v", kfc["spec"])
	}
}
