package cellfedctl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/cellfed/cellfed/pkg/cellproxy"
)

type kubeconfigOptions struct {
	*options
	cell, cluster string
}

func newKubeconfigCommand(o *options) *cobra.Command {
	ko := &kubeconfigOptions{options: o}
	cmd := &cobra.Command{
		Use:   "kubeconfig (--cell=<cell> -n <namespace> | --cluster=<cluster>)",
		Short: "Print a kubeconfig that reaches a cell or a member cluster through the plane",
		Long: `Print a kubeconfig whose server is the plane's API proxy for a cell
(confined to the cell's namespace, for anyone who may read the Cell) or
for a member cluster (platform admins). Its credentials are those of the
current kubeconfig context: the plane authenticates you and the member
sees you, impersonated by the plane. The context's namespace is the
cell's namespace. With --as (and --as-group, --as-uid) the kubeconfig
keeps the impersonation: its requests are made as that user, as
kubectl --as does, and need the same right to impersonate on the plane.`,
		Example: examples(o.name,
			"kubeconfig --cell=rz10a -n shop > rz10a.kubeconfig",
			"kubeconfig --cluster=member1 > member1.kubeconfig",
			"kubeconfig --cell=rz10a -n shop --as=vera > vera-rz10a.kubeconfig",
		),
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error { return ko.run(c.Context()) },
	}
	cmd.Flags().StringVar(&ko.cell, "cell", "", "the cell to reach, in the namespace of -n")
	cmd.Flags().StringVar(&ko.cluster, "cluster", "", "the physical member cluster to reach (platform admins)")
	return cmd
}

func (ko *kubeconfigOptions) run(ctx context.Context) error {
	if (ko.cell == "") == (ko.cluster == "") {
		return errors.New("pass exactly one of --cell=<cell> (with -n <namespace>) or --cluster=<cluster>")
	}
	ns := ""
	if ko.cell != "" {
		var err error
		if ns, err = ko.namespace(); err != nil {
			return err
		}
		cells, err := ko.cellClient()
		if err != nil {
			return err
		}
		if _, err := cells.Namespace(ns).Get(ctx, ko.cell, metav1.GetOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("cell %s not found in namespace %s; list the cells with: %s cell list -n %s", ko.cell, ns, ko.name, ns)
			}
			return apiError(err, fmt.Sprintf("reading cell %s/%s", ns, ko.cell))
		}
	}
	raw, err := ko.config.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return withFix(fmt.Errorf("loading kubeconfig: %w", err), "point --kubeconfig (or $KUBECONFIG) at a kubeconfig for the plane")
	}
	as := Impersonation{User: stringValue(ko.config.Impersonate), UID: stringValue(ko.config.ImpersonateUID)}
	if ko.config.ImpersonateGroup != nil {
		as.Groups = *ko.config.ImpersonateGroup
	}
	out, err := ProxyKubeconfig(raw, stringValue(ko.config.Context), ns, ko.cell, ko.cluster, as)
	if err != nil {
		return err
	}
	b, err := clientcmd.Write(*out)
	if err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	_, err = ko.streams.Out.Write(b)
	return err
}

func stringValue(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// Impersonation is who a kubeconfig's requests are made as (kubectl's
// --as, --as-group and --as-uid); empty for its own user.
type Impersonation struct {
	User, UID string
	Groups    []string
}

// ProxyKubeconfig turns the context named contextName of raw ("": the
// current one) into a self-contained kubeconfig for the plane's API proxy
// of a cell (namespace and cell) or of a cluster: same credentials, the
// plane's CA, the proxy path as server, and the impersonation as asked
// (as), so that it acts as that user and never as the credentials'
// owner.
func ProxyKubeconfig(raw clientcmdapi.Config, contextName, namespace, cell, cluster string, as Impersonation) (*clientcmdapi.Config, error) {
	if contextName == "" {
		contextName = raw.CurrentContext
	}
	kctx, ok := raw.Contexts[contextName]
	if !ok {
		return nil, fmt.Errorf("kubeconfig has no context %q; pass --context with one of its contexts", contextName)
	}
	raw.CurrentContext = contextName
	if err := clientcmdapi.MinifyConfig(&raw); err != nil {
		return nil, fmt.Errorf("kubeconfig context %s: %w", contextName, err)
	}
	if err := clientcmdapi.FlattenConfig(&raw); err != nil {
		return nil, fmt.Errorf("embedding the kubeconfig's files: %w", err)
	}
	plane := raw.Clusters[kctx.Cluster]
	if plane == nil {
		return nil, fmt.Errorf("kubeconfig context %s names no cluster", contextName)
	}
	u, err := url.Parse(plane.Server)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("kubeconfig cluster %s: server %q is not a URL", kctx.Cluster, plane.Server)
	}
	var name, path string
	if cell != "" {
		name = "cell-" + namespace + "-" + cell
		path = cellproxy.Prefix + "namespaces/" + namespace + "/cells/" + cell + "/proxy"
	} else {
		name = "cluster-" + cluster
		path = cellproxy.Prefix + "clusters/" + cluster + "/proxy"
	}
	target := plane.DeepCopy()
	target.Server = strings.TrimSuffix(u.String(), "/") + path
	out := clientcmdapi.NewConfig()
	out.Clusters[name] = target
	auth := raw.AuthInfos[kctx.AuthInfo]
	if auth == nil {
		return nil, fmt.Errorf("kubeconfig context %s names no user", contextName)
	}
	auth = auth.DeepCopy()
	if as.User == "" && (as.UID != "" || len(as.Groups) > 0) {
		return nil, errors.New("--as-group and --as-uid need --as=<user>; pass the user to act as")
	}
	if as.User != "" {
		auth.Impersonate, auth.ImpersonateUID, auth.ImpersonateGroups = as.User, as.UID, as.Groups
	}
	out.AuthInfos[kctx.AuthInfo] = auth
	out.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: kctx.AuthInfo, Namespace: namespace}
	out.CurrentContext = name
	return out, nil
}
