// Command cellfed-controller propagates federated objects from the cellfed
// plane to member clusters, keeps per-cell KubeFedClusters for Cells and
// probes member health. It reads federated objects in the version the plane
// stores (v1beta2) and decides in KubeFed's terms (KubeFedClusters,
// FederatedTypeConfigs, each object's v1beta1 view computed in-process).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/cli/globalflag"
	"k8s.io/component-base/logs"
	"k8s.io/component-base/version"
	"k8s.io/component-base/version/verflag"
	"k8s.io/klog/v2"

	"github.com/cellfed/cellfed/pkg/controller"
	_ "github.com/cellfed/cellfed/pkg/version" // a version kubectl parses, also without the Makefile's -ldflags
)

func main() {
	if err := newCommand().Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "cellfed-controller: %v\n", err)
		os.Exit(1)
	}
}

func newCommand() *cobra.Command {
	o := controller.NewOptions()
	cmd := &cobra.Command{
		Use:          "cellfed-controller",
		Short:        "Propagate federated objects from the cellfed plane to member clusters",
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			verflag.PrintAndExitIfRequested()
			if err := o.Validate(); err != nil {
				return err
			}
			cfg, err := planeConfig(o.Kubeconfig)
			if err != nil {
				return err
			}
			klog.InfoS("Starting cellfed-controller", "version", version.Get().GitVersion, "plane", cfg.Host)
			return controller.Run(signalContext(), cfg, o)
		},
	}
	fs := cmd.Flags()
	o.AddFlags(fs)
	verflag.AddFlags(fs)
	logs.AddFlags(fs)
	globalflag.AddGlobalFlags(fs, cmd.Name())
	return cmd
}

// planeConfig loads --kubeconfig, else $KUBECONFIG, else the in-cluster
// configuration.
func planeConfig(path string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the plane's kubeconfig (--kubeconfig or $KUBECONFIG): %w", err)
	}
	return cfg, nil
}

// signalContext ends at the first SIGINT or SIGTERM; a second one stops
// the process at once. (k8s.io/apiserver's SetupSignalContext does the
// same, but importing it links the whole API server library into the
// controller: 30 MB more binary, most of it resident.)
func signalContext() context.Context {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // the default action again: the next signal ends the process
	}()
	return ctx
}
