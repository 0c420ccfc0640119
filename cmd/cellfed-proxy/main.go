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

	"github.com/spf13/cobra"
	"k8s.io/component-base/logs"
	"k8s.io/component-base/version/verflag"
	"k8s.io/klog/v2"

	"github.com/cellfed/cellfed/pkg/proxy"
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
			h, err := proxy.New(*o)
			if err != nil {
				return err
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
	fs.StringVar(&o.ConnectSecretFile, "connect-secret-file", o.ConnectSecretFile, "Secret the CONNECT frontend's per-cluster credentials derive from (share it with the plane: pki/tunnel-connect.secret); created when missing.")
	fs.StringSliceVar(&o.ClientGroups, "client-groups", o.ClientGroups, "Certificate groups the gRPC frontend accepts.")
	verflag.AddFlags(fs)
	logs.AddFlags(fs)
	return cmd
}
