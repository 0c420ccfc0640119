package apiserver

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	genericapiserver "k8s.io/apiserver/pkg/server"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/controller-manager/pkg/informerfactory"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/certificates/rootcacertpublisher"
	"k8s.io/kubernetes/pkg/controller/clusterroleaggregation"
	"k8s.io/kubernetes/pkg/controller/garbagecollector"
	namespacecontroller "k8s.io/kubernetes/pkg/controller/namespace"
	serviceaccountcontroller "k8s.io/kubernetes/pkg/controller/serviceaccount"
	svm "k8s.io/kubernetes/pkg/controller/storageversionmigrator"
	"k8s.io/kubernetes/pkg/features"
)

const (
	controllersLease = "cellfed-core-controllers"
	gcSyncPeriod     = 30 * time.Second
)

// coreControllers are the kube-controller-manager controllers a plane
// without pods needs: namespace deletion, garbage collection, the default
// service account of each namespace, the root CA config map and
// cluster-role aggregation. They run against the loopback client.
//
// No token controller runs: a Secret of type
// kubernetes.io/service-account-token written on the plane (an app team's,
// to be placed on members) is stored as written, never filled with a
// token of the plane's own; each member's token controller fills its
// copy. Nothing creates Pods, ReplicaSets or Jobs' Pods, allocates
// Service addresses or binds volumes (docs/native-objects.md).
type coreControllers struct {
	rootCA      []byte
	workers     int
	leaderElect bool
}

func (c coreControllers) start(hookCtx genericapiserver.PostStartHookContext) error {
	cfg := rest.CopyConfig(hookCtx.LoopbackClientConfig)
	cfg.QPS, cfg.Burst = 200, 400
	cfg.UserAgent = "cellfed-core-controllers"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("controllers client: %w", err)
	}
	run := func(ctx context.Context) {
		if err := c.run(ctx, cfg, client); err != nil {
			klog.ErrorS(err, "Core controllers failed")
		}
	}
	ctx := hookCtx // cancelled when the server stops
	if !c.leaderElect {
		go run(ctx)
		return nil
	}
	return runLeaderElected(ctx, client, controllersLease, run)
}

// runLeaderElected runs run while this process holds the kube-system Lease
// named lease, so that several planes on one database run it once. run's
// context is cancelled when the Lease is lost; another replica takes over
// after the lease duration.
func runLeaderElected(ctx context.Context, client kubernetes.Interface, lease string, run func(context.Context)) error {
	host, _ := os.Hostname()
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, metav1.NamespaceSystem, lease,
		client.CoreV1(), client.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: host + "_" + string(uuid.NewUUID())})
	if err != nil {
		return fmt.Errorf("lease %s: %w", lease, err)
	}
	go func() {
		// RunOrDie returns when the Lease is lost; campaign again until
		// the server stops.
		for ctx.Err() == nil {
			leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
				Lock:            lock,
				LeaseDuration:   15 * time.Second,
				RenewDeadline:   10 * time.Second,
				RetryPeriod:     2 * time.Second,
				ReleaseOnCancel: true,
				Name:            lease,
				Callbacks: leaderelection.LeaderCallbacks{
					OnStartedLeading: run,
					OnStoppedLeading: func() { klog.InfoS("Stopped leading", "lease", lease) },
				},
			})
		}
	}()
	return nil
}

func (c coreControllers) run(ctx context.Context, cfg *rest.Config, client kubernetes.Interface) error {
	logger := klog.FromContext(ctx).WithName("core-controllers")
	metadataClient, err := metadata.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("metadata client: %w", err)
	}
	typed := informers.NewSharedInformerFactory(client, 0)
	meta := metadatainformer.NewSharedInformerFactory(metadataClient, 0)
	informersStarted := make(chan struct{})

	nsController := namespacecontroller.NewNamespaceController(ctx, client, metadataClient,
		client.Discovery().ServerPreferredNamespacedResources, typed.Core().V1().Namespaces(), 5*time.Minute, corev1.FinalizerKubernetes)

	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery()))
	gc, err := garbagecollector.NewGarbageCollector(ctx, client, metadataClient, mapper, garbagecollector.DefaultIgnoredResources(),
		informerfactory.NewInformerFactory(typed, meta), informersStarted)
	if err != nil {
		return fmt.Errorf("garbage collector: %w", err)
	}

	saController, err := serviceaccountcontroller.NewServiceAccountsController(logger, typed.Core().V1().ServiceAccounts(),
		typed.Core().V1().Namespaces(), client, serviceaccountcontroller.DefaultServiceAccountsControllerOptions())
	if err != nil {
		return fmt.Errorf("service-account controller: %w", err)
	}
	rootCA, err := rootcacertpublisher.NewPublisher(typed.Core().V1().ConfigMaps(), typed.Core().V1().Namespaces(), client, c.rootCA)
	if err != nil {
		return fmt.Errorf("root-CA publisher: %w", err)
	}
	aggregation := clusterroleaggregation.NewClusterRoleAggregation(typed.Rbac().V1().ClusterRoles(), client.RbacV1())
	migrators, err := c.storageVersionMigrators(ctx, cfg, client, metadataClient, typed, mapper, gc)
	if err != nil {
		return err
	}

	typed.Start(ctx.Done())
	meta.Start(ctx.Done())
	close(informersStarted)

	go nsController.Run(ctx, c.workers)
	go gc.Run(ctx, c.workers, gcSyncPeriod)
	go gc.Sync(ctx, client.Discovery(), gcSyncPeriod)
	go saController.Run(ctx, 1)
	go rootCA.Run(ctx, 1)
	go aggregation.Run(ctx, c.workers)
	for _, run := range migrators {
		go run(ctx)
	}
	logger.Info("Core controllers started")
	<-ctx.Done()
	return nil
}

// migrationQPS bounds the writes of a storage version migration: it
// rewrites every object of a resource, and must not starve the API.
const migrationQPS = 50

// storageVersionMigrators are kube-controller-manager's storage version
// migration controllers (storagemigration.k8s.io): rewriting every object
// of a StorageVersionMigration's resource in the storage version, and for
// a CRD trimming status.storedVersions once done. None when the
// StorageVersionMigrator gate is off.
func (c coreControllers) storageVersionMigrators(ctx context.Context, cfg *rest.Config, client kubernetes.Interface,
	metadataClient metadata.Interface, typed informers.SharedInformerFactory, mapper *restmapper.DeferredDiscoveryRESTMapper,
	gc *garbagecollector.GarbageCollector) ([]func(context.Context), error) {
	if !utilfeature.DefaultFeatureGate.Enabled(features.StorageVersionMigrator) {
		return nil, nil
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = migrationQPS, migrationQPS
	cfg.UserAgent = "cellfed-storage-version-migrator"
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("storage version migrator: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("storage version migrator: %w", err)
	}
	crds, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("storage version migrator: %w", err)
	}
	migrations := typed.Storagemigration().V1beta1().StorageVersionMigrations()
	return []func(context.Context){
		svm.NewSVMController(ctx, client, dyn, migrations, "storage-version-migrator", mapper, gc.GetDependencyGraphBuilder()).Run,
		svm.NewResourceVersionController(ctx, client, disc, metadataClient, migrations, mapper).Run,
		svm.NewCustomResourceController(ctx, client, migrations, crds.ApiextensionsV1().CustomResourceDefinitions()).Run,
	}, nil
}
