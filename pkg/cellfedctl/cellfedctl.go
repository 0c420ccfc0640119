// Package cellfedctl is the command line of the cellfed plane: it enables
// and disables federated types and manages Cells. It runs as `cellfedctl`
// and as the kubectl plugin `kubectl cellfed` (the binary named
// kubectl-cellfed on PATH).
package cellfedctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Main runs the command line with os.Args and returns the exit code.
func Main() int {
	return Run(os.Args[0], os.Args[1:], genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
}

// Run runs the command line as program argv0 with args, and returns the
// exit code: 0, or 1 after one line `error: <what>; <how to fix>` on
// stderr (rollout status exits 2, silently, while a rollout is not done).
func Run(argv0 string, args []string, streams genericiooptions.IOStreams) int {
	// API warnings go to stderr as kubectl shows them, not through klog.
	rest.SetDefaultWarningHandler(rest.NewWarningWriter(streams.ErrOut, rest.WarningWriterOptions{Deduplicate: true}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := NewCommand(argv0, streams)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		code, print := exitCodeOf(err)
		if print {
			fmt.Fprintln(streams.ErrOut, "error: "+oneLine(err.Error()))
		}
		return code
	}
	return 0
}

// commandName is how the program was invoked, for usage text: "kubectl
// cellfed" when run as the kubectl plugin kubectl-cellfed, else the
// program's base name.
func commandName(argv0 string) string {
	base := filepath.Base(argv0)
	if plugin, ok := strings.CutPrefix(base, "kubectl-"); ok && plugin != "" {
		// kubectl maps "kubectl foo-bar" to kubectl-foo_bar.
		return "kubectl " + strings.ReplaceAll(plugin, "_", "-")
	}
	if base == "" || base == "." || base == "/" {
		return "cellfedctl"
	}
	return base
}

// options are shared by every command.
type options struct {
	name    string // "cellfedctl" or "kubectl cellfed"
	streams genericiooptions.IOStreams
	config  *genericclioptions.ConfigFlags
}

// NewCommand builds the root command. argv0 decides the name shown in
// usage.
func NewCommand(argv0 string, streams genericiooptions.IOStreams) *cobra.Command {
	o := &options{name: commandName(argv0), streams: streams, config: genericclioptions.NewConfigFlags(true)}
	root := &cobra.Command{
		Use:   o.name,
		Short: "Manage a cellfed federation plane: member clusters, federated types and cells",
		Long: fmt.Sprintf(`%[1]s manages a cellfed plane (cellfed-apiserver).

It joins and unjoins member clusters (KubeFedClusters), enables and
disables federated types (a FederatedTypeConfig plus a federated CRD in
types.kubefed.io served in v1beta1 and v1beta2), manages Cells, the
deployment units federated objects are placed on, creates tenant
workspaces and grants app teams and viewers in them, shows their status,
and rolls changes of federated objects out cell by cell (rollout).

It reads kubeconfig like kubectl: --kubeconfig, $KUBECONFIG or
~/.kube/config, --context, and -n/--namespace (default: the context's
namespace).`, o.name),
		Example: examples(o.name,
			"join member1 --kubeconfig-member=member1.kubeconfig",
			"enable deployments.apps",
			"enable widgets.example.com --from-cluster=member1.kubeconfig",
			"cell create rz00a --cluster=member1 -l zone=z1 -n shop",
			"cell list -A",
			"tenant create shop --tenant=acme --workspace=prod",
			"tenant grant alice -n shop --role=app-team",
			"status",
			"doctor",
			"rollout start deployment/web -n shop --cells=rz00a",
			"kubeconfig --cell=rz00a -n shop > rz00a.kubeconfig",
		),
		SilenceErrors: true,
		SilenceUsage:  true,
		// Unknown commands are reported by unknownCommand, with our own
		// suggestions on the same line.
		DisableSuggestions:         true,
		SuggestionsMinimumDistance: 2,
		Args:                       unknownCommand,
		RunE:                       helpOrUnknown,
	}
	if strings.Contains(o.name, " ") {
		// cobra takes a command's name from the first word of Use; the
		// display name makes usage read "kubectl cellfed ...".
		root.Use = o.name[strings.LastIndex(o.name, " ")+1:]
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: o.name}
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%v; see '%s --help'", err, c.CommandPath())
	})
	o.config.AddFlags(root.PersistentFlags())
	root.AddCommand(newEnableCommand(o), newDisableCommand(o), newCellCommand(o),
		newJoinCommand(o), newUnjoinCommand(o), newStatusCommand(o), newRolloutCommand(o), newTenantCommand(o), newTokenCommand(o), newRegistrationCommand(o), newRotateKeyCommand(o), newKubeconfigCommand(o), newVersionCommand(o), newBoardCommand(o), newDoctorCommand(o))
	return root
}

// examples formats example command lines under the program's name.
func examples(name string, lines ...string) string {
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("  " + name + " " + l)
	}
	return b.String()
}

// unknownCommand rejects arguments to a command that only groups
// subcommands.
func unknownCommand(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %q?)", s[0])
	}
	return fmt.Errorf("%s; run '%s --help' for the commands", msg, c.CommandPath())
}

// helpOrUnknown runs a group command: help without arguments.
func helpOrUnknown(c *cobra.Command, args []string) error {
	if err := unknownCommand(c, args); err != nil {
		return err
	}
	return c.Help()
}

// exactArgs is cobra.ExactArgs with a message that says what to pass.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return fmt.Errorf("%s takes %s, got %d argument(s); see '%s --help'", c.CommandPath(), what, len(args), c.CommandPath())
		}
		return nil
	}
}

// maxArgs is cobra.MaximumNArgs with a message that says what to pass.
func maxArgs(n int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) > n {
			return fmt.Errorf("%s takes %s, got %d arguments; see '%s --help'", c.CommandPath(), what, len(args), c.CommandPath())
		}
		return nil
	}
}

// restConfig is the plane's client configuration from the kubeconfig
// flags.
func (o *options) restConfig() (*rest.Config, error) {
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return nil, withFix(fmt.Errorf("loading kubeconfig: %w", err), "point --kubeconfig (or $KUBECONFIG) at the plane's admin.kubeconfig and --context at one of its contexts")
	}
	return cfg, nil
}

// namespace is -n, else the kubeconfig context's namespace, else
// "default".
func (o *options) namespace() (string, error) {
	ns, _, err := o.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", withFix(fmt.Errorf("reading the namespace from kubeconfig: %w", err), "check --kubeconfig (or $KUBECONFIG) and --context")
	}
	return ns, nil
}

// fixError is an error that already says how to fix it.
type fixError struct{ msg string }

func (e fixError) Error() string { return e.msg }

// withFix appends how to fix err, unless err already says: a fixError, or
// a message with "; " (cellfed's errors, the plane's admission included,
// carry their fix after "; ").
func withFix(err error, fix string) error {
	var fe fixError
	if errors.As(err, &fe) {
		return err
	}
	if fix == "" || strings.Contains(err.Error(), "; ") {
		return fixError{err.Error()}
	}
	return fixError{err.Error() + "; " + fix}
}

// apiError wraps an error from the plane with what was being done and,
// when the message does not already say, how to fix it.
func apiError(err error, doing string) error {
	wrapped := fmt.Errorf("%s: %w", doing, err)
	return withFix(wrapped, apiFix(err))
}

// apiFix suggests a fix for a kind of API error. Admission and validation
// errors already say what to change, so they get none.
func apiFix(err error) string {
	msg := err.Error()
	switch {
	case isConnectionError(err):
		return "is the plane running? check --kubeconfig and --context"
	case apierrors.IsUnauthorized(err):
		return "the plane does not accept your credentials: check the user of your kubeconfig context"
	case apierrors.IsForbidden(err) && !strings.Contains(msg, ": Forbidden: "):
		return "ask an administrator of the plane for RBAC permission"
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err) && strings.Contains(msg, "the server could not find the requested resource"):
		return "the cluster does not serve this API: is it a cellfed-apiserver? check --kubeconfig and --context"
	}
	return ""
}

func isConnectionError(err error) bool {
	msg := err.Error()
	for _, s := range []string{"connection refused", "no such host", "i/o timeout", "dial tcp", "certificate", "EOF", "context deadline exceeded"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return clientcmd.IsEmptyConfig(err) || clientcmd.IsConfigurationInvalid(err)
}

// oneLine joins a multi-line message into one line.
func oneLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	var kept []string
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, " ")
}

// printf writes to the command's output.
func printf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, format, args...)
}
