// Command cellfed-kms is cellfed's KMS v2 plugin as a standalone binary:
// it serves the keys of a local key file to API servers that encrypt
// Secrets at rest with KMS v2 envelope encryption, and manages that key
// file (generate, add-key, remove-key, list). The logic is in pkg/kms.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/component-base/logs"
	"k8s.io/component-base/version/verflag"
	"k8s.io/klog/v2"

	"github.com/cellfed/cellfed/pkg/kms"
	_ "github.com/cellfed/cellfed/pkg/version"
)

const (
	defaultListen  = "unix:///var/run/cellfed-kms/kms.sock"
	defaultKeyFile = "/etc/cellfed/kms/keys"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line args and returns the exit code; errors are
// printed to stderr as one line.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := newCommand()
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "cellfed-kms: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return 1
	}
	return 0
}

func newCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "cellfed-kms",
		Short: "cellfed's KMS v2 plugin: encrypts the data keys of Secrets at rest with keys from a local key file",
		Long: `cellfed-kms is a KMS v2 plugin for Kubernetes envelope encryption. API servers
(cellfed-apiserver, kube-apiserver) reach it on a unix socket named in their
EncryptionConfiguration:

  kms: {apiVersion: v2, name: cellfed-kms, endpoint: unix:///var/run/cellfed-kms/kms.sock}

It wraps their data encryption keys with AES-256-GCM under the last (primary)
key of its key file; every key in the file decrypts. Rotate with add-key, then
cellfedctl rotate-key, then remove-key.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			verflag.PrintAndExitIfRequested()
			return cmd.Help()
		},
	}
	verflag.AddFlags(root.Flags())
	root.AddCommand(serveCommand(), generateCommand(), addKeyCommand(), removeKeyCommand(), listCommand())
	return root
}

// noArgs rejects positional arguments with the command's name.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 && cmd.HasSubCommands() {
		return fmt.Errorf("unknown command %q; see %s --help", args[0], cmd.CommandPath())
	}
	if len(args) > 0 {
		return fmt.Errorf("%s takes no arguments, got %q; see %s --help", cmd.CommandPath(), strings.Join(args, " "), cmd.CommandPath())
	}
	return nil
}

func keyFileFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "key-file", defaultKeyFile, "the key file: one key per line, \"<key-id>:<base64 of 32 bytes>\", mode 0600; the last key is the primary")
}

func checkKeyFile(path string) error {
	if path == "" {
		return errors.New("--key-file is empty; pass the path of the key file")
	}
	return nil
}

func serveCommand() *cobra.Command {
	var (
		listen, keyFile   string
		generateIfMissing bool
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the KMS v2 gRPC API on a unix socket until SIGTERM or SIGINT",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkKeyFile(keyFile); err != nil {
				return err
			}
			if generateIfMissing {
				id, err := kms.GenerateKeyFile(keyFile)
				switch {
				case err == nil:
					klog.InfoS("Generated a new KMS key file; back it up: data encrypted with its keys cannot be read without it", "keyFile", keyFile, "keyID", id)
				case !errors.Is(err, fs.ErrExist):
					return err
				}
			}
			// NewService logs the IDs of the keys it loaded and the primary.
			svc, err := kms.NewService(keyFile)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			srv, err := kms.Start(ctx, listen, svc)
			if err != nil {
				return err
			}
			return srv.Wait()
		},
	}
	flags := cmd.Flags()
	flags.StringVar(&listen, "listen", defaultListen, "the endpoint to serve on, unix:///absolute/path.sock (the socket is created with mode 0600)")
	keyFileFlag(cmd, &keyFile)
	flags.BoolVar(&generateIfMissing, "generate-if-missing", false, "create the key file with one new key if it does not exist")
	logs.AddFlags(flags)
	return cmd
}

func generateCommand() *cobra.Command {
	var keyFile string
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Create a new key file holding one new key (never overwrites a file)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkKeyFile(keyFile); err != nil {
				return err
			}
			id, err := kms.GenerateKeyFile(keyFile)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n", id)
			fmt.Fprintf(cmd.ErrOrStderr(), "Created %s with primary key %s. Back it up and keep it secret: data encrypted with its keys cannot be read without it.\n", keyFile, id)
			return nil
		},
	}
	keyFileFlag(cmd, &keyFile)
	return cmd
}

func addKeyCommand() *cobra.Command {
	var keyFile string
	cmd := &cobra.Command{
		Use:   "add-key",
		Short: "Add a new primary key to the key file and print its ID",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkKeyFile(keyFile); err != nil {
				return err
			}
			ids, oldPrimary, err := kms.ReadKeyIDs(keyFile)
			if err != nil {
				return err
			}
			id, err := kms.AddKey(keyFile)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n", id)
			fmt.Fprintf(cmd.ErrOrStderr(), `Added key %[1]s to %[2]s; it is the primary now. Next steps:
  1. Wait for the plane to use it: the plugin reloads the key file within a
     second, and KMS v2 API servers poll the plugin's Status (about once a
     minute) and then encrypt new writes with %[1]s.
  2. Rewrite every encrypted object with the new key: cellfedctl rotate-key
  3. Retire the old key(s) (%[3]s), after backing up the key file:
       cellfed-kms remove-key --key-file %[2]s --key-id %[4]s
`, id, keyFile, strings.Join(ids, ", "), oldPrimary)
			return nil
		},
	}
	keyFileFlag(cmd, &keyFile)
	return cmd
}

func removeKeyCommand() *cobra.Command {
	var keyFile, keyID string
	cmd := &cobra.Command{
		Use:   "remove-key",
		Short: "Retire a key that no stored object uses any more (never the primary)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkKeyFile(keyFile); err != nil {
				return err
			}
			if keyID == "" {
				return errors.New("--key-id is required: the ID of the key to remove (see cellfed-kms list)")
			}
			if err := kms.RemoveKey(keyFile, keyID); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "Removed key %s from %s. Objects still encrypted with it can no longer be read; restore its line from a backup if any are.\n", keyID, keyFile)
			return nil
		},
	}
	keyFileFlag(cmd, &keyFile)
	cmd.Flags().StringVar(&keyID, "key-id", "", "the ID of the key to remove")
	return cmd
}

func listCommand() *cobra.Command {
	var keyFile string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the key IDs in the key file, oldest first; the primary is marked",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkKeyFile(keyFile); err != nil {
				return err
			}
			ids, primary, err := kms.ReadKeyIDs(keyFile)
			if err != nil {
				return err
			}
			for _, id := range ids {
				if id == primary {
					fmt.Fprintf(cmd.OutOrStdout(), "%s\tprimary\n", id)
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "%s\n", id)
				}
			}
			return nil
		},
	}
	keyFileFlag(cmd, &keyFile)
	return cmd
}
