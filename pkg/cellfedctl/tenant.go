package cellfedctl

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/roles"
	"github.com/cellfed/cellfed/pkg/tenancy"
)

func newTenantCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tenant",
		Short: "Create tenant workspaces, grant app teams and viewers, list workspaces",
		Long: `A tenant workspace is a namespace labelled cellfed.io/tenant=<tenant> and
cellfed.io/workspace=<workspace>; its Cells, federated objects and
rollouts belong to that tenant. The plane ships the ClusterRoles
cellfed:app-team (federated objects of every enabled type, rollout, read
Cells) and cellfed:viewer (read of the same); 'tenant grant' binds one in
a workspace with a RoleBinding.`,
		Example: examples(o.name,
			"tenant create shop --tenant=acme --workspace=prod",
			"tenant grant alice -n shop --role=app-team",
			"tenant grant group:auditors -n shop --role=viewer",
			"tenant list",
		),
		SuggestionsMinimumDistance: 2,
		Args:                       unknownCommand,
		RunE:                       helpOrUnknown,
	}
	cmd.AddCommand(newTenantCreateCommand(o), newTenantGrantCommand(o), newTenantListCommand(o))
	return cmd
}

type tenantCreateOptions struct {
	*options
	tenant, workspace string
}

func newTenantCreateCommand(o *options) *cobra.Command {
	tc := &tenantCreateOptions{options: o}
	cmd := &cobra.Command{
		Use:   "create <namespace> --tenant=<tenant> --workspace=<workspace>",
		Short: "Create a tenant workspace namespace",
		Long: `Create the namespace with the labels cellfed.io/tenant and
cellfed.io/workspace, or label an existing namespace that belongs to no
tenant yet. A namespace of another tenant, or of the same tenant in
another workspace, is refused: a workspace's cells and objects would
change hands.`,
		Example: examples(o.name, "tenant create shop --tenant=acme --workspace=prod"),
		Args:    exactArgs(1, "one namespace name"),
		RunE:    func(c *cobra.Command, args []string) error { return tc.run(c.Context(), args[0]) },
	}
	cmd.Flags().StringVar(&tc.tenant, "tenant", "", "the tenant the workspace belongs to (required)")
	cmd.Flags().StringVar(&tc.workspace, "workspace", "", "the workspace name (required)")
	return cmd
}

// CheckWorkspace checks the arguments of `tenant create`.
func CheckWorkspace(namespace, tenant, workspace string) error {
	if !cellv1alpha1.IsDNSLabel(namespace) {
		return fmt.Errorf("%q is not a valid namespace name; use a DNS label: lowercase letters, digits and '-', at most 63 characters", namespace)
	}
	if err := tenancy.ReservedNamespaceError(namespace); err != nil {
		return err
	}
	for _, f := range []struct{ flag, value string }{{"--tenant", tenant}, {"--workspace", workspace}} {
		if f.value == "" {
			return fmt.Errorf("%s is required; e.g. `tenant create %s --tenant=acme --workspace=prod`", f.flag, namespace)
		}
		if msgs := validation.IsValidLabelValue(f.value); len(msgs) > 0 {
			return fmt.Errorf("%s=%q is not a valid label value: %s; use at most 63 letters, digits, '-', '_' or '.'", f.flag, f.value, msgs[0])
		}
	}
	return nil
}

func (tc *tenantCreateOptions) run(ctx context.Context, name string) error {
	if err := CheckWorkspace(name, tc.tenant, tc.workspace); err != nil {
		return err
	}
	c, err := tc.planeClients()
	if err != nil {
		return err
	}
	what := fmt.Sprintf("workspace %s (tenant %s, workspace %s)", name, tc.tenant, tc.workspace)
	api := c.kube.CoreV1().Namespaces()
	ns, err := api.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			cellv1alpha1.LabelTenant: tc.tenant, cellv1alpha1.LabelWorkspace: tc.workspace}}}
		if _, err := api.Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return apiError(err, "creating namespace "+name)
		}
		printf(tc.streams.Out, "%s created\n", what)
		return nil
	}
	if err != nil {
		return apiError(err, "reading namespace "+name)
	}
	if ns.DeletionTimestamp != nil {
		return fmt.Errorf("namespace %s is being deleted; wait until it is gone, then create it again", name)
	}
	if err := tenancy.ClaimError(name, ns.Labels, tc.tenant, tc.workspace); err != nil {
		return err
	}
	if t, w := tenancy.Of(ns.Labels); t == tc.tenant && w == tc.workspace {
		printf(tc.streams.Out, "%s (unchanged)\n", what)
		return nil
	}
	ns = ns.DeepCopy()
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[cellv1alpha1.LabelTenant], ns.Labels[cellv1alpha1.LabelWorkspace] = tc.tenant, tc.workspace
	if _, err := api.Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		return apiError(err, "labelling namespace "+name)
	}
	printf(tc.streams.Out, "%s: existing namespace labelled\n", what)
	return nil
}

type tenantGrantOptions struct {
	*options
	role string
}

func newTenantGrantCommand(o *options) *cobra.Command {
	tg := &tenantGrantOptions{options: o}
	cmd := &cobra.Command{
		Use:   "grant <user|group:name|serviceaccount:namespace:name> -n <workspace> --role=app-team|viewer",
		Short: "Bind the app-team or viewer role in a workspace",
		Long: `Bind the plane's ClusterRole cellfed:app-team or cellfed:viewer to a user,
group or service account in one tenant workspace (-n), with a RoleBinding
named cellfed:<role>:<kind>:<name>. The subject is a user name (alice, or
user:alice), group:<name>, or serviceaccount:<namespace>:<name>.

app-team may create, update and delete federated objects of every enabled
type (types enabled later too), roll them out (TemplateRevisions), and
read Cells and PropagatedVersions; nothing outside the workspace. viewer
may read the same.`,
		Example: examples(o.name,
			"tenant grant alice -n shop --role=app-team",
			"tenant grant group:shop-devs -n shop --role=app-team",
			"tenant grant serviceaccount:ci:deployer -n shop --role=app-team",
			"tenant grant group:auditors -n shop --role=viewer",
		),
		Args: exactArgs(1, "one subject"),
		RunE: func(c *cobra.Command, args []string) error { return tg.run(c.Context(), args[0]) },
	}
	cmd.Flags().StringVar(&tg.role, "role", "", "app-team or viewer (required)")
	return cmd
}

// ParseSubject parses a `tenant grant` subject: alice or user:alice (a
// user), group:devs, serviceaccount:ns:name. A user name may itself
// contain ':' (oidc:alice) when it starts with none of the three
// prefixes.
func ParseSubject(s string) (rbacv1.Subject, error) {
	const forms = "name a user (alice), a group (group:devs) or a service account (serviceaccount:<namespace>:<name>)"
	kind, rest, found := strings.Cut(s, ":")
	switch {
	case !found:
		kind, rest = "user", s
	case kind != "user" && kind != "group" && kind != "serviceaccount":
		kind, rest = "user", s
	}
	if rest == "" {
		return rbacv1.Subject{}, fmt.Errorf("subject %q has no name; %s", s, forms)
	}
	if strings.ContainsAny(rest, "/%") || strings.TrimSpace(rest) != rest {
		return rbacv1.Subject{}, fmt.Errorf("subject %q: a name with '/', '%%' or surrounding spaces cannot name a RoleBinding; %s", s, forms)
	}
	switch kind {
	case "user":
		return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: rest}, nil
	case "group":
		return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: rest}, nil
	}
	ns, name, ok := strings.Cut(rest, ":")
	if !ok || !cellv1alpha1.IsDNSLabel(ns) || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return rbacv1.Subject{}, fmt.Errorf("subject %q is not serviceaccount:<namespace>:<name>; write e.g. serviceaccount:ci:deployer", s)
	}
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}, nil
}

// subjectString is how grant shows a subject (and names its binding).
func subjectString(s rbacv1.Subject) string {
	switch s.Kind {
	case rbacv1.GroupKind:
		return "group:" + s.Name
	case rbacv1.ServiceAccountKind:
		return "serviceaccount:" + s.Namespace + ":" + s.Name
	}
	return "user:" + s.Name
}

// GrantBinding is the RoleBinding `tenant grant` writes: role (app-team
// or viewer) for subject in namespace.
func GrantBinding(namespace, role, subject string) (*rbacv1.RoleBinding, error) {
	clusterRole, ok := roles.TenantRoles[role]
	if role == "" {
		return nil, fmt.Errorf("--role is required; pass --role=app-team or --role=viewer")
	}
	if !ok {
		return nil, fmt.Errorf("unknown role %q; pass --role=app-team or --role=viewer (platform admins are bound cluster-wide to %s with a ClusterRoleBinding)", role, roles.PlatformAdmin)
	}
	s, err := ParseSubject(subject)
	if err != nil {
		return nil, err
	}
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "cellfed:" + role + ":" + subjectString(s), Namespace: namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{s},
	}, nil
}

func (tg *tenantGrantOptions) run(ctx context.Context, subject string) error {
	// Arguments first: a bad one fails without reading any configuration.
	binding, err := GrantBinding("", tg.role, subject)
	if err != nil {
		return err
	}
	ns, err := tg.namespace()
	if err != nil {
		return err
	}
	binding.Namespace = ns
	c, err := tg.planeClients()
	if err != nil {
		return err
	}
	namespace, err := c.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("namespace %s does not exist; create the workspace first with `%s tenant create %s --tenant=<tenant> --workspace=<workspace>`", ns, tg.name, ns)
	}
	if err != nil {
		return apiError(err, "reading namespace "+ns)
	}
	if namespace.Labels[cellv1alpha1.LabelTenant] == "" || namespace.Labels[cellv1alpha1.LabelWorkspace] == "" {
		return fmt.Errorf("namespace %s is not a tenant workspace (it lacks the %s and %s labels); make it one with `%s tenant create %s --tenant=<tenant> --workspace=<workspace>`",
			ns, cellv1alpha1.LabelTenant, cellv1alpha1.LabelWorkspace, tg.name, ns)
	}
	what := fmt.Sprintf("%s granted %s in %s (RoleBinding %s/%s)", subjectString(binding.Subjects[0]), tg.role, ns, ns, binding.Name)
	api := c.kube.RbacV1().RoleBindings(ns)
	have, err := api.Get(ctx, binding.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := api.Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			return apiError(err, fmt.Sprintf("creating RoleBinding %s/%s", ns, binding.Name))
		}
		printf(tg.streams.Out, "%s\n", what)
		return nil
	case err != nil:
		return apiError(err, fmt.Sprintf("reading RoleBinding %s/%s", ns, binding.Name))
	case have.RoleRef != binding.RoleRef:
		return fmt.Errorf("RoleBinding %s/%s exists with role %s %s, not %s; delete it with `kubectl delete rolebinding -n %s %s` and grant again", ns, binding.Name, have.RoleRef.Kind, have.RoleRef.Name, binding.RoleRef.Name, ns, binding.Name)
	case len(have.Subjects) == 1 && have.Subjects[0] == binding.Subjects[0]:
		printf(tg.streams.Out, "%s (unchanged)\n", what)
		return nil
	}
	have = have.DeepCopy()
	have.Subjects = binding.Subjects
	if _, err := api.Update(ctx, have, metav1.UpdateOptions{}); err != nil {
		return apiError(err, fmt.Sprintf("updating RoleBinding %s/%s", ns, binding.Name))
	}
	printf(tg.streams.Out, "%s (subjects put back)\n", what)
	return nil
}

type tenantListOptions struct {
	*options
	tenant string
}

func newTenantListCommand(o *options) *cobra.Command {
	tl := &tenantListOptions{options: o}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls", "get"},
		Short:   "List tenant workspaces with their cells and clusters",
		Long: `List the tenant workspaces (namespaces labelled cellfed.io/tenant and
cellfed.io/workspace) with their Cells and the physical clusters those
cells are on (spec.cluster).`,
		Example: examples(o.name, "tenant list", "tenant list --tenant=acme"),
		Args:    exactArgs(0, "no arguments"),
		RunE:    func(c *cobra.Command, _ []string) error { return tl.run(c.Context()) },
	}
	cmd.Flags().StringVar(&tl.tenant, "tenant", "", "list only this tenant's workspaces")
	return cmd
}

func (tl *tenantListOptions) run(ctx context.Context) error {
	selector := cellv1alpha1.LabelTenant + "," + cellv1alpha1.LabelWorkspace
	if tl.tenant != "" {
		if msgs := validation.IsValidLabelValue(tl.tenant); len(msgs) > 0 {
			return fmt.Errorf("--tenant=%q is not a valid label value: %s; pass a tenant name as `tenant create` took it", tl.tenant, msgs[0])
		}
		selector = cellv1alpha1.LabelTenant + "=" + tl.tenant + "," + cellv1alpha1.LabelWorkspace
	}
	c, err := tl.planeClients()
	if err != nil {
		return err
	}
	nss, err := c.kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return apiError(err, "listing tenant workspaces")
	}
	if len(nss.Items) == 0 {
		fmt.Fprintln(tl.streams.ErrOut, "No tenant workspaces found.")
		return nil
	}
	list, err := c.Dynamic.Resource(cellv1alpha1.CellsResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return apiError(err, "listing cells")
	}
	cells, err := decodeCells(list.Items)
	if err != nil {
		return err
	}
	return PrintWorkspaces(tl.streams.Out, nss.Items, cells)
}

// PrintWorkspaces writes the workspace table: one row per namespace, its
// cells and the distinct clusters they are on, sorted.
func PrintWorkspaces(w io.Writer, namespaces []corev1.Namespace, cells []cellv1alpha1.Cell) error {
	type row struct {
		ns, tenant, workspace string
		cells, clusters       []string
	}
	rows := map[string]*row{}
	for _, ns := range namespaces {
		t, w := tenancy.Of(ns.Labels)
		rows[ns.Name] = &row{ns: ns.Name, tenant: t, workspace: w}
	}
	for _, c := range cells {
		r, ok := rows[c.Namespace]
		if !ok {
			continue
		}
		r.cells = append(r.cells, c.Name)
		if c.Spec.Cluster != "" && !slices.Contains(r.clusters, c.Spec.Cluster) {
			r.clusters = append(r.clusters, c.Spec.Cluster)
		}
	}
	names := make([]string, 0, len(rows))
	for n := range rows {
		names = append(names, n)
	}
	sort.Strings(names)
	join := func(s []string) string {
		if len(s) == 0 {
			return "<none>"
		}
		sort.Strings(s)
		return strings.Join(s, ",")
	}
	tw := tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tTENANT\tWORKSPACE\tCELLS\tCLUSTERS")
	for _, n := range names {
		r := rows[n]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ns, r.tenant, r.workspace, join(r.cells), join(r.clusters))
	}
	return tw.Flush()
}
