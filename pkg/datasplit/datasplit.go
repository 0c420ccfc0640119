// Package datasplit moves one API resource of a running plane onto a
// database of its own: freeze its writes (package writefreeze), copy its
// rows with their revisions (kinedata.Split), let the operator restart
// each replica with --datastore-override, then lift the freeze once every
// live replica serves the resource from the new database.
package datasplit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/cellfed/cellfed/pkg/storage"
	"github.com/cellfed/cellfed/pkg/storage/kinedata"
	"github.com/cellfed/cellfed/pkg/writefreeze"
)

// Options are one split's.
type Options struct {
	// Config reaches the plane (an administrator's kubeconfig).
	Config *rest.Config
	// Resource is what moves.
	Resource schema.GroupResource
	// From is the plane's main store, To the resource's own database.
	From, To storage.Database
	// ToEndpoint is To as the operator wrote it (for the override flag).
	ToEndpoint string
	Force      bool
	Batch      int64
	Out        io.Writer
	// ProgressEvery is the least time between two progress lines.
	ProgressEvery time.Duration
	// EnforceTimeout bounds the wait for every replica to refuse writes.
	EnforceTimeout time.Duration
	// LiveWithin: a replica whose identity Lease was renewed this recently
	// is running (the API server renews it every 10 s).
	LiveWithin time.Duration
}

// target is the resolved resource.
type target struct {
	gvr        schema.GroupVersionResource
	namespaced bool
	prefix     string
}

func resolve(ctx context.Context, cfg *rest.Config, gr schema.GroupResource) (target, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return target{}, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	gvr, err := mapper.ResourceFor(gr.WithVersion(""))
	if err != nil {
		return target{}, fmt.Errorf("the plane serves no resource %s (group/plural, e.g. core.kubefed.io/propagatedversions or core/events): %w", gr, err)
	}
	kind, err := mapper.KindFor(gvr)
	if err != nil {
		return target{}, err
	}
	m, err := mapper.RESTMapping(kind.GroupKind(), gvr.Version)
	if err != nil {
		return target{}, err
	}
	t := target{gvr: gvr, namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace}
	// Custom resources are stored under /registry/<group>/<resource>/,
	// built-in ones under /registry/<resource>/ (the plane serves none of
	// Kubernetes' few exceptions); the object count check below catches
	// a wrong guess before anything switches.
	crd := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return target{}, err
	}
	_, err = dyn.Resource(crd).Get(ctx, gr.Resource+"."+gr.Group, metav1.GetOptions{})
	switch {
	case err == nil:
		t.prefix = "/registry/" + gr.Group + "/" + gr.Resource + "/"
	case apierrors.IsNotFound(err):
		t.prefix = "/registry/" + gr.Resource + "/"
	default:
		return target{}, fmt.Errorf("reading the CustomResourceDefinition of %s: %w", gr, err)
	}
	return t, nil
}

// Start freezes the resource's writes, copies it and verifies the copy.
// The freeze stays: the operator restarts every replica with the
// override, then runs Finish (or Abort to give up).
func Start(ctx context.Context, o Options) (kinedata.SplitResult, error) {
	var res kinedata.SplitResult
	t, err := resolve(ctx, o.Config, o.Resource)
	if err != nil {
		return res, err
	}
	kube, err := kubernetes.NewForConfig(o.Config)
	if err != nil {
		return res, err
	}
	dyn, err := dynamic.NewForConfig(o.Config)
	if err != nil {
		return res, err
	}
	frozeAt := time.Now()
	if err := writefreeze.Freeze(ctx, kube, o.Resource); err != nil {
		return res, err
	}
	probe := func(ctx context.Context) error { return dryRunWrite(ctx, dyn, t) }
	if err := writefreeze.WaitEnforced(ctx, o.Resource, probe, 10, o.EnforceTimeout); err != nil {
		return res, fmt.Errorf("%w; writes stay frozen: run the split again, or --abort", err)
	}
	fmt.Fprintf(o.Out, "writes to %s are frozen (ValidatingAdmissionPolicy %s), enforced after %s\n", o.Resource, writefreeze.Name(o.Resource), time.Since(frozeAt).Round(time.Millisecond))

	res, err = kinedata.Split(ctx, kinedata.SplitOptions{
		From: o.From, To: o.To, Prefix: t.prefix, Force: o.Force, Batch: o.Batch, Out: o.Out, ProgressEvery: o.ProgressEvery,
	})
	if err != nil {
		return res, fmt.Errorf("%w; writes stay frozen: run the split again (with --force), or --abort", err)
	}
	// What the API serves must be what was copied: a wrong key prefix
	// would otherwise move nothing and verify.
	served, err := listNames(ctx, dyn, t)
	if err != nil {
		return res, err
	}
	copied, err := liveNames(ctx, o.To, t.prefix)
	if err != nil {
		return res, err
	}
	if !slices.Equal(served, copied) {
		return res, fmt.Errorf("the plane serves %d %s, the copy holds %d live keys under %s: not split; writes stay frozen, --abort lifts the freeze", len(served), o.Resource, len(copied), t.prefix)
	}
	fmt.Fprintf(o.Out, "%d objects of %s copied in %s; writes frozen for %s so far.\n", len(served), o.Resource, res.Elapsed.Round(time.Millisecond), time.Since(frozeAt).Round(time.Millisecond))
	fmt.Fprintf(o.Out, "Next: restart every plane replica, one at a time, with\n  --datastore-override=%s=%s\nthen run the same command with --finish to lift the freeze.\n", storage.GroupResourceString(o.Resource), storage.RedactEndpoint(o.ToEndpoint))
	return res, nil
}

// Finish lifts the freeze once every live replica serves the resource
// from the new database: it wrote its serving record there after the
// freeze began, so it was restarted with the override.
func Finish(ctx context.Context, o Options) error {
	kube, err := kubernetes.NewForConfig(o.Config)
	if err != nil {
		return err
	}
	policy, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, writefreeze.Name(o.Resource), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("writes to %s are not frozen: no split of it is in progress (run split without --finish first)", o.Resource)
	}
	if err != nil {
		return fmt.Errorf("reading the freeze of %s: %w", o.Resource, err)
	}
	live, err := liveReplicas(ctx, kube, o.LiveWithin, time.Now())
	if err != nil {
		return err
	}
	serving, err := servingRecords(ctx, o.To)
	if err != nil {
		return err
	}
	if missing := Missing(live, serving, policy.CreationTimestamp.Time); len(missing) > 0 {
		return fmt.Errorf("%d of %d running replicas do not serve %s from %s yet: %s; restart each with --datastore-override=%s=… and run --finish again (writes stay frozen)",
			len(missing), len(live), o.Resource, o.To.Description, strings.Join(missing, ", "), storage.GroupResourceString(o.Resource))
	}
	if err := thaw(ctx, o, kube); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "all %d running replicas serve %s from %s; writes to it resumed after %s frozen\n",
		len(live), o.Resource, o.To.Description, time.Since(policy.CreationTimestamp.Time).Round(time.Second))
	return nil
}

// Abort lifts the freeze without switching: the resource stays where it
// was (replicas must not have been restarted with the override).
func Abort(ctx context.Context, o Options) error {
	kube, err := kubernetes.NewForConfig(o.Config)
	if err != nil {
		return err
	}
	return thaw(ctx, o, kube)
}

// thaw deletes the freeze and waits until writes are admitted again.
func thaw(ctx context.Context, o Options, kube kubernetes.Interface) error {
	t, err := resolve(ctx, o.Config, o.Resource)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(o.Config)
	if err != nil {
		return err
	}
	if err := writefreeze.Thaw(ctx, kube, o.Resource); err != nil {
		return err
	}
	probe := func(ctx context.Context) error { return dryRunWrite(ctx, dyn, t) }
	return writefreeze.WaitLifted(ctx, o.Resource, probe, 10, o.EnforceTimeout)
}

// Missing are the live replicas without a serving record written since
// frozen (a record from before is of a start without the override), sorted.
func Missing(live []string, serving map[string]storage.ServingRecord, frozen time.Time) []string {
	var out []string
	for _, id := range live {
		if r, ok := serving[id]; !ok || r.Started.Before(frozen) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// liveReplicas are the API server identities (their Lease's name) whose
// Lease was renewed within window.
func liveReplicas(ctx context.Context, kube kubernetes.Interface, window time.Duration, now time.Time) ([]string, error) {
	l, err := kube.CoordinationV1().Leases(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: "apiserver.kubernetes.io/identity"})
	if err != nil {
		return nil, fmt.Errorf("listing the plane replicas' identity leases: %w", err)
	}
	var out []string
	for _, lease := range l.Items {
		if id, ok := Live(lease, window, now); ok {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no plane replica renewed its identity lease in kube-system within %s", window)
	}
	return out, nil
}

// Live returns a replica's identity, its Lease's name (the API server's
// ID; the holder adds a per-start suffix), when the Lease was renewed
// within window of now.
func Live(l coordinationv1.Lease, window time.Duration, now time.Time) (string, bool) {
	if l.Spec.RenewTime == nil {
		return "", false
	}
	return l.Name, now.Sub(l.Spec.RenewTime.Time) <= window
}

// servingRecords reads the serving records in the resource's database.
func servingRecords(ctx context.Context, d storage.Database) (map[string]storage.ServingRecord, error) {
	s, err := kinedata.OpenSource(ctx, d)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	out := map[string]storage.ServingRecord{}
	err = s.EachRow(ctx, s.DB, 0, 1000, func(r kinedata.Row) error {
		id, ok := strings.CutPrefix(r.Name, storage.ServingPrefix)
		if !ok {
			return nil
		}
		var rec storage.ServingRecord
		if r.Deleted != 0 || json.Unmarshal(r.Value, &rec) != nil {
			delete(out, id)
			return nil
		}
		out[id] = rec
		return nil
	})
	return out, err
}

// liveNames are the keys under prefix, less the prefix, whose newest row
// is not a deletion, sorted.
func liveNames(ctx context.Context, d storage.Database, prefix string) ([]string, error) {
	s, err := kinedata.OpenSource(ctx, d)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	latest := map[string]bool{}
	err = s.EachRow(ctx, s.DB, 0, 1000, func(r kinedata.Row) error {
		if name, ok := strings.CutPrefix(r.Name, prefix); ok {
			latest[name] = r.Deleted == 0
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for name, alive := range latest {
		if alive {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// listNames are the served objects' keys below the prefix: ns/name or
// name, sorted.
func listNames(ctx context.Context, dyn dynamic.Interface, t target) ([]string, error) {
	l, err := dyn.Resource(t.gvr).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", t.gvr.GroupResource(), err)
	}
	out := make([]string, 0, len(l.Items))
	for _, o := range l.Items {
		if o.GetLabels()["propagatedversion.cellfed.io/view"] != "" {
			continue // computed by the plane, not stored
		}
		if t.namespaced {
			out = append(out, o.GetNamespace()+"/"+o.GetName())
		} else {
			out = append(out, o.GetName())
		}
	}
	slices.Sort(out)
	return out, nil
}

// dryRunWrite is a write of the resource the plane does not persist: an
// unchanged update of an existing object, or the create of a bare one.
func dryRunWrite(ctx context.Context, dyn dynamic.Interface, t target) error {
	l, err := dyn.Resource(t.gvr).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return err
	}
	dry := []string{metav1.DryRunAll}
	if len(l.Items) > 0 {
		o := l.Items[0]
		_, err := dyn.Resource(t.gvr).Namespace(o.GetNamespace()).Update(ctx, &o, metav1.UpdateOptions{DryRun: dry})
		return err
	}
	o := &unstructured.Unstructured{}
	o.SetAPIVersion(t.gvr.GroupVersion().String())
	kind := l.GetKind()
	o.SetKind(strings.TrimSuffix(kind, "List"))
	o.SetName("cellfed-freeze-probe")
	ns := ""
	if t.namespaced {
		ns = metav1.NamespaceDefault
		o.SetNamespace(ns)
	}
	_, err = dyn.Resource(t.gvr).Namespace(ns).Create(ctx, o, metav1.CreateOptions{DryRun: dry})
	return err
}
