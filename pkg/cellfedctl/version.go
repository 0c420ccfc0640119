package cellfedctl

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"
	"k8s.io/component-base/version"

	cellfedversion "github.com/cellfed/cellfed/pkg/version"
)

func newVersionCommand(o *options) *cobra.Command {
	var clientOnly bool
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print the version of cellfedctl and of the plane",
		Example: examples(o.name, "version", "version --client"),
		Args:    exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			return printVersion(o, clientOnly)
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "print only the version of cellfedctl (no connection to the plane)")
	return cmd
}

func printVersion(o *options, clientOnly bool) error {
	v := version.Get()
	printf(o.streams.Out, "Client Version: %s (commit %s, tree %s, built %s, %s %s)\n", v.GitVersion, v.GitCommit, v.GitTreeState, v.BuildDate, v.GoVersion, v.Platform)
	if clientOnly {
		return nil
	}
	cfg, err := o.restConfig()
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return withFix(fmt.Errorf("client for %s: %w", cfg.Host, err), "check the server and credentials of your kubeconfig context")
	}
	sv, err := dc.ServerVersion()
	if err != nil {
		return apiError(err, "reading the version of the server at "+cfg.Host)
	}
	printf(o.streams.Out, "Server Version: %s\n", sv.GitVersion)
	if err := cellfedversion.ClientSkew.Check("cellfedctl", cellfedversion.Own(), sv.GitVersion); err != nil {
		printf(o.streams.ErrOut, "Warning: %v (the skew policy: docs/operations.md, \"Versions and skew\")\n", err)
	}
	return nil
}
