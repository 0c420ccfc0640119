// The soak's workload: continuous releases of FederatedConfigMaps in
// three tenants' workspaces (creates, template updates, placement mask
// changes, cellfedctl rollouts, deletes), each write retried until the
// plane acknowledges it, and every acknowledgement recorded.

package soak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
)

var federatedConfigMaps = schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta2", Resource: "federatedconfigmaps"}

// Object names start with this; nothing else in the members does.
const namePrefix = "soak-"

// Operation kinds, as the summary counts them.
const (
	opCreate, opUpdate, opMask, opUnmask = "create", "template update", "mask change", "mask removal"
	opRolloutStart, opRolloutFinish      = "rollout start", "rollout finish"
	opDelete                             = "delete"
)

// Object states in the workload.
const (
	statePlain   = "plain"
	stateMasked  = "masked"
	stateRollout = "rollout"
)

// The live objects each tenant keeps between.
const minLive, maxLive = 3, 7

// workload drives the plane and records what it acknowledged.
type workload struct {
	f   *soakFederation
	dyn dynamic.Interface

	mu     sync.Mutex
	objs   map[Key]*Object
	order  []Key
	acked  map[string]int
	failed map[string]int
}

func newWorkload(f *soakFederation, dyn dynamic.Interface) *workload {
	return &workload{f: f, dyn: dyn, objs: map[Key]*Object{}, acked: map[string]int{}, failed: map[string]int{}}
}

// Objects is a copy of every object's record.
func (w *workload) Objects() []Object {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]Object, 0, len(w.order))
	for _, k := range w.order {
		out = append(out, *w.objs[k])
	}
	return out
}

func (w *workload) update(k Key, fn func(*Object)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fn(w.objs[k])
}

// run releases in every tenant until ctx ends, then brings every live
// object back to no mask and no rollout (so every placed cell must end
// with the final template) before windDown ends.
func (w *workload) run(ctx, windDown context.Context, seed uint64) {
	var wg sync.WaitGroup
	for i, tn := range tenants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.tenant(ctx, windDown, tn.name, []string{sharedMember, tn.dedicated}, rand.New(rand.NewPCG(seed, uint64(i))))
		}()
	}
	wg.Wait()
}

func (w *workload) tenant(ctx, windDown context.Context, tenant string, members []string, rng *rand.Rand) {
	ns := workspace(tenant)
	state := map[Key]string{}
	var live []Key
	seq := 0
	for ctx.Err() == nil {
		var op string
		var k Key
		switch {
		case len(live) < minLive:
			op = opCreate
		case len(live) > maxLive:
			op, k = opDelete, live[rng.IntN(len(live))]
		default:
			k = live[rng.IntN(len(live))]
			switch r := rng.IntN(100); {
			case r < 12:
				op = opCreate
			case r < 50:
				op = opUpdate
			case r < 65:
				op = map[string]string{statePlain: opMask, stateMasked: opUnmask, stateRollout: opUpdate}[state[k]]
			case r < 85:
				op = map[string]string{statePlain: opRolloutStart, stateMasked: opUpdate, stateRollout: opRolloutFinish}[state[k]]
			default:
				op = opDelete
			}
		}
		if op == opCreate {
			seq++
			k = Key{ns, fmt.Sprintf("%s%s-%d", namePrefix, tenant, seq)}
			w.mu.Lock()
			w.objs[k] = &Object{Key: k, Tenant: tenant, Members: members}
			w.order = append(w.order, k)
			w.mu.Unlock()
		}
		// An operation started runs to its acknowledgement even when the
		// workload's time is up: only windDown cuts it.
		if err := w.do(windDown, op, k, rng); err != nil {
			klog.Infof("soak workload: %s %s not acknowledged before the wind-down ended: %v", op, k, err)
			return
		}
		switch op {
		case opCreate:
			live, state[k] = append(live, k), statePlain
		case opDelete:
			live = slices.DeleteFunc(live, func(x Key) bool { return x == k })
			delete(state, k)
		case opMask:
			state[k] = stateMasked
		case opUnmask, opRolloutFinish:
			state[k] = statePlain
		case opRolloutStart:
			state[k] = stateRollout
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(200+rng.IntN(800)) * time.Millisecond):
		}
	}
	// Wind-down: no masks, no rollouts, so every placed cell must end
	// with the final template.
	for _, k := range live {
		var op string
		switch state[k] {
		case stateMasked:
			op = opUnmask
		case stateRollout:
			op = opRolloutFinish
		default:
			continue
		}
		if err := w.do(windDown, op, k, rng); err != nil {
			klog.Infof("soak workload: wind-down %s %s not acknowledged: %v", op, k, err)
		}
	}
}

// do performs one operation, retrying until the plane acknowledges it or
// ctx ends.
func (w *workload) do(ctx context.Context, op string, k Key, rng *rand.Rand) error {
	var attempt func(context.Context) error
	var onAck func(*Object)
	switch op {
	case opCreate:
		obj := configMapObject(k)
		w.update(k, func(o *Object) { o.CreateAttempted, o.AttemptedVersion = true, 1 })
		attempt = func(ctx context.Context) error {
			_, err := w.dyn.Resource(federatedConfigMaps).Namespace(k.Namespace).Create(ctx, obj.DeepCopy(), metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil // an earlier attempt landed: names are never reused
			}
			return err
		}
		onAck = func(o *Object) {
			o.CreateAcked, o.AckedVersion, o.CreateAckedAt = true, max(o.AckedVersion, 1), time.Now()
		}
	case opUpdate:
		var v int
		w.update(k, func(o *Object) { o.AttemptedVersion++; v = o.AttemptedVersion })
		attempt = w.patch(k, map[string]any{"spec": map[string]any{"template": map[string]any{"data": map[string]any{"v": strconv.Itoa(v)}}}})
		onAck = func(o *Object) { o.AckedVersion = max(o.AckedVersion, v) }
	case opMask:
		cell := []string{"rz00a", "rz10a"}[rng.IntN(2)]
		attempt = w.patch(k, map[string]any{"spec": map[string]any{"placementMask": map[string]any{"topologies": []any{map[string]any{"name": cell}}}}})
	case opUnmask:
		attempt = w.patch(k, map[string]any{"spec": map[string]any{"placementMask": nil}})
	case opRolloutStart:
		attempt = w.rollout(k, "start", "--cells=rz00a")
	case opRolloutFinish:
		attempt = w.rollout(k, "finish", "--force")
	case opDelete:
		w.update(k, func(o *Object) { o.DeleteAttempted = true })
		attempt = func(ctx context.Context) error {
			err := w.dyn.Resource(federatedConfigMaps).Namespace(k.Namespace).Delete(ctx, k.Name, metav1.DeleteOptions{})
			if apierrors.IsNotFound(err) {
				return nil // an earlier attempt landed (finalizer and all)
			}
			return err
		}
		onAck = func(o *Object) { o.DeleteAcked = time.Now() }
	default:
		return fmt.Errorf("unknown operation %q", op)
	}
	backoff := 200 * time.Millisecond
	for {
		actx, cancel := context.WithTimeout(ctx, 15*time.Second)
		err := attempt(actx)
		cancel()
		if err == nil {
			w.mu.Lock()
			w.acked[op]++
			if onAck != nil {
				onAck(w.objs[k])
			}
			w.mu.Unlock()
			return nil
		}
		w.mu.Lock()
		w.failed[op]++
		w.mu.Unlock()
		klog.V(2).Infof("soak workload: %s %s: %v", op, k, err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s %s: %w (last error: %v)", op, k, ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// configMapObject is a FederatedConfigMap placed on both of its
// tenant's cells, at template version 1.
func configMapObject(k Key) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta2",
		"kind":       "FederatedConfigMap",
		"metadata":   map[string]any{"name": k.Name, "namespace": k.Namespace},
		"spec": map[string]any{
			"placement": map[string]any{"topologies": []any{map[string]any{"name": "rz00a"}, map[string]any{"name": "rz10a"}}},
			"template":  map[string]any{"data": map[string]any{"v": "1"}},
		},
	}}
}

// patch is an attempt that merge-patches k (idempotent: a retry after a
// lost answer writes the same).
func (w *workload) patch(k Key, body map[string]any) func(context.Context) error {
	raw, _ := json.Marshal(body)
	return func(ctx context.Context) error {
		_, err := w.dyn.Resource(federatedConfigMaps).Namespace(k.Namespace).Patch(ctx, k.Name, types.MergePatchType, raw, metav1.PatchOptions{})
		return err
	}
}

// rollout is an attempt that runs `cellfedctl rollout <verb>`. A failed
// command whose change is found on the object (its answer was lost) is
// acknowledged: rollout start left the rollout label, finish removed the
// mask and the label.
func (w *workload) rollout(k Key, verb string, args ...string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := w.f.runCtl(ctx, append([]string{"rollout", verb, "configmap/" + k.Name, "-n", k.Namespace}, args...)...)
		if err == nil {
			return nil
		}
		obj, gerr := w.dyn.Resource(federatedConfigMaps).Namespace(k.Namespace).Get(ctx, k.Name, metav1.GetOptions{})
		if gerr != nil {
			return errors.Join(err, gerr)
		}
		active := obj.GetLabels()["rollout.cellfed.io/active"] == "true"
		_, masked, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "placementMask")
		if verb == "start" && active && masked || verb == "finish" && !active && !masked {
			return nil
		}
		return err
	}
}

// templateVersion is data "v" of a template or member object, 0 if none.
func templateVersion(data map[string]string) int {
	v, _ := strconv.Atoi(strings.TrimSpace(data["v"]))
	return v
}
