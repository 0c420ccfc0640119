package cellfedctl

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"

	"github.com/cellfed/cellfed/pkg/apis"
	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/federatedtypes"
	"github.com/cellfed/cellfed/pkg/tenancy"
)

// cellv1alpha1.CellsResource is core.cellfed.io/v1alpha1 cells.

func newCellCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cell",
		Short: "Create, list, move and delete Cells (deployment units on physical clusters)",
		Long: `A Cell is a deployment unit: a named slice of one physical member cluster
(a KubeFedCluster in the federation namespace), living in a tenant
workspace namespace (labelled cellfed.io/tenant and cellfed.io/workspace).
Its labels are its topology labels (zone, region, ...) that placement
selectors match.`,
		Example: examples(o.name,
			"cell create rz00a --cluster=member1 -l zone=z1 -n shop",
			"cell list -n shop",
			"cell list -A",
			"cell delete rz00a rz00b -n shop",
			"cell move rz00a -n shop --to=member3",
			"cell status rz00a -n shop",
		),
		SuggestionsMinimumDistance: 2,
		Args:                       unknownCommand,
		RunE:                       helpOrUnknown,
	}
	cmd.AddCommand(newCellCreateCommand(o), newCellListCommand(o), newCellDeleteCommand(o), newCellMoveCommand(o), newCellStatusCommand(o))
	return cmd
}

func (o *options) cellClient() (dynamic.NamespaceableResourceInterface, error) {
	c, err := o.planeClients()
	if err != nil {
		return nil, err
	}
	return c.Dynamic.Resource(cellv1alpha1.CellsResource), nil
}

type cellCreateOptions struct {
	*options
	cluster string
	labels  []string
}

func newCellCreateCommand(o *options) *cobra.Command {
	cc := &cellCreateOptions{options: o}
	cmd := &cobra.Command{
		Use:   "create <name> --cluster=<physical cluster>",
		Short: "Create a Cell on a physical cluster",
		Long: `Create a Cell in the namespace (-n, default: the kubeconfig context's
namespace), which must be a tenant workspace. --cluster names a physical
KubeFedCluster of the federation namespace. The cell gets its own
KubeFedCluster, named <namespace>.<cell>.`,
		Example: examples(o.name,
			"cell create rz00a --cluster=member1 -l zone=z1 -l region=eu -n shop",
		),
		Args: exactArgs(1, "one cell name"),
		RunE: func(c *cobra.Command, args []string) error { return cc.run(c.Context(), args[0]) },
	}
	cmd.Flags().StringVar(&cc.cluster, "cluster", "", "the physical KubeFedCluster that hosts the cell (required)")
	cmd.Flags().StringArrayVarP(&cc.labels, "label", "l", nil, "topology label key=value of the cell (repeatable)")
	return cmd
}

// NewCell builds the Cell that `cell create` creates, checking the
// arguments first.
func NewCell(namespace, name, cluster string, labelArgs []string) (*cellv1alpha1.Cell, error) {
	if !cellv1alpha1.IsDNSLabel(name) {
		return nil, fmt.Errorf("%q is not a valid cell name; cell names are DNS labels: lowercase letters, digits and '-', at most 63 characters, no dots", name)
	}
	switch {
	case cluster == "":
		return nil, fmt.Errorf("--cluster is required; name the physical KubeFedCluster that hosts the cell (list them with `kubectl get kubefedclusters -n %s`)", federatedtypes.DefaultNamespace)
	case !cellv1alpha1.IsDNSLabel(cluster):
		return nil, fmt.Errorf("--cluster=%q is not a physical cluster name; physical clusters are named by DNS labels (names with a dot are per-cell clusters)", cluster)
	}
	labels, err := ParseLabels(labelArgs)
	if err != nil {
		return nil, err
	}
	return &cellv1alpha1.Cell{
		TypeMeta:   metav1.TypeMeta{APIVersion: cellv1alpha1.SchemeGroupVersion.String(), Kind: "Cell"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec:       cellv1alpha1.CellSpec{Cluster: cluster},
	}, nil
}

// ParseLabels parses -l key=value arguments.
func ParseLabels(args []string) (map[string]string, error) {
	if len(args) == 0 {
		return nil, nil
	}
	labels := map[string]string{}
	for _, a := range args {
		key, value, ok := strings.Cut(a, "=")
		if !ok {
			return nil, fmt.Errorf("-l %q is not key=value; write labels as -l zone=z1", a)
		}
		if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
			return nil, fmt.Errorf("-l %q: invalid label key: %s; use a key like zone or topology.example.com/zone", a, msgs[0])
		}
		if msgs := validation.IsValidLabelValue(value); len(msgs) > 0 {
			return nil, fmt.Errorf("-l %q: invalid label value: %s; use at most 63 letters, digits, '-', '_' or '.'", a, msgs[0])
		}
		if prev, dup := labels[key]; dup && prev != value {
			return nil, fmt.Errorf("-l sets %s twice (%q and %q); give each label once", key, prev, value)
		}
		labels[key] = value
	}
	return labels, nil
}

func (cc *cellCreateOptions) run(ctx context.Context, name string) error {
	// Arguments first: a bad one fails without reading any configuration.
	cell, err := NewCell("", name, cc.cluster, cc.labels)
	if err != nil {
		return err
	}
	ns, err := cc.namespace()
	if err != nil {
		return err
	}
	cell.Namespace = ns
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cell)
	if err != nil {
		return withFix(fmt.Errorf("encoding cell: %w", err), "this is a bug in cellfed: please report it")
	}
	obj := &unstructured.Unstructured{Object: content}
	unstructured.RemoveNestedField(obj.Object, "status")
	unstructured.RemoveNestedField(obj.Object, "metadata", "creationTimestamp")
	cells, err := cc.cellClient()
	if err != nil {
		return err
	}
	created, err := cells.Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating cell %s/%s: it exists already; choose another name, or delete it first with `%s cell delete %s -n %s`", ns, name, cc.name, name, ns)
	}
	if err != nil {
		return apiError(err, fmt.Sprintf("creating cell %s/%s", ns, name))
	}
	printf(cc.streams.Out, "cell %s/%s created on cluster %s (KubeFedCluster %s)\n", ns, created.GetName(), cc.cluster, cellv1alpha1.CellClusterName(ns, name))
	return nil
}

type cellListOptions struct {
	*options
	allNamespaces bool
}

func newCellListCommand(o *options) *cobra.Command {
	cl := &cellListOptions{options: o}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls", "get"},
		Short:   "List Cells",
		Long: `List the Cells of the namespace (-n, default: the kubeconfig context's
namespace), or of every namespace with -A. KUBEFEDCLUSTER is the cell's own
KubeFedCluster (status.kubeFedCluster, else the naming rule
<namespace>.<cell>). LABELS are its topology labels; the tenancy labels
copied from the namespace are left out.`,
		Example: examples(o.name, "cell list -n shop", "cell list -A"),
		Args:    exactArgs(0, "no arguments"),
		RunE:    func(c *cobra.Command, _ []string) error { return cl.run(c.Context()) },
	}
	cmd.Flags().BoolVarP(&cl.allNamespaces, "all-namespaces", "A", false, "list the cells of every namespace")
	return cmd
}

func (cl *cellListOptions) run(ctx context.Context) error {
	ns := ""
	if !cl.allNamespaces {
		var err error
		if ns, err = cl.namespace(); err != nil {
			return err
		}
	}
	cells, err := cl.cellClient()
	if err != nil {
		return err
	}
	list, err := cells.Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		where := "namespace " + ns
		if cl.allNamespaces {
			where = "all namespaces"
		}
		return apiError(err, "listing cells in "+where)
	}
	items, err := decodeCells(list.Items)
	if err != nil {
		return err
	}
	if len(items) == 0 {
		if cl.allNamespaces {
			fmt.Fprintln(cl.streams.ErrOut, "No cells found.")
		} else {
			fmt.Fprintf(cl.streams.ErrOut, "No cells found in namespace %s.\n", ns)
		}
		return nil
	}
	return PrintCells(cl.streams.Out, items, cl.allNamespaces, time.Now())
}

// PrintCells writes the cell table.
func PrintCells(w io.Writer, cells []cellv1alpha1.Cell, withNamespace bool, now time.Time) error {
	sort.Slice(cells, func(i, j int) bool {
		if cells[i].Namespace != cells[j].Namespace {
			return cells[i].Namespace < cells[j].Namespace
		}
		return cells[i].Name < cells[j].Name
	})
	tw := tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
	header := []string{"NAME", "CLUSTER", "KUBEFEDCLUSTER", "LABELS", "AGE"}
	if withNamespace {
		header = append([]string{"NAMESPACE"}, header...)
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, c := range cells {
		kfc := c.Status.KubeFedCluster
		if kfc == "" {
			kfc = cellv1alpha1.CellClusterName(c.Namespace, c.Name)
		}
		age := "<unknown>"
		if !c.CreationTimestamp.IsZero() {
			age = duration.HumanDuration(now.Sub(c.CreationTimestamp.Time))
		}
		row := []string{c.Name, c.Spec.Cluster, kfc, topologyLabels(c.Labels), age}
		if withNamespace {
			row = append([]string{c.Namespace}, row...)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

// topologyLabels formats a cell's labels without the tenancy labels.
func topologyLabels(labels map[string]string) string {
	var kv []string
	for k, v := range labels {
		if tenancy.IsTenancyLabel(k) {
			continue
		}
		kv = append(kv, k+"="+v)
	}
	if len(kv) == 0 {
		return "<none>"
	}
	sort.Strings(kv)
	return strings.Join(kv, ",")
}

func newCellDeleteCommand(o *options) *cobra.Command {
	d := drainOptions{interval: 500 * time.Millisecond}
	cmd := &cobra.Command{
		Use:     "delete <name>...",
		Aliases: []string{"rm"},
		Short:   "Delete Cells",
		Long: `Delete the named Cells of the namespace (-n, default: the kubeconfig
context's namespace). Every named cell is deleted even when some are not
found; the command then fails naming them.

A cell that federated objects still place is not deleted (admission
refuses, naming them). Either remove the cell from their placements
first, or use --drain: the cell is labelled cellfed.io/draining=true,
cellfed-controller stops placing through it and removes from its cluster
every object placed through it (objects annotated kubefed.io/orphan=true
stay there, unmanaged; a placement mask does not hold anything back), the
command prints how many are left until none is, then deletes the Cell.
Interrupted (Ctrl-C, --timeout), the drain goes on; running the command
again resumes the wait. Removing the label stops the drain and the
objects come back. Placements that still name the deleted cell report it
CellNotFound.`,
		Example: examples(o.name, "cell delete rz00a -n shop", "cell delete rz00a rz00b -n shop", "cell delete rz00a -n shop --drain --timeout=10m"),
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("%s takes at least one cell name; see '%s --help'", c.CommandPath(), c.CommandPath())
			}
			for _, a := range args {
				if !cellv1alpha1.IsDNSLabel(a) {
					return fmt.Errorf("%q is not a cell name; cell names are DNS labels (lowercase letters, digits and '-', no dots)", a)
				}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if !d.drain && c.Flags().Changed("timeout") {
				return fmt.Errorf("--timeout applies to --drain; add --drain, or drop --timeout")
			}
			return deleteCells(c.Context(), o, d, args)
		},
	}
	cmd.Flags().BoolVar(&d.drain, "drain", false, "remove what objects placed through the cell first, wait until it holds nothing, then delete it")
	cmd.Flags().DurationVar(&d.timeout, "timeout", 0, "with --drain: give up waiting after this long (0: never); the drain goes on")
	cmd.Flags().StringVar(&d.fedNamespace, "federation-namespace", federatedtypes.DefaultNamespace, "namespace of the KubeFedClusters in the plane")
	return cmd
}

func deleteCells(ctx context.Context, o *options, d drainOptions, names []string) error {
	ns, err := o.namespace()
	if err != nil {
		return err
	}
	cells, err := o.cellClient()
	if err != nil {
		return err
	}
	var missing []string
	for _, name := range names {
		if d.drain {
			err := drainCell(ctx, o, d, ns, name)
			if apierrors.IsNotFound(err) {
				missing = append(missing, ns+"/"+name)
				continue
			}
			if err != nil {
				return err
			}
			continue
		}
		err := cells.Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, ns+"/"+name)
		case err != nil:
			return apiError(err, fmt.Sprintf("deleting cell %s/%s", ns, name))
		default:
			printf(o.streams.Out, "cell %s/%s deleted\n", ns, name)
		}
	}
	if len(missing) > 0 {
		what := "cell"
		if len(missing) > 1 {
			what = "cells"
		}
		return fmt.Errorf("%s %s not found; list the cells with `%s cell list -n %s`", what, strings.Join(missing, ", "), o.name, ns)
	}
	return nil
}

// decodeCells converts listed cells. A Cell that does not decode is
// malformed (admission checks Cells against the types this cellfedctl
// knows): say which field is wrong and how to fix it.
func decodeCells(items []unstructured.Unstructured) ([]cellv1alpha1.Cell, error) {
	cells := make([]cellv1alpha1.Cell, 0, len(items))
	for _, u := range items {
		var cell cellv1alpha1.Cell
		if err := apis.Decode(u.Object, &cell); err != nil {
			return nil, withFix(fmt.Errorf("cell %s/%s is malformed: %w", u.GetNamespace(), u.GetName(), err),
				fmt.Sprintf("fix it with `kubectl edit cells.%s %s -n %s`", cellv1alpha1.GroupName, u.GetName(), u.GetNamespace()))
		}
		cells = append(cells, cell)
	}
	return cells, nil
}
