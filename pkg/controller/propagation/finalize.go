package propagation

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	typesv1b1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
	"github.com/cellfed/cellfed/pkg/controller/clusters"
)

// finalize removes a deleted federated object from every cluster it was
// ever propagated to — the record's clusters, not only the current
// placement — and from any member whose cache holds it. Reachable
// clusters finish now; an unready one keeps the finalizer (and its entry
// in the record) until it is back or its KubeFedCluster is removed.
func (c *Controller) finalize(ctx context.Context, key string, fed *unstructured.Unstructured) (bool, error) {
	if !slices.Contains(fed.GetFinalizers(), Finalizer) {
		c.forget(key)
		return false, nil
	}
	rec := c.versions.get(key)
	ns, name := c.typ.targetName(fed)
	byMember := map[*clusters.Member][]string{}
	for _, cl := range c.clusters.List() {
		if cl.Member == nil {
			continue
		}
		_, known := rec.clusters[cl.Name]
		if !known && cl.Member.Ready() {
			if o, _ := cl.Member.Get(c.typ.Target, ns, name); o != nil {
				known = true
			}
		}
		if known {
			byMember[cl.Member] = append(byMember[cl.Member], cl.Name)
		}
	}
	var plan []action
	for m, names := range byMember {
		slices.Sort(names)
		plan = append(plan, action{member: m, clusters: names, remove: true, notReady: !m.Ready()})
	}
	results := c.run(ctx, plan, func(ctx context.Context, a action) result { return c.ensureRemoved(ctx, fed, a) })
	next := newRecord(rec.templateVersion, rec.overridesVersion)
	var statuses []typesv1b1.ClusterStatus
	requeue := false
	for _, r := range results {
		for _, n := range r.clusters {
			if r.keepRecord {
				next.clusters[n] = rec.clusters[n]
				statuses = append(statuses, typesv1b1.ClusterStatus{Name: n, Status: r.status})
			}
		}
		if r.err != nil || r.retry {
			requeue = true
		}
	}
	if len(next.clusters) > 0 {
		// Clusters left to clean: remember them and say why.
		if err := c.versions.save(ctx, key, fed, next); err != nil {
			return true, err
		}
		return requeue, c.writeStatus(ctx, fed, statuses, "")
	}
	if err := c.versions.delete(ctx, key, fed); err != nil {
		return true, err
	}
	obj := fed.DeepCopy()
	obj.SetFinalizers(slices.DeleteFunc(obj.GetFinalizers(), func(f string) bool { return f == Finalizer }))
	if _, err := c.resource(fed.GetNamespace()).Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
		return true, fmt.Errorf("removing finalizer: %w", err)
	}
	c.forget(key)
	return false, nil
}
