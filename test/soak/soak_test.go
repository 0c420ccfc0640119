package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/cellfed/cellfed/test/framework"
)

// The deadlines, counted from the moment the faults stop.
const (
	convergeDeadline = 30 * time.Second
	deleteDeadline   = 60 * time.Second
	// How long the soak keeps looking after that, to report how late.
	lookAfter = 3 * time.Minute
	// The wind-down (masks and rollouts ended) gets this long, faults
	// still running.
	windDownTime = 3 * time.Minute
)

// TestSoak is `make soak`: it runs for $CELLFED_SOAK_TIME (a Go
// duration), writes its report to $CELLFED_SOAK_OUT (default
// _output/soak) and fails on any invariant violation. Without
// CELLFED_SOAK_TIME it is skipped, so `make test` does not run it.
func TestSoak(t *testing.T) {
	d := os.Getenv("CELLFED_SOAK_TIME")
	if d == "" {
		t.Skip("the soak runs with `make soak` (CELLFED_SOAK_TIME unset)")
	}
	duration, err := time.ParseDuration(d)
	if err != nil {
		t.Fatalf("CELLFED_SOAK_TIME=%q: %v", d, err)
	}
	out := os.Getenv("CELLFED_SOAK_OUT")
	if out == "" {
		out = filepath.Join(framework.RepoRoot(t), "_output", "soak")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("soak for %s, seed %d, report in %s", duration, seed, out)
	r := &report{Duration: duration, Seed: seed, Started: time.Now(), LoadStart: loadAverage()}

	f := startSoakFederation(t)
	r.SetupTook = time.Since(r.Started)
	t.Logf("federation up after %s", r.SetupTook.Round(time.Second))

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	ledger := NewLedger(dedicatedMembers(), namespaceTenants())
	var ledgerMu sync.Mutex
	watchMembers(ctx, t, f, ledger, &ledgerMu)
	sampler := startSampler(ctx, f)

	planeCfg := f.plane.RESTConfig(t)
	planeCfg.Timeout = 15 * time.Second
	dyn := dynamic.NewForConfigOrDie(planeCfg)
	wl := newWorkload(f, dyn)
	sup := newSupervisor(f)
	go sup.run(ctx)
	inj := &injector{f: f, rng: rand.New(rand.NewPCG(seed, 99)), sup: sup}

	faultCtx, stopFaults := context.WithCancel(ctx)
	injDone := make(chan struct{})
	go func() {
		defer close(injDone)
		inj.run(faultCtx)
	}()
	r.WorkloadStart = time.Now()
	wlCtx, wlCancel := context.WithTimeout(ctx, duration)
	windCtx, windCancel := context.WithTimeout(ctx, duration+windDownTime)
	stats := &floodStats{}
	floodDone := make(chan struct{})
	go func() {
		defer close(floodDone)
		flood(wlCtx, windCtx, dyn, stats)
	}()
	wl.run(wlCtx, windCtx, seed)
	<-floodDone
	wlCancel()
	windCancel()
	r.WorkloadEnd = time.Now()
	stopFaults()
	<-injDone
	r.FaultsStopped = time.Now()
	r.Faults = inj.Faults()
	r.Restarts = sup.Restarts()
	t.Logf("workload and faults stopped after %s: %d faults", r.FaultsStopped.Sub(r.WorkloadStart).Round(time.Second), len(r.Faults))

	// Convergence: poll the plane and every member until both the
	// templates and the deletions are done, or long past the deadlines.
	objs := wl.Objects()
	memberKube := map[string]kubernetes.Interface{}
	for name, m := range f.members {
		cfg := m.RESTConfig(t)
		cfg.Timeout = 5 * time.Second
		memberKube[name] = kubernetes.NewForConfigOrDie(cfg)
	}
	var plane map[Key]PlaneObject
	var templates, deletions []string
	var readErr error
	lastLog := time.Now()
	_ = framework.Poll(context.Background(), time.Second, deleteDeadline+lookAfter, func(ctx context.Context) (bool, error) {
		p, err := readPlane(ctx, dyn)
		if err != nil {
			readErr = err
			return false, err
		}
		got, err := readMembers(ctx, memberKube)
		if err != nil {
			readErr = err
			return false, err
		}
		readErr, plane = nil, p // templates and deletions keep the last complete read
		templates, deletions = Diff(Expected(objs, p), got)
		deletions = append(deletions, PendingDeletions(objs, p)...)
		now := time.Now()
		if now.Sub(lastLog) > 20*time.Second {
			lastLog = now
			t.Logf("%s after the faults stopped: %s; %s", now.Sub(r.FaultsStopped).Round(time.Second), lastState(templates, nil), lastState(deletions, nil))
		}
		if len(templates) == 0 && r.ConvergedAt.IsZero() {
			r.ConvergedAt = now
		}
		if len(deletions) == 0 && r.DeletedAt.IsZero() {
			r.DeletedAt = now
		}
		return !r.ConvergedAt.IsZero() && !r.DeletedAt.IsZero(), nil
	})
	r.LoadEnd = loadAverage()
	var violations []Violation
	switch {
	case r.ConvergedAt.IsZero():
		violations = append(violations, Violation{NotConverged, lastState(templates, readErr), time.Now()})
	case r.ConvergedAt.Sub(r.FaultsStopped) > convergeDeadline:
		violations = append(violations, Violation{NotConverged, "converged " + r.ConvergedAt.Sub(r.FaultsStopped).Round(100*time.Millisecond).String() + " after the faults stopped", r.ConvergedAt})
	}
	switch {
	case r.DeletedAt.IsZero():
		violations = append(violations, Violation{LateDeletion, lastState(deletions, readErr), time.Now()})
	case r.DeletedAt.Sub(r.FaultsStopped) > deleteDeadline:
		violations = append(violations, Violation{LateDeletion, "deletions done " + r.DeletedAt.Sub(r.FaultsStopped).Round(100*time.Millisecond).String() + " after the faults stopped", r.DeletedAt})
	}
	if plane != nil {
		violations = append(violations, LostWrites(objs, plane, time.Now())...)
	}
	stop() // the member watchers and the sampler
	var outages []Outage
	for _, fl := range r.Faults {
		outages = append(outages, Outage{fl.Start, fl.End.Add(fl.Recovered)})
	}
	r.Flood = stats.String()
	ledgerMu.Lock()
	violations = append(violations, HeldBackReleases(objs, ledger.FirstSeen(), outages, flooder, heldBackBound)...)
	r.Releases = ReleaseTimes(objs, ledger.FirstSeen(), outages, flooder)
	violations = append(violations, ledger.Violations()...)
	r.Sightings = ledger.Sightings()
	ledgerMu.Unlock()
	r.RSS = sampler.Stop()
	for _, name := range sortedKeys(r.RSS) {
		if bad, why := Unbounded(r.RSS[name]); bad {
			violations = append(violations, Violation{MemoryGrowth, name + ": " + why, time.Now()})
		}
	}
	r.Violations = violations
	r.Objects = objs
	r.Acked, r.Failed = wl.acked, wl.failed
	r.Load = sampler.load
	if err := r.write(out); err != nil {
		t.Errorf("writing the report: %v", err)
	}
	summary, _ := os.ReadFile(filepath.Join(out, "summary.md"))
	t.Logf("summary (%s):\n%s", filepath.Join(out, "summary.md"), summary)
	for _, v := range violations {
		t.Errorf("violation: %s", v)
	}
}

func dedicatedMembers() map[string]string {
	out := map[string]string{}
	for _, tn := range tenants {
		out[tn.dedicated] = tn.name
	}
	return out
}

func namespaceTenants() map[string]string {
	out := map[string]string{}
	for _, tn := range tenants {
		out[workspace(tn.name)] = tn.name
	}
	return out
}

// lastState is what was still not done at the last complete read of the
// plane and the members, and the error of a later failed read.
func lastState(diff []string, err error) string {
	s := fmt.Sprintf("not done; %d left at the last complete read: ", len(diff))
	if len(diff) > 8 {
		s += strings.Join(diff[:8], "; ") + " …"
	} else {
		s += strings.Join(diff, "; ")
	}
	if err != nil {
		s += " (a later read failed: " + err.Error() + ")"
	}
	return s
}

// watchMembers runs an informer on every member's config maps that
// records each soak object it sees (adds, updates, relists) in the
// ledger until ctx ends.
func watchMembers(ctx context.Context, t *testing.T, f *soakFederation, l *Ledger, mu *sync.Mutex) {
	t.Helper()
	for name, m := range f.members {
		c := m.Client(t)
		lw := cache.NewListWatchFromClient(c.CoreV1().RESTClient(), "configmaps", metav1.NamespaceAll, fields.Everything())
		inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
		saw := func(obj any) {
			cm, ok := obj.(*corev1.ConfigMap)
			if !ok || !strings.HasPrefix(cm.Name, namePrefix) {
				return
			}
			mu.Lock()
			l.Saw(MemberKey{name, Key{cm.Namespace, cm.Name}}, string(cm.UID), time.Now())
			mu.Unlock()
		}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    saw,
			UpdateFunc: func(_, obj any) { saw(obj) },
		}); err != nil {
			t.Fatal(err)
		}
		go inf.RunWithContext(ctx)
	}
}

// readPlane reads every soak object in the plane.
func readPlane(ctx context.Context, dyn dynamic.Interface) (map[Key]PlaneObject, error) {
	out := map[Key]PlaneObject{}
	for _, tn := range tenants {
		l, err := dyn.Resource(federatedConfigMaps).Namespace(workspace(tn.name)).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for _, o := range l.Items {
			if !strings.HasPrefix(o.GetName(), namePrefix) {
				continue
			}
			data, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "data")
			out[Key{o.GetNamespace(), o.GetName()}] = PlaneObject{Version: templateVersion(data), Deleting: o.GetDeletionTimestamp() != nil}
		}
	}
	return out, nil
}

// readMembers reads every soak object in every member.
func readMembers(ctx context.Context, members map[string]kubernetes.Interface) (map[MemberKey]int, error) {
	out := map[MemberKey]int{}
	for name, c := range members {
		l, err := c.CoreV1().ConfigMaps(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for _, cm := range l.Items {
			if strings.HasPrefix(cm.Name, namePrefix) {
				out[MemberKey{name, Key{cm.Namespace, cm.Name}}] = templateVersion(cm.Data)
			}
		}
	}
	return out, nil
}
