package cellfedctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/cellfed/cellfed/pkg/apis"
	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/pkg/federatedtypes"
)

// moveOptions are cell move's flags.
type moveOptions struct {
	*options
	to                  string
	batch               int32
	pause, resume, undo bool
	wait                bool
	timeout, interval   time.Duration
	fedNamespace        string
}

func newCellMoveCommand(o *options) *cobra.Command {
	m := &moveOptions{options: o, interval: 500 * time.Millisecond}
	cmd := &cobra.Command{
		Use:   "move <name> --to=<physical cluster>",
		Short: "Move a Cell to another physical cluster",
		Long: `Move a cell, with everything placed through it, to another physical
cluster (hardware refresh, region evacuation). cellfed-controller copies
each object the cell holds to the new cluster (same templates and
overrides: overrides name the cell, not its cluster), waits until the copy
is ready there (a Deployment's rollout, the type's readiness rule), then
removes it from the old cluster, --batch objects at a time. A placement
mask or a rollout in progress is respected: an object held back on the
cell is not copied until the mask lets it through, and the move waits
for it. When every object is on the new cluster, the cell's
spec.cluster becomes the new cluster. The cell keeps its name, labels
(zone, region, ...) and per-cell KubeFedCluster name, so placements,
selectors and overrides keep matching.

The move is kept on the Cell (spec.move, status.move): it survives
restarts of cellfed-controller and of this command. By default the
command waits, printing progress; interrupted, the move goes on, and
"cell status" shows it. --pause starts no further object (those under
way finish), --resume goes on, --undo brings the objects already copied
back (each is removed from the new cluster once ready on the old one)
and ends the move with the cell where it was.`,
		Example: examples(o.name,
			"cell move rz00a -n shop --to=member-3",
			"cell move rz00a -n shop --to=member-3 --batch=5 --wait=false",
			"cell move rz00a -n shop --pause",
			"cell move rz00a -n shop --resume",
			"cell move rz00a -n shop --undo",
			"cell status rz00a -n shop",
		),
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("%s takes one cell name; see '%s --help'", c.CommandPath(), c.CommandPath())
			}
			if !cellv1alpha1.IsDNSLabel(args[0]) {
				return fmt.Errorf("%q is not a cell name; cell names are DNS labels (lowercase letters, digits and '-', no dots)", args[0])
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if err := m.validate(c.Flags().Changed("batch")); err != nil {
				return err
			}
			return m.run(c.Context(), args[0])
		},
	}
	cmd.Flags().StringVar(&m.to, "to", "", "the physical cluster (KubeFedCluster) to move the cell to")
	cmd.Flags().Int32Var(&m.batch, "batch", cellv1alpha1.DefaultMoveBatch, "how many objects move at once (copied but not yet removed from the old cluster)")
	cmd.Flags().BoolVar(&m.pause, "pause", false, "pause the cell's move: no further object starts moving")
	cmd.Flags().BoolVar(&m.resume, "resume", false, "resume a paused move")
	cmd.Flags().BoolVar(&m.undo, "undo", false, "undo the cell's move: the objects already copied come back, and the cell stays where it was")
	cmd.Flags().BoolVar(&m.wait, "wait", true, "wait for the move (or undo) to end, printing progress; the move goes on without it")
	cmd.Flags().DurationVar(&m.timeout, "timeout", 0, "give up waiting after this long (0: never); the move goes on")
	cmd.Flags().StringVar(&m.fedNamespace, "federation-namespace", federatedtypes.DefaultNamespace, "namespace of the FederatedTypeConfigs in the plane")
	return cmd
}

// validate checks the flags make one request.
func (m *moveOptions) validate(batchSet bool) error {
	n := 0
	for _, set := range []bool{m.to != "", m.pause, m.resume, m.undo} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		return fmt.Errorf("say what to do: --to=<cluster> starts a move; --pause, --resume or --undo act on the move under way")
	case n > 1:
		return fmt.Errorf("--to, --pause, --resume and --undo exclude each other; give one")
	case m.to != "" && !cellv1alpha1.IsDNSLabel(m.to):
		return fmt.Errorf("--to=%q is not a physical cluster name (a DNS label: lowercase letters, digits and '-', no dots)", m.to)
	case batchSet && m.to == "" && !m.resume:
		return fmt.Errorf("--batch applies to --to or --resume")
	case m.batch < 1:
		return fmt.Errorf("--batch=%d: at least one object must move at a time", m.batch)
	}
	return nil
}

func (m *moveOptions) run(ctx context.Context, name string) error {
	ns, err := m.namespace()
	if err != nil {
		return err
	}
	client, err := m.cellClient()
	if err != nil {
		return err
	}
	cells := client.Namespace(ns)
	u, err := cells.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return apiError(err, fmt.Sprintf("reading cell %s/%s", ns, name))
	}
	var cell cellv1alpha1.Cell
	if err := apis.Decode(u.Object, &cell); err != nil {
		return fmt.Errorf("cell %s/%s is malformed: %w", ns, name, err)
	}
	var move map[string]any
	mv := cell.Spec.Move
	switch {
	case m.to != "" && mv != nil && mv.To == m.to && !mv.Undo:
		printf(m.streams.Out, "cell %s/%s: already moving to %s\n", ns, name, m.to)
	case m.to != "" && mv != nil:
		return withFix(fmt.Errorf("cell %s/%s is moving to %s already", ns, name, mv.To),
			fmt.Sprintf("wait for it (`%s cell status %s -n %s`), or undo it first (`%s cell move %s -n %s --undo`)", m.name, name, ns, m.name, name, ns))
	case m.to != "" && cell.Spec.Cluster == m.to && cell.Status.Move != nil && cell.Status.Move.To == m.to && cell.Status.Move.Phase == cellv1alpha1.MovePhaseCompleted:
		printf(m.streams.Out, "cell %s/%s: already moved to %s\n", ns, name, m.to)
	case m.to != "" && cell.Spec.Cluster == m.to:
		return fmt.Errorf("cell %s/%s is on cluster %s already", ns, name, m.to)
	case m.to != "":
		move = map[string]any{"to": m.to, "batch": m.batch}
	case mv == nil:
		return withFix(fmt.Errorf("cell %s/%s is not moving", ns, name), fmt.Sprintf("start a move with `%s cell move %s -n %s --to=<cluster>`", m.name, name, ns))
	case m.undo && mv.Undo:
		printf(m.streams.Out, "cell %s/%s: the move to %s is being undone already\n", ns, name, mv.To)
	case m.undo:
		move = map[string]any{"undo": true}
	case mv.Undo:
		return fmt.Errorf("cell %s/%s: the move to %s is being undone; it cannot be paused or resumed", ns, name, mv.To)
	case m.pause:
		move = map[string]any{"paused": true}
	case m.resume:
		move = map[string]any{"paused": false}
		if m.batch != mv.Batch {
			move["batch"] = m.batch
		}
	}
	if move != nil {
		patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"move": move}})
		if _, err := cells.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return apiError(err, fmt.Sprintf("moving cell %s/%s", ns, name))
		}
		switch {
		case m.to != "":
			printf(m.streams.Out, "cell %s/%s: moving from %s to %s, %d objects at a time\n", ns, name, cell.Spec.Cluster, m.to, m.batch)
			m.reportOverrides(ctx, ns, name, cell.Spec.Cluster, m.to)
		case m.undo:
			printf(m.streams.Out, "cell %s/%s: undoing the move to %s\n", ns, name, mv.To)
		case m.pause:
			printf(m.streams.Out, "cell %s/%s: move to %s paused (objects under way finish)\n", ns, name, mv.To)
		case m.resume:
			printf(m.streams.Out, "cell %s/%s: move to %s resumed\n", ns, name, mv.To)
		}
	}
	if !m.wait || m.pause {
		printf(m.streams.Out, "follow it with `%s cell status %s -n %s`\n", m.name, name, ns)
		return nil
	}
	to := m.to
	if to == "" {
		to = mv.To
	}
	return m.waitMove(ctx, ns, name, to)
}

// moveState is what one look at a moving cell shows.
type moveState struct {
	moving bool // spec.move is set
	undo   bool
	paused bool
	status *cellv1alpha1.CellMoveStatus
}

// ended reports whether the move to `to` has ended, and how. It is a pure
// function.
func (s moveState) ended(to string) (bool, string) {
	if s.moving || s.status == nil || s.status.To != to || s.status.CompletionTime == nil {
		return false, ""
	}
	return true, s.status.Phase
}

// progress is the line printed when it changes.
func (s moveState) progress(ns, name string) string {
	st := s.status
	if st == nil {
		return fmt.Sprintf("cell %s/%s: waiting for cellfed-controller to start the move\n", ns, name)
	}
	line := fmt.Sprintf("cell %s/%s: %s: %d/%d objects copied to %s, %d moved", ns, name, strings.ToLower(st.Phase), st.Copied, st.Objects, st.To, st.Moved)
	if s.undo {
		line = fmt.Sprintf("cell %s/%s: %s: %d objects left on %s", ns, name, strings.ToLower(st.Phase), st.Copied, st.To)
	}
	if st.Message != "" {
		line += " (" + st.Message + ")"
	}
	return line + "\n"
}

func (m *moveOptions) waitMove(ctx context.Context, ns, name, to string) error {
	client, err := m.cellClient()
	if err != nil {
		return err
	}
	cells := client.Namespace(ns)
	wctx := ctx
	if m.timeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, m.timeout)
		defer cancel()
	}
	tick := time.NewTicker(m.interval)
	defer tick.Stop()
	last := ""
	for {
		u, err := lookWithin(ctx, func(ctx context.Context) (*unstructured.Unstructured, error) {
			return cells.Get(ctx, name, metav1.GetOptions{})
		})
		if err != nil && ctx.Err() == nil {
			return apiError(err, fmt.Sprintf("reading cell %s/%s", ns, name))
		}
		if err == nil {
			var cell cellv1alpha1.Cell
			if err := apis.Decode(u.Object, &cell); err != nil {
				return fmt.Errorf("cell %s/%s is malformed: %w", ns, name, err)
			}
			s := moveState{moving: cell.Spec.Move != nil, status: cell.Status.Move}
			if mv := cell.Spec.Move; mv != nil {
				s.undo, s.paused = mv.Undo, mv.Paused
			}
			if ok, phase := s.ended(to); ok {
				st := s.status
				took := st.CompletionTime.Sub(st.StartTime.Time)
				if phase == cellv1alpha1.MovePhaseRolledBack {
					printf(m.streams.Out, "cell %s/%s: move to %s undone; the cell stays on %s\n", ns, name, to, st.From)
				} else {
					printf(m.streams.Out, "cell %s/%s moved from %s to %s: %d objects in %s\n", ns, name, st.From, st.To, st.Objects, duration.HumanDuration(took))
				}
				return nil
			}
			if line := s.progress(ns, name); line != last {
				printf(m.streams.Out, "%s", line)
				last = line
			}
			if err := MoveBlockedError(&cell); err != nil {
				return err
			}
		}
		select {
		case <-wctx.Done():
			why := "interrupted"
			if errors.Is(wctx.Err(), context.DeadlineExceeded) {
				why = fmt.Sprintf("still moving after %s", m.timeout)
			}
			return withFix(fmt.Errorf("cell %s/%s %s: the move goes on in cellfed-controller", ns, name, why),
				fmt.Sprintf("`%s cell status %s -n %s` shows its progress; `%s cell move %s -n %s --pause` or `--undo` stops or undoes it", m.name, name, ns, m.name, name, ns))
		case <-tick.C:
		}
	}
}

// MoveBlockedError is the end of a wait for a move that cannot go on
// (the Cell's MoveBlocked condition is True), or nil. Its message says
// why and how to unblock it. It is a pure function.
func MoveBlockedError(cell *cellv1alpha1.Cell) error {
	if cell.Spec.Move == nil || cell.Spec.Move.Undo {
		return nil
	}
	c := apimeta.FindStatusCondition(cell.Status.Conditions, cellv1alpha1.CellMoveBlocked)
	if c == nil || c.Status != metav1.ConditionTrue {
		return nil
	}
	return fmt.Errorf("cell %s/%s: the move to %s is blocked (%s): %s", cell.Namespace, cell.Name, cell.Spec.Move.To, c.Reason, c.Message)
}

func newCellStatusCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "status <name>",
		Short: "Show a Cell: its cluster, readiness, objects and move",
		Long: `Show one cell of the namespace: the physical cluster it is on, its own
KubeFedCluster, whether its cluster is ready, how many federated objects
it holds, and its move to another cluster (the one under way, or the
last one): objects copied to the new cluster, moved (ready there and
removed from the old one), what it waits for.`,
		Example: examples(o.name, "cell status rz00a -n shop"),
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("%s takes one cell name; see '%s --help'", c.CommandPath(), c.CommandPath())
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			ns, err := o.namespace()
			if err != nil {
				return err
			}
			client, err := o.cellClient()
			if err != nil {
				return err
			}
			u, err := client.Namespace(ns).Get(c.Context(), args[0], metav1.GetOptions{})
			if err != nil {
				return apiError(err, fmt.Sprintf("reading cell %s/%s", ns, args[0]))
			}
			var cell cellv1alpha1.Cell
			if err := apis.Decode(u.Object, &cell); err != nil {
				return fmt.Errorf("cell %s/%s is malformed: %w", ns, args[0], err)
			}
			return PrintCellStatus(o.streams.Out, &cell, time.Now())
		},
	}
}

// PrintCellStatus writes one cell's status.
func PrintCellStatus(w io.Writer, cell *cellv1alpha1.Cell, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	kfc := cell.Status.KubeFedCluster
	if kfc == "" {
		kfc = cellv1alpha1.CellClusterName(cell.Namespace, cell.Name)
	}
	ready := "Unknown"
	for _, c := range cell.Status.Conditions {
		if c.Type == cellv1alpha1.CellReady {
			ready = string(c.Status)
			if c.Status != metav1.ConditionTrue && c.Message != "" {
				ready += " (" + c.Message + ")"
			}
		}
	}
	objects := "not counted yet"
	if cell.Status.Objects != nil {
		objects = fmt.Sprint(*cell.Status.Objects)
	}
	fmt.Fprintf(tw, "Cell:\t%s/%s\n", cell.Namespace, cell.Name)
	fmt.Fprintf(tw, "Cluster:\t%s\n", cell.Spec.Cluster)
	fmt.Fprintf(tw, "KubeFedCluster:\t%s\n", kfc)
	fmt.Fprintf(tw, "Labels:\t%s\n", topologyLabels(cell.Labels))
	fmt.Fprintf(tw, "Ready:\t%s\n", ready)
	fmt.Fprintf(tw, "Objects:\t%s\n", objects)
	st := cell.Status.Move
	switch {
	case st == nil && cell.Spec.Move == nil:
		fmt.Fprintf(tw, "Move:\tnone\n")
	case st == nil:
		fmt.Fprintf(tw, "Move:\tto %s, waiting for cellfed-controller to start it\n", cell.Spec.Move.To)
	default:
		fmt.Fprintf(tw, "Move:\t%s → %s, %s\n", st.From, st.To, st.Phase)
		fmt.Fprintf(tw, "  Objects:\t%d\n", st.Objects)
		fmt.Fprintf(tw, "  Copied:\t%d (on %s)\n", st.Copied, st.To)
		fmt.Fprintf(tw, "  Moved:\t%d (ready on %s, removed from %s)\n", st.Moved, st.To, st.From)
		if mv := cell.Spec.Move; mv != nil {
			batch := mv.Batch
			if batch == 0 {
				batch = cellv1alpha1.DefaultMoveBatch
			}
			fmt.Fprintf(tw, "  Batch:\t%d\n", batch)
		}
		if st.StartTime != nil {
			end := now
			if st.CompletionTime != nil {
				end = st.CompletionTime.Time
			}
			fmt.Fprintf(tw, "  Took:\t%s\n", duration.HumanDuration(end.Sub(st.StartTime.Time)))
		}
		if st.Message != "" {
			fmt.Fprintf(tw, "  Waiting:\t%s\n", st.Message)
		}
	}
	return tw.Flush()
}

// clusterSpecific are the fields an override of a cell usually sets to
// what only its cluster has: node names and labels, zones, storage
// classes, addresses.
var clusterSpecific = []string{"nodeSelector", "nodeName", "affinity", "tolerations", "topologySpreadConstraints",
	"storageClassName", "loadBalancerIP", "externalIPs", "clusterIP"}

// ClusterSpecificOverrides are the paths of a v1beta2 federated object's
// overrides for cell that set one of those fields. A move applies them on
// the new cluster as they are; they are reported, not rewritten. It is a
// pure function.
func ClusterSpecificOverrides(obj map[string]any, cell string) []string {
	overrides, _, _ := unstructured.NestedSlice(obj, "spec", "overrides")
	var out []string
	for _, o := range overrides {
		om, ok := o.(map[string]any)
		if !ok || om["topologyName"] != cell {
			continue
		}
		ops, _ := om["clusterOverrides"].([]any)
		for _, op := range ops {
			opm, _ := op.(map[string]any)
			path, _ := opm["path"].(string)
			for _, f := range strings.Split(path, "/") {
				if slices.Contains(clusterSpecific, f) {
					out = append(out, path)
					break
				}
			}
		}
	}
	return out
}

// reportOverrides prints the overrides of the cell that may name its old
// cluster's nodes, zones or storage: the move keeps them as they are.
func (m *moveOptions) reportOverrides(ctx context.Context, ns, cell, from, to string) {
	c, err := m.planeClients()
	if err != nil {
		return
	}
	list, err := c.Dynamic.Resource(kubefed.FederatedTypeConfigsResource).Namespace(m.fedNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		printf(m.streams.ErrOut, "warning: not checking the cell's overrides: %v\n", err)
		return
	}
	var found []string
	for i := range list.Items {
		t := fedTypeOf(&list.Items[i])
		if !t.Namespaced || t.Plural == "" {
			continue
		}
		objs, err := c.Dynamic.Resource(t.Resource()).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue // a type outside cellfed's group has no v1beta2
		}
		for _, o := range objs.Items {
			for _, p := range ClusterSpecificOverrides(o.Object, cell) {
				found = append(found, fmt.Sprintf("%s/%s %s", t.Kind, o.GetName(), p))
			}
		}
	}
	if len(found) == 0 {
		return
	}
	slices.Sort(found)
	printf(m.streams.Out, "cell %s/%s: %d overrides for the cell set fields that may name %s's own nodes, zones, storage or addresses; they apply on %s as they are, check them:\n", ns, cell, len(found), from, to)
	for _, f := range found {
		printf(m.streams.Out, "  %s\n", f)
	}
}
