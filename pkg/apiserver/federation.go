package apiserver

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	fedv1b1 "sigs.k8s.io/kubefed/pkg/apis/core/v1beta1"

	"github.com/cellfed/cellfed/manifests"
	cellfedadmission "github.com/cellfed/cellfed/pkg/admission"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/pkg/conversion"
	"github.com/cellfed/cellfed/pkg/federatedtypes"
)

// annotationDefaultTypes on the federation namespace records that the
// default federated types were enabled (on first start), so that a type
// the operator disabled stays disabled across restarts.
const annotationDefaultTypes = "cellfed.io/default-types-enabled"

// federationAPI installs the federation API when the plane starts: KubeFed's
// core CRDs and Cells, the conversion webhook settings of every federated
// CRD, on first start the default federated types, and on every start the
// enabled types' CRDs at this release's schema.
type federationAPI struct {
	namespace    string
	defaultTypes []string
	webhook      apiextensionsv1.WebhookClientConfig
	admission    *cellfedadmission.Shared
}

func (f federationAPI) start(hookCtx genericapiserver.PostStartHookContext) error {
	// The hook blocks /readyz until the API is installed; transient errors
	// are retried until the server stops.
	ctx := hookCtx.Context
	cfg := rest.CopyConfig(hookCtx.LoopbackClientConfig)
	cfg.QPS, cfg.Burst = 100, 200
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("federation API: %w", err)
	}
	crds, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("federation API: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("federation API: %w", err)
	}
	clients := federatedtypes.Clients{CRDs: crds, Dynamic: dyn}
	start := time.Now()
	steps := []struct {
		name string
		run  func(context.Context) error
	}{
		{"namespace", func(ctx context.Context) error { return f.ensureNamespace(ctx, kube) }},
		{"core CRDs", func(ctx context.Context) error { return f.installCoreCRDs(ctx, crds) }},
		{"admission caches", f.startAdmission},
		{"webhook settings", func(ctx context.Context) error { return f.publishWebhook(ctx, kube, crds) }},
		{"KubeFedConfig", func(ctx context.Context) error { return f.ensureKubeFedConfig(ctx, dyn) }},
		{"default types", func(ctx context.Context) error { return f.enableDefaultTypes(ctx, kube, clients) }},
		// Every start: enabled types' CRDs up to this release's schema
		// (docs/operations.md, "Upgrades").
		{"federated CRDs", func(ctx context.Context) error {
			return federatedtypes.UpgradeEnabled(ctx, clients, f.namespace, &f.webhook)
		}},
		// Objects stored in an older version are rewritten in the
		// storage version (docs/operations.md, "Stored data").
		{"storage migrations", func(ctx context.Context) error {
			_, err := federatedtypes.EnsureMigrations(ctx, crds, kube)
			return err
		}},
	}
	for _, step := range steps {
		err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
			if err := step.run(ctx); err != nil {
				klog.ErrorS(err, "Installing the federation API; retrying", "step", step.name)
				return false, nil
			}
			return true, nil
		})
		if err != nil {
			return nil // the server is stopping
		}
	}
	klog.InfoS("Federation API installed", "namespace", f.namespace, "duration", time.Since(start))
	// Installing CRDs with large schemas (OpenAPI models, validators,
	// field-manager type converters) allocates a few hundred MiB that is
	// garbage a moment later; hand those pages back now instead of
	// carrying them for minutes.
	debug.FreeOSMemory()
	return nil
}

// startAdmission starts the admission plugin's informers once the CRDs
// they watch are served, and waits for them.
func (f federationAPI) startAdmission(ctx context.Context) error {
	if f.admission == nil || f.admission.Informers == nil {
		return nil // the plugin is disabled
	}
	f.admission.Informers.Start(ctx)
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if !f.admission.Informers.WaitForSync(waitCtx) {
		return fmt.Errorf("admission caches did not sync")
	}
	return nil
}

// kubefed.KubeFedConfigsResource is KubeFed's configuration resource.

// ensureKubeFedConfig creates the KubeFedConfig "kubefed" KubeFed's
// installation creates (scope Cluster; admission fills in KubeFed's
// defaults) when there is none: KubeFed's controller-manager needs it and
// kubefedctl join reads its scope. An existing one is never changed.
func (f federationAPI) ensureKubeFedConfig(ctx context.Context, dyn dynamic.Interface) error {
	cfg := &fedv1b1.KubeFedConfig{
		TypeMeta:   metav1.TypeMeta{APIVersion: fedv1b1.SchemeGroupVersion.String(), Kind: "KubeFedConfig"},
		ObjectMeta: metav1.ObjectMeta{Name: "kubefed", Namespace: f.namespace},
		Spec:       fedv1b1.KubeFedConfigSpec{Scope: apiextensionsv1.ClusterScoped},
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cfg)
	if err != nil {
		return err
	}
	_, err = dyn.Resource(kubefed.KubeFedConfigsResource).Namespace(f.namespace).Create(ctx, &unstructured.Unstructured{Object: content}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating KubeFedConfig %s/kubefed: %w", f.namespace, err)
	}
	return nil
}

func (f federationAPI) ensureNamespace(ctx context.Context, kube kubernetes.Interface) error {
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", f.namespace, err)
	}
	return nil
}

func (f federationAPI) installCoreCRDs(ctx context.Context, c apiextensionsclient.Interface) error {
	list, err := manifests.CRDs()
	if err != nil {
		return err
	}
	for _, crd := range list {
		if err := federatedtypes.ApplyCRD(ctx, c, crd); err != nil {
			return err
		}
	}
	for _, crd := range list {
		if err := federatedtypes.WaitEstablished(ctx, c, crd.Name); err != nil {
			return err
		}
	}
	return nil
}

// publishWebhook records the conversion webhook's address for cellfedctl
// and points every federated CRD at it (the address or CA may have changed
// since the CRD was created).
func (f federationAPI) publishWebhook(ctx context.Context, kube kubernetes.Interface, c apiextensionsclient.Interface) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: federatedtypes.WebhookConfigMap, Namespace: f.namespace},
		Data: map[string]string{
			federatedtypes.WebhookConfigMapURL: *f.webhook.URL,
			federatedtypes.WebhookConfigMapCA:  string(f.webhook.CABundle),
		},
	}
	existing, err := kube.CoreV1().ConfigMaps(f.namespace).Get(ctx, cm.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := kube.CoreV1().ConfigMaps(f.namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("publishing webhook settings: %w", err)
		}
	case err != nil:
		return fmt.Errorf("reading webhook settings: %w", err)
	case existing.Data[federatedtypes.WebhookConfigMapURL] != cm.Data[federatedtypes.WebhookConfigMapURL] || existing.Data[federatedtypes.WebhookConfigMapCA] != cm.Data[federatedtypes.WebhookConfigMapCA]:
		existing.Data = cm.Data
		if _, err := kube.CoreV1().ConfigMaps(f.namespace).Update(ctx, existing, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating webhook settings: %w", err)
		}
	}

	crds, err := c.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{LabelSelector: federatedtypes.LabelFederatedType + "=true"})
	if err != nil {
		return fmt.Errorf("listing federated CRDs: %w", err)
	}
	for i := range crds.Items {
		crd := &crds.Items[i]
		conv := crd.Spec.Conversion
		if conv != nil && conv.Webhook != nil && conv.Webhook.ClientConfig != nil &&
			conv.Webhook.ClientConfig.URL != nil && *conv.Webhook.ClientConfig.URL == *f.webhook.URL &&
			string(conv.Webhook.ClientConfig.CABundle) == string(f.webhook.CABundle) {
			continue
		}
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook:  &apiextensionsv1.WebhookConversion{ClientConfig: f.webhook.DeepCopy(), ConversionReviewVersions: []string{"v1"}},
		}
		if _, err := c.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("pointing CRD %s at the conversion webhook: %w", crd.Name, err)
		}
		klog.InfoS("Pointed federated CRD at this plane's conversion webhook", "crd", crd.Name, "url", *f.webhook.URL)
	}
	return nil
}

// enableDefaultTypes enables the default federated types once, on the
// plane's first start.
func (f federationAPI) enableDefaultTypes(ctx context.Context, kube kubernetes.Interface, c federatedtypes.Clients) error {
	ns, err := kube.CoreV1().Namespaces().Get(ctx, f.namespace, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading namespace %s: %w", f.namespace, err)
	}
	if _, done := ns.Annotations[annotationDefaultTypes]; done {
		return nil
	}
	type enable struct {
		target federatedtypes.Target
		schema *apiextensionsv1.JSONSchemaProps
	}
	var todo []enable
	for _, resource := range f.defaultTypes {
		t, err := federatedtypes.LookupBuiltin(resource)
		if err != nil {
			return err
		}
		schema, err := federatedtypes.BuiltinSchema(t)
		if err != nil {
			return err
		}
		// Create every CRD first, so they are established together.
		if err := federatedtypes.ApplyCRD(ctx, c.CRDs, federatedtypes.CRD(t, schema, &f.webhook)); err != nil {
			return err
		}
		todo = append(todo, enable{t, schema})
	}
	for _, e := range todo {
		if err := federatedtypes.Enable(ctx, c, e.target, e.schema, &f.webhook, f.namespace, nil); err != nil {
			return err
		}
	}
	if ns.Annotations == nil {
		ns.Annotations = map[string]string{}
	}
	ns.Annotations[annotationDefaultTypes] = strings.Join(f.defaultTypes, ",")
	if _, err := kube.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("recording the default types: %w", err)
	}
	klog.InfoS("Enabled the default federated types", "types", f.defaultTypes)
	return nil
}

// ConversionHost is the host of the conversion webhook URL every federated
// CRD carries. It names no machine: each replica of the plane resolves it
// to itself (selfCallingResolver), so the CRDs look the same whichever
// replica wrote them, and every replica converts with its own built-in
// webhook — no shared port or address between replicas.
const ConversionHost = "conversion.cellfed.internal"

// conversionURL is the federated CRDs' conversion webhook URL.
var conversionURL = "https://" + ConversionHost + conversion.Path

// selfCallingResolver makes the API server call its own conversion
// webhook, whatever replica wrote the CRD: a webhook at ConversionHost, or
// at this server's own address selfHostPort, is called over the loopback
// connection with the loopback credentials, so the built-in webhook needs
// no extra identity, no RBAC for anonymous users and no DNS name.
func selfCallingResolver(selfHostPort string, loopback *rest.Config, wrap webhook.AuthenticationInfoResolverWrapper) webhook.AuthenticationInfoResolverWrapper {
	return func(delegate webhook.AuthenticationInfoResolver) webhook.AuthenticationInfoResolver {
		next := wrap(delegate)
		return &webhook.AuthenticationInfoResolverDelegator{
			ClientConfigForFunc: func(hostPort string) (*rest.Config, error) {
				if hostPort == selfHostPort || hostPort == net.JoinHostPort(ConversionHost, "443") {
					return loopbackDialer(loopback)
				}
				return next.ClientConfigFor(hostPort)
			},
			ClientConfigForServiceFunc: next.ClientConfigForService,
		}
	}
}

// loopbackDialer is the loopback config with every connection dialled to
// the loopback address, whatever host the webhook URL names (TLS still
// verifies the loopback certificate by its server name).
func loopbackDialer(loopback *rest.Config) (*rest.Config, error) {
	cfg := rest.CopyConfig(loopback)
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("parsing the loopback address %q: %w", cfg.Host, err)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "443")
	}
	var d net.Dialer
	cfg.Dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}
	return cfg, nil
}

// selfHostPort is host:port of the plane's own address (CRDs written by
// planes before ConversionHost carried it).
func selfHostPort(serverURL string) (string, error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", fmt.Errorf("parsing server URL %q: %w", serverURL, err)
	}
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "443"), nil
	}
	return u.Host, nil
}
