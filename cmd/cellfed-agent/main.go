// Command cellfed-agent runs in a member cluster (or beside its API
// server) and opens a reverse tunnel to the cellfed tunnel hub, so the
// federation reaches a member behind NAT. The logic is in pkg/proxy/agent.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/component-base/logs"
	"k8s.io/component-base/version/verflag"

	"github.com/cellfed/cellfed/pkg/proxy/agent"
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
	cmd := &cobra.Command{
		Use:          "cellfed-agent",
		Short:        "Open a reverse tunnel from a member cluster to the cellfed tunnel hub",
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			verflag.PrintAndExitIfRequested()
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			a, err := agent.New(*o)
			if err != nil {
				return err
			}
			return a.Run(ctx)
		},
	}
	fs := cmd.Flags()
	o.AddFlags(fs)
	verflag.AddFlags(fs)
	logs.AddFlags(fs)
	return cmd
}
