package cellfedctl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fedcommon "sigs.k8s.io/kubefed/pkg/apis/core/common"
	fedv1beta1 "sigs.k8s.io/kubefed/pkg/apis/core/v1beta1"
	"sigs.k8s.io/yaml"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/pkg/federatedtypes"
)

// Status is what `status` reports: the physical clusters and the cells.
type Status struct {
	Clusters []ClusterStatus `json:"clusters"`
	Cells    []CellStatus    `json:"cells"`
}

// ClusterStatus is one physical KubeFedCluster.
type ClusterStatus struct {
	Name     string `json:"name"`
	Endpoint string `json:"endpoint"`
	// Ready is True, False or Unknown (no status yet).
	Ready             string `json:"ready"`
	Reason            string `json:"reason,omitempty"`
	Message           string `json:"message,omitempty"`
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// Cells is the number of cells placed on the cluster.
	Cells int `json:"cells"`
}

// CellStatus is one Cell.
type CellStatus struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Cluster   string `json:"cluster"`
	// Ready is the cell's Ready condition: True, False or Unknown.
	Ready   string `json:"ready"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// PerCellCluster is the cell's own KubeFedCluster.
	PerCellCluster string `json:"perCellCluster"`
}

type statusOptions struct {
	*options
	output       string
	fedNamespace string
}

func newStatusCommand(o *options) *cobra.Command {
	s := &statusOptions{options: o}
	cmd := &cobra.Command{
		Use:   "status [<kind>/<name>]",
		Short: "Show the member clusters and cells, and whether they are ready; or one federated object per cell",
		Long: `Show the physical member clusters (the KubeFedClusters of
--federation-namespace without a dot in their name) and the cells of every
namespace.

With <kind>/<name>, show one federated object instead: a row per placed
cell with what it runs, READY, and for an object whose replicas are
divided (spec.replicaDivision, or a ReplicaSchedulingPreference's
overrides) ASSIGNED, the replicas the division gives the cell, next to
REPLICAS, ready/desired as the member reports them. It is the table of
"rollout status"; the exit code is 0 whatever the cells' state.

READY of a cluster is its KubeFedCluster's Ready condition (False when the
cluster is Offline), and Unknown before the plane's cluster controller has
probed it; VERSION is the Kubernetes version it reported. CELLS counts the
cells placed on it. READY of a cell is the cell's Ready condition; its
PER-CELL CLUSTER is its own KubeFedCluster (status.kubeFedCluster, else
<namespace>.<cell>).`,
		Example: examples(o.name, "status", "status -o yaml", "status deployment/web -n shop"),
		Args:    maxArgs(1, "no arguments, or one federated object as <kind>/<name>"),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				return s.object(c.Context(), args[0])
			}
			return s.run(c.Context())
		},
	}
	cmd.Flags().StringVarP(&s.output, "output", "o", "", "output format: empty for tables, json or yaml")
	cmd.Flags().StringVar(&s.fedNamespace, "federation-namespace", federatedtypes.DefaultNamespace, "namespace of the KubeFedClusters in the plane")
	return cmd
}

// object prints one federated object's cells.
func (s *statusOptions) object(ctx context.Context, arg string) error {
	if s.output != "" {
		return fmt.Errorf("-o %s applies to the clusters and cells; drop it to show %s", s.output, arg)
	}
	if _, _, err := splitRef(arg); err != nil {
		return err
	}
	r := &rolloutOptions{options: s.options, now: time.Now, fedNamespace: s.fedNamespace}
	t, err := r.load(ctx, arg)
	if err != nil {
		return err
	}
	_, err = io.WriteString(s.streams.Out, viewOf(t).text)
	return err
}

func (s *statusOptions) run(ctx context.Context) error {
	switch s.output {
	case "", "json", "yaml":
	default:
		return fmt.Errorf("-o %q is not an output format; use -o json, -o yaml, or no -o for tables", s.output)
	}
	plane, err := s.planeClients()
	if err != nil {
		return err
	}
	list, err := plane.Dynamic.Resource(kubefed.KubeFedClustersResource).Namespace(s.fedNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return apiError(err, "listing KubeFedClusters in "+s.fedNamespace)
	}
	var clusters []fedv1beta1.KubeFedCluster
	for i := range list.Items {
		c, err := decodeCluster(&list.Items[i])
		if err != nil {
			return err
		}
		clusters = append(clusters, *c)
	}
	cellList, err := plane.Dynamic.Resource(cellv1alpha1.CellsResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return apiError(err, "listing cells")
	}
	cells, err := decodeCells(cellList.Items)
	if err != nil {
		return err
	}
	st := BuildStatus(clusters, cells)
	out := s.streams.Out
	switch s.output {
	case "json":
		b, err := json.MarshalIndent(st, "", "  ")
		if err != nil {
			return withFix(err, "this is a bug in cellfed: please report it")
		}
		_, err = fmt.Fprintf(out, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(st)
		if err != nil {
			return withFix(err, "this is a bug in cellfed: please report it")
		}
		_, err = out.Write(b)
		return err
	}
	if len(st.Clusters) == 0 {
		fmt.Fprintf(s.streams.ErrOut, "No clusters joined in namespace %s; join one with `%s join <name> --kubeconfig-member=<kubeconfig>`.\n", s.fedNamespace, s.name)
	}
	if len(st.Cells) == 0 {
		fmt.Fprintln(s.streams.ErrOut, "No cells found.")
	}
	return PrintStatus(out, st)
}

// IsPhysicalCluster says whether a KubeFedCluster is a physical cluster,
// not a per-cell one.
func IsPhysicalCluster(c *fedv1beta1.KubeFedCluster) bool {
	return c.Labels[cellv1alpha1.LabelTopologyType] == "" && !strings.Contains(c.Name, ".")
}

// BuildStatus reports the physical clusters and the cells, sorted by
// name.
func BuildStatus(clusters []fedv1beta1.KubeFedCluster, cells []cellv1alpha1.Cell) Status {
	count := map[string]int{}
	for _, c := range cells {
		count[c.Spec.Cluster]++
	}
	st := Status{Clusters: []ClusterStatus{}, Cells: []CellStatus{}}
	for i := range clusters {
		c := &clusters[i]
		if !IsPhysicalCluster(c) {
			continue
		}
		cs := ClusterStatus{Name: c.Name, Endpoint: c.Spec.APIEndpoint, Ready: string(corev1.ConditionUnknown),
			KubernetesVersion: c.Status.KubernetesVersion, Cells: count[c.Name]}
		cs.Ready, cs.Reason, cs.Message = clusterReady(c.Status.Conditions)
		st.Clusters = append(st.Clusters, cs)
	}
	sort.Slice(st.Clusters, func(i, j int) bool { return st.Clusters[i].Name < st.Clusters[j].Name })
	for _, c := range cells {
		cs := CellStatus{Namespace: c.Namespace, Name: c.Name, Cluster: c.Spec.Cluster, Ready: string(metav1.ConditionUnknown),
			PerCellCluster: c.Status.KubeFedCluster}
		if cs.PerCellCluster == "" {
			cs.PerCellCluster = cellv1alpha1.CellClusterName(c.Namespace, c.Name)
		}
		for _, cond := range c.Status.Conditions {
			if cond.Type == cellv1alpha1.CellReady && cond.Status != "" {
				cs.Ready, cs.Reason, cs.Message = string(cond.Status), cond.Reason, cond.Message
			}
		}
		st.Cells = append(st.Cells, cs)
	}
	sort.Slice(st.Cells, func(i, j int) bool {
		if st.Cells[i].Namespace != st.Cells[j].Namespace {
			return st.Cells[i].Namespace < st.Cells[j].Namespace
		}
		return st.Cells[i].Name < st.Cells[j].Name
	})
	return st
}

// clusterReady reads KubeFed's cluster conditions: Ready, else Offline
// (which KubeFed reports alone for a cluster it cannot reach), else
// Unknown.
func clusterReady(conds []fedv1beta1.ClusterCondition) (status, reason, message string) {
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	for _, c := range conds {
		if c.Type == fedcommon.ClusterReady && c.Status != "" {
			return string(c.Status), str(c.Reason), str(c.Message)
		}
	}
	for _, c := range conds {
		if c.Type == fedcommon.ClusterOffline && c.Status == corev1.ConditionTrue {
			reason := str(c.Reason)
			if reason == "" {
				reason = string(fedcommon.ClusterOffline)
			}
			return string(corev1.ConditionFalse), reason, str(c.Message)
		}
	}
	return string(corev1.ConditionUnknown), "", ""
}

// PrintStatus writes the cluster table and the cell table, a blank line
// between them; an empty table is left out.
func PrintStatus(w io.Writer, st Status) error {
	tw := tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
	if len(st.Clusters) > 0 {
		fmt.Fprintln(tw, "NAME\tENDPOINT\tREADY\tVERSION\tCELLS")
		for _, c := range st.Clusters {
			version := c.KubernetesVersion
			if version == "" {
				version = "<unknown>"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Name, c.Endpoint, c.Ready, version, strconv.Itoa(c.Cells))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(st.Cells) > 0 {
		if len(st.Clusters) > 0 {
			fmt.Fprintln(w)
		}
		tw = tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
		fmt.Fprintln(tw, "NAMESPACE\tCELL\tCLUSTER\tREADY\tPER-CELL CLUSTER")
		for _, c := range st.Cells {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Namespace, c.Name, c.Cluster, c.Ready, c.PerCellCluster)
		}
		return tw.Flush()
	}
	return nil
}
