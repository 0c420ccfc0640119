// Package apiserver assembles cellfed-apiserver: Kubernetes' generic control
// plane (no pods, nodes or services) on kine storage, with the core
// controllers a standalone plane needs running in-process.
package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cellfed/cellfed/pkg/cellproxy"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle"
	mutatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	validatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	mutatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	validatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	cliflag "k8s.io/component-base/cli/flag"
	cpoptions "k8s.io/kubernetes/pkg/controlplane/apiserver/options"
	authzmodes "k8s.io/kubernetes/pkg/kubeapiserver/authorizer/modes"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"
	certapproval "k8s.io/kubernetes/plugin/pkg/admission/certificates/approval"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/ctbattest"
	certsigning "k8s.io/kubernetes/plugin/pkg/admission/certificates/signing"
	certsubjectrestriction "k8s.io/kubernetes/plugin/pkg/admission/certificates/subjectrestriction"
	"k8s.io/kubernetes/plugin/pkg/admission/serviceaccount"

	cellfedadmission "github.com/cellfed/cellfed/pkg/admission"
	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/certcache"
	registrationcontroller "github.com/cellfed/cellfed/pkg/controller/registration"
	"github.com/cellfed/cellfed/pkg/federatedtypes"
	"github.com/cellfed/cellfed/pkg/pki"
	"github.com/cellfed/cellfed/pkg/proxy"
	"github.com/cellfed/cellfed/pkg/storage"
)

// Options are everything cellfed-apiserver can be told. NewOptions holds
// the defaults; flags only override them.
type Options struct {
	// ControlPlane are kube-apiserver's generic control-plane options
	// (serving, authn/z, admission, audit, encryption, feature gates, ...).
	ControlPlane *cpoptions.Options
	// Storage selects and tunes kine.
	Storage *storage.Options

	// DataDir holds the database (SQLite), certificates and kubeconfig.
	DataDir string
	// ExtraSANs are names and IPs added to the serving certificate.
	ExtraSANs []string
	// AdminUser is the user name in the generated admin certificate.
	AdminUser string

	// Controllers runs the core controllers in-process.
	Controllers bool
	// ControllersLeaderElect guards the controllers with a Lease, so that
	// several planes on one database run them once.
	ControllersLeaderElect bool
	// ControllerWorkers is the worker count of each core controller.
	ControllerWorkers int

	// FederationNamespace holds KubeFedClusters, FederatedTypeConfigs and
	// the plane's published webhook settings (KubeFed's namespace).
	FederationNamespace string
	// DefaultFederatedTypes are enabled on the plane's first start.
	DefaultFederatedTypes []string
	// Registration configures the controller that approves agents'
	// ClusterRegistrations and signs their certificates.
	Registration registrationcontroller.Options
	// APIProxy tunes the API proxy to member clusters.
	APIProxy cellproxy.Options
	// ClientCertCache caches verified client certificate chains (see
	// package certcache).
	ClientCertCache certcache.Options

	// tunnel and registrationAccess connect the registration controller to
	// the tunnel hub: disconnecting revoked agents, and the apiEndpoint and
	// proxyURL of tunnelled KubeFedClusters. Without a hub, approved
	// registrations report that they cannot be reached.
	tunnel             registrationcontroller.Tunnel
	registrationAccess registrationcontroller.Access

	// Encryption encrypts resources at rest (KMS v2, Secrets by default).
	Encryption *EncryptionOptions
	// SharedPKIDir holds the PKI replicas on one database share (a mounted
	// Secret): copied into the data dir on start.
	SharedPKIDir string

	// Tunnel is the embedded tunnel hub (agents of members behind NAT);
	// its certificate, CA and secret files come from the data dir.
	Tunnel *proxy.Options

	// admission connects the built-in federation admission plugin to the
	// hook that starts its informers.
	admission *cellfedadmission.Shared
	// crdConversion tells the federated-CRD admission plugin where the
	// conversion webhook is, once the server knows its address.
	crdConversion *cellfedadmission.CRDConversion
}

// NewOptions returns the plane's defaults: RBAC, TLS with a generated CA,
// the admission plugins that make sense without pods, SQLite storage.
func NewOptions() *Options {
	cp := cpoptions.NewOptions()
	cp.Admission.GenericAdmission.DefaultOffPlugins = defaultOffAdmissionPlugins()
	shared := &cellfedadmission.Shared{}
	cellfedadmission.Register(cp.Admission.GenericAdmission.Plugins, shared)
	cp.Admission.GenericAdmission.RecommendedPluginOrder = insertBefore(cp.Admission.GenericAdmission.RecommendedPluginOrder, mutatingwebhook.PluginName, cellfedadmission.PluginName)
	crdConversion := &cellfedadmission.CRDConversion{}
	cellfedadmission.RegisterCRDs(cp.Admission.GenericAdmission.Plugins, crdConversion)
	cp.Admission.GenericAdmission.RecommendedPluginOrder = insertBefore(cp.Admission.GenericAdmission.RecommendedPluginOrder, mutatingwebhook.PluginName, cellfedadmission.CRDPluginName)
	cellfedadmission.RegisterRegistration(cp.Admission.GenericAdmission.Plugins, shared)
	cp.Admission.GenericAdmission.RecommendedPluginOrder = insertBefore(cp.Admission.GenericAdmission.RecommendedPluginOrder, mutatingwebhook.PluginName, cellfedadmission.RegistrationPluginName)
	// With --tracing-config-file, traced writes of federated objects
	// record their trace for the controller (a no-op otherwise).
	cellfedadmission.RegisterTraceparent(cp.Admission.GenericAdmission.Plugins)
	cp.Admission.GenericAdmission.RecommendedPluginOrder = insertBefore(cp.Admission.GenericAdmission.RecommendedPluginOrder, mutatingwebhook.PluginName, cellfedadmission.TraceparentPluginName)
	// Agents register with Kubernetes bootstrap tokens (Secrets of type
	// bootstrap.kubernetes.io/token in kube-system; the authenticator
	// enforces their expiry). RBAC lets them create ClusterRegistrations
	// and nothing else.
	cp.Authentication.BootstrapToken.Enable = true
	cp.Authentication.ServiceAccounts.OptionalTokenGetter = newTokenGetter
	cp.Authentication.ServiceAccounts.Issuers = []string{"https://cellfed-apiserver"}
	cp.Authorization.Modes = []string{authzmodes.ModeRBAC}
	cp.SecureServing.BindAddress = net.ParseIP("127.0.0.1")
	cp.SecureServing.BindPort = 6443
	// On SIGTERM, end open watches within 5 s (clients rewatch another
	// replica) instead of holding the exit for the 60 s shutdown timeout
	// while any watch stays open.
	cp.GenericServerRunOptions.ShutdownWatchTerminationGracePeriod = 5 * time.Second
	return &Options{
		ControlPlane:           cp,
		Storage:                storage.NewOptions(),
		DataDir:                ".cellfed",
		AdminUser:              "cellfed-admin",
		Controllers:            true,
		ControllersLeaderElect: true,
		ControllerWorkers:      5,
		FederationNamespace:    federatedtypes.DefaultNamespace,
		DefaultFederatedTypes:  append([]string(nil), federatedtypes.DefaultTypes...),
		Registration:           registrationcontroller.NewOptions(),
		APIProxy:               cellproxy.NewOptions(),
		ClientCertCache:        certcache.NewOptions(),
		Tunnel:                 proxy.NewOptions(),
		Encryption:             NewEncryptionOptions(),
		admission:              shared,
		crdConversion:          crdConversion,
	}
}

// AddFlags registers all flags in named sets.
func (o *Options) AddFlags(fss *cliflag.NamedFlagSets) {
	o.ControlPlane.AddFlags(fss)
	o.Storage.AddFlags(fss.FlagSet("storage"))
	fs := fss.FlagSet("cellfed")
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "Directory for the SQLite database, certificates, keys and the admin kubeconfig.")
	fs.StringSliceVar(&o.ExtraSANs, "tls-san", o.ExtraSANs, "Extra DNS names or IPs for the generated serving certificate (only used when it is first generated).")
	fs.BoolVar(&o.Controllers, "controllers", o.Controllers, "Run the core controllers (namespace deletion, garbage collection, service accounts, root CA, cluster-role aggregation) in-process.")
	fs.BoolVar(&o.ControllersLeaderElect, "controllers-leader-elect", o.ControllersLeaderElect, "Run the core controllers only while holding the kube-system/cellfed-core-controllers Lease.")
	fs.IntVar(&o.ControllerWorkers, "controller-workers", o.ControllerWorkers, "Workers per core controller.")
	fs.StringVar(&o.FederationNamespace, "federation-namespace", o.FederationNamespace, "Namespace of KubeFedClusters and FederatedTypeConfigs.")
	fs.BoolVar(&o.Registration.AllowUnregisteredAgents, "tunnel-allow-unregistered-agents", o.Registration.AllowUnregisteredAgents, "Admit tunnel agents whose certificate, signed by hand with the agent CA, belongs to no ClusterRegistration (off: only registered clusters' agents are admitted).")
	fs.DurationVar(&o.APIProxy.DialTimeout, "api-proxy-dial-timeout", o.APIProxy.DialTimeout, "How long the API proxy (/apis/proxy.cellfed.io) waits to connect to a member, directly or through its tunnel, before answering 503.")
	fs.IntVar(&o.APIProxy.MaxWatchesPerUser, "api-proxy-max-watches-per-user", o.APIProxy.MaxWatchesPerUser, "How many watches one user may hold open through the API proxy (/apis/proxy.cellfed.io) at once; the next is answered 429 with Retry-After. 0: no bound.")
	fs.BoolVar(&o.APIProxy.MemberRBAC, "member-rbac", o.APIProxy.MemberRBAC, "Bind tenants' app-team and viewer roles on member clusters (cellfed:member:app-team, cellfed:member:viewer) in the namespaces their cells place there, following cellfedctl tenant grant, with the cluster's own access. Only RoleBindings labelled cellfed.io/member-rbac=true and the two ClusterRoles are written; --member-rbac=false leaves member RBAC to the platform team.")
	fs.DurationVar(&o.ClientCertCache.TTL, "client-cert-cache-ttl", o.ClientCertCache.TTL, "How long a verified client certificate chain is reused without verifying it again (never past a certificate's expiry; a reloaded --client-ca-file ends every entry; requests with front-proxy headers are always verified). 0 verifies on every request.")
	fs.DurationVar(&o.Registration.CertValidity, "agent-cert-validity", o.Registration.CertValidity, "Validity of the tunnel agents' certificates the plane signs; agents renew at two thirds of it.")
	fs.StringSliceVar(&o.DefaultFederatedTypes, "default-federated-types", o.DefaultFederatedTypes, "Built-in types enabled for federation on the plane's first start (\"\" for none); later starts keep the set of enabled types and bring their CRDs up to this release's schema.")
	fs.StringVar(&o.SharedPKIDir, "shared-pki-dir", o.SharedPKIDir, "Directory (e.g. a mounted Secret) with the PKI replicas on one database share: "+strings.Join(SharedPKIFiles, ", ")+"; copied into <data-dir>/pki on start (`cellfed-apiserver init` writes a set).")
	o.Encryption.AddFlags(fss.FlagSet("encryption at rest"))
	o.Tunnel.AddFlags(fss.FlagSet("tunnel"))
}

// Validate checks our own options; the control-plane options are
// validated after Complete, once files and storage are known.
func (o *Options) Validate() error {
	var errs []error
	if o.DataDir == "" {
		errs = append(errs, errors.New("--data-dir must not be empty"))
	}
	if o.ControllerWorkers < 1 {
		errs = append(errs, fmt.Errorf("--controller-workers must be at least 1, got %d", o.ControllerWorkers))
	}
	if !cellv1alpha1.IsDNSLabel(o.FederationNamespace) {
		errs = append(errs, fmt.Errorf("--federation-namespace %q is not a valid namespace name (lowercase letters, digits and '-')", o.FederationNamespace))
	}
	for _, t := range o.DefaultFederatedTypes {
		if _, err := federatedtypes.LookupBuiltin(t); err != nil {
			errs = append(errs, fmt.Errorf("--default-federated-types: %w", err))
		}
	}
	if err := o.Registration.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := o.ClientCertCache.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("--client-cert-cache-ttl: %w", err))
	}
	errs = append(errs, o.Storage.Validate()...)
	errs = append(errs, o.Encryption.Validate()...)
	o.completeTunnelFiles()
	errs = append(errs, o.Tunnel.Validate()...)
	return errors.Join(errs...)
}

// PKIFiles are the plane's certificate files in the data dir.
func (o *Options) PKIFiles() pki.Files { return pki.Files{Dir: filepath.Join(o.DataDir, "pki")} }

// completeTunnelFiles points the tunnel hub at the data dir's PKI: the
// plane's serving certificate, the agent CA for agents, the plane's CA for
// gRPC clients and for clients of the TLS CONNECT frontend, and the
// CONNECT secret.
func (o *Options) completeTunnelFiles() {
	f := o.PKIFiles()
	o.Tunnel.ServingCertFile, o.Tunnel.ServingKeyFile = f.ServingCert(), f.ServingKey()
	o.Tunnel.AgentCAFile = f.AgentCACert()
	o.Tunnel.ClientCAFile = f.CACert()
	o.Tunnel.ConnectCAFile = f.CACert() // signs the serving certificate
	o.Tunnel.ConnectSecretFile = TunnelConnectSecretFile(f)
}

// TunnelConnectSecretFile is where the plane keeps the tunnel hub's CONNECT
// secret (per-cluster proxy credentials derive from it).
func TunnelConnectSecretFile(f pki.Files) string {
	return filepath.Join(f.Dir, "tunnel-connect.secret")
}

// AdminKubeconfigPath is where the admin kubeconfig is written.
func (o *Options) AdminKubeconfigPath() string { return filepath.Join(o.DataDir, "admin.kubeconfig") }

// serverURL is the address clients on this machine use to reach the plane.
func (o *Options) serverURL() string {
	ss := o.ControlPlane.SecureServing
	host := "127.0.0.1"
	if ip := ss.BindAddress; ip != nil && !ip.IsUnspecified() {
		host = ip.String()
	}
	return "https://" + net.JoinHostPort(host, strconv.Itoa(ss.BindPort))
}

// listen opens the secure port first, so that a port in use fails before
// any file or database is touched.
func (o *Options) listen(ctx context.Context) error {
	ss := o.ControlPlane.SecureServing
	if ss.Listener != nil {
		return nil
	}
	addr := net.JoinHostPort(ss.BindAddress.String(), strconv.Itoa(ss.BindPort))
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("cannot listen on %s: the port is in use by another process; stop it or choose another --secure-port", addr)
		}
		return fmt.Errorf("cannot listen on %s: %w; check --bind-address and --secure-port", addr, err)
	}
	ss.Listener = ln
	ss.BindPort = ln.Addr().(*net.TCPAddr).Port
	return nil
}

// completeFiles makes sure the data dir is writable and holds the PKI, and
// wires certificates and the service-account key into the control-plane
// options (flags the user set explicitly win).
func (o *Options) completeFiles() error {
	abs, err := filepath.Abs(o.DataDir)
	if err != nil {
		return fmt.Errorf("resolving --data-dir: %w", err)
	}
	o.DataDir = abs
	o.Storage.DataDir = abs
	if err := storage.EnsureWritableDir(abs); err != nil {
		return err
	}
	var hosts []string
	if ip := o.ControlPlane.SecureServing.BindAddress; ip != nil && !ip.IsUnspecified() {
		hosts = append(hosts, ip.String())
		if o.ControlPlane.GenericServerRunOptions.ExternalHost == "" {
			o.ControlPlane.GenericServerRunOptions.ExternalHost = ip.String()
		}
	}
	hosts = append(hosts, o.ExtraSANs...)
	files := o.PKIFiles()
	if o.SharedPKIDir != "" {
		if err := copySharedPKI(o.SharedPKIDir, files); err != nil {
			return err
		}
	}
	if err := pki.Ensure(files, pki.Options{Hosts: hosts, AdminUser: o.AdminUser}); err != nil {
		return err
	}
	cp := o.ControlPlane
	if cp.SecureServing.ServerCert.CertKey.CertFile == "" {
		cp.SecureServing.ServerCert.CertKey.CertFile = files.ServingCert()
		cp.SecureServing.ServerCert.CertKey.KeyFile = files.ServingKey()
	}
	if _, _, err := pki.EnsureAgentCA(files); err != nil {
		return err
	}
	if _, err := proxy.LoadOrCreateSecret(TunnelConnectSecretFile(files)); err != nil {
		return err
	}
	if cp.Authentication.ClientCert.ClientCA == "" {
		// Client certificates from the plane's CA (users) and from the
		// agent CA: the agent CA signs only cellfed:agent:<cluster> in
		// group cellfed:agents (pki.SignAgentCSR ignores the request's
		// subject), which RBAC lets read and renew its own
		// ClusterRegistration only.
		bundle, err := writeClientCABundle(files)
		if err != nil {
			return err
		}
		cp.Authentication.ClientCert.ClientCA = bundle
	}
	if cp.Authentication.ClientCert.ClientCA != "" && cp.Authentication.ClientCert.CAContentProvider == nil {
		// One provider for the x509 authenticator and the certificate
		// cache: both see a reloaded client CA at once.
		ca, err := cp.Authentication.ClientCert.GetClientCAContentProvider()
		if err != nil {
			return fmt.Errorf("client CA %s: %w", cp.Authentication.ClientCert.ClientCA, err)
		}
		cp.Authentication.ClientCert.CAContentProvider = ca
	}
	if cp.ServiceAccountSigningKeyFile == "" {
		cp.ServiceAccountSigningKeyFile = files.ServiceAccountKey()
	}
	if len(cp.Authentication.ServiceAccounts.KeyFiles) == 0 {
		cp.Authentication.ServiceAccounts.KeyFiles = []string{files.ServiceAccountKey()}
	}
	return nil
}

// insertBefore returns order with name inserted before the plugin before
// (or at the end).
func insertBefore(order []string, before, name string) []string {
	out := make([]string, 0, len(order)+1)
	inserted := false
	for _, p := range order {
		if p == before && !inserted {
			out = append(out, name)
			inserted = true
		}
		out = append(out, p)
	}
	if !inserted {
		out = append(out, name)
	}
	return out
}

// defaultOffAdmissionPlugins turns off every plugin that only makes sense
// with pods and nodes.
func defaultOffAdmissionPlugins() sets.Set[string] {
	on := sets.New(
		lifecycle.PluginName,
		serviceaccount.PluginName,
		mutatingwebhook.PluginName,
		validatingwebhook.PluginName,
		resourcequota.PluginName,
		certapproval.PluginName,
		certsigning.PluginName,
		ctbattest.PluginName,
		certsubjectrestriction.PluginName,
		validatingadmissionpolicy.PluginName,
		mutatingadmissionpolicy.PluginName,
	)
	return sets.New(kubeoptions.AllOrderedPlugins...).Difference(on)
}

// writeClientCABundle writes the plane's CA and the agent CA into one
// file in the PKI dir (rewritten on every start, so it follows the CAs).
func writeClientCABundle(files pki.Files) (string, error) {
	var bundle []byte
	for _, f := range []string{files.CACert(), files.AgentCACert()} {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("reading %s for the client-CA bundle: %w", f, err)
		}
		bundle = append(bundle, b...)
		if len(b) > 0 && b[len(b)-1] != '\n' {
			bundle = append(bundle, '\n')
		}
	}
	path := filepath.Join(files.Dir, "client-ca-bundle.crt")
	if err := os.WriteFile(path, bundle, 0o644); err != nil {
		return "", fmt.Errorf("writing the client-CA bundle %s: %w", path, err)
	}
	return path, nil
}
