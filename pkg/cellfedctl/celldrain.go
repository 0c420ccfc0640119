package cellfedctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
)

// drainOptions are cell delete's --drain flags.
type drainOptions struct {
	drain        bool
	timeout      time.Duration
	interval     time.Duration
	fedNamespace string
}

// lookTimeout bounds one look at a cell while waiting for it.
const lookTimeout = 30 * time.Second

// lookWithin runs one look with its own deadline (lookTimeout), not the
// wait's.
func lookWithin[T any](ctx context.Context, look func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, lookTimeout)
	defer cancel()
	return look(ctx)
}

// drainState is what one look at a draining cell shows.
type drainState struct {
	// seen: the cell's KubeFedCluster carries the draining label, so
	// cellfed-controller has stopped placing through it.
	seen bool
	// counted: the cell's status.objects is set; held is its value.
	counted bool
	held    int64
}

// drained reports whether a draining cell may be deleted: the
// controller works from the drain and counts no object left on it. It is
// a pure function.
func (s drainState) drained() bool { return s.seen && s.counted && s.held == 0 }

// progress is the line printed when the state changes.
func (s drainState) progress(ns, name string) string {
	switch {
	case !s.seen:
		return fmt.Sprintf("cell %s/%s: waiting for cellfed-controller to see the drain\n", ns, name)
	case !s.counted:
		return fmt.Sprintf("cell %s/%s: waiting for cellfed-controller to count its objects\n", ns, name)
	}
	return fmt.Sprintf("cell %s/%s: %d objects left on its cluster\n", ns, name, s.held)
}

// drainCell retires one cell: it labels the Cell draining (so every
// object placed through it is removed from its member, as a deletion
// would, orphan annotation honoured), waits until the cell holds nothing,
// printing progress, then deletes the Cell. Interrupted, the drain goes
// on in cellfed-controller, and running the command again resumes the
// wait; removing the label stops it (the objects come back).
func drainCell(ctx context.Context, o *options, d drainOptions, ns, name string) error {
	plane, err := o.planeClients()
	if err != nil {
		return err
	}
	cells := plane.Dynamic.Resource(cellv1alpha1.CellsResource).Namespace(ns)
	cell, err := cells.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return apiError(err, fmt.Sprintf("reading cell %s/%s", ns, name))
	}
	if cell.GetLabels()[cellv1alpha1.LabelDraining] != "true" {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{cellv1alpha1.LabelDraining: "true"}}})
		if _, err := cells.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return apiError(err, fmt.Sprintf("labelling cell %s/%s %s=true", ns, name, cellv1alpha1.LabelDraining))
		}
		printf(o.streams.Out, "cell %s/%s: draining: nothing is placed through it any more, and its member objects are being removed\n", ns, name)
	} else {
		printf(o.streams.Out, "cell %s/%s: already draining; waiting for it to be empty\n", ns, name)
	}
	clusters := plane.Dynamic.Resource(kubefed.KubeFedClustersResource).Namespace(d.fedNamespace)
	clusterName := cellv1alpha1.CellClusterName(ns, name)
	look := func(ctx context.Context) (drainState, error) {
		var s drainState
		cl, err := clusters.Get(ctx, clusterName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			// No per-cell cluster: nothing can be placed through the cell.
			s.seen = true
		case err != nil:
			return s, apiError(err, "reading KubeFedCluster "+clusterName)
		default:
			s.seen = cl.GetLabels()[cellv1alpha1.LabelDraining] == "true"
		}
		c, err := cells.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return s, apiError(err, fmt.Sprintf("reading cell %s/%s", ns, name))
		}
		s.held, s.counted, _ = unstructured.NestedInt64(c.Object, "status", "objects")
		return s, nil
	}
	wctx := ctx
	if d.timeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, d.timeout)
		defer cancel()
	}
	tick := time.NewTicker(d.interval)
	defer tick.Stop()
	last := ""
	for {
		// Each look has its own deadline, not the wait's: a read that
		// would outlast --timeout (client-go's rate limiter refuses it
		// before the deadline passes) is not an error of the drain.
		s, err := lookWithin(ctx, look)
		if err != nil && ctx.Err() == nil {
			return err
		}
		if err == nil {
			if line := s.progress(ns, name); line != last {
				printf(o.streams.Out, "%s", line)
				last = line
			}
			if s.drained() {
				err := cells.Delete(ctx, name, metav1.DeleteOptions{})
				if err == nil || apierrors.IsNotFound(err) {
					printf(o.streams.Out, "cell %s/%s drained and deleted\n", ns, name)
					return nil
				}
				// The cell's count can be behind its objects (counted
				// before they were placed): the plane refuses to delete
				// a draining cell that still holds some, and the drain
				// goes on until the count is right.
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "is draining but") {
					return apiError(err, fmt.Sprintf("deleting drained cell %s/%s", ns, name))
				}
			}
		}
		select {
		case <-wctx.Done():
			why := "interrupted"
			if errors.Is(wctx.Err(), context.DeadlineExceeded) {
				why = fmt.Sprintf("not drained after %s", d.timeout)
			}
			return withFix(fmt.Errorf("cell %s/%s %s: it keeps draining in cellfed-controller", ns, name, why),
				fmt.Sprintf("run `%s cell delete %s -n %s --drain` again to wait and delete it; `%s cell list -n %s` shows what it holds; to stop draining (its objects come back), run `kubectl label cells.%s %s -n %s %s-`",
					o.name, name, ns, o.name, ns, cellv1alpha1.GroupName, name, ns, cellv1alpha1.LabelDraining))
		case <-tick.C:
		}
	}
}
