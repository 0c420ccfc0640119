// Command cellfed-webhook serves cellfed's conversion and admission
// webhooks for a community kube-apiserver. cellfed-apiserver has them built
// in; see pkg/webhook.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/logs"
	"k8s.io/component-base/version/verflag"

	_ "github.com/cellfed/cellfed/pkg/version" // a version kubectl parses, also without the Makefile's -ldflags
	"github.com/cellfed/cellfed/pkg/webhook"
)

func main() {
	o := webhook.NewOptions()
	cmd := &cobra.Command{
		Use:           "cellfed-webhook",
		Short:         "Conversion (types.kubefed.io v1beta1 <-> v1beta2) and federation admission webhooks",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			verflag.PrintAndExitIfRequested()
			return webhook.Run(genericapiserver.SetupSignalContext(), o)
		},
	}
	o.AddFlags(cmd.Flags())
	verflag.AddFlags(cmd.Flags())
	logs.AddFlags(cmd.Flags())
	if err := cmd.Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "cellfed-webhook: %v\n", err)
		os.Exit(1)
	}
}
