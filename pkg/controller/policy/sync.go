package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	policyv1alpha1 "github.com/cellfed/cellfed/pkg/apis/policy/v1alpha1"
	"github.com/cellfed/cellfed/pkg/policy/dependencies"
	"github.com/cellfed/cellfed/pkg/policy/federate"
	"github.com/cellfed/cellfed/pkg/policy/selection"
	"github.com/cellfed/cellfed/pkg/rollout"
)

// orphanAnnotation on a federated object makes its deletion leave the
// member objects in place (KubeFed's, honoured by cellfed-controller).
const orphanAnnotation = "kubefed.io/orphan"

// Event reasons on native objects.
const (
	ReasonNoPolicy       = "NoPropagationPolicy"
	ReasonPlaced         = "PlacedByPolicy"
	ReasonFederatedTaken = "FederatedObjectExists"
)

// policyObject is a policy as read, with its typed spec.
type policyObject struct {
	obj  *unstructured.Unstructured
	sel  selection.Policy
	spec policyv1alpha1.PropagationPolicySpec
	st   policyv1alpha1.PropagationPolicyStatus
}

func (p *policyObject) deleting() bool { return p.obj.GetDeletionTimestamp() != nil }

func (c *Controller) policies() (map[string]*policyObject, error) {
	out := map[string]*policyObject{}
	for _, kind := range []string{policyv1alpha1.KindPropagationPolicy, policyv1alpha1.KindClusterPropagationPolicy} {
		gvr := policyv1alpha1.PropagationPoliciesResource
		if kind == policyv1alpha1.KindClusterPropagationPolicy {
			gvr = policyv1alpha1.ClusterPropagationPoliciesResource
		}
		for _, u := range c.list(gvr) {
			var typed policyv1alpha1.PropagationPolicy
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &typed); err != nil {
				return nil, fmt.Errorf("decoding %s %s/%s: %w", kind, u.GetNamespace(), u.GetName(), err)
			}
			p := &policyObject{obj: u, spec: typed.Spec, st: typed.Status,
				sel: selection.Policy{Kind: kind, Namespace: u.GetNamespace(), Name: u.GetName(), Priority: typed.Spec.Priority, Selectors: typed.Spec.ResourceSelectors}}
			out[p.sel.Ref()] = p
		}
	}
	return out, nil
}

// sync is one pass over every policy and native object.
func (c *Controller) sync(ctx context.Context) error {
	if !c.synced(ctx) {
		c.queue.AddAfter(key, time.Second)
		return nil
	}
	fedTypes, err := c.types()
	if err != nil {
		return err
	}
	for _, t := range fedTypes {
		c.watch(t.target)
		c.watch(t.federated)
	}
	if !c.synced(ctx) {
		c.queue.AddAfter(key, time.Second)
		return nil
	}
	pols, err := c.policies()
	if err != nil {
		return err
	}
	var live []selection.Policy
	for _, p := range pols {
		if !p.deleting() {
			live = append(live, p.sel)
		}
	}
	workspaces := map[string]bool{}
	for _, ns := range c.list(namespacesResource) {
		if ns.GetLabels()[cellv1alpha1.LabelTenant] != "" {
			workspaces[ns.GetName()] = true
		}
	}

	deps := c.dependencies(fedTypes, live, pols)
	var errs []error
	var decisions []selection.Decision
	for _, t := range fedTypes {
		feds := map[string]*unstructured.Unstructured{}
		for _, f := range c.list(t.federated) {
			feds[f.GetNamespace()+"/"+f.GetName()] = f
		}
		for _, n := range c.list(t.target) {
			if n.GetDeletionTimestamp() != nil {
				continue
			}
			obj := selection.Object{APIVersion: n.GetAPIVersion(), Kind: n.GetKind(), Namespace: n.GetNamespace(), Name: n.GetName(), Labels: n.GetLabels()}
			secretType, _, _ := unstructured.NestedString(n.Object, "type")
			if selection.Ineligible(obj, secretType, metav1.GetControllerOf(n) != nil) != "" {
				continue
			}
			res := selection.Select(obj, live)
			for _, e := range res.Errors {
				klog.V(2).InfoS("propagation policy not matched", "object", obj.String(), "err", e)
			}
			decisions = append(decisions, selection.Decision{Object: obj, Result: res})
			fedNS := n.GetNamespace()
			if t.targetKind.Group == "" && t.targetKind.Kind == "Namespace" {
				fedNS = n.GetName()
			}
			fed := feds[fedNS+"/"+n.GetName()]
			var err error
			if res.Winner != nil {
				p := pols[res.Winner.Policy.Ref()]
				err = c.place(ctx, t, n, p, fed)
			} else if dp := deps[n.GetKind()+"/"+n.GetNamespace()+"/"+n.GetName()]; dp != nil && t.targetKind.Group == "" {
				err = c.place(ctx, t, n, dp, fed)
			} else {
				err = c.unplace(ctx, t, n, fed, pols)
				if err == nil {
					c.reportUnplaced(n, workspaces)
				}
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
	}

	for _, p := range pols {
		if p.deleting() {
			if err := c.finish(ctx, p); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if err := c.ensureFinalizer(ctx, p); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := c.writeStatus(ctx, p, selection.Status(p.sel, p.obj.GetGeneration(), decisions)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// madeFor reports whether fed is the federated object a policy made for n.
func madeFor(fed, n *unstructured.Unstructured) bool {
	if federate.PolicyOf(fed) == "" {
		return false
	}
	for _, r := range fed.GetOwnerReferences() {
		if r.UID == n.GetUID() {
			return true
		}
	}
	return false
}

// place keeps n's federated object as policy p says.
func (c *Controller) place(ctx context.Context, t fedType, n *unstructured.Unstructured, p *policyObject, fed *unstructured.Unstructured) error {
	desired, err := federate.Build(n, federate.Policy{Ref: p.sel, Spec: &p.spec}, t.fedKind)
	if err != nil {
		return err
	}
	res := c.plane.Resource(t.federated).Namespace(desired.GetNamespace())
	switch {
	case fed == nil:
		if _, err := res.Create(ctx, desired, metav1.CreateOptions{FieldManager: "cellfed-policy"}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s %s/%s for %s: %w", t.fedKind.Kind, desired.GetNamespace(), desired.GetName(), p.sel.Ref(), err)
		}
	case !madeFor(fed, n):
		msg := fmt.Sprintf("%s selects this object, but %s %s already exists and no policy made it for this object: delete it (or the policy) to resolve", p.sel.Ref(), t.fedKind.Kind, fed.GetName())
		c.event(n, corev1.EventTypeWarning, ReasonFederatedTaken, msg)
		return nil
	case federate.Changed(fed, desired, p.spec.Release.Strategy):
		merged := federate.Merge(fed, desired, p.spec.Release.Strategy)
		started, err := federate.StartRollout(fed, merged, p.spec.Release, time.Now())
		if err != nil {
			return fmt.Errorf("starting the rollout of %s %s/%s for %s: %w", t.fedKind.Kind, fed.GetNamespace(), fed.GetName(), p.sel.Ref(), err)
		}
		if started {
			// What runs now, for `cellfedctl rollout history` and the
			// board; the rollout controller records the new template.
			if _, err := (rollout.History{Client: c.plane, Limit: -1}).Record(ctx, fed); err != nil {
				klog.FromContext(ctx).Error(err, "Recording the template running before a policy's rollout", "object", klog.KObj(fed))
			}
		}
		if _, err := res.Update(ctx, merged, metav1.UpdateOptions{FieldManager: "cellfed-policy"}); err != nil {
			return fmt.Errorf("updating %s %s/%s for %s: %w", t.fedKind.Kind, fed.GetNamespace(), fed.GetName(), p.sel.Ref(), err)
		}
	}
	c.event(n, corev1.EventTypeNormal, ReasonPlaced, fmt.Sprintf("placed by %s as %s %s", p.sel.Ref(), t.fedKind.Kind, desired.GetName()))
	return c.annotate(ctx, t, n, p.sel.Ref())
}

// unplace removes the federated object a policy made for n, now that no
// policy places it: orphaning the member objects unless the policy that
// made it says Delete (or cannot be read: Orphan).
func (c *Controller) unplace(ctx context.Context, t fedType, n *unstructured.Unstructured, fed *unstructured.Unstructured, pols map[string]*policyObject) error {
	if fed != nil && madeFor(fed, n) {
		dp := policyv1alpha1.DeletionOrphan
		if p := pols[federate.PolicyOf(fed)]; p != nil && p.spec.DeletionPolicy == policyv1alpha1.DeletionDelete {
			dp = policyv1alpha1.DeletionDelete
		}
		res := c.plane.Resource(t.federated).Namespace(fed.GetNamespace())
		if dp == policyv1alpha1.DeletionOrphan && fed.GetAnnotations()[orphanAnnotation] != "true" {
			patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{orphanAnnotation: "true"}}})
			if _, err := res.Patch(ctx, fed.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "cellfed-policy"}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("orphaning %s %s/%s: %w", t.fedKind.Kind, fed.GetNamespace(), fed.GetName(), err)
			}
		}
		uid := fed.GetUID()
		if err := res.Delete(ctx, fed.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s %s/%s: %w", t.fedKind.Kind, fed.GetNamespace(), fed.GetName(), err)
		}
		klog.InfoS("federated object removed: no policy places its object", "kind", t.fedKind.Kind, "namespace", fed.GetNamespace(), "name", fed.GetName(), "deletionPolicy", dp)
	}
	return c.annotate(ctx, t, n, "")
}

// annotate sets n's placed-by-policy annotation to ref ("" removes it).
func (c *Controller) annotate(ctx context.Context, t fedType, n *unstructured.Unstructured, ref string) error {
	if n.GetAnnotations()[policyv1alpha1.AnnotationPlacedByPolicy] == ref {
		return nil
	}
	var v any = ref
	if ref == "" {
		v = nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{policyv1alpha1.AnnotationPlacedByPolicy: v}}})
	_, err := c.plane.Resource(t.target).Namespace(n.GetNamespace()).Patch(ctx, n.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "cellfed-policy"})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("annotating %s %s/%s: %w", n.GetKind(), n.GetNamespace(), n.GetName(), err)
	}
	return nil
}

// reportUnplaced records an Event on a workspace object no policy places
// (not on the plane's own objects elsewhere, nor on the CA bundle every
// namespace gets).
func (c *Controller) reportUnplaced(n *unstructured.Unstructured, workspaces map[string]bool) {
	if n.GetNamespace() == "" || !workspaces[n.GetNamespace()] || (n.GetKind() == "ConfigMap" && n.GetName() == "kube-root-ca.crt") {
		return
	}
	c.event(n, corev1.EventTypeNormal, ReasonNoPolicy, fmt.Sprintf(
		"no PropagationPolicy or ClusterPropagationPolicy selects %s %s: it stays on the plane only (see docs/native-objects.md#policies)", n.GetKind(), n.GetName()))
}

// event records an Event on n once per change of what it says.
func (c *Controller) event(n *unstructured.Unstructured, typ, reason, msg string) {
	c.mu.Lock()
	uid := string(n.GetUID())
	same := c.reported[uid] == reason+msg
	c.reported[uid] = reason + msg
	c.mu.Unlock()
	if !same && c.recorder != nil {
		c.recorder.Event(n, typ, reason, msg)
	}
}

func (c *Controller) policyClient(p *policyObject) dynamic.ResourceInterface {
	if p.sel.Kind == policyv1alpha1.KindClusterPropagationPolicy {
		return c.plane.Resource(policyv1alpha1.ClusterPropagationPoliciesResource)
	}
	return c.plane.Resource(policyv1alpha1.PropagationPoliciesResource).Namespace(p.obj.GetNamespace())
}

func (c *Controller) ensureFinalizer(ctx context.Context, p *policyObject) error {
	for _, f := range p.obj.GetFinalizers() {
		if f == Finalizer {
			return nil
		}
	}
	obj := p.obj.DeepCopy()
	obj.SetFinalizers(append(obj.GetFinalizers(), Finalizer))
	updated, err := c.policyClient(p).Update(ctx, obj, metav1.UpdateOptions{FieldManager: "cellfed-policy"})
	if err != nil {
		return fmt.Errorf("adding the finalizer to %s: %w", p.sel.Ref(), err)
	}
	p.obj = updated
	return nil
}

// finish removes a deleted policy's finalizer once no federated object
// it made is left (the pass has orphaned or deleted them).
func (c *Controller) finish(ctx context.Context, p *policyObject) error {
	label := policyv1alpha1.LabelPropagationPolicy
	if p.sel.Kind == policyv1alpha1.KindClusterPropagationPolicy {
		label = policyv1alpha1.LabelClusterPropagationPolicy
	}
	fedTypes, err := c.types()
	if err != nil {
		return err
	}
	for _, t := range fedTypes {
		list, err := c.plane.Resource(t.federated).Namespace(p.obj.GetNamespace()).List(ctx, metav1.ListOptions{LabelSelector: label + "=" + p.sel.Name})
		if err != nil {
			return fmt.Errorf("listing what %s placed: %w", p.sel.Ref(), err)
		}
		for _, f := range list.Items {
			if federate.PolicyOf(&f) == p.sel.Ref() {
				c.queue.AddAfter(key, time.Second)
				return nil
			}
		}
	}
	var keep []string
	for _, f := range p.obj.GetFinalizers() {
		if f != Finalizer {
			keep = append(keep, f)
		}
	}
	if len(keep) == len(p.obj.GetFinalizers()) {
		return nil
	}
	obj := p.obj.DeepCopy()
	obj.SetFinalizers(keep)
	if _, err := c.policyClient(p).Update(ctx, obj, metav1.UpdateOptions{FieldManager: "cellfed-policy"}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing the finalizer of %s: %w", p.sel.Ref(), err)
	}
	return nil
}

// writeStatus writes next as p's status unless it already says so;
// conditions keep their transition time while their status stays.
func (c *Controller) writeStatus(ctx context.Context, p *policyObject, next policyv1alpha1.PropagationPolicyStatus) error {
	conds := append([]metav1.Condition(nil), p.st.Conditions...)
	for _, cond := range next.Conditions {
		meta.SetStatusCondition(&conds, cond)
	}
	next.Conditions = conds
	if equality.Semantic.DeepEqual(p.st, next) {
		return nil
	}
	st, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&next)
	if err != nil {
		return err
	}
	obj := p.obj.DeepCopy()
	obj.Object["status"] = st
	if _, err := c.policyClient(p).UpdateStatus(ctx, obj, metav1.UpdateOptions{FieldManager: "cellfed-policy"}); err != nil {
		return fmt.Errorf("writing the status of %s: %w", p.sel.Ref(), err)
	}
	return nil
}

// dependencies are the objects placed because a placed workload's pod
// template references them (pkg/policy/dependencies), by
// Kind/namespace/name: each with a policy of the placement (only: the
// overrides and division are the workload's) and deletion policy of the
// first such workload's policy, in kind and name order. An object a
// policy selects itself is placed by that policy instead.
func (c *Controller) dependencies(fedTypes []fedType, live []selection.Policy, pols map[string]*policyObject) map[string]*policyObject {
	out := map[string]*policyObject{}
	sort.Slice(fedTypes, func(i, j int) bool { return fedTypes[i].targetKind.String() < fedTypes[j].targetKind.String() })
	for _, t := range fedTypes {
		if _, ok := dependencies.PodSpecPath(t.targetKind.GroupKind()); !ok {
			continue
		}
		natives := c.list(t.target)
		sort.Slice(natives, func(i, j int) bool {
			return natives[i].GetNamespace()+"/"+natives[i].GetName() < natives[j].GetNamespace()+"/"+natives[j].GetName()
		})
		for _, n := range natives {
			obj := selection.Object{APIVersion: n.GetAPIVersion(), Kind: n.GetKind(), Namespace: n.GetNamespace(), Name: n.GetName(), Labels: n.GetLabels()}
			if n.GetDeletionTimestamp() != nil || selection.Ineligible(obj, "", metav1.GetControllerOf(n) != nil) != "" {
				continue
			}
			res := selection.Select(obj, live)
			if res.Winner == nil {
				continue
			}
			p := pols[res.Winner.Policy.Ref()]
			if p == nil || (p.spec.PropagateDependencies != nil && !*p.spec.PropagateDependencies) {
				continue
			}
			found, err := dependencies.Discover(n)
			if err != nil {
				klog.V(2).InfoS("dependencies not read", "object", obj.String(), "err", err)
				continue
			}
			for _, d := range found {
				k := d.Kind + "/" + n.GetNamespace() + "/" + d.Name
				if out[k] != nil {
					continue
				}
				out[k] = &policyObject{obj: p.obj, sel: p.sel, spec: policyv1alpha1.PropagationPolicySpec{
					Placement:      p.spec.Placement,
					DeletionPolicy: p.spec.DeletionPolicy,
					Release:        p.spec.Release,
				}}
			}
		}
	}
	return out
}
