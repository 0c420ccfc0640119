// Command cellfed-proxy runs the tunnel hub on its own, for deployments
// that keep it apart from cellfed-apiserver (which embeds it by default).
// The logic is in pkg/proxy.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/logs"
	"k8s.io/component-base/version/verflag"
	"k8s.io/klog/v2"

	"github.com/cellfed/cellfed/pkg/proxy"
	"github.com/cellfed/cellfed/pkg/proxy/registrations"
	"github.com/cellfed/cellfed/pkg/roles"
	_ "github.com/cellfed/cellfed/pkg/version"
)

func main() {
	if err := newCommand().Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "cellfed-proxy: %v\n", err)
		os.Exit(1)
	}
}

func newCommand() *cobra.Command {
	o := proxy.NewOptions()
	var planeKubeconfig string
	var allowUnregistered bool
	cmd := &cobra.Command{
		Use:          "cellfed-proxy",
		Short:        "Run the cellfed tunnel hub (agents connect to it; controllers reach members through it)",
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			verflag.PrintAndExitIfRequested()
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if o.AgentPort == 0 {
				return errors.New("--tunnel-agent-port must not be 0 for cellfed-proxy")
			}
			if o.ConnectCAFile == "" {
				o.ConnectCAFile = o.ClientCAFile
			}
			var h *proxy.Hub
			w, err := registrationWatcher(ctx, planeKubeconfig, allowUnregistered, func(cluster string) int { return h.Disconnect(cluster) })
			if err != nil {
				return err
			}
			if w != nil {
				o.Admit = w.Admit
				o.ConnectGeneration = w.ProxyCredentialGeneration
			}
			if h, err = proxy.New(*o); err != nil {
				return err
			}
			if w != nil {
				go w.Run(ctx)
			}
			if err := h.Listen(ctx); err != nil {
				return err
			}
			klog.InfoS("cellfed-proxy serving", "agents", h.AgentAddr(), "grpc", h.GRPCAddr(), "connect", h.ConnectAddr())
			return h.Run(ctx)
		},
	}
	fs := cmd.Flags()
	o.AddFlags(fs)
	fs.StringVar(&o.ServingCertFile, "tls-cert-file", o.ServingCertFile, "The hub's serving certificate (shown to agents and gRPC clients).")
	fs.StringVar(&o.ServingKeyFile, "tls-private-key-file", o.ServingKeyFile, "The hub's serving key.")
	fs.StringVar(&o.AgentCAFile, "agent-ca-file", o.AgentCAFile, "The agent CA: agents' client certificates must chain to it (the plane's data dir pki/agent-ca.crt).")
	fs.StringVar(&o.ClientCAFile, "client-ca-file", o.ClientCAFile, "The plane's CA: gRPC frontend clients' certificates must chain to it.")
	fs.StringVar(&o.ConnectCAFile, "connect-ca-file", o.ConnectCAFile, "The CA of --tls-cert-file, for clients of the TLS CONNECT frontend (the plane appends its own CA, pki/ca.crt, to tunnelled clusters' caBundle: sign the hub's certificate with it); default --client-ca-file.")
	fs.StringVar(&o.ConnectSecretFile, "connect-secret-file", o.ConnectSecretFile, "Secret the CONNECT frontend's per-cluster credentials derive from (share it with the plane: pki/tunnel-connect.secret); created when missing.")
	fs.StringSliceVar(&o.ClientGroups, "client-groups", o.ClientGroups, "Certificate groups the gRPC frontend accepts.")
	fs.StringVar(&planeKubeconfig, "plane-kubeconfig", planeKubeconfig, "Kubeconfig of the plane, with an identity bound to the ClusterRole "+roles.TunnelHub+" (read of ClusterRegistrations only): the hub admits an agent only while its cluster's registration is approved, and drops it when the registration is revoked.")
	fs.BoolVar(&allowUnregistered, "tunnel-allow-unregistered-agents", allowUnregistered, "Admit agents whose certificate, signed by hand with the agent CA, belongs to no ClusterRegistration. Without --plane-kubeconfig every certificate the agent CA signed is admitted, revoked ones included.")
	verflag.AddFlags(fs)
	logs.AddFlags(fs)
	return cmd
}

// registrationWatcher watches the plane's registrations for the hub's
// admission; it is nil only when the operator chose to admit every agent
// certificate.
func registrationWatcher(ctx context.Context, kubeconfig string, allowUnregistered bool, disconnect func(string) int) (*registrations.Watcher, error) {
	if kubeconfig == "" {
		if !allowUnregistered {
			return nil, fmt.Errorf("cellfed-proxy admits only the agents of approved ClusterRegistrations: give it --plane-kubeconfig (an identity bound to the ClusterRole %s), or pass --tunnel-allow-unregistered-agents to admit every certificate the agent CA signed, revoked ones included", roles.TunnelHub)
		}
		klog.InfoS("Admitting every agent certificate the agent CA signed: no --plane-kubeconfig, so revoked registrations are not refused")
		return nil, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("reading --plane-kubeconfig: %w", err)
	}
	w, err := registrations.New(cfg, allowUnregistered, disconnect)
	if err != nil {
		return nil, err
	}
	checkCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := w.Check(checkCtx); err != nil {
		return nil, err
	}
	return w, nil
}
