package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/test/framework"
)

// Issue #40, items 2 and 6: a cell's move must not cross a tenant's
// dedication, and must not hang when its target goes. Both tests move
// tenant acme's cell shop/rz00a from member-0 to member-2, emptied of its
// cells first, and dedicate member-2 to tenant beta.

// emptyMember2 deletes the fixture's cells on member-2 (nothing places
// them), so that member-2 may be dedicated or unjoined but for a move.
func emptyMember2(t *testing.T, f *federation) {
	t.Helper()
	f.kubectl.MustRun(t, "", "-n", "shop", "delete", "cells.core.cellfed.io", "rz20a")
	f.kubectl.MustRun(t, "", "-n", "shop2", "delete", "cells.core.cellfed.io", "rz20a")
}

// cellOf reads a Cell from the plane.
func cellOf(t *testing.T, f *federation, ns, name string) (*cellv1alpha1.Cell, error) {
	t.Helper()
	u, err := f.dyn.Resource(cellv1alpha1.CellsResource).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var c cellv1alpha1.Cell
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// TestMoveTargetDedicationRefused is the probe, admission on: while
// shop/rz00a moves to member-2, dedicating member-2 to beta and unjoining
// member-2 are both refused, naming the move.
func TestMoveTargetDedicationRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := startFederation(t, 3)
	emptyMember2(t, f)
	// A Deployment never gets ready on these members (no controllers
	// run there): the move copies it to member-2 and stays under way.
	f.kubectl.MustRun(t, deployment("shop", "stay", "nginx:1.27", []string{"rz00a"}, ""), "apply", "-f", "-")
	eventually(t, "stay on member-0", func() (bool, string) {
		return f.memberObject(t, 0, deployments, "shop", "stay") != nil, "not there"
	})
	f.ctl.ok(t, "cell", "move", "rz00a", "-n", "shop", "--to=member-2", "--wait=false")
	eventually(t, "stay copied to member-2, the move under way", func() (bool, string) {
		return f.memberObject(t, 2, deployments, "shop", "stay") != nil, "not copied"
	})

	out, err := f.kubectl.Run(ctx, "", "-n", framework.KubeFedNamespace, "label", "kubefedclusters", "member-2", "cellfed.io/tenant=beta")
	if err == nil {
		t.Fatalf("dedicating member-2 to tenant beta while acme's cell moves there was accepted: %s", out)
	}
	out = err.Error()
	for _, want := range []string{"metadata.labels[cellfed.io/tenant]", `cannot be dedicated to tenant "beta"`, `shop/rz00a (tenant "acme", moving to it)`, "--undo"} {
		if !strings.Contains(out, want) {
			t.Errorf("the refusal %q does not say %q", out, want)
		}
	}

	f.ctl.fails(t, "cells are moving to cluster member-2 (shop/rz00a); undo those moves first", "unjoin", "member-2")
	kfc, err := f.dyn.Resource(kubefed.KubeFedClustersResource).Namespace(framework.KubeFedNamespace).Get(ctx, "member-2", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("KubeFedCluster member-2 after the refused unjoin: %v", err)
	}
	if owner := kfc.GetLabels()[cellv1alpha1.LabelTenant]; owner != "" {
		t.Errorf("member-2 is dedicated to %q after the refusal", owner)
	}
}

// TestMoveTargetDedicatedBlocked is the controller's own check (defence in
// depth), with cellfed's admission off so that the dedication lands while
// the move is under way: nothing of acme is written to beta's member-2,
// the objects' status says OutsideWorkspace for the move, and the Cell
// says MoveBlocked with how to go on. Unjoining member-2 then blocks the
// move as TargetNotFound.
func TestMoveTargetDedicatedBlocked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := startFederationWith(t, 3, framework.PlaneOptions{Args: []string{"--disable-admission-plugins=CellfedFederation"}})
	emptyMember2(t, f)
	f.kubectl.MustRun(t, configMap("shop", "cfg", `k: "v"`, []string{"rz00a"}, ""), "apply", "-f", "-")
	eventually(t, "cfg on member-0", func() (bool, string) {
		return f.memberObject(t, 0, configmaps, "shop", "cfg") != nil, "not there"
	})

	// The move starts paused, then member-2 is dedicated to beta.
	f.kubectl.MustRun(t, "", "-n", "shop", "patch", "cells.core.cellfed.io", "rz00a", "--type=merge", "-p", `{"spec":{"move":{"to":"member-2","paused":true}}}`)
	moveCluster := cellv1alpha1.MoveClusterName("shop", "rz00a")
	kfcs := f.dyn.Resource(kubefed.KubeFedClustersResource).Namespace(framework.KubeFedNamespace)
	eventually(t, "the move cluster "+moveCluster, func() (bool, string) {
		_, err := kfcs.Get(ctx, moveCluster, metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	f.kubectl.MustRun(t, "", "-n", framework.KubeFedNamespace, "label", "kubefedclusters", "member-2", "cellfed.io/tenant=beta")

	blocked := func(reason string, says ...string) {
		t.Helper()
		eventually(t, "shop/rz00a MoveBlocked="+reason, func() (bool, string) {
			c, err := cellOf(t, f, "shop", "rz00a")
			if err != nil {
				return false, err.Error()
			}
			for _, cond := range c.Status.Conditions {
				if cond.Type != cellv1alpha1.CellMoveBlocked {
					continue
				}
				ok := cond.Status == metav1.ConditionTrue && cond.Reason == reason && c.Status.Move != nil && c.Status.Move.Message == cond.Message
				for _, s := range says {
					ok = ok && strings.Contains(cond.Message, s)
				}
				return ok, fmt.Sprintf("condition %+v, move %+v", cond, c.Status.Move)
			}
			return false, fmt.Sprintf("no MoveBlocked condition: %+v, move %+v", c.Status.Conditions, c.Status.Move)
		})
	}
	blocked("TargetDedicated", `cluster member-2 is dedicated to tenant "beta"`, "--undo", "cellfed.io/tenant-")
	eventually(t, "the move cluster carries member-2's dedication", func() (bool, string) {
		kfc, err := kfcs.Get(ctx, moveCluster, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return kfc.GetLabels()[cellv1alpha1.LabelClusterTenant] == "beta", fmt.Sprint(kfc.GetLabels())
	})

	// Resumed, the move goes nowhere, and waiting for it ends with why.
	out, errOut, code := f.ctl.run(t, "cell", "move", "rz00a", "-n", "shop", "--resume", "--timeout=2m")
	if code != 1 || !strings.Contains(errOut, "cell shop/rz00a: the move to member-2 is blocked (TargetDedicated)") {
		t.Errorf("cell move --resume: exit %d, stdout %q, stderr %q; want exit 1 saying the move is blocked", code, out, errOut)
	}
	// A new object placed on the cell does not follow the move either.
	f.kubectl.MustRun(t, configMap("shop", "cfg2", `k: "v"`, []string{"rz00a"}, ""), "apply", "-f", "-")
	moveStatus := func(name string) string {
		obj, err := f.dyn.Resource(fedCMV1).Namespace("shop").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		list, _ := field(obj.Object, "status", "clusters").([]any)
		for _, e := range list {
			if m := e.(map[string]any); m["name"] == moveCluster {
				return fmt.Sprint(m["status"])
			}
		}
		return "not reported"
	}
	for _, name := range []string{"cfg", "cfg2"} {
		eventually(t, name+" reports the move cluster OutsideWorkspace", func() (bool, string) {
			st := moveStatus(name)
			return st == "OutsideWorkspace" && f.memberObject(t, 0, configmaps, "shop", name) != nil, st
		})
	}
	for _, name := range []string{"cfg", "cfg2"} {
		if f.memberObject(t, 2, configmaps, "shop", name) != nil {
			t.Errorf("tenant acme's ConfigMap %s was written to member-2, dedicated to tenant beta", name)
		}
	}

	// Item 6: unjoin refuses the move's target; forced, the move is
	// blocked as TargetNotFound.
	f.ctl.fails(t, "cells are moving to cluster member-2 (shop/rz00a)", "unjoin", "member-2")
	f.ctl.ok(t, "unjoin", "member-2", "--force")
	blocked("TargetNotFound", "kube-federation-system/member-2", "does not exist", "cellfedctl cell move rz00a -n shop --undo")
}
