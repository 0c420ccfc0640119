package cellfedctl

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
	"github.com/cellfed/cellfed/pkg/federatedtypes"
	"github.com/cellfed/cellfed/pkg/placement"
	"github.com/cellfed/cellfed/pkg/rollout"
)

// rolloutOptions are shared by the rollout commands.
type rolloutOptions struct {
	*options
	fedNamespace string
	// now is the clock (tests set it).
	now func() time.Time
}

func newRolloutCommand(o *options) *cobra.Command {
	r := &rolloutOptions{options: o, now: time.Now}
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Release a federated object cell by cell: start, next, status, pause, resume, undo, finish",
		Long: `Release a change of a federated object to its placed cells in batches,
through the object's placement mask (spec.placementMask): the controller
acts only on the placed cells in the mask and leaves the others exactly as
they are.

  1. rollout start <kind>/<name> --cells=a   (or --batch=N) masks all but the first batch;
  2. change the template (kubectl apply, edit, patch): only the batch gets it;
  3. rollout status shows each placed cell (exit code 0 once the batch is updated and ready);
  4. rollout next --cells=b (or --batch=N) releases more; repeat;
  5. rollout finish removes the mask: every placed cell gets the change.

rollout undo restores the previous template in the released cells;
rollout pause and resume freeze and release the mask. With start --auto the
rollout controller in cellfed-controller moves the mask by itself, batch by
batch, and pauses when a cell fails or a batch misses its deadline.

<kind>/<name> names a federated object (federateddeployment/web,
federateddeployments.types.kubefed.io/web) or, through the enabled types'
FederatedTypeConfigs, its target kind (deployment/web). When the plane
holds a native object of that name (deployment/web applied with kubectl
or Helm), the command acts on the federated object its PropagationPolicy
made for it, and fails when no policy places it. Such an object's
template is the native object's: roll that back instead of rollout undo.
Cells are in the order spec.placement.topologies lists them (name order
for a selector).`,
		Example: examples(o.name,
			"rollout start deployment/web -n shop --cells=rz00a",
			"rollout status deployment/web -n shop --watch",
			"rollout next deployment/web -n shop --batch=2",
			"rollout finish deployment/web -n shop",
			"rollout start deployment/web -n shop --auto --batch=1 --pause-on-failure --progress-deadline=5m",
			"rollout undo deployment/web -n shop",
		),
		SuggestionsMinimumDistance: 2,
		Args:                       unknownCommand,
		RunE:                       helpOrUnknown,
	}
	cmd.PersistentFlags().StringVar(&r.fedNamespace, "federation-namespace", federatedtypes.DefaultNamespace, "namespace of the FederatedTypeConfigs and KubeFedClusters")
	cmd.AddCommand(newRolloutStartCommand(r), newRolloutNextCommand(r), newRolloutFinishCommand(r),
		newRolloutPauseCommand(r), newRolloutResumeCommand(r), newRolloutStatusCommand(r),
		newRolloutUndoCommand(r), newRolloutHistoryCommand(r))
	return cmd
}

// target is a federated object a rollout command works on, as read.
type target struct {
	c            *planeClients
	prog         string // "cellfedctl" or "kubectl cellfed", for hints
	fedNamespace string
	typ          fedType
	ns           string
	name         string
	obj          *unstructured.Unstructured
	fed          *typesv1beta2.FederatedObject
	placed       []string
	set          rollout.Settings
}

// errorf is fmt.Errorf for messages whose hints quote `cellfedctl …`
// commands: they name the program as it was invoked (kubectl cellfed).
func (t *target) errorf(format string, args ...any) error {
	if t.prog != "" {
		format = strings.ReplaceAll(format, "`cellfedctl ", "`"+t.prog+" ")
	}
	return fmt.Errorf(format, args...)
}

// ref is how messages name the object: federateddeployment shop/web.
func (t *target) ref() string {
	if t.ns == "" {
		return strings.ToLower(t.typ.Kind) + " " + t.name
	}
	return strings.ToLower(t.typ.Kind) + " " + t.ns + "/" + t.name
}

// cmdRef is the object as a command argument with its namespace.
func (t *target) cmdRef() string {
	if t.ns == "" {
		return t.typ.ref(t.name)
	}
	return t.typ.ref(t.name) + " -n " + t.ns
}

// load resolves arg and reads the object and what its placement selects.
func (r *rolloutOptions) load(ctx context.Context, arg string) (*target, error) {
	kind, name, err := splitRef(arg)
	if err != nil {
		return nil, err
	}
	ns, err := r.namespace()
	if err != nil {
		return nil, err
	}
	c, err := r.planeClients()
	if err != nil {
		return nil, err
	}
	typ, err := resolveType(ctx, c, kind, r.fedNamespace)
	if err != nil {
		return nil, err
	}
	if !typ.Namespaced {
		ns = ""
	}
	t := &target{c: c, prog: r.name, fedNamespace: r.fedNamespace, typ: typ, ns: ns, name: name}
	if typ.namesTarget(kind) && typ.TargetVersion != "" {
		if err := t.checkNative(ctx); err != nil {
			return nil, err
		}
	}
	if err := t.read(ctx); err != nil {
		return nil, err
	}
	return t, nil
}

// checkNative reads the native object a target kind names (deployment/web)
// and fails unless the federated object of its name is the one its
// propagation policy made, or a wrapper (checkNative in
// rollout_target.go). A native object that is not on the plane, or that
// the caller may not read, leaves the command to the federated object as
// before.
func (t *target) checkNative(ctx context.Context) error {
	n, err := t.c.Dynamic.Resource(t.typ.TargetResource()).Namespace(t.ns).Get(ctx, t.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
		return nil
	case err != nil:
		return apiError(err, "reading "+t.typ.TargetKind+" "+nsName(t.ns, t.name))
	}
	fed, err := t.c.Dynamic.Resource(t.typ.Resource()).Namespace(t.ns).Get(ctx, t.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		fed = nil
	case err != nil:
		return apiError(err, "reading "+t.ref())
	}
	return checkNative(t.typ, n, fed)
}

// read (re)reads the object.
func (t *target) read(ctx context.Context) error {
	obj, err := t.c.Dynamic.Resource(t.typ.Resource()).Namespace(t.ns).Get(ctx, t.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s not found; list them with `kubectl get %s.%s -n %s`", t.ref(), t.typ.Plural, t.typ.Group, t.ns)
	}
	if err != nil {
		return apiError(err, "reading "+t.ref())
	}
	return t.use(ctx, obj)
}

func (t *target) use(ctx context.Context, obj *unstructured.Unstructured) error {
	fed, err := rollout.Decode(obj)
	if err != nil {
		return withFix(err, "fix it with `kubectl edit "+t.cmdRef()+"`")
	}
	set, err := rollout.SettingsOf(obj)
	if err != nil {
		return withFix(fmt.Errorf("%s: %w", t.ref(), err), "fix or remove the annotation with `kubectl annotate`")
	}
	var candidates []placement.Topology
	if fed.Spec.Placement.TopologySelector != nil {
		if candidates, err = t.candidates(ctx, fed); err != nil {
			return err
		}
	}
	placed, err := placement.Topologies(fed.Spec.Placement, candidates)
	if err != nil {
		return withFix(fmt.Errorf("%s: %w", t.ref(), err), "fix the placement")
	}
	t.obj, t.fed, t.placed, t.set = obj, fed, placed, set
	return nil
}

// candidates are what a selector placement chooses from: the Cells of
// the namespace, or the physical KubeFedClusters (placement.Candidates,
// as the rollout controller decides).
func (t *target) candidates(ctx context.Context, fed *typesv1beta2.FederatedObject) ([]placement.Topology, error) {
	typ := placement.TopologyType(fed.Spec.Placement)
	var list *unstructured.UnstructuredList
	var err error
	if typ == typesv1beta2.TopologyCell {
		if list, err = t.c.Dynamic.Resource(cellv1alpha1.CellsResource).Namespace(t.ns).List(ctx, metav1.ListOptions{}); err != nil {
			return nil, apiError(err, "listing the cells of namespace "+t.ns)
		}
	} else if list, err = t.c.Dynamic.Resource(kubefed.KubeFedClustersResource).Namespace(t.fedNamespace).List(ctx, metav1.ListOptions{}); err != nil {
		return nil, apiError(err, "listing KubeFedClusters")
	}
	objs := make([]metav1.Object, len(list.Items))
	for i := range list.Items {
		objs[i] = &list.Items[i]
	}
	return placement.Candidates(typ, objs), nil
}

// mask is the object's mask (nil: none).
func (t *target) mask() []string { return placement.Mask(t.fed) }

// rows are the placed cells' rows.
func (t *target) rows() []rollout.Row { return rollout.Rows(t.fed, t.placed) }

// checkCells checks that every named cell is placed (and exists).
func (t *target) checkCells(ctx context.Context, cells []string) error {
	for _, cell := range cells {
		if slices.Contains(t.placed, cell) {
			continue
		}
		if placement.TopologyType(t.fed.Spec.Placement) == typesv1beta2.TopologyCell {
			_, err := t.c.Dynamic.Resource(cellv1alpha1.CellsResource).Namespace(t.ns).Get(ctx, cell, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return t.errorf("unknown cell %q: namespace %s has no such Cell; name placed cells of %s (%s), list the cells with `cellfedctl cell list -n %s`",
					cell, t.ns, t.ref(), joinOr(t.placed, "none"), t.ns)
			}
			if err != nil {
				return apiError(err, fmt.Sprintf("reading cell %s/%s", t.ns, cell))
			}
		}
		return fmt.Errorf("%s %q is not placed: %s is placed on %s; name placed ones, or add it to spec.placement first",
			placement.TopologyType(t.fed.Spec.Placement), cell, t.ref(), joinOr(t.placed, "nothing"))
	}
	return nil
}

// parseCells splits --cells values (comma-separated, repeatable).
func parseCells(values []string) ([]string, error) {
	var out []string
	for _, v := range values {
		for _, c := range strings.Split(v, ",") {
			c = strings.TrimSpace(c)
			if c == "" {
				continue
			}
			if !cellv1alpha1.IsDNSLabel(c) {
				return nil, fmt.Errorf("--cells: %q is not a cell name; cell names are DNS labels (lowercase letters, digits and '-')", c)
			}
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// batchFlags are --cells and --batch, one of which names the cells to
// release.
type batchFlags struct {
	cells []string
	batch int
}

func (b *batchFlags) add(cmd *cobra.Command, what string) {
	cmd.Flags().StringSliceVar(&b.cells, "cells", nil, "cells to "+what+", comma-separated (or repeat the flag)")
	cmd.Flags().IntVar(&b.batch, "batch", 0, "release the next N placed cells, in placement order, instead of naming them")
}

// check validates the flags before anything is read.
func (b *batchFlags) check(cmd *cobra.Command) ([]string, error) {
	cellsSet, batchSet := cmd.Flags().Changed("cells"), cmd.Flags().Changed("batch")
	switch {
	case cellsSet && batchSet:
		return nil, fmt.Errorf("--cells and --batch are exclusive; name the cells with --cells=a,b, or release the next N placed cells with --batch=N")
	case !cellsSet && !batchSet:
		return nil, fmt.Errorf("say which cells to release; name them with --cells=a,b, or take the next N placed cells with --batch=N")
	case batchSet && b.batch < 1:
		return nil, fmt.Errorf("--batch=%d: a batch is at least 1 cell; pass --batch=1 or more", b.batch)
	}
	if !cellsSet {
		return nil, nil
	}
	cells, err := parseCells(b.cells)
	if err == nil && len(cells) == 0 {
		err = fmt.Errorf("--cells names no cell; pass --cells=a,b")
	}
	return cells, err
}

// update writes the object changed by mutate, guarded by the
// resourceVersion it was read at, so a mask is written whole or not at
// all. The plane's controllers write status and rollout annotations all
// the time; a conflict is retried on a fresh read only while the spec
// (generation) and the rollout labels and annotations are what the
// command decided from. Otherwise the command fails and writes nothing.
func (t *target) update(ctx context.Context, mutate func(obj *unstructured.Unstructured) error) (*unstructured.Unstructured, error) {
	base := t.obj
	cur := base
	for attempt := 0; ; attempt++ {
		next := cur.DeepCopy()
		if err := mutate(next); err != nil {
			return nil, err
		}
		updated, err := t.c.Dynamic.Resource(t.typ.Resource()).Namespace(t.ns).Update(ctx, next, metav1.UpdateOptions{})
		if err == nil {
			return updated, nil
		}
		if !apierrors.IsConflict(err) || attempt == 4 {
			return nil, apiError(err, "updating "+t.ref())
		}
		fresh, gerr := t.c.Dynamic.Resource(t.typ.Resource()).Namespace(t.ns).Get(ctx, t.name, metav1.GetOptions{})
		if apierrors.IsNotFound(gerr) {
			return nil, fmt.Errorf("%s was deleted while the command ran; nothing was written", t.ref())
		}
		if gerr != nil {
			return nil, apiError(gerr, "reading "+t.ref())
		}
		if what := changedSince(base, fresh); what != "" {
			return nil, fmt.Errorf("%s changed since it was read (%s); nothing was written: re-run the command to act on its current state (`%s rollout status %s` shows it)",
				t.ref(), what, t.prog, t.cmdRef())
		}
		cur = fresh
	}
}

// bookkeeping are the rollout annotations the rollout controller keeps
// up to date on its own (state, the template it recorded, the batch's
// clock): a change of these alone does not invalidate a command's
// decision.
var bookkeeping = map[string]bool{
	rollout.AnnotationState: true, rollout.AnnotationMessage: true,
	rollout.AnnotationTemplateHash: true, rollout.AnnotationProgressSince: true,
}

// changedSince says what changed between two reads of an object that a
// rollout command decides from: the spec (generation), the object's
// identity, the rollout label and annotations. "" when nothing did.
func changedSince(old, cur *unstructured.Unstructured) string {
	switch {
	case old.GetUID() != cur.GetUID():
		return "it was deleted and created again"
	case old.GetGeneration() != cur.GetGeneration():
		return fmt.Sprintf("its spec changed: generation %d, now %d", old.GetGeneration(), cur.GetGeneration())
	case old.GetLabels()[rollout.LabelActive] != cur.GetLabels()[rollout.LabelActive]:
		return "a rollout was started or ended meanwhile"
	}
	pick := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			if strings.HasPrefix(k, rollout.Prefix) && !bookkeeping[k] {
				out[k] = v
			}
		}
		return out
	}
	if a, b := pick(old.GetAnnotations()), pick(cur.GetAnnotations()); !maps.Equal(a, b) {
		var keys []string
		for k := range a {
			if a[k] != b[k] {
				keys = append(keys, k)
			}
		}
		for k := range b {
			if _, ok := a[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		return "its rollout annotations changed: " + strings.Join(keys, ", ")
	}
	return ""
}

// inProgress fails unless a rollout is in progress (the object has a
// mask).
func (t *target) inProgress(cmdName string) error {
	if t.mask() != nil {
		return nil
	}
	return t.errorf("no rollout in progress on %s: it has no placement mask, every placed cell is released; start one with `cellfedctl rollout start %s --cells=<cell>` before %s",
		t.ref(), t.cmdRef(), cmdName)
}

// notPaused fails when the rollout is paused.
func (t *target) notPaused(what string) error {
	if !t.set.Paused {
		return nil
	}
	reason := t.set.PauseReason
	if reason == "" {
		reason = "no reason given"
	}
	return t.errorf("the rollout of %s is paused (%s), %s would move its mask; run `cellfedctl rollout resume %s` first", t.ref(), reason, what, t.cmdRef())
}

// readyCheck fails unless every released cell is updated and ready.
func (t *target) readyCheck(force bool, what string) error {
	if force {
		return nil
	}
	sum := rollout.Summarize(t.rows())
	if sum.Done {
		return nil
	}
	return t.errorf("not every released cell of %s is updated and ready: %s; wait with `cellfedctl rollout status %s --watch`, or pass --force to %s anyway",
		t.ref(), strings.Join(sum.Waiting, ", "), t.cmdRef(), what)
}

// record adds the object's current template to its history; a failure
// is a warning, as the change itself was written. Pruning is left to the
// rollout controller (--rollout-history-limit), so one limit applies.
func (r *rolloutOptions) record(ctx context.Context, t *target, obj *unstructured.Unstructured) {
	if _, err := (rollout.History{Client: t.c.Dynamic, Limit: -1}).Record(ctx, obj); err != nil {
		fmt.Fprintf(r.streams.ErrOut, "Warning: %s: recording the template in the rollout history: %v (rollout undo may not find it)\n", t.ref(), oneLine(err.Error()))
	}
}

// --- start ---

type rolloutStartOptions struct {
	*rolloutOptions
	batchFlags
	auto, pauseOnFailure bool
	deadline             time.Duration
}

func newRolloutStartCommand(r *rolloutOptions) *cobra.Command {
	s := &rolloutStartOptions{rolloutOptions: r}
	cmd := &cobra.Command{
		Use:   "start <kind>/<name> (--cells=a,b | --batch=N) [--auto [--pause-on-failure] [--progress-deadline=5m]]",
		Short: "Start a rollout: release the first batch of cells, hold back the others",
		Long: `Start a rollout: set the object's placement mask to the first batch of
placed cells, named with --cells or the first N in placement order with
--batch. The other placed cells are held back: they keep what they run.
Then change the template; only the batch gets it.

The template running now is recorded in the object's history
(TemplateRevisions), so rollout undo can restore it.

With --auto (needs --batch) cellfed-controller's rollout controller
releases the next --batch cells each time every released cell is updated
and ready, and removes the mask after the last batch. It starts once the
template differs from the one running now. --pause-on-failure pauses the
rollout when a released cell fails; --progress-deadline pauses it when a
batch is not updated and ready in time.`,
		Example: examples(r.name,
			"rollout start deployment/web -n shop --cells=rz00a",
			"rollout start federateddeployment/web -n shop --batch=1",
			"rollout start deployment/web -n shop --auto --batch=1 --pause-on-failure --progress-deadline=5m",
		),
		Args: exactArgs(1, "one object as <kind>/<name>"),
		RunE: func(c *cobra.Command, args []string) error { return s.run(c, args[0]) },
	}
	s.batchFlags.add(cmd, "release first")
	cmd.Flags().BoolVar(&s.auto, "auto", false, "let the rollout controller release the next --batch cells whenever the released ones are updated and ready")
	cmd.Flags().BoolVar(&s.pauseOnFailure, "pause-on-failure", false, "with --auto: pause when a released cell fails")
	cmd.Flags().DurationVar(&s.deadline, "progress-deadline", 0, "with --auto: pause when a batch is not updated and ready this long after its release (e.g. 5m; 0: no deadline)")
	return cmd
}

func (s *rolloutStartOptions) run(cmd *cobra.Command, arg string) error {
	ctx := cmd.Context()
	cells, err := s.check(cmd)
	if err != nil {
		return err
	}
	switch {
	case s.auto && !cmd.Flags().Changed("batch"):
		return fmt.Errorf("--auto needs --batch=N; pass the number of cells each automatic step releases, e.g. --auto --batch=1")
	case !s.auto && (s.pauseOnFailure || cmd.Flags().Changed("progress-deadline")):
		return fmt.Errorf("--pause-on-failure and --progress-deadline apply to automatic rollouts; add --auto --batch=N, or drop them")
	case s.deadline < 0:
		return fmt.Errorf("--progress-deadline=%s is negative; pass a positive duration such as 5m, or 0 for none", s.deadline)
	}
	if _, _, err := splitRef(arg); err != nil {
		return err
	}
	t, err := s.load(ctx, arg)
	if err != nil {
		return err
	}
	if m := t.mask(); m != nil {
		return t.errorf("a rollout is in progress on %s already (released: %s); widen it with `cellfedctl rollout next %s`, or end it with `cellfedctl rollout finish %s`",
			t.ref(), joinOr(m, "no cell"), t.cmdRef(), t.cmdRef())
	}
	if len(t.placed) == 0 {
		return fmt.Errorf("%s is placed on no cell, so there is nothing to roll out; set spec.placement first", t.ref())
	}
	batch := cells
	if batch == nil {
		batch = rollout.NextBatch(t.placed, nil, s.batch)
	} else if err := t.checkCells(ctx, cells); err != nil {
		return err
	}
	mask := rollout.Widen(t.placed, nil, batch)
	hash := rollout.TemplateHash(t.obj)
	now := s.now()
	state, message := rollout.StateProgressing, fmt.Sprintf("started by cellfedctl: released %s", strings.Join(mask, ", "))
	kv := map[string]string{
		rollout.AnnotationPaused: "", rollout.AnnotationPauseReason: "",
		rollout.AnnotationAuto: "", rollout.AnnotationBatchSize: "", rollout.AnnotationPauseOnFailure: "", rollout.AnnotationProgressDeadline: "",
		rollout.AnnotationBaselineHash: hash, rollout.AnnotationTemplateHash: hash,
		rollout.AnnotationProgressSince: rollout.FormatTime(now),
		rollout.AnnotationState:         state, rollout.AnnotationMessage: message,
	}
	if s.auto {
		kv[rollout.AnnotationAuto] = "true"
		kv[rollout.AnnotationBatchSize] = fmt.Sprint(s.batch)
		if s.pauseOnFailure {
			kv[rollout.AnnotationPauseOnFailure] = "true"
		}
		if s.deadline > 0 {
			kv[rollout.AnnotationProgressDeadline] = s.deadline.String()
		}
		kv[rollout.AnnotationState] = rollout.StateWaiting
		kv[rollout.AnnotationMessage] = "waiting for a new template"
	}
	updated, err := t.update(ctx, func(obj *unstructured.Unstructured) error {
		if err := placement.SetMask(obj, mask); err != nil {
			return err
		}
		labels := obj.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[rollout.LabelActive] = "true"
		obj.SetLabels(labels)
		rollout.SetAnnotations(obj, kv)
		return nil
	})
	if err != nil {
		return err
	}
	s.record(ctx, t, updated)
	held := rollout.Unreleased(t.placed, mask)
	printf(s.streams.Out, "rollout of %s started: released %s (%d of %d placed cells); held back: %s\n",
		t.ref(), strings.Join(mask, ", "), len(mask), len(t.placed), joinOr(held, "none"))
	if s.auto {
		extra := ""
		if s.pauseOnFailure {
			extra += ", pausing when a released cell fails"
		}
		if s.deadline > 0 {
			extra += fmt.Sprintf(", pausing when a batch is not updated and ready within %s", s.deadline)
		}
		printf(s.streams.Out, "Automatic: once the template changes, cellfed-controller releases %d more cell(s) each time the released ones are updated and ready%s.\n", s.batch, extra)
	}
	printf(s.streams.Out, "Now change the template; follow with `%s rollout status %s --watch`.\n", s.name, t.cmdRef())
	return nil
}

// --- next ---

type rolloutNextOptions struct {
	*rolloutOptions
	batchFlags
	force bool
}

func newRolloutNextCommand(r *rolloutOptions) *cobra.Command {
	n := &rolloutNextOptions{rolloutOptions: r}
	cmd := &cobra.Command{
		Use:   "next <kind>/<name> (--cells=c | --batch=N)",
		Short: "Release more cells: widen the mask",
		Long: `Widen the placement mask by the cells named with --cells, or by the next N
held back cells in placement order with --batch. Refused while the rollout
is paused, and while a released cell is not updated and ready (unless
--force).`,
		Example: examples(r.name, "rollout next deployment/web -n shop --cells=rz10a", "rollout next deployment/web -n shop --batch=2"),
		Args:    exactArgs(1, "one object as <kind>/<name>"),
		RunE:    func(c *cobra.Command, args []string) error { return n.run(c, args[0]) },
	}
	n.batchFlags.add(cmd, "release next")
	cmd.Flags().BoolVar(&n.force, "force", false, "release even though released cells are not all updated and ready")
	return cmd
}

func (n *rolloutNextOptions) run(cmd *cobra.Command, arg string) error {
	ctx := cmd.Context()
	cells, err := n.check(cmd)
	if err != nil {
		return err
	}
	if _, _, err := splitRef(arg); err != nil {
		return err
	}
	t, err := n.load(ctx, arg)
	if err != nil {
		return err
	}
	if err := t.inProgress("next"); err != nil {
		return err
	}
	if err := t.notPaused("next"); err != nil {
		return err
	}
	mask := t.mask()
	batch := cells
	if batch == nil {
		if batch = rollout.NextBatch(t.placed, mask, n.batch); len(batch) == 0 {
			return t.errorf("every placed cell of %s is released already; end the rollout with `cellfedctl rollout finish %s`", t.ref(), t.cmdRef())
		}
	} else {
		if err := t.checkCells(ctx, cells); err != nil {
			return err
		}
		for _, c := range cells {
			if slices.Contains(mask, c) {
				return fmt.Errorf("cell %q of %s is released already; name held back cells (%s)", c, t.ref(), joinOr(rollout.Unreleased(t.placed, mask), "none: run `rollout finish`"))
			}
		}
	}
	if err := t.readyCheck(n.force, "release more"); err != nil {
		return err
	}
	next := rollout.Widen(t.placed, mask, batch)
	_, err = t.update(ctx, func(obj *unstructured.Unstructured) error {
		if err := placement.SetMask(obj, next); err != nil {
			return err
		}
		rollout.SetAnnotations(obj, map[string]string{
			rollout.AnnotationProgressSince: rollout.FormatTime(n.now()),
			rollout.AnnotationState:         rollout.StateProgressing,
			rollout.AnnotationMessage:       "cellfedctl rollout next released " + strings.Join(batch, ", "),
		})
		return nil
	})
	if err != nil {
		return err
	}
	printf(n.streams.Out, "%s: released %s (%d of %d placed cells); held back: %s\n", t.ref(), strings.Join(batch, ", "),
		len(next), len(t.placed), joinOr(rollout.Unreleased(t.placed, next), "none (run `rollout finish` to remove the mask)"))
	return nil
}

// --- finish ---

type rolloutFinishOptions struct {
	*rolloutOptions
	force bool
}

func newRolloutFinishCommand(r *rolloutOptions) *cobra.Command {
	f := &rolloutFinishOptions{rolloutOptions: r}
	cmd := &cobra.Command{
		Use:   "finish <kind>/<name>",
		Short: "End a rollout: remove the mask, every placed cell gets the change",
		Long: `Remove the placement mask and the rollout's annotations: every placed cell
is released. Refused while the rollout is paused or a released cell is not
updated and ready, unless --force.`,
		Example: examples(r.name, "rollout finish deployment/web -n shop"),
		Args:    exactArgs(1, "one object as <kind>/<name>"),
		RunE:    func(c *cobra.Command, args []string) error { return f.run(c.Context(), args[0]) },
	}
	cmd.Flags().BoolVar(&f.force, "force", false, "finish even though the rollout is paused or released cells are not all updated and ready")
	return cmd
}

func (f *rolloutFinishOptions) run(ctx context.Context, arg string) error {
	if _, _, err := splitRef(arg); err != nil {
		return err
	}
	t, err := f.load(ctx, arg)
	if err != nil {
		return err
	}
	if err := t.inProgress("finish"); err != nil {
		return err
	}
	if !f.force {
		if err := t.notPaused("finish"); err != nil {
			return withFix(err, "")
		}
	}
	if err := t.readyCheck(f.force, "finish"); err != nil {
		return err
	}
	held := rollout.Unreleased(t.placed, t.mask())
	_, err = t.update(ctx, func(obj *unstructured.Unstructured) error {
		rollout.End(obj, rollout.StateFinished, "finished by cellfedctl rollout finish: every placed cell released")
		return nil
	})
	if err != nil {
		return err
	}
	printf(f.streams.Out, "rollout of %s finished: mask removed, every placed cell is released (newly released: %s)\n", t.ref(), joinOr(held, "none"))
	return nil
}

// --- pause / resume ---

type rolloutPauseOptions struct {
	*rolloutOptions
	reason string
}

func newRolloutPauseCommand(r *rolloutOptions) *cobra.Command {
	p := &rolloutPauseOptions{rolloutOptions: r}
	cmd := &cobra.Command{
		Use:   "pause <kind>/<name>",
		Short: "Freeze a rollout's mask: neither the rollout controller nor rollout next moves it",
		Long: `Pause a rollout: the mask stays as it is until rollout resume. Released
cells still get template changes; held back cells keep what they run.`,
		Example: examples(r.name, `rollout pause deployment/web -n shop --reason="checking error rates"`),
		Args:    exactArgs(1, "one object as <kind>/<name>"),
		RunE:    func(c *cobra.Command, args []string) error { return p.run(c.Context(), args[0]) },
	}
	cmd.Flags().StringVar(&p.reason, "reason", "", "why, shown by rollout status (default: paused with cellfedctl)")
	return cmd
}

func (p *rolloutPauseOptions) run(ctx context.Context, arg string) error {
	if _, _, err := splitRef(arg); err != nil {
		return err
	}
	t, err := p.load(ctx, arg)
	if err != nil {
		return err
	}
	if err := t.inProgress("pause"); err != nil {
		return err
	}
	if t.set.Paused {
		printf(p.streams.Out, "rollout of %s is paused already (%s)\n", t.ref(), t.set.PauseReason)
		return nil
	}
	reason := p.reason
	if reason == "" {
		reason = "paused with cellfedctl rollout pause"
	}
	_, err = t.update(ctx, func(obj *unstructured.Unstructured) error {
		rollout.SetAnnotations(obj, map[string]string{
			rollout.AnnotationPaused: "true", rollout.AnnotationPauseReason: reason,
			rollout.AnnotationState: rollout.StatePaused, rollout.AnnotationMessage: reason,
		})
		return nil
	})
	if err != nil {
		return err
	}
	printf(p.streams.Out, "rollout of %s paused (%s); released: %s; resume with `%s rollout resume %s`\n", t.ref(), reason, joinOr(t.mask(), "no cell"), p.name, t.cmdRef())
	return nil
}

func newRolloutResumeCommand(r *rolloutOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "resume <kind>/<name>",
		Short: "Release a paused rollout's mask again",
		Long: `Resume a paused rollout: rollout next works again, and an automatic
rollout goes on. The progress deadline of the current batch starts again.`,
		Example: examples(r.name, "rollout resume deployment/web -n shop"),
		Args:    exactArgs(1, "one object as <kind>/<name>"),
		RunE: func(c *cobra.Command, args []string) error {
			ctx := c.Context()
			t, err := r.load(ctx, args[0])
			if err != nil {
				return err
			}
			if err := t.inProgress("resume"); err != nil {
				return err
			}
			if !t.set.Paused {
				printf(r.streams.Out, "rollout of %s is not paused; nothing to do\n", t.ref())
				return nil
			}
			_, err = t.update(ctx, func(obj *unstructured.Unstructured) error {
				rollout.SetAnnotations(obj, map[string]string{
					rollout.AnnotationPaused: "", rollout.AnnotationPauseReason: "",
					rollout.AnnotationProgressSince: rollout.FormatTime(r.now()),
					rollout.AnnotationState:         rollout.StateProgressing, rollout.AnnotationMessage: "resumed with cellfedctl rollout resume",
				})
				return nil
			})
			if err != nil {
				return err
			}
			printf(r.streams.Out, "rollout of %s resumed (it was paused: %s)\n", t.ref(), t.set.PauseReason)
			return nil
		},
	}
}
