// Command cellfed-agent runs in a member cluster (or beside its API
// server) and opens a reverse tunnel to the cellfed tunnel hub, so the
// federation reaches a member behind NAT. The logic is in pkg/proxy/agent.
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

	"github.com/cellfed/cellfed/pkg/proxy/agent"
	"github.com/cellfed/cellfed/pkg/registration"
	_ "github.com/cellfed/cellfed/pkg/version"
)

func main() {
	if err := newCommand().Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "cellfed-agent: %v\n", err)
		os.Exit(1)
	}
}

func newCommand() *cobra.Command {
	o := agent.NewOptions()
	reg := registration.NewAgentOptions()
	cmd := &cobra.Command{
		Use:          "cellfed-agent",
		Short:        "Open a reverse tunnel from a member cluster to the cellfed tunnel hub",
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			verflag.PrintAndExitIfRequested()
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			renewed, err := selfRegister(ctx, o, reg)
			if err != nil {
				return err
			}
			a, err := agent.New(*o)
			if err != nil {
				return err
			}
			if renewed == nil {
				return a.Run(ctx)
			}
			// A revoked registration stops renewal and the agent with it.
			ctx, cancel := context.WithCancelCause(ctx)
			defer cancel(nil)
			go func() { cancel(renewed(ctx)) }()
			err = a.Run(ctx)
			if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
				return cause
			}
			return err
		},
	}
	fs := cmd.Flags()
	o.AddFlags(fs)
	reg.AddFlags(fs)
	verflag.AddFlags(fs)
	logs.AddFlags(fs)
	return cmd
}

// selfRegister, with --plane-kubeconfig, registers the cluster (or loads
// the certificate kept in --state-dir or --state-secret) and hands the identity to the
// tunnel; it returns the renewal loop. Without it the agent uses
// --cert-file/--key-file.
func selfRegister(ctx context.Context, o *agent.Options, reg *registration.AgentOptions) (func(context.Context) error, error) {
	if !reg.Enabled() {
		return nil, nil
	}
	if o.CertFile != "" || o.KeyFile != "" {
		return nil, errors.New("--plane-kubeconfig (self-registration) and --cert-file/--key-file exclude each other; registration keeps the certificate in --state-dir or --state-secret")
	}
	// The skew policy, before the agent registers or changes anything.
	if err := reg.CheckPlaneVersion(ctx); err != nil {
		return nil, err
	}
	reg.ClusterName = o.Cluster
	member, err := o.RESTConfig()
	if err != nil {
		return nil, err
	}
	reg.Member = member
	id, err := registration.Bootstrap(ctx, reg)
	if err != nil {
		return nil, err
	}
	o.GetClientCertificate = id.GetClientCertificate
	if o.HubCAFile == "" {
		if o.HubCA, err = reg.PlaneCA(); err != nil {
			return nil, err
		}
	}
	return func(ctx context.Context) error { return registration.Renew(ctx, reg, id) }, nil
}
