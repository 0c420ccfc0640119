package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/cellfed/cellfed/pkg/datasplit"
	"github.com/cellfed/cellfed/pkg/storage"
)

func newSplitCommand() *cobra.Command {
	var kubeconfig, resource, from, to string
	var finish, abort, force bool
	o := datasplit.Options{Batch: 1000, ProgressEvery: 2 * time.Second, EnforceTimeout: time.Minute, LiveWithin: 45 * time.Second}
	cmd := &cobra.Command{
		Use:   "split --kubeconfig FILE --resource GROUP/RESOURCE --from <data-dir|endpoint> --to <endpoint> [--finish|--abort]",
		Short: "Move one resource of a running plane onto its own database, keeping every revision",
		Long: `split moves one resource (for example types.kubefed.io/federateddeployments,
core/events or coordination.k8s.io/leases) of a running plane onto a database
of its own, in three steps:

1. split freezes every write to the resource and its subresources on every
   replica (a ValidatingAdmissionPolicy; reads go on), copies its rows from the
   plane's store with their revisions (the new store starts at the plane's
   current revision, so every resourceVersion clients hold stays valid), and
   verifies every key by hash and against what the API serves.
2. You restart each plane replica, one at a time, with
   --datastore-override=GROUP/RESOURCE=<endpoint>.
3. split --finish lifts the freeze once every running replica serves the
   resource from the new database. split --abort lifts it without switching.

  cellfed-apiserver split --kubeconfig admin.kubeconfig --resource core/events \
      --from /var/lib/cellfed --to 'mysql://cellfed:pw@tcp(db:3306)/cellfed_events'`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			quietKine()
			if kubeconfig == "" || resource == "" || to == "" {
				return fmt.Errorf("--kubeconfig, --resource and --to are required")
			}
			if finish && abort {
				return fmt.Errorf("--finish and --abort exclude each other")
			}
			ov, err := storage.ParseOverride(resource + "=" + to)
			if err != nil {
				return err
			}
			o.Resource = ov.Resource
			if o.To, err = storage.DatabaseFor(to); err != nil {
				return fmt.Errorf("--to: %w", err)
			}
			if o.Config, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
				return fmt.Errorf("--kubeconfig: %w", err)
			}
			o.Out, o.Force, o.ToEndpoint = cmd.OutOrStdout(), force, to
			ctx := genericapiserver.SetupSignalContext()
			switch {
			case finish:
				return datasplit.Finish(ctx, o)
			case abort:
				if err := datasplit.Abort(ctx, o); err != nil {
					return err
				}
				fmt.Fprintf(o.Out, "writes to %s resumed; it stays in the plane's main database\n", o.Resource)
				return nil
			}
			if from == "" {
				return fmt.Errorf("--from is required: the plane's data directory or --datastore-endpoint")
			}
			if o.From, err = storage.DatabaseFor(from); err != nil {
				return fmt.Errorf("--from: %w", err)
			}
			if o.From.KineEndpoint == o.To.KineEndpoint {
				return fmt.Errorf("--from and --to are the same database (%s)", o.From.Description)
			}
			_, err = datasplit.Start(ctx, o)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "An administrator's kubeconfig for the plane.")
	f.StringVar(&resource, "resource", "", "GROUP/RESOURCE to move, e.g. core/events, coordination.k8s.io/leases, types.kubefed.io/federateddeployments.")
	f.StringVar(&from, "from", "", "The plane's main store: its data directory (embedded SQLite) or its --datastore-endpoint. Only read.")
	f.StringVar(&to, "to", "", "The resource's own database: a sqlite://, mysql:// or postgres:// endpoint (created when missing; it must hold no rows, see --force).")
	f.BoolVar(&finish, "finish", false, "Lift the freeze once every running replica serves the resource from --to.")
	f.BoolVar(&abort, "abort", false, "Lift the freeze without switching (before any replica was restarted with the override).")
	f.BoolVar(&force, "force", false, "Delete the target's rows first (a repeated split).")
	f.Int64Var(&o.Batch, "batch", o.Batch, "Rows read and written per statement.")
	f.DurationVar(&o.ProgressEvery, "progress-interval", o.ProgressEvery, "Least time between two progress lines.")
	f.DurationVar(&o.LiveWithin, "live-within", o.LiveWithin, "A replica whose identity lease was renewed this recently counts as running (--finish).")
	return cmd
}
