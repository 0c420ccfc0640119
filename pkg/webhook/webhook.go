// Package webhook runs cellfed-webhook: the conversion webhook of the
// federated types and the federation admission webhooks, for a community
// kube-apiserver that serves cellfed's CRDs without cellfed-apiserver.
// It is the same code cellfed-apiserver runs built in.
package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/cellfed/cellfed/pkg/admission"
	"github.com/cellfed/cellfed/pkg/conversion"
	"github.com/cellfed/cellfed/pkg/federatedtypes"
)

// Options configure cellfed-webhook.
type Options struct {
	// Kubeconfig reaches the API server whose objects admission looks up
	// ("" = in-cluster).
	Kubeconfig          string
	CertFile, KeyFile   string
	BindAddress         string
	Port                int
	FederationNamespace string
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{BindAddress: "0.0.0.0", Port: 9443, FederationNamespace: federatedtypes.DefaultNamespace}
}

// AddFlags registers the flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Kubeconfig of the API server the webhooks serve (empty: in-cluster config).")
	fs.StringVar(&o.CertFile, "tls-cert-file", o.CertFile, "Serving certificate (PEM).")
	fs.StringVar(&o.KeyFile, "tls-private-key-file", o.KeyFile, "Serving key (PEM).")
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "Address to listen on.")
	fs.IntVar(&o.Port, "secure-port", o.Port, "HTTPS port.")
	fs.StringVar(&o.FederationNamespace, "federation-namespace", o.FederationNamespace, "Namespace of KubeFedClusters and FederatedTypeConfigs.")
}

// Validate checks the options.
func (o *Options) Validate() error {
	var errs []error
	if o.CertFile == "" || o.KeyFile == "" {
		errs = append(errs, errors.New("--tls-cert-file and --tls-private-key-file are required: API servers only call webhooks over TLS"))
	}
	if o.Port < 1 || o.Port > 65535 {
		errs = append(errs, fmt.Errorf("--secure-port %d is not a port", o.Port))
	}
	return errors.Join(errs...)
}

// Run serves until ctx is done.
func Run(ctx context.Context, o *Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
	if err != nil {
		return fmt.Errorf("loading the serving certificate: %w", err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(kube, 10*time.Minute)
	ns := factory.Core().V1().Namespaces()
	lookup := admission.NewInformers(dyn, ns.Lister(), ns.Informer().HasSynced, o.FederationNamespace)
	factory.Start(ctx.Done())
	lookup.Start(ctx)
	admitter := &admission.Admitter{Lookup: lookup, FederationNamespace: o.FederationNamespace}

	mux := http.NewServeMux()
	mux.Handle(conversion.Path, conversion.Handler{})
	mux.Handle(admission.MutatePath, admission.Handler{Admitter: admitter, Mutate: true, Ready: lookup.HasSynced})
	mux.Handle(admission.ValidatePath, admission.Handler{Admitter: admitter, Ready: lookup.HasSynced})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !lookup.HasSynced() {
			http.Error(w, "caches not synced", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})

	addr := net.JoinHostPort(o.BindAddress, strconv.Itoa(o.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w; choose another --secure-port", addr, err)
	}
	srv := &http.Server{
		Handler:           mux,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	klog.InfoS("cellfed-webhook serving", "address", ln.Addr().String(), "conversion", conversion.Path, "mutate", admission.MutatePath, "validate", admission.ValidatePath)
	if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
