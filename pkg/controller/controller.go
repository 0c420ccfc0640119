// Package controller assembles cellfed-controller: the member cluster
// registry with its health probes (package clusters), the cell controller
// (package cells) and the FederatedTypeConfig controller (package
// federatedtypeconfig), which runs one propagation controller per
// FederatedTypeConfig with propagation enabled and, beside each, a rollout
// controller, all under one leader election Lease in the plane. It holds
// the options, the leader election, the health endpoints and the wiring.
package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/cellfed/cellfed/pkg/controller/cells"
	"github.com/cellfed/cellfed/pkg/controller/clusters"
	"github.com/cellfed/cellfed/pkg/controller/federatedtypeconfig"
	"github.com/cellfed/cellfed/pkg/controller/informers"
	policycontroller "github.com/cellfed/cellfed/pkg/controller/policy"
	"github.com/cellfed/cellfed/pkg/controller/propagation"
	"github.com/cellfed/cellfed/pkg/controller/replicascheduling"
	"github.com/cellfed/cellfed/pkg/controller/rolloutcontroller"
	"github.com/cellfed/cellfed/pkg/controller/statemetrics"
	"github.com/cellfed/cellfed/pkg/gcsettings"
	"github.com/cellfed/cellfed/pkg/proxy"
	"github.com/cellfed/cellfed/pkg/tenancy"
	"github.com/cellfed/cellfed/pkg/version"
)

// Options are everything cellfed-controller can be told; NewOptions
// holds the defaults.
type Options struct {
	Kubeconfig          string
	FederationNamespace string
	Propagation         propagation.Options
	Rollout             rolloutcontroller.Options
	ReplicaScheduling   replicascheduling.Options
	// PropagationPolicies runs the propagation-policy controller: native
	// objects placed by PropagationPolicies (docs/native-objects.md).
	PropagationPolicies bool
	Clusters            clusters.Options
	CellWorkers         int
	PlaneQPS            float32
	PlaneBurst          int
	LeaderElect         bool
	LeaseName           string
	// LeaderElectIdentity names this replica in the Lease; empty: the
	// host name and a random suffix. A name that is stable across
	// restarts of one replica (its pod's name) lets a restarted process
	// take its Lease back at once; two live replicas must never share
	// one.
	LeaderElectIdentity string
	LeaseDuration       time.Duration
	RenewDeadline       time.Duration
	RetryPeriod         time.Duration
	// HealthAddress serves /healthz, /readyz and /metrics ("" = off).
	HealthAddress string
	// Profiling serves net/http/pprof under /debug/pprof/ on
	// HealthAddress, as Kubernetes components' --profiling does.
	Profiling bool
	// Tunnel, when its Address is set, reaches tunnelled clusters (those
	// whose spec.proxyURL names a cluster as proxy user) through the tunnel
	// hub's gRPC frontend instead of its CONNECT frontend. Empty
	// certificate files mean the plane kubeconfig's CA and client
	// certificate.
	Tunnel proxy.DialerOptions
	// TracingConfigFile is kube-apiserver's TracingConfiguration file
	// ("" = tracing off); see startTracing.
	TracingConfigFile string
	// GC sets the garbage collector (--gc-percent, --memory-limit).
	GC gcsettings.Options
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		FederationNamespace: "kube-federation-system",
		Propagation:         propagation.DefaultOptions(),
		Rollout:             rolloutcontroller.DefaultOptions(),
		ReplicaScheduling:   replicascheduling.DefaultOptions(),
		PropagationPolicies: true,
		Clusters:            clusters.DefaultOptions(),
		CellWorkers:         4,
		PlaneQPS:            200,
		PlaneBurst:          400,
		LeaderElect:         true,
		LeaseName:           "cellfed-controller",
		LeaseDuration:       15 * time.Second,
		RenewDeadline:       10 * time.Second,
		RetryPeriod:         2 * time.Second,
		HealthAddress:       "127.0.0.1:10358",
		Tunnel:              proxy.NewDialerOptions(),
		GC:                  gcsettings.DefaultOptions(),
	}
}

// AddFlags registers the options as flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig of the cellfed plane (default: $KUBECONFIG, then in-cluster)")
	fs.StringVar(&o.FederationNamespace, "federation-namespace", o.FederationNamespace, "namespace of KubeFedClusters, their Secrets, FederatedTypeConfigs and the leader Lease")
	fs.IntVar(&o.Propagation.Workers, "workers", o.Propagation.Workers, "objects of one federated type reconciled in parallel")
	fs.BoolVar(&o.Propagation.AdoptExisting, "adopt-existing", o.Propagation.AdoptExisting, "adopt member objects that exist without the managed label (false: report AlreadyExists and leave them)")
	fs.DurationVar(&o.Propagation.ClusterTimeout, "cluster-timeout", o.Propagation.ClusterTimeout, "time allowed for the work on one cluster for one object")
	fs.DurationVar(&o.Propagation.WriteWait, "member-write-wait", o.Propagation.WriteWait, "how long one reconcile waits for its member writes: a member that has not answered by then is reported WriteInProgress while its write goes on, up to --cluster-timeout (0 waits for every write)")
	fs.DurationVar(&o.Propagation.StatusInterval, "status-interval", o.Propagation.StatusInterval, "least time between two status writes of one federated object: member status changes within it are written together (0 writes every change)")
	fs.StringVar(&o.Propagation.PodSecurityLevel, "pod-security-level", o.Propagation.PodSecurityLevel, "Pod Security level (privileged, baseline, restricted) enforced in the member namespaces the federation creates or federates, unless a platform admin labels the namespace on the plane cellfed.io/pod-security=<level>; kube-* and default are left alone")
	fs.IntVar(&o.Rollout.Workers, "rollout-workers", o.Rollout.Workers, "objects under a rollout of one federated type handled in parallel")
	fs.IntVar(&o.Rollout.HistoryLimit, "rollout-history-limit", o.Rollout.HistoryLimit, "template revisions kept per federated object for rollout undo")
	fs.BoolVar(&o.PropagationPolicies, "propagation-policies", o.PropagationPolicies, "place native objects by PropagationPolicies and ClusterPropagationPolicies (policy.cellfed.io): keep a federated object per placed object, the policies' status and Events on unplaced workspace objects; false leaves policies unread")
	fs.BoolVar(&o.ReplicaScheduling.Enabled, "replica-scheduling-preferences", o.ReplicaScheduling.Enabled, "schedule KubeFed's ReplicaSchedulingPreferences (scheduling.kubefed.io): divide each one's totalReplicas among the clusters of its FederatedDeployment or FederatedReplicaSet and write the result into it, as KubeFed's scheduler does; false leaves RSPs to another scheduler")
	fs.StringVar(&o.Tunnel.Address, "tunnel-grpc-address", o.Tunnel.Address, "the tunnel hub's gRPC frontend (host:port); when set, tunnelled clusters are reached through it instead of their spec.proxyURL")
	fs.StringVar(&o.Tunnel.ServerName, "tunnel-server-name", o.Tunnel.ServerName, "name the tunnel hub's certificate must show (default: the host of --tunnel-grpc-address)")
	fs.StringVar(&o.Tunnel.CAFile, "tunnel-ca-file", o.Tunnel.CAFile, "CA that verifies the tunnel hub (default: the plane kubeconfig's CA)")
	fs.StringVar(&o.Tunnel.CertFile, "tunnel-cert-file", o.Tunnel.CertFile, "client certificate for the tunnel hub (default: the plane kubeconfig's)")
	fs.StringVar(&o.Tunnel.KeyFile, "tunnel-key-file", o.Tunnel.KeyFile, "client key for the tunnel hub (default: the plane kubeconfig's)")
	fs.IntVar(&o.Clusters.Concurrency, "cluster-concurrency", o.Clusters.Concurrency, "requests in flight to one member cluster at a time")
	fs.Float32Var(&o.Clusters.QPS, "member-qps", o.Clusters.QPS, "request rate limit of each member cluster's client")
	fs.IntVar(&o.Clusters.Burst, "member-burst", o.Clusters.Burst, "request burst of each member cluster's client")
	fs.DurationVar(&o.Clusters.ProbePeriod, "cluster-probe-period", o.Clusters.ProbePeriod, "time between health probes of a member cluster")
	fs.DurationVar(&o.Clusters.UnreadyProbePeriod, "cluster-unready-probe-period", o.Clusters.UnreadyProbePeriod, "time between health probes of a member cluster that is not ready (when shorter than --cluster-probe-period)")
	fs.DurationVar(&o.Clusters.ProbeTimeout, "cluster-probe-timeout", o.Clusters.ProbeTimeout, "timeout of one health probe")
	fs.IntVar(&o.Clusters.FailureThreshold, "cluster-failure-threshold", o.Clusters.FailureThreshold, "failed probes in a row that make a ready cluster not ready")
	fs.IntVar(&o.Clusters.SuccessThreshold, "cluster-success-threshold", o.Clusters.SuccessThreshold, "good probes in a row that make a cluster ready again")
	fs.IntVar(&o.CellWorkers, "cell-workers", o.CellWorkers, "cells reconciled in parallel")
	fs.Float32Var(&o.PlaneQPS, "plane-qps", o.PlaneQPS, "request rate limit towards the plane")
	fs.IntVar(&o.PlaneBurst, "plane-burst", o.PlaneBurst, "request burst towards the plane")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "run only while holding the Lease, so several replicas are safe")
	fs.StringVar(&o.LeaseName, "leader-elect-lease-name", o.LeaseName, "name of the leader Lease in the federation namespace")
	fs.StringVar(&o.LeaderElectIdentity, "leader-elect-identity", o.LeaderElectIdentity, "this replica's name in the Lease (default: host name and a random suffix); give each replica a name stable across its restarts, e.g. its pod's name, and a restarted replica takes its Lease back at once instead of waiting --leader-elect-lease-duration")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "how long a lost leader's Lease blocks the others")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "how long the leader keeps trying to renew before giving up; less than the lease duration")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "time between attempts to take or renew the Lease")
	fs.StringVar(&o.HealthAddress, "health-address", o.HealthAddress, "host:port serving /healthz, /readyz and /metrics (empty: off)")
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling, "serve Go profiles (net/http/pprof) under /debug/pprof/ on --health-address")
	o.GC.AddFlags(fs)
	fs.StringVar(&o.TracingConfigFile, "tracing-config-file", o.TracingConfigFile, "file with the OpenTelemetry tracing configuration, as kube-apiserver's (TracingConfiguration of apiserver.config.k8s.io: endpoint, samplingRatePerMillion); empty: tracing off")
}

// Validate reports options that cannot work.
func (o *Options) Validate() error {
	var errs []error
	if o.Propagation.Workers < 1 {
		errs = append(errs, errors.New("--workers must be at least 1"))
	}
	if err := tenancy.PodSecurityLevelError(o.Propagation.PodSecurityLevel); err != nil {
		errs = append(errs, fmt.Errorf("--pod-security-level: %w", err))
	}
	if o.Rollout.Workers < 1 || o.Rollout.HistoryLimit < 1 {
		errs = append(errs, errors.New("--rollout-workers and --rollout-history-limit must be at least 1"))
	}
	if o.Clusters.Concurrency < 1 {
		errs = append(errs, errors.New("--cluster-concurrency must be at least 1"))
	}
	if o.Clusters.ProbePeriod <= 0 || o.Clusters.ProbeTimeout <= 0 {
		errs = append(errs, errors.New("--cluster-probe-period and --cluster-probe-timeout must be positive"))
	}
	if o.Clusters.FailureThreshold < 1 || o.Clusters.SuccessThreshold < 1 {
		errs = append(errs, errors.New("--cluster-failure-threshold and --cluster-success-threshold must be at least 1"))
	}
	if o.LeaderElect && (o.RenewDeadline >= o.LeaseDuration || o.RetryPeriod <= 0 || o.RetryPeriod >= o.RenewDeadline) {
		errs = append(errs, errors.New("leader election needs --leader-elect-retry-period < --leader-elect-renew-deadline < --leader-elect-lease-duration"))
	}
	if o.FederationNamespace == "" {
		errs = append(errs, errors.New("--federation-namespace must not be empty"))
	}
	if err := o.GC.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Run runs the controller against the plane cfg reaches until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, o *Options) error {
	gc, err := gcsettings.Apply(o.GC)
	if err != nil {
		return err
	}
	klog.InfoS("Garbage collector", "percent", gc.Percent, "memoryLimitBytes", gc.Limit, "from", gc.Why)
	o.Clusters.Namespace = o.FederationNamespace
	o.Rollout.FederationNamespace = o.FederationNamespace
	if o.Tunnel.Address != "" {
		d, err := tunnelDialer(cfg, o.Tunnel)
		if err != nil {
			return err
		}
		defer func() { go d.Close() }() // closing drains streams; never wait for it
		o.Clusters.Dialer = func(a clusters.Access) clusters.DialFunc {
			if cluster, ok := proxy.ClusterFromProxyURL(a.ProxyURL); ok {
				return d.DialFunc(cluster)
			}
			return nil
		}
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = o.PlaneQPS, o.PlaneBurst
	stopTracing, err := startTracing(ctx, cfg, o)
	if err != nil {
		return err
	}
	defer stopTracing()
	cfg.UserAgent = "cellfed-controller"
	// Built-in types (Namespaces, Secrets, Leases, Events) travel in
	// protobuf: cheaper to decode than JSON. The dynamic client of the
	// federated types stays on JSON (custom resources have no protobuf).
	kubeCfg := rest.CopyConfig(cfg)
	kubeCfg.ContentType = runtime.ContentTypeProtobuf
	kubeCfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	kube, err := kubernetes.NewForConfig(kubeCfg)
	if err != nil {
		return fmt.Errorf("plane client: %w", err)
	}
	plane, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("plane client: %w", err)
	}
	var ready sync.Map // "leading", "synced" -> true
	if o.HealthAddress != "" {
		if err := serveHealth(ctx, o.HealthAddress, &ready, o.Profiling); err != nil {
			return err
		}
	}
	// The skew policy: refused here, before any write, rather than
	// misbehaving against a plane of another release.
	if err := version.CheckPlane(ctx, "cellfed-controller", version.ControllerSkew, kube.Discovery().RESTClient(), cfg.Host); err != nil {
		return err
	}
	run := func(ctx context.Context) {
		ready.Store("leading", true)
		if err := runControllers(ctx, plane, kube, o, &ready); err != nil && ctx.Err() == nil {
			klog.ErrorS(err, "Controllers stopped")
			os.Exit(1)
		}
	}
	if !o.LeaderElect {
		run(ctx)
		return nil
	}
	identity := o.LeaderElectIdentity
	if identity == "" {
		host, _ := os.Hostname()
		identity = host + "_" + string(uuid.NewUUID())
	}
	// The Lease gets a client of its own: renewals never wait behind the
	// controllers' requests in a shared rate limiter (a burst of plane
	// writes once cost a replica its Lease).
	leaseCfg := rest.CopyConfig(kubeCfg)
	leaseCfg.UserAgent = "cellfed-controller/leader-election"
	leaseCfg.QPS, leaseCfg.Burst = 5, 10
	leaseKube, err := kubernetes.NewForConfig(leaseCfg)
	if err != nil {
		return fmt.Errorf("leader lease client: %w", err)
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, o.FederationNamespace, o.LeaseName,
		leaseKube.CoreV1(), leaseKube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: identity})
	if err != nil {
		return fmt.Errorf("leader lease: %w", err)
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.LeaseDuration,
		RenewDeadline:   o.RenewDeadline,
		RetryPeriod:     o.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            o.LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: run,
			OnStoppedLeading: func() {
				if ctx.Err() == nil {
					// Another replica leads now; start over as a follower.
					klog.InfoS("Lost the leader Lease; exiting so a restart starts clean")
					os.Exit(1)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	klog.InfoS("Waiting for the leader Lease", "lease", o.FederationNamespace+"/"+o.LeaseName)
	le.Run(ctx)
	return nil
}

// tunnelDialer connects to the tunnel hub's gRPC frontend, with the plane
// kubeconfig's CA and client certificate unless files are given.
func tunnelDialer(cfg *rest.Config, o proxy.DialerOptions) (*proxy.Dialer, error) {
	if o.CAFile == "" {
		o.CAFile, o.CAData = cfg.CAFile, cfg.CAData
	}
	if o.CertFile == "" && o.KeyFile == "" {
		o.CertFile, o.KeyFile, o.CertData, o.KeyData = cfg.CertFile, cfg.KeyFile, cfg.CertData, cfg.KeyData
	}
	d, err := proxy.NewDialer(o)
	if err != nil {
		return nil, fmt.Errorf("--tunnel-grpc-address: %w", err)
	}
	return d, nil
}

// runControllers runs the registry, the cell controller and the
// FederatedTypeConfig controller until ctx ends.
func runControllers(ctx context.Context, plane dynamic.Interface, kube kubernetes.Interface, o *Options, ready *sync.Map) error {
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "cellfed-controller"})

	// One set of plane caches for every controller of the process.
	caches := informers.New(plane, kube, o.FederationNamespace)
	statemetrics.Register(caches.KubeFedClusters().GetStore().List, caches.Cells().GetStore().List)
	reg := clusters.NewRegistry(plane, kube, caches, o.Clusters)
	types := federatedtypeconfig.New(ctx, plane, caches, reg, recorder, o.Propagation, o.Rollout)
	cellCtrl := cells.New(plane, caches, recorder, types.Primed, o.FederationNamespace, o.CellWorkers)
	runs := []func(context.Context) error{reg.Run, cellCtrl.Run, types.Run}
	if o.ReplicaScheduling.Enabled {
		runs = append(runs, replicascheduling.New(plane, caches, reg, recorder, o.ReplicaScheduling).Run)
	}
	if o.PropagationPolicies {
		po := policycontroller.NewOptions()
		po.FederationNamespace = o.FederationNamespace
		runs = append(runs, policycontroller.New(plane, recorder, po).Run)
	}
	reg.Subscribe(types.ClusterChanged)
	caches.Start(ctx.Done())
	errc := make(chan error, len(runs))
	for _, run := range runs {
		go func() { errc <- run(ctx) }()
	}
	if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		return ctx.Err()
	}
	ready.Store("synced", true)
	klog.InfoS("cellfed-controller running", "federationNamespace", o.FederationNamespace)
	for range runs {
		if err := <-errc; err != nil {
			return err
		}
	}
	return nil
}
