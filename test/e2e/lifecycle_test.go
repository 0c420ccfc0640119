package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/controller/clusters"
	"github.com/cellfed/cellfed/test/framework"
)

// TestManagedLabelRemovedWithoutFederatedObject: KubeFed's rule ("should
// have the managed label removed if not managed"). A member object
// labelled kubefed.io/managed=true with no federated object loses that
// label and nothing else; a member object that has its federated object
// keeps it.
func TestManagedLabelRemovedWithoutFederatedObject(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := startFederation(t, 1)
	fedConfigMaps := fedResource("federatedconfigmaps", "v1beta2")

	f.kubectl.MustRun(t, configMap("shop", "kept", "a: b", []string{"rz00a"}, ""), "apply", "-f", "-")
	f.waitSettled(t, fedConfigMaps, "shop", "kept", map[string]string{"rz00a": "OK"})

	m0 := f.memberKube[0]
	if _, err := m0.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	orphan := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: "orphan", Namespace: "shop",
			Labels:      map[string]string{clusters.ManagedLabel: "true", "app": "shop"},
			Annotations: map[string]string{"team": "blue"},
		},
		Data: map[string]string{"k": "v"},
	}
	created, err := m0.CoreV1().ConfigMaps("shop").Create(ctx, orphan, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the unfederated member object: %v", err)
	}

	var got *corev1.ConfigMap
	eventually(t, "the managed label removed from shop/orphan in member-0", func() (bool, string) {
		got, err = m0.CoreV1().ConfigMaps("shop").Get(ctx, "orphan", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		_, has := got.Labels[clusters.ManagedLabel]
		return !has, fmt.Sprintf("labels %v", got.Labels)
	})
	// Only the label: everything else is as it was created.
	if got.Labels["app"] != "shop" || len(got.Labels) != 1 {
		t.Errorf("labels = %v, want only app=shop left", got.Labels)
	}
	if got.Annotations["team"] != "blue" || len(got.Annotations) != 1 {
		t.Errorf("annotations = %v, want team=blue untouched", got.Annotations)
	}
	if got.Data["k"] != "v" || len(got.Data) != 1 {
		t.Errorf("data = %v, want k=v untouched", got.Data)
	}
	if got.UID != created.UID {
		t.Errorf("the object was re-created (uid %s, was %s)", got.UID, created.UID)
	}

	// The federated object's own member object keeps its label.
	kept, err := m0.CoreV1().ConfigMaps("shop").Get(ctx, "kept", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if kept.Labels[clusters.ManagedLabel] != "true" {
		t.Errorf("shop/kept, which has its federated object, lost its managed label: %v", kept.Labels)
	}
}

// TestRetireCell: deleting a Cell that objects place is refused with the
// objects, their count and both ways out; `cell delete --drain` removes
// what was placed through the cell from its member (an orphan-annotated
// object stays there, unmanaged), leaves the other cell alone, deletes the
// Cell, and a placement still naming it reports CellNotFound.
func TestRetireCell(t *testing.T) {
	t.Parallel()
	f := startFederation(t, 2)
	fedConfigMaps := fedResource("federatedconfigmaps", "v1beta2")
	cells := []string{"rz00a", "rz10a"}
	f.kubectl.MustRun(t, configMap("shop", "app", "a: b", cells, ""), "apply", "-f", "-")
	f.kubectl.MustRun(t, configMap("shop", "kept", "a: b", cells, "  annotations: {kubefed.io/orphan: \"true\"}"), "apply", "-f", "-")
	for _, name := range []string{"app", "kept"} {
		f.waitSettled(t, fedConfigMaps, "shop", name, map[string]string{"rz00a": "OK", "rz10a": "OK"})
	}

	line := f.ctl.fails(t, "placed by 2 federated objects", "cell", "delete", "rz00a", "-n", "shop")
	for _, want := range []string{"FederatedConfigMap/app", "FederatedConfigMap/kept", "spec.placement", "cell delete rz00a -n shop --drain"} {
		if !strings.Contains(line, want) {
			t.Errorf("refusal %q does not say %q", line, want)
		}
	}
	if f.memberObject(t, 0, configmaps, "shop", "app") == nil {
		t.Fatal("the refused deletion removed shop/app from member-0")
	}

	// Interrupted at once (the timeout): the drain has started and
	// goes on; the same command resumes the wait.
	out, errOut, code := f.ctl.run(t, "cell", "delete", "rz00a", "-n", "shop", "--drain", "--timeout=1ms")
	if code != 1 || !strings.Contains(out, "cell shop/rz00a: draining") || !strings.Contains(errOut, "it keeps draining") || !strings.Contains(errOut, "--drain` again") {
		t.Fatalf("drain with a 1ms timeout: exit %d, stdout %q, stderr %q; want exit 1 saying the drain goes on and how to resume", code, out, errOut)
	}
	out = f.ctl.ok(t, "cell", "delete", "rz00a", "-n", "shop", "--drain", "--timeout=90s")
	if !strings.Contains(out, "cell shop/rz00a: already draining") || !strings.Contains(out, "cell shop/rz00a drained and deleted") {
		t.Errorf("resumed drain output %q lacks its resumption and its end", out)
	}
	if _, err := f.dyn.Resource(cellv1alpha1.CellsResource).Namespace("shop").Get(context.Background(), "rz00a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("cell shop/rz00a after the drain: %v, want NotFound", err)
	}
	if f.memberObject(t, 0, configmaps, "shop", "app") != nil {
		t.Error("member-0 still holds shop/app after the drain of rz00a")
	}
	kept := f.memberObject(t, 0, configmaps, "shop", "kept")
	if kept == nil {
		t.Error("the drain deleted shop/kept, annotated kubefed.io/orphan=true")
	} else if _, has := kept.GetLabels()[clusters.ManagedLabel]; has {
		t.Errorf("shop/kept left on member-0 is still labelled managed: %v", kept.GetLabels())
	}
	for _, name := range []string{"app", "kept"} {
		if f.memberObject(t, 1, configmaps, "shop", name) == nil {
			t.Errorf("the drain of rz00a removed shop/%s from member-1 (rz10a)", name)
		}
	}
	f.waitSettled(t, fedConfigMaps, "shop", "app", map[string]string{"rz00a": "CellNotFound", "rz10a": "OK"})
}

// TestNamespaceDeletionFinishesOnAMemberThatWasDown: a workspace
// namespace is deleted on the plane while the member of one of its cells
// is killed (SIGKILL). The plane's namespace may not be gone before that
// member is back, and once it is back, the member holds none of the
// objects the federation created there within 60 s (issue 30 §1) —
// removed, not merely released by the managed-label rule.
func TestNamespaceDeletionFinishesOnAMemberThatWasDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := startFederation(t, 2)
	fedConfigMaps := fedResource("federatedconfigmaps", "v1beta2")
	cells := []string{"rz00a", "rz10a"}
	for _, name := range []string{"one", "two"} {
		f.kubectl.MustRun(t, configMap("shop", name, "a: b", cells, ""), "apply", "-f", "-")
	}
	for _, name := range []string{"one", "two"} {
		f.waitSettled(t, fedConfigMaps, "shop", name, map[string]string{"rz00a": "OK", "rz10a": "OK"})
	}

	f.members[1].Kill()
	eventually(t, "member-1 not ready in the plane", func() (bool, string) {
		st, err := clusterCondition(ctx, f.dyn, "member-1", "Ready")
		return err == nil && st != "True", fmt.Sprintf("Ready=%q err=%v", st, err)
	})
	f.kubectl.MustRun(t, "", "delete", "namespace", "shop", "--wait=false")
	planeNS := func() bool {
		_, err := f.dyn.Resource(namespaces).Get(ctx, "shop", metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("reading the plane's namespace shop: %v", err)
		}
		return err == nil
	}
	// member-0 is up: its copies go while member-1's wait, reported.
	eventually(t, "member-0's copies removed, member-1's waiting", func() (bool, string) {
		for _, name := range []string{"one", "two"} {
			if f.memberObject(t, 0, configmaps, "shop", name) != nil {
				return false, "member-0 still holds shop/" + name
			}
			obj, err := f.dyn.Resource(fedConfigMaps).Namespace("shop").Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				t.Fatalf("federated object shop/%s is gone while member-1, which holds its copy, is down", name)
			}
			if err != nil {
				return false, err.Error()
			}
			tops, _, _ := unstructured.NestedSlice(obj.Object, "status", "topologies")
			waiting := false
			for _, tp := range tops {
				if m, _ := tp.(map[string]any); m["name"] == "rz10a" && m["status"] == "WaitingForRemoval" {
					waiting = true
				}
			}
			if !waiting {
				return false, fmt.Sprintf("shop/%s: topologies %v, want rz10a WaitingForRemoval", name, tops)
			}
		}
		return true, ""
	})
	if !planeNS() {
		t.Fatal("the plane's namespace shop is gone while member-1, which holds its objects, is down")
	}

	f.members[1].RestartAndWait(t)
	m1 := f.memberKube[1]
	deadline := time.Now().Add(60 * time.Second)
	if err := framework.Poll(ctx, 200*time.Millisecond, time.Until(deadline), func(ctx context.Context) (bool, error) {
		for _, name := range []string{"one", "two"} {
			_, err := m1.CoreV1().ConfigMaps("shop").Get(ctx, name, metav1.GetOptions{})
			if err == nil {
				return false, fmt.Errorf("member-1 still holds shop/%s", name)
			}
			if !apierrors.IsNotFound(err) {
				return false, err
			}
		}
		if planeNS() {
			return false, errors.New("the plane's namespace shop is still there")
		}
		return true, nil
	}); err != nil {
		t.Fatalf("60 s after member-1 came back: %v", err)
	}
}
