package apiserver

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"k8s.io/apiserver/pkg/server/healthz"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/util/notfoundhandler"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/version"
	"k8s.io/klog/v2"
	aggregatorapiserver "k8s.io/kube-aggregator/pkg/apiserver"
	aggregatorscheme "k8s.io/kube-aggregator/pkg/apiserver/scheme"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	controlplaneapiserver "k8s.io/kubernetes/pkg/controlplane/apiserver"
	cpoptions "k8s.io/kubernetes/pkg/controlplane/apiserver/options"
	generatedopenapi "k8s.io/kubernetes/pkg/generated/openapi"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/cellproxy"
	"github.com/cellfed/cellfed/pkg/certcache"
	registrationcontroller "github.com/cellfed/cellfed/pkg/controller/registration"
	"github.com/cellfed/cellfed/pkg/conversion"
	"github.com/cellfed/cellfed/pkg/pki"
	"github.com/cellfed/cellfed/pkg/proxy"
	"github.com/cellfed/cellfed/pkg/registration"
	"github.com/cellfed/cellfed/pkg/storage"
)

// Run starts storage and the API server and blocks until ctx is cancelled
// and the server has shut down. Storage stops after the server.
func Run(ctx context.Context, o *Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if err := o.listen(ctx); err != nil {
		return err
	}
	if err := o.completeFiles(); err != nil {
		return err
	}

	// kine outlives the API server: it gets its own context, cancelled
	// only after the server has returned.
	storageCtx, stopStorage := context.WithCancel(context.WithoutCancel(ctx))
	defer stopStorage()
	backend, err := storage.Start(storageCtx, o.Storage)
	if err != nil {
		return err
	}
	o.ControlPlane.Etcd.StorageConfig.Transport.ServerList = backend.Endpoints
	overrides, err := storage.StartOverrides(storageCtx, o.Storage)
	if err != nil {
		return err
	}
	o.ControlPlane.Etcd.EtcdServersOverrides = append(o.ControlPlane.Etcd.EtcdServersOverrides, storage.EtcdServersOverrides(overrides)...)
	encryption, err := o.prepareDatabase(storageCtx, backend, overrides)
	if err != nil {
		return err
	}
	defer encryption.stop()

	// The hub admits an agent only while its cluster's registration is
	// approved; the registration controller answers once it runs.
	var registrations atomic.Pointer[registrationcontroller.Controller]
	if o.Tunnel.Admit == nil {
		o.Tunnel.Admit = func(ctx context.Context, cluster string, cert *x509.Certificate) error {
			c := registrations.Load()
			if c == nil {
				return errors.New("the plane is still starting; retry in a moment")
			}
			return c.Admit(ctx, cluster, cert)
		}
	}
	if o.Tunnel.ConnectGeneration == nil {
		o.Tunnel.ConnectGeneration = func(cluster string) (int64, error) {
			c := registrations.Load()
			if c == nil {
				return 0, errors.New("the plane is still starting; retry in a moment")
			}
			return c.ProxyCredentialGeneration(cluster)
		}
	}
	hub, err := startTunnelHub(ctx, o)
	if err != nil {
		return err
	}
	if hub != nil {
		o.tunnel = hub
		o.registrationAccess = func(reg *cellv1alpha1.ClusterRegistration) (registrationcontroller.ClusterAccess, error) {
			proxyURL, err := hub.ConnectURL(reg.Name, registration.ProxyCredentialGeneration(reg))
			if err != nil {
				return registrationcontroller.ClusterAccess{}, fmt.Errorf("%w; upstream KubeFed reaches tunnelled clusters only through it: start the plane with --tunnel-connect-port", err)
			}
			endpoint, err := registration.TunnelEndpoint(reg.Spec)
			if err != nil {
				return registrationcontroller.ClusterAccess{}, err
			}
			return registrationcontroller.ClusterAccess{APIEndpoint: endpoint, ProxyURL: proxyURL, ProxyCA: hub.ConnectCA()}, nil
		}
	}

	o.admission.FederationNamespace = o.FederationNamespace
	o.admission.PlaneAddresses = o.planeAddresses()
	completed, err := o.ControlPlane.Complete(ctx, nil, nil)
	if err != nil {
		return fmt.Errorf("completing options: %w", err)
	}
	if errs := completed.Validate(); len(errs) != 0 {
		return errors.Join(errs...)
	}

	self, err := selfHostPort(o.serverURL())
	if err != nil {
		return err
	}
	whURL := conversionURL
	caBundle, err := os.ReadFile(o.PKIFiles().CACert())
	if err != nil {
		return fmt.Errorf("reading the plane's CA: %w", err)
	}
	server, authz, native, err := newServerChain(completed, self, o.ClientCertCache, overrides)
	if err != nil {
		return err
	}
	if len(overrides) > 0 {
		// Each override's database learns that this replica serves its
		// resource from there (cellfed-apiserver split --finish checks).
		id := server.GenericAPIServer.APIServerID
		if err := server.GenericAPIServer.AddPostStartHook("cellfed-datastore-serving", func(hookCtx genericapiserver.PostStartHookContext) error {
			ctx, cancel := context.WithTimeout(hookCtx, time.Minute)
			defer cancel()
			return storage.RecordServing(ctx, overrides, id, time.Now())
		}); err != nil {
			return fmt.Errorf("adding datastore serving hook: %w", err)
		}
	}
	// PropagatedVersions: the stored ones merged with views of the
	// records kept in federated objects' status, behind the plane's
	// filters (RBAC on propagatedversions applies to both).
	views := &recordViews{next: native, fedNamespace: o.FederationNamespace}
	views.install(server.GenericAPIServer.Handler.NonGoRestfulMux)
	if err := server.GenericAPIServer.AddPostStartHook("cellfed-data-release", recordDataRelease); err != nil {
		return fmt.Errorf("adding data release hook: %w", err)
	}
	if err := server.GenericAPIServer.AddPostStartHook("cellfed-record-views", views.start); err != nil {
		return fmt.Errorf("adding record views hook: %w", err)
	}
	if hub != nil {
		// A hub whose agent listener failed leaves tunnelled members
		// unreachable: the plane is not ready, and says why.
		if err := server.GenericAPIServer.AddReadyzChecks(healthz.NamedCheck("tunnel-hub", func(*http.Request) error { return hub.Healthy() })); err != nil {
			return fmt.Errorf("adding the tunnel hub's readiness check: %w", err)
		}
	}
	// The API proxy to members: served under the plane's filters (its
	// authentication, impersonation, RBAC on cells/proxy and
	// clusters/proxy, audit), answering 503 until its caches are synced.
	apiProxy := &cellproxy.Handler{Authorizer: authz, Watches: cellproxy.NewWatchLimit(o.APIProxy.MaxWatchesPerUser)}
	server.GenericAPIServer.Handler.NonGoRestfulMux.HandlePrefix(cellproxy.Prefix, apiProxy)
	proxyHook := apiProxyHook{handler: apiProxy, opts: o.APIProxy, fedNamespace: o.FederationNamespace, files: o.PKIFiles(), hub: hub}
	if err := server.GenericAPIServer.AddPostStartHook("cellfed-api-proxy", proxyHook.start); err != nil {
		return fmt.Errorf("adding API proxy hook: %w", err)
	}
	// The conversion webhook of the federated types is served by the plane
	// itself; the API server calls it with its loopback identity.
	server.GenericAPIServer.Handler.NonGoRestfulMux.Handle(conversion.Path, conversion.Handler{})
	fed := federationAPI{
		namespace:    o.FederationNamespace,
		defaultTypes: o.DefaultFederatedTypes,
		admission:    o.admission,
		webhook:      apiextensionsv1.WebhookClientConfig{URL: &whURL, CABundle: caBundle},
	}
	o.crdConversion.Set(fed.webhook)
	if err := server.GenericAPIServer.AddPostStartHook("cellfed-federation-api", fed.start); err != nil {
		return fmt.Errorf("adding federation API hook: %w", err)
	}
	// The plane's roles exist before /readyz says ok, with or without the
	// core controllers.
	if err := server.GenericAPIServer.AddPostStartHook("cellfed-roles", planeRoles{namespace: o.FederationNamespace}.start); err != nil {
		return fmt.Errorf("adding roles hook: %w", err)
	}
	regOpts := o.Registration
	regOpts.FederationNamespace = o.FederationNamespace
	reg := registrationHook{opts: regOpts, files: o.PKIFiles(), tunnel: o.tunnel, access: o.registrationAccess, started: registrations.Store,
		leaderElect: o.ControllersLeaderElect}
	if err := server.GenericAPIServer.AddPostStartHook("cellfed-registrations", reg.start); err != nil {
		return fmt.Errorf("adding registration hook: %w", err)
	}
	if encryption != nil && slices.Contains(nonEmpty(o.Encryption.Resources), "secrets") {
		if err := server.GenericAPIServer.AddPostStartHook("cellfed-encryption-canary", canaryHook{}.start); err != nil {
			return fmt.Errorf("adding encryption canary hook: %w", err)
		}
	}
	if o.Controllers {
		hook := coreControllers{
			rootCA:      caBundle,
			workers:     o.ControllerWorkers,
			leaderElect: o.ControllersLeaderElect,
		}
		if err := server.GenericAPIServer.AddPostStartHook("cellfed-core-controllers", hook.start); err != nil {
			return fmt.Errorf("adding controllers hook: %w", err)
		}
	}
	kubeconfig := o.AdminKubeconfigPath()
	if err := pki.WriteAdminKubeconfig(kubeconfig, o.PKIFiles(), o.serverURL(), "cellfed"); err != nil {
		return err
	}
	if err := server.GenericAPIServer.AddPostStartHook("cellfed-announce", func(genericapiserver.PostStartHookContext) error {
		klog.InfoS("cellfed-apiserver serving", "version", version.Get().GitVersion, "storage", backend.Description,
			"address", o.ControlPlane.SecureServing.Listener.Addr().String(), "kubeconfig", kubeconfig)
		fmt.Fprintf(os.Stderr, "cellfed-apiserver is serving on https://%s (storage: %s)\nUse it with:  export KUBECONFIG=%s; kubectl get --raw /readyz\n",
			o.ControlPlane.SecureServing.Listener.Addr(), backend.Description, kubeconfig)
		return nil
	}); err != nil {
		return fmt.Errorf("adding announce hook: %w", err)
	}

	prepared, err := server.PrepareRun()
	if err != nil {
		return fmt.Errorf("preparing server: %w", err)
	}
	return prepared.Run(ctx)
}

// prepareDatabase checks, before the API server writes anything, that
// this plane may use the database: its PKI is the one recorded there (a
// replica with another CA is refused) and its KMS plugin decrypts what is
// stored. Only then are the identity and encryption configuration set up.
// The databases of --datastore-override resources carry the same identity
// record: another plane's split-off database is refused as its main one is.
func (o *Options) prepareDatabase(ctx context.Context, backend *storage.Backend, overrides []storage.OverrideBackend) (*encryptionSetup, error) {
	raw, err := clientv3.New(clientv3.Config{Endpoints: backend.Endpoints, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("connecting to storage: %w", err)
	}
	defer raw.Close()
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	record, err := checkIdentity(cctx, raw, o.PKIFiles())
	if err != nil {
		return nil, err
	}
	if err := checkDataRelease(cctx, raw); err != nil {
		return nil, err
	}
	records := []func(context.Context) error{record}
	for _, ov := range overrides {
		rec, err := checkOverrideIdentity(cctx, ov, o.PKIFiles())
		if err != nil {
			return nil, err
		}
		records = append(records, rec)
	}
	enc, err := o.setupEncryption(ctx, raw)
	if err != nil {
		return nil, err
	}
	for _, record := range records {
		if err := record(cctx); err != nil {
			enc.stop()
			return nil, err
		}
	}
	return enc, nil
}

// checkOverrideIdentity is checkIdentity on an overridden resource's
// database.
func checkOverrideIdentity(ctx context.Context, ov storage.OverrideBackend, f pki.Files) (func(context.Context) error, error) {
	raw, err := clientv3.New(clientv3.Config{Endpoints: ov.Endpoints, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("connecting to the storage of %s: %w", storage.GroupResourceString(ov.Resource), err)
	}
	record, err := checkIdentity(ctx, raw, f)
	if err != nil {
		raw.Close()
		return nil, fmt.Errorf("--datastore-override %s (%s): %w", storage.GroupResourceString(ov.Resource), ov.Description, err)
	}
	return func(ctx context.Context) error {
		defer raw.Close()
		return record(ctx)
	}, nil
}

// newServerChain builds apiextensions → native (generic control plane) →
// aggregator, the same delegation chain kube-apiserver uses.
// It also returns the native server's handler without filters, which
// serves what the aggregator hands on to it.
func newServerChain(opts cpoptions.CompletedOptions, selfHostPort string, certCache certcache.Options, overrides []storage.OverrideBackend) (*aggregatorapiserver.APIAggregator, authorizer.Authorizer, http.Handler, error) {
	genericConfig, versionedInformers, storageFactory, err := controlplaneapiserver.BuildGenericConfig(
		opts,
		[]*runtime.Scheme{legacyscheme.Scheme, apiextensionsapiserver.Scheme, aggregatorscheme.Scheme},
		resourceConfig(),
		generatedopenapi.GetOpenAPIDefinitions,
	)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("building server config: %w", err)
	}
	// Reading a FederatedSecret needs the right to read Secrets too.
	genericConfig.Authorization.Authorizer = secretReads{genericConfig.Authorization.Authorizer}
	// Verified client certificate chains are reused for a short while
	// (package certcache): before the three servers copy the config.
	if ca := opts.Authentication.ClientCert.CAContentProvider; ca != nil && genericConfig.Authentication.Authenticator != nil {
		var frontProxy headerrequest.StringSliceProvider
		if rh := genericConfig.Authentication.RequestHeaderConfig; rh != nil {
			frontProxy = rh.UsernameHeaders
		}
		genericConfig.Authentication.Authenticator = certcache.New(genericConfig.Authentication.Authenticator, ca.VerifyOptions, frontProxy, certCache)
	}
	serviceResolver := webhook.NewDefaultServiceResolver()
	native, pluginInitializer, err := controlplaneapiserver.CreateConfig(opts, genericConfig, versionedInformers, storageFactory, serviceResolver, nil)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("building control-plane config: %w", err)
	}
	authInfoResolver := selfCallingResolver(selfHostPort, native.Generic.LoopbackClientConfig,
		webhook.NewDefaultAuthenticationInfoResolverWrapper(native.ProxyTransport, native.Generic.EgressSelector, native.Generic.LoopbackClientConfig, native.Generic.TracerProvider))
	// masterCount 1: with more, the CRD establishing controller waits 5 s
	// per CRD for other API servers, which made the first start take a
	// minute. A new CRD is served by other planes on the same database
	// once their informers see it.
	extConfig, err := controlplaneapiserver.CreateAPIExtensionsConfig(*native.Generic, native.VersionedInformers, pluginInitializer, opts, 1, serviceResolver, authInfoResolver)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("building apiextensions config: %w", err)
	}
	aggConfig, err := controlplaneapiserver.CreateAggregatorConfig(*native.Generic, opts, native.VersionedInformers, serviceResolver, native.ProxyTransport, native.Extra.PeerProxy, pluginInitializer)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("building aggregator config: %w", err)
	}
	extConfig.ExtraConfig.CRDRESTOptionsGetter = newOverrideGetter(extConfig.ExtraConfig.CRDRESTOptionsGetter, overrides)
	// No Services in this plane: APIServices can only be local.
	aggConfig.ExtraConfig.DisableRemoteAvailableConditionController = true

	nativeCompleted := native.Complete()
	extCompleted := extConfig.Complete()
	aggCompleted := aggConfig.Complete()

	notFound := notfoundhandler.New(nativeCompleted.Generic.Serializer, genericapifilters.NoMuxAndDiscoveryIncompleteKey)
	extServer, err := extCompleted.New(genericapiserver.NewEmptyDelegateWithCustomHandler(notFound))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("creating apiextensions server: %w", err)
	}
	crdAPIEnabled := extCompleted.GenericConfig.MergedResourceConfig.ResourceEnabled(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))

	nativeServer, err := nativeCompleted.New("cellfed-apiserver", extServer.GenericAPIServer)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("creating control-plane server: %w", err)
	}
	client, err := kubernetes.NewForConfig(nativeCompleted.Generic.LoopbackClientConfig)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("creating loopback client: %w", err)
	}
	providers, err := nativeCompleted.GenericStorageProviders(client.Discovery())
	if err != nil {
		return nil, nil, nil, fmt.Errorf("creating storage providers: %w", err)
	}
	if err := nativeServer.InstallAPIs(nativeStorageProviders(providers)...); err != nil {
		return nil, nil, nil, fmt.Errorf("installing APIs: %w", err)
	}
	agg, err := controlplaneapiserver.CreateAggregatorServer(aggCompleted, nativeServer.GenericAPIServer,
		extServer.Informers.Apiextensions().V1().CustomResourceDefinitions(), crdAPIEnabled, controlplaneapiserver.DefaultGenericAPIServicePriorities())
	if err != nil {
		return nil, nil, nil, fmt.Errorf("creating aggregator: %w", err)
	}
	return agg, native.Generic.Authorization.Authorizer, nativeServer.GenericAPIServer.UnprotectedHandler(), nil
}

// startTunnelHub creates the agent CA (also when the hub runs apart, as
// cellfed-proxy: the plane signs agent certificates) and starts the
// embedded tunnel hub; nil when --tunnel-agent-port is 0.
func startTunnelHub(ctx context.Context, o *Options) (*proxy.Hub, error) {
	if _, _, err := pki.EnsureAgentCA(o.PKIFiles()); err != nil {
		return nil, err
	}
	if !o.Tunnel.Enabled() {
		return nil, nil
	}
	o.completeTunnelFiles() // the data dir is absolute now
	hub, err := proxy.New(*o.Tunnel)
	if err != nil {
		return nil, err
	}
	if err := hub.Listen(ctx); err != nil {
		return nil, fmt.Errorf("%w; choose other --tunnel-*-port flags, or 0 to disable", err)
	}
	go func() {
		if err := hub.Run(ctx); err != nil {
			klog.ErrorS(err, "Tunnel hub stopped")
		}
	}()
	return hub, nil
}
