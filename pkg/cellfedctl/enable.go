package cellfedctl

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/cellfed/cellfed/pkg/annotationrules"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/pkg/federatedtypes"
)

// planeClients reach the plane.
type planeClients struct {
	host   string
	config *rest.Config
	kube   kubernetes.Interface
	federatedtypes.Clients
}

func (o *options) planeClients() (*planeClients, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, withFix(fmt.Errorf("client for %s: %w", cfg.Host, err), "check the server and credentials of your kubeconfig context")
	}
	crds, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil, withFix(fmt.Errorf("client for %s: %w", cfg.Host, err), "check the server and credentials of your kubeconfig context")
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, withFix(fmt.Errorf("client for %s: %w", cfg.Host, err), "check the server and credentials of your kubeconfig context")
	}
	return &planeClients{host: cfg.Host, config: cfg, kube: kube, Clients: federatedtypes.Clients{CRDs: crds, Dynamic: dyn}}, nil
}

type enableOptions struct {
	*options
	fromCluster, fromClusterContext string
	fedNamespace                    string
	annotations                     []string
	annotationsSet                  bool
}

func newEnableCommand(o *options) *cobra.Command {
	e := &enableOptions{options: o}
	cmd := &cobra.Command{
		Use:   "enable <type>",
		Short: "Enable federation of a type: its FederatedTypeConfig and federated CRD",
		Long: `Enable federation of a type: create (or update) the federated CRD
Federated<Kind> in types.kubefed.io, served in v1beta1 (KubeFed's shape)
and v1beta2 (cellfed's multi-topology shape) and converted by the plane's
webhook, and the FederatedTypeConfig <type> in the federation namespace.

<type> is <plural>.<group>, or <plural> for the core group. Built-in
Kubernetes types take their template schema from Kubernetes' OpenAPI. For a
CRD, --from-cluster names the kubeconfig of a member cluster that has it:
the template schema is the CRD's storage version schema without status.

Running it again is safe: it changes nothing when the type is enabled
already, and updates what differs.`,
		Example: examples(o.name,
			"enable deployments.apps",
			"enable services",
			"enable widgets.example.com --from-cluster=member1.kubeconfig",
			"enable widgets.example.com --from-cluster=$HOME/.kube/config --from-cluster-context=prod-1",
		),
		Args: exactArgs(1, "one type (e.g. deployments.apps)"),
		RunE: func(c *cobra.Command, args []string) error {
			e.annotationsSet = c.Flags().Changed("propagate-annotations")
			return e.run(c.Context(), args[0])
		},
	}
	cmd.Flags().StringVar(&e.fromCluster, "from-cluster", "", "kubeconfig of a member cluster to read the CRD <type> from (for types that are not built in)")
	cmd.Flags().StringVar(&e.fromClusterContext, "from-cluster-context", "", "context of the --from-cluster kubeconfig (default: its current context)")
	cmd.Flags().StringVar(&e.fedNamespace, "federation-namespace", federatedtypes.DefaultNamespace, "namespace of the FederatedTypeConfigs")
	cmd.Flags().StringSliceVar(&e.annotations, "propagate-annotations", nil, "annotation key patterns propagated as spec, e.g. 'service.beta.kubernetes.io/*,example.com/key': set from the template and removed from members when they leave it; all other annotations are the members' own. \"\" removes the rules (every template annotation propagated, none removed); unset keeps the type's rules")
	return cmd
}

func (e *enableOptions) run(ctx context.Context, arg string) error {
	name, err := typeName(arg)
	if err != nil {
		return err
	}
	if e.fromClusterContext != "" && e.fromCluster == "" {
		return fmt.Errorf("--from-cluster-context needs --from-cluster; pass --from-cluster=<member kubeconfig>")
	}
	var annotations []string // nil: keep the type's rules
	if e.annotationsSet {
		annotations = []string{}
		for _, p := range e.annotations {
			if err := annotationrules.ValidatePattern(p); err != nil {
				return withFix(fmt.Errorf("--propagate-annotations: %w", err), "pass comma-separated annotation keys in which * matches anything")
			}
			annotations = append(annotations, p)
		}
	}
	var (
		target   federatedtypes.Target
		template *apiextensionsv1.JSONSchemaProps
	)
	if e.fromCluster == "" {
		if target, err = federatedtypes.LookupBuiltin(name); err != nil {
			return fixError{err.Error()} // says how to fix it
		}
		if template, err = federatedtypes.BuiltinSchema(target); err != nil {
			return withFix(err, "this is a bug in cellfed: please report it")
		}
	} else if target, template, err = e.fromMember(ctx, name); err != nil {
		return err
	}

	c, err := e.planeClients()
	if err != nil {
		return err
	}
	webhook, err := readWebhook(ctx, c, e.fedNamespace)
	if err != nil {
		return err
	}
	if err := checkClash(ctx, c, target, e.fedNamespace); err != nil {
		return err
	}

	crd := federatedtypes.CRD(target, template, webhook)
	ftcRes := c.Dynamic.Resource(kubefed.FederatedTypeConfigsResource).Namespace(e.fedNamespace)
	stateOf := func() (ftc, crdState objectState, err error) {
		obj, err := ftcRes.Get(ctx, target.Resource(), metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return ftc, crdState, apiError(err, fmt.Sprintf("reading FederatedTypeConfig %s/%s", e.fedNamespace, target.Resource()))
		}
		if err == nil {
			ftc = objectState{exists: true, generation: obj.GetGeneration(), labels: obj.GetLabels()}
		}
		got, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return ftc, crdState, apiError(err, "reading CRD "+crd.Name)
		}
		if err == nil {
			if got.DeletionTimestamp != nil {
				return ftc, crdState, fmt.Errorf("CRD %s is being deleted; wait until `kubectl get crd %s` finds it no more, then enable %s again", crd.Name, crd.Name, name)
			}
			crdState = objectState{exists: true, generation: got.Generation, labels: got.Labels}
		}
		return ftc, crdState, nil
	}
	ftcBefore, crdBefore, err := stateOf()
	if err != nil {
		return err
	}
	if err := federatedtypes.Enable(ctx, c.Clients, target, template, webhook, e.fedNamespace, annotations); err != nil {
		return apiError(err, "enabling "+name)
	}
	ftcAfter, crdAfter, err := stateOf()
	if err != nil {
		return err
	}
	var versions []string
	for _, v := range crd.Spec.Versions {
		versions = append(versions, v.Name)
	}
	printf(e.streams.Out, "enabled %s: FederatedTypeConfig %s/%s, CRD %s (%s)%s\n", name, e.fedNamespace, target.Resource(),
		crd.Name, strings.Join(versions, ", "), changeNote(ftcBefore, ftcAfter, crdBefore, crdAfter))
	return nil
}

// objectState is what tells whether enable changed an object.
type objectState struct {
	exists     bool
	generation int64
	labels     map[string]string
}

// changeNote is "" when enable created the objects, " (unchanged)" when it
// changed nothing and " (updated)" otherwise.
func changeNote(ftcBefore, ftcAfter, crdBefore, crdAfter objectState) string {
	switch {
	case !ftcBefore.exists && !crdBefore.exists:
		return ""
	case ftcBefore.exists && crdBefore.exists &&
		ftcBefore.generation == ftcAfter.generation && crdBefore.generation == crdAfter.generation &&
		maps.Equal(ftcBefore.labels, ftcAfter.labels) && maps.Equal(crdBefore.labels, crdAfter.labels):
		return " (unchanged)"
	}
	return " (updated)"
}

// fromMember reads the CRD name from the member cluster's kubeconfig.
func (e *enableOptions) fromMember(ctx context.Context, name string) (federatedtypes.Target, *apiextensionsv1.JSONSchemaProps, error) {
	member := fmt.Sprintf("member cluster %s", e.fromCluster)
	if e.fromClusterContext != "" {
		member += " (context " + e.fromClusterContext + ")"
	}
	if !strings.Contains(name, ".") {
		return federatedtypes.Target{}, nil, fmt.Errorf("%q is not a CRD name; CRDs are named <plural>.<group> (e.g. widgets.example.com), and a core type needs no --from-cluster", name)
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: e.fromCluster},
		&clientcmd.ConfigOverrides{CurrentContext: e.fromClusterContext},
	).ClientConfig()
	if err != nil {
		return federatedtypes.Target{}, nil, fmt.Errorf("loading the kubeconfig of %s: %v; pass --from-cluster=<kubeconfig of a member cluster that has the CRD>", member, oneLine(err.Error()))
	}
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return federatedtypes.Target{}, nil, withFix(fmt.Errorf("client for %s: %w", member, err), "check the server and credentials of that kubeconfig")
	}
	crd, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		fix := fmt.Sprintf("list its CRDs with `kubectl --kubeconfig=%s get crd`", e.fromCluster)
		if _, berr := federatedtypes.LookupBuiltin(name); berr == nil {
			fix = fmt.Sprintf("%s is a built-in type: run without --from-cluster", name)
		}
		return federatedtypes.Target{}, nil, fmt.Errorf("%s has no CRD %s; %s", member, name, fix)
	}
	if err != nil {
		return federatedtypes.Target{}, nil, apiError(err, fmt.Sprintf("reading CRD %s from %s", name, member))
	}
	t, schema, err := TargetFromCRD(crd)
	if err != nil {
		return federatedtypes.Target{}, nil, withFix(fmt.Errorf("CRD %s of %s: %w", name, member, err), "fix the CRD in the member cluster")
	}
	return t, schema, nil
}

// readWebhook reads where the plane serves its conversion webhook.
func readWebhook(ctx context.Context, c *planeClients, namespace string) (*apiextensionsv1.WebhookClientConfig, error) {
	ref := namespace + "/" + federatedtypes.WebhookConfigMap
	cm, err := c.kube.CoreV1().ConfigMaps(namespace).Get(ctx, federatedtypes.WebhookConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		hint := ""
		if namespace != federatedtypes.DefaultNamespace {
			hint = fmt.Sprintf(" (or the plane's federation namespace is not %s: check --federation-namespace)", namespace)
		}
		return nil, fmt.Errorf("the server at %s has no ConfigMap %s: it is not a cellfed-apiserver, or not ready yet%s; point --kubeconfig/--context at a cellfed plane, or wait until `kubectl get --raw /readyz` says ok", c.host, ref, hint)
	}
	if err != nil {
		return nil, apiError(err, "reading the plane's webhook settings (ConfigMap "+ref+")")
	}
	url, ca := cm.Data[federatedtypes.WebhookConfigMapURL], cm.Data[federatedtypes.WebhookConfigMapCA]
	if url == "" || ca == "" {
		return nil, fmt.Errorf("ConfigMap %s has no %q or %q: the plane has not published its conversion webhook yet; wait until `kubectl get --raw /readyz` says ok, or restart the plane", ref, federatedtypes.WebhookConfigMapURL, federatedtypes.WebhookConfigMapCA)
	}
	return &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: []byte(ca)}, nil
}

// checkClash refuses to enable t when another enabled type already owns
// its federated CRD (e.g. a CRD "deployments.example.com" of kind
// Deployment and the built-in deployments.apps): enabling would replace
// the other type's template schema.
func checkClash(ctx context.Context, c *planeClients, t federatedtypes.Target, namespace string) error {
	list, err := c.Dynamic.Resource(kubefed.FederatedTypeConfigsResource).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return apiError(err, "listing FederatedTypeConfigs in "+namespace)
	}
	for _, ftc := range list.Items {
		if ftc.GetName() == t.Resource() {
			continue
		}
		plural, _, _ := unstructured.NestedString(ftc.Object, "spec", "federatedType", "pluralName")
		group, _, _ := unstructured.NestedString(ftc.Object, "spec", "federatedType", "group")
		if plural+"."+group == t.CRDName() {
			return fmt.Errorf("cannot enable %s: its federated CRD %s already federates %s (FederatedTypeConfig %s/%s); disable %s first", t.Resource(), t.CRDName(), ftc.GetName(), namespace, ftc.GetName(), ftc.GetName())
		}
	}
	return nil
}

// waitGone waits until get answers NotFound.
func waitGone(ctx context.Context, what string, get func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		err := get(ctx)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		last = err
		return false, nil
	})
	if err != nil {
		msg := fmt.Sprintf("%s is still there after 2m", what)
		if last != nil {
			msg += fmt.Sprintf(" (%v)", last)
		}
		return fmt.Errorf("%s; check its finalizers with `kubectl get %s -o yaml`", msg, what)
	}
	return nil
}
