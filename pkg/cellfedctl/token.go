package cellfedctl

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/registration"
	"github.com/cellfed/cellfed/pkg/tenancy"
)

// Bounds of --ttl.
const (
	minBootstrapTTL = time.Minute
	maxBootstrapTTL = 7 * 24 * time.Hour
)

func newTokenCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create single-use bootstrap tokens with which agents register member clusters",
		Long: `A bootstrap token lets one cellfed-agent register its member cluster with the
plane (a ClusterRegistration): once, before it expires, for the tenant (and
workspace) the token names. The plane deletes the token when the
registration is approved.`,
		Example:                    examples(o.name, "token create --tenant=acme --ttl=1h --agent-kubeconfig=plane-agent.kubeconfig"),
		SuggestionsMinimumDistance: 2,
		Args:                       unknownCommand,
		RunE:                       helpOrUnknown,
	}
	cmd.AddCommand(newTokenCreateCommand(o))
	return cmd
}

type tokenCreateOptions struct {
	*options
	tenant, workspace string
	ttl               time.Duration
	agentKubeconfig   string
	quiet             bool
}

func newTokenCreateCommand(o *options) *cobra.Command {
	tc := &tokenCreateOptions{options: o}
	cmd := &cobra.Command{
		Use:   "create --tenant=<tenant> [--workspace=<workspace>] [--ttl=1h]",
		Short: "Create a single-use bootstrap token for one agent registration",
		Long: `Create a Kubernetes bootstrap token (a Secret of type
bootstrap.kubernetes.io/token in kube-system) that may create one
ClusterRegistration, for --tenant (and --workspace), until --ttl has passed.
The plane's authenticator enforces the expiry; admission refuses a second
registration with the same token; the registration's tenancy always comes
from the token, never from what the agent claims.

The token is printed on standard output (only the token with --quiet).
Hand it to the agent over a secure channel: whoever holds it can ask to
register a cluster for the tenant (an administrator, or the tenant's
auto-approve policy, still decides).

--agent-kubeconfig writes a kubeconfig without credentials (the plane's
address and CA from your current context) for the agent's
--plane-kubeconfig.`,
		Example: examples(o.name,
			"token create --tenant=acme",
			"token create --tenant=acme --workspace=prod --ttl=30m --agent-kubeconfig=plane.kubeconfig",
		),
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error { return tc.run(c.Context()) },
	}
	cmd.Flags().StringVar(&tc.tenant, "tenant", "", "tenant the registered cluster is dedicated to (required)")
	cmd.Flags().StringVar(&tc.workspace, "workspace", "", "workspace of the tenant the registration records (a namespace labelled with the tenant and workspace must exist)")
	cmd.Flags().DurationVar(&tc.ttl, "ttl", time.Hour, "how long the token may be used (1m to 168h)")
	cmd.Flags().StringVar(&tc.agentKubeconfig, "agent-kubeconfig", "", "also write a kubeconfig without credentials for the agent's --plane-kubeconfig to this file")
	cmd.Flags().BoolVarP(&tc.quiet, "quiet", "q", false, "print only the token")
	return cmd
}

// checkArgs checks what needs no plane.
func (tc *tokenCreateOptions) checkArgs() error {
	if err := tenancy.TenantNameError(tc.tenant); err != nil {
		return fmt.Errorf("--tenant: %w", err)
	}
	if err := tenancy.WorkspaceNameError(tc.workspace); err != nil {
		return fmt.Errorf("--workspace: %w", err)
	}
	if tc.ttl < minBootstrapTTL || tc.ttl > maxBootstrapTTL {
		return fmt.Errorf("--ttl=%v is out of range; a bootstrap token lives from %v to %v", tc.ttl, minBootstrapTTL, maxBootstrapTTL)
	}
	return nil
}

func (tc *tokenCreateOptions) run(ctx context.Context) error {
	if err := tc.checkArgs(); err != nil {
		return err
	}
	plane, err := tc.planeClients()
	if err != nil {
		return err
	}
	// A tenant exists once it has a workspace: a token for an unknown
	// (say misspelt) tenant would dedicate a cluster to nobody.
	sel := cellv1alpha1.LabelTenant + "=" + tc.tenant
	if tc.workspace != "" {
		sel += "," + cellv1alpha1.LabelWorkspace + "=" + tc.workspace
	}
	nss, err := plane.kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: sel, Limit: 1})
	if err != nil {
		return apiError(err, "looking up the workspaces of tenant "+tc.tenant)
	}
	if len(nss.Items) == 0 {
		if tc.workspace != "" {
			return fmt.Errorf("tenant %s has no workspace %s (no namespace labelled %s); create it with `%s tenant create <namespace> --tenant=%s --workspace=%s`, or leave out --workspace", tc.tenant, tc.workspace, sel, tc.name, tc.tenant, tc.workspace)
		}
		return fmt.Errorf("there is no tenant %s (no namespace labelled %s); check the name (`kubectl get namespaces -L %s` lists the tenants), or create its first workspace with `%s tenant create <namespace> --tenant=%s --workspace=<workspace>`", tc.tenant, sel, cellv1alpha1.LabelTenant, tc.name, tc.tenant)
	}
	var kubeconfig []byte
	if tc.agentKubeconfig != "" {
		if kubeconfig, err = tc.agentKubeconfigBytes(); err != nil {
			return err
		}
	}
	secrets := plane.kube.CoreV1().Secrets(registration.BootstrapTokenNamespace)
	var token registration.Token
	expiry := time.Now().Add(tc.ttl)
	for range 5 {
		if token, err = registration.NewToken(); err != nil {
			return err
		}
		_, err = secrets.Create(ctx, registration.TokenSecret(token, tc.tenant, tc.workspace, expiry), metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			break
		}
	}
	if err != nil {
		return apiError(err, "creating the bootstrap token's Secret in "+registration.BootstrapTokenNamespace)
	}
	if kubeconfig != nil {
		if err := os.WriteFile(tc.agentKubeconfig, kubeconfig, 0o600); err != nil {
			return fmt.Errorf("writing --agent-kubeconfig %s: %w; the token was created, write the kubeconfig elsewhere and run again for a new token if needed", tc.agentKubeconfig, err)
		}
	}
	out := tc.streams.Out
	if tc.quiet {
		printf(out, "%s\n", token)
		return nil
	}
	printf(out, "token: %s\n", token)
	where := "tenant " + tc.tenant
	if tc.workspace != "" {
		where += ", workspace " + tc.workspace
	}
	printf(out, "for: one cluster registration, %s; expires %s (in %s)\n", where, expiry.UTC().Format(time.RFC3339), tc.ttl)
	pk := tc.agentKubeconfig
	if pk == "" {
		pk = "<kubeconfig with the plane's address and CA: --agent-kubeconfig writes one>"
	}
	printf(out, "register a member cluster with it (the token in a file only the agent reads):\n  cellfed-agent --cluster=<name> --hub-address=<tunnel hub host:port> --plane-kubeconfig=%s --bootstrap-token-file=<file> --kubeconfig=<member kubeconfig> --state-dir=<dir>\n", pk)
	printf(out, "then approve it: %s registration approve <name>\n", tc.name)
	return nil
}

// agentKubeconfigBytes is a kubeconfig with the current context's server
// and CA and no credentials.
func (tc *tokenCreateOptions) agentKubeconfigBytes() ([]byte, error) {
	cfg, err := tc.restConfig()
	if err != nil {
		return nil, err
	}
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			return nil, fmt.Errorf("reading the plane's CA %s: %w", cfg.CAFile, err)
		}
	}
	if len(ca) == 0 {
		return nil, fmt.Errorf("your kubeconfig context has no CA for the plane (certificate-authority), so the agent could not verify it; use the plane's admin.kubeconfig")
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["cellfed"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: ca, TLSServerName: cfg.ServerName}
	kc.Contexts["cellfed"] = &clientcmdapi.Context{Cluster: "cellfed", AuthInfo: "agent"}
	kc.AuthInfos["agent"] = &clientcmdapi.AuthInfo{}
	kc.CurrentContext = "cellfed"
	return clientcmd.Write(*kc)
}
