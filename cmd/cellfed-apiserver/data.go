package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/cellfed/cellfed/pkg/apiserver"
	"github.com/cellfed/cellfed/pkg/kms"
	"github.com/cellfed/cellfed/pkg/storage"
	"github.com/cellfed/cellfed/pkg/storage/kinedata"
)

// quietKine keeps kine's schema code (it creates the target's table) to
// warnings: its info lines would drown the tools' own output.
func quietKine() { logrus.SetLevel(logrus.WarnLevel) }

func newMigrateCommand() *cobra.Command {
	var from, to string
	var force, resume bool
	var batch int64
	var every time.Duration
	cmd := &cobra.Command{
		Use:   "migrate --from <data-dir|endpoint> --to <endpoint>",
		Short: "Copy a stopped plane's store to another database, keeping every revision",
		Long: `migrate copies kine's table of a stopped plane into another database (SQLite,
MySQL/MariaDB or PostgreSQL) row by row with its ids, so every resourceVersion
clients hold stays valid and the target's next revision continues above the
source's. It never writes to the source, verifies every key's rows (value,
revisions, lease, flags) by hash and prints what differs, and can be resumed
after an interruption (--resume). It refuses a source or target a plane still
runs on, naming it. Encrypted values are copied as they are:
start the plane on the target with the same --data-dir (PKI) and KMS key file.

  cellfed-apiserver migrate --from /var/lib/cellfed --to 'mysql://cellfed:pw@tcp(db:3306)/cellfed'`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			quietKine()
			if from == "" || to == "" {
				return fmt.Errorf("--from and --to are required")
			}
			if force && resume {
				return fmt.Errorf("--force and --resume exclude each other")
			}
			src, err := storage.DatabaseFor(from)
			if err != nil {
				return fmt.Errorf("--from: %w", err)
			}
			dst, err := storage.DatabaseFor(to)
			if err != nil {
				return fmt.Errorf("--to: %w", err)
			}
			if src.KineEndpoint == dst.KineEndpoint {
				return fmt.Errorf("--from and --to are the same database (%s)", src.Description)
			}
			mode := kinedata.StartRefuse
			switch {
			case force:
				mode = kinedata.StartForce
			case resume:
				mode = kinedata.StartResume
			}
			res, err := kinedata.Migrate(genericapiserver.SetupSignalContext(), kinedata.MigrateOptions{
				From: src, To: dst, Mode: mode, Batch: batch, Out: cmd.OutOrStdout(), ProgressEvery: every,
			})
			if err != nil {
				return err
			}
			rate := float64(res.Copied) / max(res.Elapsed.Seconds(), 1e-3)
			fmt.Fprintf(cmd.OutOrStdout(), "migrated %d rows in %s (%.0f rows/s); start the plane with --datastore-endpoint for %s and the same data dir and KMS key file\n",
				res.Copied, res.Elapsed.Round(time.Millisecond), rate, dst.Description)
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "The stopped plane's store: its data directory (embedded SQLite) or a sqlite://, mysql:// or postgres:// endpoint. Only read.")
	cmd.Flags().StringVar(&to, "to", "", "The target: a sqlite://, mysql:// or postgres:// endpoint, or a data directory; the database and kine's table are created when missing.")
	cmd.Flags().BoolVar(&force, "force", false, "Delete the target's rows first when it is not empty.")
	cmd.Flags().BoolVar(&resume, "resume", false, "Continue an interrupted migration into this target (its last rows are checked against the source first).")
	cmd.Flags().Int64Var(&batch, "batch", 1000, "Rows copied per transaction.")
	cmd.Flags().DurationVar(&every, "progress-interval", 2*time.Second, "Least time between two progress lines.")
	return cmd
}

func newBackupCommand() *cobra.Command {
	var dataDir, endpoint, to string
	cmd := &cobra.Command{
		Use:   "backup --data-dir DIR [--datastore-endpoint DSN] --to FILE",
		Short: "Write a consistent snapshot of a plane's store to a file, while the plane runs",
		Long: `backup reads the store addressed by the same flags as the plane's (--data-dir,
--datastore-endpoint) in one consistent snapshot and writes it to FILE (gzip'd
JSON lines: a header, every row with its revision, a checksum trailer). It
may run while the plane serves. The file holds Secrets encrypted as stored:
keep the data dir's PKI (pki/) and the KMS key file (kms/keys) with it; a
restore checks them.

  cellfed-apiserver backup --data-dir /var/lib/cellfed --to /backup/cellfed-$(date +%F).kine.gz`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			quietKine()
			if to == "" || (dataDir == "" && endpoint == "") {
				return fmt.Errorf("--to and --data-dir (or --datastore-endpoint) are required")
			}
			o := storage.NewOptions()
			o.DataDir, o.Endpoint = dataDir, endpoint
			src, err := o.Database()
			if err != nil {
				return err
			}
			start := time.Now()
			h, err := kinedata.Backup(genericapiserver.SetupSignalContext(), kinedata.BackupOptions{
				From: src, To: to, KeyIDOf: apiserver.EncryptedKeyID,
			})
			if err != nil {
				return err
			}
			size := int64(0)
			if fi, err := os.Stat(to); err == nil {
				size = fi.Size()
			}
			fmt.Fprintf(cmd.OutOrStdout(), "backed up %s: %d rows up to revision %d (compacted at %d) in %s, %d bytes, to %s\n",
				src.Description, h.Rows, h.MaxRevision, h.CompactRevision, time.Since(start).Round(time.Millisecond), size, to)
			if len(h.KMSKeyIDs) > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "encrypted values need KMS key(s) %s: keep the KMS key file with this backup\n", strings.Join(h.KMSKeyIDs, ", "))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "The plane's data directory (its embedded SQLite database when no --datastore-endpoint is given).")
	cmd.Flags().StringVar(&endpoint, "datastore-endpoint", "", "The plane's --datastore-endpoint, when it is not the embedded SQLite.")
	cmd.Flags().StringVar(&to, "to", "", "The backup file to write (written to FILE.tmp, mode 0600, renamed when complete).")
	return cmd
}

func newRestoreCommand() *cobra.Command {
	var from, to, pkiDir, kmsKeyFile string
	var force, skipIdentity bool
	var seen, gap int64
	cmd := &cobra.Command{
		Use:   "restore --from FILE --to <data-dir|endpoint>",
		Short: "Write a backup into a stopped plane's store, started above every revision clients saw",
		Long: `restore writes a backup file into a stopped plane's store in one transaction.
It refuses a store a plane still runs on (even with --force), naming it, a
store that holds rows unless --force, and a plane whose PKI or
KMS key file does not match the backup's (the plane identity record and the
KMS key IDs it holds).

The restored store starts at a revision above the backup's, the overwritten
store's, and --above-revision, plus --revision-gap, with kine's compaction
marker there: every client holding an older resourceVersion gets
"410 Gone: too old resource version" and relists, and no client can watch from
a revision the store has not reached and miss what is written next.

  cellfed-apiserver restore --from /backup/cellfed.kine.gz --to /var/lib/cellfed --force`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			quietKine()
			if from == "" || to == "" {
				return fmt.Errorf("--from and --to are required")
			}
			dst, err := storage.DatabaseFor(to)
			if err != nil {
				return fmt.Errorf("--to: %w", err)
			}
			if !strings.Contains(to, "://") {
				if pkiDir == "" {
					pkiDir = filepath.Join(to, "pki")
				}
				if kmsKeyFile == "" {
					kmsKeyFile = filepath.Join(to, "kms", "keys")
				}
			}
			check := func(h kinedata.Header) error {
				return checkRestore(h, pkiDir, kmsKeyFile, skipIdentity)
			}
			res, err := kinedata.Restore(genericapiserver.SetupSignalContext(), kinedata.RestoreOptions{
				From: from, To: dst, Force: force, Seen: seen, Gap: gap, Check: check,
			})
			if err != nil {
				return err
			}
			h := res.Header
			fmt.Fprintf(cmd.OutOrStdout(), "restored %s (taken %s, revision %d) into %s: %d rows kept, %d rows of compacted history dropped\n",
				from, h.TakenAt.Format(time.RFC3339), h.MaxRevision, dst.Description, res.Rows, res.Dropped)
			fmt.Fprintf(cmd.OutOrStdout(), "the store now starts at revision %d (compacted there; the overwritten store had reached %d): clients holding older resourceVersions get 410 Gone and relist\n",
				res.Revision, res.OverwrittenMax)
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "The backup file.")
	cmd.Flags().StringVar(&to, "to", "", "The stopped plane's store: its data directory (embedded SQLite) or a sqlite://, mysql:// or postgres:// endpoint.")
	cmd.Flags().BoolVar(&force, "force", false, "Replace the contents of a store that holds rows.")
	cmd.Flags().StringVar(&pkiDir, "pki-dir", "", "PKI of the plane that will serve the restored data, checked against the backup's identity record (default <data-dir>/pki when --to is a data directory).")
	cmd.Flags().StringVar(&kmsKeyFile, "kms-key-file", "", "KMS key file of that plane, checked to hold every key the backup's encrypted values need (default <data-dir>/kms/keys when --to is a data directory).")
	cmd.Flags().BoolVar(&skipIdentity, "skip-identity-check", false, "Restore without checking the PKI and KMS key file (the plane still refuses at start to serve data it cannot decrypt or whose PKI differs).")
	cmd.Flags().Int64Var(&seen, "above-revision", 0, "A revision clients may have seen (e.g. the lost database's last resourceVersion); the restored store starts above it.")
	cmd.Flags().Int64Var(&gap, "revision-gap", kinedata.DefaultRevisionGap, "How far above the highest known revision the restored store starts, for writes the lost store served after what is known.")
	return cmd
}

// checkRestore refuses a backup the plane given by pkiDir and kmsKeyFile
// could not serve.
func checkRestore(h kinedata.Header, pkiDir, kmsKeyFile string, skip bool) error {
	if skip {
		return nil
	}
	if len(h.Identity) > 0 {
		if pkiDir == "" {
			return fmt.Errorf("refusing to restore: the backup records its plane's PKI fingerprints; pass --pki-dir with the PKI of the plane that will serve it (or restore into a data directory, whose pki/ is checked), or --skip-identity-check")
		}
		if err := apiserver.CheckIdentityRecord(h.Identity, pkiDir); err != nil {
			return fmt.Errorf("refusing to restore: %w; nothing was written", err)
		}
	}
	if len(h.KMSKeyIDs) > 0 {
		if kmsKeyFile == "" {
			return fmt.Errorf("refusing to restore: the backup holds values encrypted with KMS key(s) %s; pass --kms-key-file with the key file backed up with it, or --skip-identity-check when the plane uses --kms-endpoint", strings.Join(h.KMSKeyIDs, ", "))
		}
		ids, _, err := kms.ReadKeyIDs(kmsKeyFile)
		if err != nil {
			return fmt.Errorf("refusing to restore: the backup holds values encrypted with KMS key(s) %s, and the key file cannot be read: %w", strings.Join(h.KMSKeyIDs, ", "), err)
		}
		for _, id := range h.KMSKeyIDs {
			if !slices.Contains(ids, id) {
				return fmt.Errorf("refusing to restore: the backup holds values encrypted with KMS key %s, which the key file %s does not hold (it holds %s): restore the key file backed up with the data, or the plane could not read its Secrets; nothing was written",
					id, kmsKeyFile, strings.Join(ids, ", "))
			}
		}
	}
	return nil
}
