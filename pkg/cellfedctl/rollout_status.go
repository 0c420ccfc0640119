package cellfedctl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/utils/clock"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/policy/federate"
	"github.com/cellfed/cellfed/pkg/rollout"
)

// ExitNotDone is rollout status's exit code while a released cell is not
// updated and ready (1 is an error).
const ExitNotDone = 2

// exitCode ends the command with code, after msg (if any) on stderr as
// `error: msg`.
type exitCode struct {
	code int
	msg  string
}

func (e exitCode) Error() string {
	if e.msg == "" {
		return fmt.Sprintf("exit code %d", e.code)
	}
	return e.msg
}

// exitCodeOf is the exit code an error asks for, and whether to print it.
func exitCodeOf(err error) (code int, print bool) {
	var ec exitCode
	if errors.As(err, &ec) {
		return ec.code, ec.msg != ""
	}
	return 1, true
}

// --- status ---

type rolloutStatusOptions struct {
	*rolloutOptions
	watch   bool
	timeout time.Duration
	// interval is how often --watch reads the object again, on clock
	// (tests set a fake one).
	interval time.Duration
	clock    clock.WithTicker
}

func newRolloutStatusOptions(r *rolloutOptions) *rolloutStatusOptions {
	return &rolloutStatusOptions{rolloutOptions: r, interval: time.Second, clock: clock.RealClock{}}
}

func newRolloutStatusCommand(r *rolloutOptions) *cobra.Command {
	s := newRolloutStatusOptions(r)
	cmd := &cobra.Command{
		Use:   "status <kind>/<name> [--watch [--timeout=10m]]",
		Short: "Show each placed cell of a rollout; exit code 0 once the released cells are updated and ready",
		Long: `Print one row per placed cell, in rollout order:

  STATE        updated    released, runs the object's current generation, ready
               not ready  released and current, but the member object is not ready
               updating   released, not yet brought to the current generation
               held back  outside the mask: keeps what it runs
               failed     propagation failed, or the member reports it cannot progress
  GENERATION   the object's generation the cell runs
  READY        the member object's readiness (status reflow)
  ASSIGNED     replicas the replica division assigns the cell (shown only
               for an object with spec.replicaDivision mode Divide)
  REPLICAS     ready/desired replicas the member reports
  PROPAGATION  the propagation status of the cell

The exit code is 0 when every released cell is updated and ready (for an
automatic rollout: once it has finished), 2 when not yet, 1 on an error; so
scripts can run "status && next". --watch prints the table again whenever
it changes until the rollout is done; it fails when an automatic rollout
pauses, or after --timeout.`,
		Example: examples(r.name,
			"rollout status deployment/web -n shop",
			"rollout status deployment/web -n shop --watch --timeout=10m && "+r.name+" rollout next deployment/web -n shop --batch=1",
		),
		Args: exactArgs(1, "one object as <kind>/<name>"),
		RunE: func(c *cobra.Command, args []string) error { return s.run(c.Context(), args[0]) },
	}
	cmd.Flags().BoolVarP(&s.watch, "watch", "w", false, "print again on every change until every released cell is updated and ready")
	cmd.Flags().DurationVar(&s.timeout, "timeout", 0, "with --watch: give up after this long (0: never)")
	return cmd
}

// statusView is what one status table says.
type statusView struct {
	text string
	done bool
	// stuck is why the rollout cannot get done without a person: an
	// automatic rollout that paused.
	stuck string
}

func (s *rolloutStatusOptions) run(ctx context.Context, arg string) error {
	if _, _, err := splitRef(arg); err != nil {
		return err
	}
	if s.timeout < 0 {
		return fmt.Errorf("--timeout=%s is negative; pass a duration such as 10m, or 0 for no limit", s.timeout)
	}
	if s.timeout > 0 && !s.watch {
		return fmt.Errorf("--timeout applies to --watch; add --watch, or drop --timeout")
	}
	t, err := s.load(ctx, arg)
	if err != nil {
		return err
	}
	v := viewOf(t)
	if _, err := io.WriteString(s.streams.Out, v.text); err != nil {
		return err
	}
	if !s.watch {
		if v.done {
			return nil
		}
		return exitCode{code: ExitNotDone}
	}
	return s.follow(ctx, t, v)
}

// follow is --watch: it reads t again every interval and prints the table
// whenever it changed, until t is done (v is what was printed last).
func (s *rolloutStatusOptions) follow(ctx context.Context, t *target, v statusView) error {
	if s.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.timeout)
		defer cancel()
	}
	last := v.text
	tick := s.clock.NewTicker(s.interval)
	defer tick.Stop()
	for !v.done {
		if v.stuck != "" {
			return fmt.Errorf("%s; fix the cause, then `%s rollout resume %s`", v.stuck, s.name, t.cmdRef())
		}
		select {
		case <-ctx.Done():
			if s.timeout == 0 || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("stopped watching %s before it was done; run `%s rollout status %s --watch` again to follow it", t.ref(), s.name, t.cmdRef())
			}
			return fmt.Errorf("%s is not done after %s; run `%s rollout status %s` to see it, or wait longer with --timeout", t.ref(), s.timeout, s.name, t.cmdRef())
		case <-tick.C():
		}
		if err := t.read(ctx); err != nil {
			if ctx.Err() != nil {
				continue
			}
			return err
		}
		if v = viewOf(t); v.text != last {
			if _, err := io.WriteString(s.streams.Out, "\n"+v.text); err != nil {
				return err
			}
			last = v.text
		}
	}
	return nil
}

// viewOf renders the status table of t and says whether it is done.
func viewOf(t *target) statusView {
	var b bytes.Buffer
	rows := t.rows()
	sum := rollout.Summarize(rows)
	mask := t.mask()
	gen := t.obj.GetGeneration()
	fmt.Fprintf(&b, "%s: generation %d", t.ref(), gen)
	if t.fed.Status == nil || t.fed.Status.ObservedGeneration != gen {
		observed := int64(0)
		if t.fed.Status != nil {
			observed = t.fed.Status.ObservedGeneration
		}
		fmt.Fprintf(&b, " (the controller has seen %d)", observed)
	}
	if mask == nil {
		fmt.Fprintf(&b, ", no rollout in progress: all %d placed cells released\n", len(t.placed))
	} else {
		fmt.Fprintf(&b, ", %d of %d placed cells released\n", sum.Released, sum.Placed)
	}
	if t.set.Active {
		mode := "manual"
		if t.set.Auto {
			mode = fmt.Sprintf("automatic, %d cell(s) per batch", t.set.BatchSize)
			if t.set.PauseOnFailure {
				mode += ", pause on failure"
			}
			if t.set.ProgressDeadline > 0 {
				mode += ", progress deadline " + t.set.ProgressDeadline.String()
			}
		}
		fmt.Fprintf(&b, "Rollout: %s", mode)
		switch {
		case t.set.Paused:
			fmt.Fprintf(&b, "; PAUSED: %s", t.set.PauseReason)
		case t.set.State != "":
			fmt.Fprintf(&b, "; %s: %s", t.set.State, t.set.Message)
		}
		b.WriteString("\n")
	} else if t.set.State != "" && mask == nil {
		fmt.Fprintf(&b, "Last rollout: %s: %s\n", t.set.State, t.set.Message)
	}
	writeRows(&b, rows)
	v := statusView{done: sum.Done}
	if t.set.Active && t.set.Auto && mask != nil {
		// An automatic rollout is done when it has finished.
		v.done = false
		if t.set.Paused {
			v.stuck = fmt.Sprintf("the automatic rollout of %s is paused: %s", t.ref(), t.set.PauseReason)
		}
	}
	switch {
	case v.done && mask == nil:
		fmt.Fprintf(&b, "rollout complete: all %d placed cells updated and ready\n", sum.Placed)
	case v.done:
		fmt.Fprintf(&b, "batch complete: %d released cell(s) updated and ready, %d held back\n", sum.Released, sum.Placed-sum.Released)
	case sum.Done:
		fmt.Fprintf(&b, "batch complete: %d released cell(s) updated and ready, %d held back; the rollout controller releases the next batch\n", sum.Released, sum.Placed-sum.Released)
	default:
		fmt.Fprintf(&b, "waiting: %d of %d released cell(s) updated and ready; not yet: %s\n", sum.UpdatedReady, sum.Released, strings.Join(sum.Waiting, ", "))
	}
	v.text = b.String()
	return v
}

func writeRows(w io.Writer, rows []rollout.Row) {
	tw := tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
	// ASSIGNED only for an object whose replicas are divided.
	divided := slices.ContainsFunc(rows, func(r rollout.Row) bool { return r.Assigned != nil })
	if divided {
		fmt.Fprintln(tw, "CELL\tSTATE\tGENERATION\tREADY\tASSIGNED\tREPLICAS\tPROPAGATION")
	} else {
		fmt.Fprintln(tw, "CELL\tSTATE\tGENERATION\tREADY\tREPLICAS\tPROPAGATION")
	}
	for _, r := range rows {
		ready := "-"
		if r.Ready != nil {
			ready = fmt.Sprint(*r.Ready)
		}
		gen := "-"
		if r.Generation > 0 {
			gen = fmt.Sprint(r.Generation)
		}
		replicas := r.Replicas
		if replicas == "" {
			replicas = "-"
		}
		prop := r.Status
		if prop == "" {
			prop = "-"
		}
		if r.State == rollout.Failed && r.Detail != "" && r.Detail != r.Status {
			prop = r.Detail
		}
		if divided {
			assigned := "-"
			if r.Assigned != nil {
				assigned = fmt.Sprint(*r.Assigned)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Cell, r.State, gen, ready, assigned, replicas, prop)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Cell, r.State, gen, ready, replicas, prop)
	}
	_ = tw.Flush()
}

// --- undo ---

type rolloutUndoOptions struct {
	*rolloutOptions
	toRevision int64
}

func newRolloutUndoCommand(r *rolloutOptions) *cobra.Command {
	u := &rolloutUndoOptions{rolloutOptions: r}
	cmd := &cobra.Command{
		Use:   "undo <kind>/<name> [--to-revision=N]",
		Short: "Restore the previous template (and overrides) in the released cells",
		Long: `Set spec.template and spec.overrides back to the previous revision in the
object's history (or --to-revision, see rollout history), in one guarded
update that keeps the mask: the released cells get the restored template,
held back cells keep what they run. An automatic rollout is paused.`,
		Example: examples(r.name, "rollout undo deployment/web -n shop", "rollout undo deployment/web -n shop --to-revision=3"),
		Args:    exactArgs(1, "one object as <kind>/<name>"),
		RunE:    func(c *cobra.Command, args []string) error { return u.run(c.Context(), args[0]) },
	}
	cmd.Flags().Int64Var(&u.toRevision, "to-revision", 0, "the revision to restore (default: the one before the current template)")
	return cmd
}

func (u *rolloutUndoOptions) run(ctx context.Context, arg string) error {
	if _, _, err := splitRef(arg); err != nil {
		return err
	}
	if u.toRevision < 0 {
		return fmt.Errorf("--to-revision=%d: revisions are numbered from 1; list them with `%s rollout history %s`", u.toRevision, u.name, arg)
	}
	t, err := u.load(ctx, arg)
	if err != nil {
		return err
	}
	if err := policyUndo(t); err != nil {
		return err
	}
	h := rollout.History{Client: t.c.Dynamic}
	revs, err := h.List(ctx, t.obj)
	if err != nil {
		return apiError(err, "reading the rollout history of "+t.ref())
	}
	hash := rollout.TemplateHash(t.obj)
	var rev *cellv1alpha1.TemplateRevision
	if u.toRevision > 0 {
		for i := range revs {
			if revs[i].Spec.Revision == u.toRevision {
				rev = &revs[i]
			}
		}
		if rev == nil {
			return fmt.Errorf("%s has no revision %d (it has %s); list them with `%s rollout history %s`", t.ref(), u.toRevision, revisionNumbers(revs), u.name, t.cmdRef())
		}
		if rev.Spec.Hash == hash {
			return fmt.Errorf("%s runs revision %d already; name another with --to-revision (see `%s rollout history %s`)", t.ref(), u.toRevision, u.name, t.cmdRef())
		}
	} else if rev = rollout.Previous(revs, hash); rev == nil {
		return fmt.Errorf("no earlier template of %s is recorded (history: %s), so there is nothing to undo; the history starts with `%s rollout start`",
			t.ref(), revisionNumbers(revs), u.name)
	}
	// A FederatedSecret's revision keeps its data in a Secret of its own.
	if rev, err = h.Load(ctx, rev); err != nil {
		return apiError(err, "reading revision data of "+t.ref())
	}
	mask := t.mask()
	pause := t.set.Active && t.set.Auto && !t.set.Paused
	reason := fmt.Sprintf("undone to revision %d with cellfedctl rollout undo", rev.Spec.Revision)
	updated, err := t.update(ctx, func(obj *unstructured.Unstructured) error {
		if err := rollout.Restore(obj, rev); err != nil {
			return err
		}
		if pause {
			rollout.SetAnnotations(obj, map[string]string{
				rollout.AnnotationPaused: "true", rollout.AnnotationPauseReason: reason,
				rollout.AnnotationState: rollout.StatePaused, rollout.AnnotationMessage: reason,
			})
		}
		return nil
	})
	if err != nil {
		return err
	}
	// The template replaced is recorded too (the controller may not have
	// seen it), then the restored one becomes the newest revision.
	u.record(ctx, t, t.obj)
	u.record(ctx, t, updated)
	where := "every placed cell (no rollout in progress)"
	if mask != nil {
		where = fmt.Sprintf("the released cells (%s); held back cells keep what they run (%s)", joinOr(mask, "none"), joinOr(rollout.Unreleased(t.placed, mask), "none"))
	}
	printf(u.streams.Out, "%s: template restored to revision %d; it reaches %s\n", t.ref(), rev.Spec.Revision, where)
	if pause {
		printf(u.streams.Out, "The automatic rollout is paused (%s); `%s rollout resume %s` goes on with the restored template.\n", reason, u.name, t.cmdRef())
	}
	return nil
}

// policyUndo refuses to undo an object a propagation policy made: its
// template is the native object's, and the plane refuses a hand edit of
// it; the native object is what to roll back.
func policyUndo(t *target) error {
	policy := federate.PolicyOf(t.obj)
	if policy == "" {
		return nil
	}
	native := "its native object"
	if owner := metav1.GetControllerOfNoCopy(t.obj); owner != nil {
		native = owner.Kind + " " + nsName(t.ns, owner.Name)
	}
	return fmt.Errorf("the template of %s is made from %s by %s, which own it (the plane refuses to change it here); roll back %s instead (helm rollback, or kubectl apply of its earlier manifest): the released cells get it as any change, through the rollout's mask",
		t.ref(), native, strings.Replace(policy, "/", " ", 1), native)
}

func revisionNumbers(revs []cellv1alpha1.TemplateRevision) string {
	var out []string
	for _, r := range revs {
		out = append(out, fmt.Sprint(r.Spec.Revision))
	}
	return joinOr(out, "none")
}

// --- history ---

func newRolloutHistoryCommand(r *rolloutOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "history <kind>/<name>",
		Short: "List the templates recorded for rollout undo",
		Long: fmt.Sprintf(`List the object's TemplateRevisions, oldest first: REVISION (undo
--to-revision takes it), the template hash, the object's generation when it
was recorded, the container images of the template, and which one the
object runs now. cellfed-controller keeps the newest %d per object (its
--rollout-history-limit); they are deleted with the object.`, rollout.DefaultHistoryLimit),
		Example: examples(r.name, "rollout history deployment/web -n shop"),
		Args:    exactArgs(1, "one object as <kind>/<name>"),
		RunE: func(c *cobra.Command, args []string) error {
			ctx := c.Context()
			t, err := r.load(ctx, args[0])
			if err != nil {
				return err
			}
			revs, err := rollout.History{Client: t.c.Dynamic}.List(ctx, t.obj)
			if err != nil {
				return apiError(err, "reading the rollout history of "+t.ref())
			}
			if len(revs) == 0 {
				fmt.Fprintf(r.streams.ErrOut, "No revisions recorded for %s (the history starts with `%s rollout start`).\n", t.ref(), r.name)
				return nil
			}
			PrintRevisions(r.streams.Out, revs, rollout.TemplateHash(t.obj), time.Now())
			return nil
		},
	}
}

// PrintRevisions writes the history table.
func PrintRevisions(w io.Writer, revs []cellv1alpha1.TemplateRevision, current string, now time.Time) {
	tw := tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tHASH\tGENERATION\tIMAGES\tAGE\tCURRENT")
	for _, r := range revs {
		cur := ""
		if r.Spec.Hash == current {
			cur = "*"
		}
		age := "<unknown>"
		if !r.CreationTimestamp.IsZero() {
			age = duration.HumanDuration(now.Sub(r.CreationTimestamp.Time))
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\n", r.Spec.Revision, rollout.ShortHash(r.Spec.Hash), r.Spec.Generation,
			joinOr(rollout.Images(r.Spec.Template.Raw), "-"), age, cur)
	}
	_ = tw.Flush()
}
