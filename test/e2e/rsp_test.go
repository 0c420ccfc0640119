package e2e

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/cellfed/cellfed/pkg/placement/rsp"
	"github.com/cellfed/cellfed/test/framework"
)

// TestReplicaSchedulingPreference runs KubeFed's own RSP spread cases
// (its test/e2e/scheduling.go: even spread, weights, minReplicas, the
// intersection with the object's cluster selector) against cellfed-
// controller on real members, reads the federated object as KubeFed's
// e2e does (placement clusters and /spec/replicas overrides) and checks
// the members' Deployments; then a division over cells by name and a
// scale-up by one.
func TestReplicaSchedulingPreference(t *testing.T) {
	t.Parallel()
	f := startFederation(t, 2)
	ctx := context.Background()
	// Physical clusters host a namespace only where it is federated
	// (KubeFed's rule).
	f.kubectl.MustRun(t, `apiVersion: types.kubefed.io/v1beta1
kind: FederatedNamespace
metadata: {name: shop, namespace: shop}
spec:
  placement: {clusters: [{name: member-0}, {name: member-1}]}
`, "apply", "-f", "-")

	fedDeploy := func(name, placement string) string {
		return `apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata: {name: ` + name + `, namespace: shop}
spec:
  template:
    spec:
      replicas: 1
      selector: {matchLabels: {app: ` + name + `}}
      template:
        metadata: {labels: {app: ` + name + `}}
        spec: {containers: [{name: c, image: nginx:1.27}]}
` + placement
	}
	rspYAML := func(name, spec string) string {
		return `apiVersion: scheduling.kubefed.io/v1alpha1
kind: ReplicaSchedulingPreference
metadata: {name: ` + name + `, namespace: shop}
spec:
  targetKind: FederatedDeployment
` + spec
	}
	// scheduled reads what KubeFed's e2e reads: placement clusters and
	// the replicas overrides.
	scheduled := func(name string) (map[string]int64, []string, error) {
		obj, err := f.dyn.Resource(fedDeployV1).Namespace("shop").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, nil, err
		}
		_, placed, err := rsp.Placement(obj)
		return rsp.Current(obj), placed, err
	}
	memberIndex := map[string]int{"member-0": 0, "member-1": 1, "shop.rz00a": 0, "shop.rz01a": 0, "shop.rz10a": 1}
	waitSchedule := func(t *testing.T, name string, want map[string]int64) {
		t.Helper()
		eventually(t, fmt.Sprintf("%s scheduled %v", name, want), func() (bool, string) {
			got, placed, err := scheduled(name)
			if err != nil {
				return false, err.Error()
			}
			return maps.Equal(got, want) && sameNames(placed, want), fmt.Sprintf("overrides %v, placement %v", got, placed)
		})
		// The members run what was scheduled (per member, summed over
		// the clusters and cells on it).
		perMember := map[int]int64{}
		for c, n := range want {
			perMember[memberIndex[c]] += n
		}
		eventually(t, fmt.Sprintf("%s on the members", name), func() (bool, string) {
			var got []string
			ok := true
			for i := range f.members {
				w, placed := perMember[i]
				obj := f.memberObject(t, i, deployments, "shop", name)
				r := int64(-1)
				if obj != nil {
					r, _, _ = unstructured.NestedInt64(obj.Object, "spec", "replicas")
				}
				got = append(got, fmt.Sprintf("member-%d=%d", i, r))
				if placed && r != w || !placed && obj != nil {
					ok = false
				}
			}
			return ok, strings.Join(got, " ")
		})
	}

	// KubeFed's cases, with its clusters: cluster1 = member-0, cluster2 = member-1.
	cases := []struct {
		name, placement, spec string
		want                  map[string]int64
	}{
		{"even", "", "  totalReplicas: 4\n", map[string]int64{"member-0": 2, "member-1": 2}},
		{"weights", "", "  totalReplicas: 6\n  clusters:\n    member-0: {weight: 2}\n    member-1: {weight: 1}\n",
			map[string]int64{"member-0": 4, "member-1": 2}},
		{"min", "", "  totalReplicas: 6\n  clusters:\n    member-0: {weight: 2, minReplicas: 3}\n    member-1: {weight: 1, minReplicas: 3}\n",
			map[string]int64{"member-0": 3, "member-1": 3}},
		{"intersect", "  placement: {clusterSelector: {matchLabels: {foo: bar}}}\n",
			"  totalReplicas: 6\n  intersectWithClusterSelector: true\n  clusters:\n    member-0: {weight: 2, minReplicas: 3}\n    member-1: {weight: 1, minReplicas: 3}\n",
			map[string]int64{"member-0": 6}},
	}
	f.kubectl.MustRun(t, "", "-n", framework.KubeFedNamespace, "label", "kubefedclusters", "member-0", "foo=bar")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := "rsp-" + tc.name
			f.kubectl.MustRun(t, fedDeploy(name, tc.placement), "apply", "-f", "-")
			f.kubectl.MustRun(t, rspYAML(name, tc.spec), "apply", "-f", "-")
			waitSchedule(t, name, tc.want)
		})
	}

	t.Run("RSP before its target; cells by name; scale-up by one", func(t *testing.T) {
		f.kubectl.MustRun(t, rspYAML("cells", "  totalReplicas: 6\n  rebalance: true\n  clusters:\n    shop.rz00a: {weight: 1}\n    shop.rz10a: {weight: 2}\n"), "apply", "-f", "-")
		f.kubectl.MustRun(t, fedDeploy("cells", ""), "apply", "-f", "-")
		waitSchedule(t, "cells", map[string]int64{"shop.rz00a": 2, "shop.rz10a": 4})
		f.kubectl.MustRun(t, "", "-n", "shop", "patch", "rsp", "cells", "--type=merge", "-p", `{"spec":{"totalReplicas":7}}`)
		eventually(t, "7 replicas scheduled", func() (bool, string) {
			got, _, err := scheduled("cells")
			if err != nil {
				return false, err.Error()
			}
			return got["shop.rz00a"]+got["shop.rz10a"] == 7, fmt.Sprint(got)
		})
		got, _, _ := scheduled("cells")
		if got["shop.rz00a"] < 2 || got["shop.rz10a"] < 4 || got["shop.rz00a"]+got["shop.rz10a"] != 7 {
			t.Fatalf("scale-up 6 -> 7 took a replica from a cell: %v (was rz00a=2 rz10a=4)", got)
		}
	})

	t.Run("a bad target kind is reported as an event", func(t *testing.T) {
		f.kubectl.MustRun(t, `apiVersion: scheduling.kubefed.io/v1alpha1
kind: ReplicaSchedulingPreference
metadata: {name: badkind, namespace: shop}
spec: {targetKind: FederatedConfigMap, totalReplicas: 2}
`, "apply", "-f", "-")
		eventually(t, "InvalidTargetKind event", func() (bool, string) {
			out, err := f.kubectl.Run(ctx, "", "-n", "shop", "get", "events", "--field-selector", "involvedObject.name=badkind,reason=InvalidTargetKind", "-o", "jsonpath={.items[*].message}")
			return err == nil && strings.Contains(out, "want FederatedDeployment or FederatedReplicaSet"), out
		})
	})
}

func sameNames(names []string, want map[string]int64) bool {
	if len(names) != len(want) {
		return false
	}
	for _, n := range names {
		if _, ok := want[n]; !ok {
			return false
		}
	}
	return true
}

// TestUpstreamKubeFedScheduler runs upstream KubeFed v0.10.0's
// controller-manager with its SchedulerPreferences gate on against the
// plane, which serves scheduling.kubefed.io: KubeFed's own scheduler
// reads an RSP and writes the placement and overrides of its target, and
// KubeFed propagates them to two real members.
func TestUpstreamKubeFedScheduler(t *testing.T) {
	t.Parallel()
	framework.KubeFedBinary(t)
	plane, members := framework.StartPlaneWithMembers(t, framework.PlaneOptions{}, 2)
	k := framework.Kubectl{Kubeconfig: plane.Kubeconfig}
	dyn := dynamic.NewForConfigOrDie(plane.RESTConfig(t))
	framework.JoinMember(t, plane, members[0], "member-0")
	framework.JoinMember(t, plane, members[1], "member-1")
	framework.StartKubeFed(t, plane, framework.KubeFedOptions{FeatureGates: map[string]bool{"SchedulerPreferences": true}})
	framework.WaitKubeFedClustersReady(t, plane, "member-0", "member-1")
	k.MustRun(t, `
apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: types.kubefed.io/v1beta1
kind: FederatedNamespace
metadata: {name: app, namespace: app}
spec:
  placement: {clusterSelector: {}}
---
apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata: {name: web, namespace: app}
spec:
  template:
    spec:
      replicas: 1
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {containers: [{name: web, image: nginx:1.27}]}
---
apiVersion: scheduling.kubefed.io/v1alpha1
kind: ReplicaSchedulingPreference
metadata: {name: web, namespace: app}
spec:
  targetKind: FederatedDeployment
  totalReplicas: 6
  clusters:
    member-0: {weight: 2}
    member-1: {weight: 1}
`, "apply", "-f", "-")
	want := map[string]int64{"member-0": 4, "member-1": 2}
	eventually(t, "KubeFed's scheduler wrote 4/2", func() (bool, string) {
		obj, err := dyn.Resource(fedDeployV1).Namespace("app").Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		_, placed, _ := rsp.Placement(obj)
		got := rsp.Current(obj)
		return maps.Equal(got, want) && sameNames(placed, want), fmt.Sprintf("overrides %v, placement %v", got, placed)
	})
	for i, m := range members {
		c := m.Client(t)
		w := int32(want[fmt.Sprintf("member-%d", i)])
		waitFor(t, fmt.Sprintf("member-%d runs %d", i, w), func(ctx context.Context) (bool, error) {
			d, err := c.AppsV1().Deployments("app").Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if *d.Spec.Replicas != w {
				return false, fmt.Errorf("member has %d replicas", *d.Spec.Replicas)
			}
			return true, nil
		})
	}
}
