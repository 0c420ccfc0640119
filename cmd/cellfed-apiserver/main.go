// Command cellfed-apiserver runs the cellfed plane's API server on kine.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	genericapiserver "k8s.io/apiserver/pkg/server"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/rest"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/cli/globalflag"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/metrics/prometheus/workqueue" // workqueue metrics on /metrics
	"k8s.io/component-base/term"
	"k8s.io/component-base/version/verflag"
	"k8s.io/kubernetes/pkg/features" // Kubernetes feature gates

	"github.com/cellfed/cellfed/pkg/apiserver"
	_ "github.com/cellfed/cellfed/pkg/version" // a version kubectl parses, also without the Makefile's -ldflags
)

func init() {
	utilruntime.Must(logsapi.AddFeatureGates(utilfeature.DefaultMutableFeatureGate))
	// The plane serves storagemigration.k8s.io and runs its controllers
	// (docs/operations.md, "Stored data"): on unless --feature-gates
	// turns it off.
	utilruntime.Must(utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(features.StorageVersionMigrator): true}))
}

func main() {
	if err := newCommand().Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "cellfed-apiserver: %v\n", err)
		os.Exit(1)
	}
}

func newCommand() *cobra.Command {
	o := apiserver.NewOptions()
	cmd := &cobra.Command{
		Use:   "cellfed-apiserver",
		Short: "The cellfed plane's Kubernetes API server, stored in SQLite (default) or MySQL through kine",
		Long: `cellfed-apiserver serves the federation plane: namespaces, secrets, config maps,
service accounts, RBAC, leases, CRDs with conversion webhooks and admission
configuration, on an embedded SQLite database by default or on MySQL/MariaDB.
On first start it generates a CA, a serving certificate and an admin
kubeconfig in --data-dir; later starts reuse them.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			if err := o.ControlPlane.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
				return err
			}
			// The plane's loopback clients should not log self-issued warnings.
			rest.SetDefaultWarningHandler(rest.NoWarnings{})
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			verflag.PrintAndExitIfRequested()
			if err := logsapi.ValidateAndApply(o.ControlPlane.Logs, utilfeature.DefaultFeatureGate); err != nil {
				return err
			}
			cliflag.PrintFlags(cmd.Flags())
			return apiserver.Run(genericapiserver.SetupSignalContext(), o)
		},
	}
	cmd.AddCommand(newInitCommand(), newMigrateCommand(), newBackupCommand(), newRestoreCommand(), newSplitCommand())
	var fss cliflag.NamedFlagSets
	o.AddFlags(&fss)
	verflag.AddFlags(fss.FlagSet("global"))
	globalflag.AddGlobalFlags(fss.FlagSet("global"), cmd.Name(), logs.SkipLoggingConfigurationFlags())
	for _, f := range fss.FlagSets {
		cmd.Flags().AddFlagSet(f)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, fss, cols)
	// The named flag sets above are the plane's own help; the data
	// subcommands (init, migrate, backup, restore, split) would inherit
	// it and list the plane's flags instead of theirs. They keep cobra's.
	for _, sub := range cmd.Commands() {
		sub.SetHelpFunc((&cobra.Command{}).HelpFunc())
		sub.SetUsageFunc((&cobra.Command{}).UsageFunc())
	}
	return cmd
}

func newInitCommand() *cobra.Command {
	var dir, adminUser string
	cmd := &cobra.Command{
		Use:   "init --dir DIR",
		Short: "Write the PKI and KMS key that the replicas of one plane share",
		Long: `init writes into DIR what every replica of a plane on one database must share:
ca.crt, ca.key, sa.key, agent-ca.crt, agent-ca.key, tunnel-connect.secret
(give them to each replica with --shared-pki-dir) and kms-keys (the KMS key
file, --kms-key-file). DIR/admin/ holds an admin client certificate.

  cellfed-apiserver init --dir ./cellfed-secrets
  kubectl -n cellfed-system create secret generic cellfed-pki --from-file=./cellfed-secrets \
      --dry-run=client -o yaml | ...   (every file but kms-keys)
  kubectl -n cellfed-system create secret generic cellfed-kms --from-file=keys=./cellfed-secrets/kms-keys`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return fmt.Errorf("--dir is required: the directory to write the shared PKI and KMS key into")
			}
			if err := apiserver.InitSharedFiles(dir, adminUser); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote the shared PKI and the KMS key file %s/kms-keys into %s; keep them as secret as the database's backups\n", dir, dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "Directory to write into (created; must not hold these files yet).")
	cmd.Flags().StringVar(&adminUser, "admin-user", "cellfed-admin", "User name in the admin client certificate.")
	return cmd
}
