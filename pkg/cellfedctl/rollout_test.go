package cellfedctl

import (
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/cellfed/cellfed/pkg/federatedtypes"
	"github.com/cellfed/cellfed/pkg/placement"
	"github.com/cellfed/cellfed/pkg/rollout"
)

func TestBatchFlags(t *testing.T) {
	cases := []struct {
		name  string
		args  []string
		cells []string
		err   string
	}{
		{name: "cells", args: []string{"--cells=rz00a,rz10a", "--cells", "rz20a,rz00a"}, cells: []string{"rz00a", "rz10a", "rz20a"}},
		{name: "batch", args: []string{"--batch=2"}},
		{name: "both", args: []string{"--cells=rz00a", "--batch=1"}, err: "--cells and --batch are exclusive"},
		{name: "neither", args: nil, err: "say which cells to release"},
		{name: "batch zero", args: []string{"--batch=0"}, err: "a batch is at least 1 cell"},
		{name: "batch negative", args: []string{"--batch=-3"}, err: "a batch is at least 1 cell"},
		{name: "bad cell name", args: []string{"--cells=RZ00A"}, err: `"RZ00A" is not a cell name`},
		{name: "empty cells", args: []string{"--cells=,"}, err: "--cells names no cell"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b batchFlags
			cmd := &cobra.Command{Use: "x"}
			b.add(cmd, "release")
			if err := cmd.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			cells, err := b.check(cmd)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "; ") && !strings.Contains(err.Error(), "pass") {
					t.Fatalf("err = %v, want %q with a fix", err, tc.err)
				}
				return
			}
			if err != nil || strings.Join(cells, ",") != strings.Join(tc.cells, ",") {
				t.Fatalf("cells = %v, %v; want %v", cells, err, tc.cells)
			}
		})
	}
}

func TestMatchTypes(t *testing.T) {
	deploy := fedType{Name: "deployments.apps", Kind: "FederatedDeployment", Plural: "federateddeployments", Group: "types.kubefed.io",
		TargetKind: "Deployment", TargetPlural: "deployments", TargetGroup: "apps"}
	svc := fedType{Name: "services", Kind: "FederatedService", Plural: "federatedservices", Group: "types.kubefed.io",
		TargetKind: "Service", TargetPlural: "services"}
	widget := fedType{Name: "deployments.example.com", Kind: "FederatedDeployment2", Plural: "federateddeployment2s", Group: "types.kubefed.io",
		TargetKind: "Deployment", TargetPlural: "deployments", TargetGroup: "example.com"}
	all := []fedType{deploy, svc}
	for arg, want := range map[string]string{
		"federateddeployment": "deployments.apps", "FederatedDeployment": "deployments.apps", "federateddeployments": "deployments.apps",
		"federateddeployments.types.kubefed.io": "deployments.apps", "deployment": "deployments.apps", "deployments.apps": "deployments.apps",
		"deployment.apps": "deployments.apps", "service": "services", "svc": "", "configmap": "",
	} {
		got := matchTypes(arg, all)
		names := ""
		for _, m := range got {
			names += m.Name
		}
		if names != want {
			t.Errorf("matchTypes(%q) = %q, want %q", arg, names, want)
		}
	}
	if got := matchTypes("deployment", append(all, widget)); len(got) != 2 {
		t.Errorf("deployment with two Deployment types enabled: %d matches, want 2 (ambiguous)", len(got))
	}
	for _, bad := range []string{"web", "deployment/", "/web", "a/b/c"} {
		if _, _, err := splitRef(bad); err == nil || !strings.Contains(err.Error(), "<kind>/<name>") {
			t.Errorf("splitRef(%q): %v", bad, err)
		}
	}
}

var fedDeployV2 = schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta2", Resource: "federateddeployments"}

func fedObj(gen int64, rv string, ann map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta2", "kind": "FederatedDeployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "uid": "u1", "generation": gen, "resourceVersion": rv, "annotations": ann},
		"spec": map[string]any{
			"template":      map[string]any{"spec": map[string]any{"replicas": int64(2)}},
			"placement":     map[string]any{"topologies": []any{map[string]any{"name": "rz00a"}, map[string]any{"name": "rz10a"}}},
			"placementMask": map[string]any{"topologies": []any{map[string]any{"name": "rz00a"}}},
		},
	}}
}

// TestGuardedUpdate: a conflict is retried on a fresh read only when
// what the command decided from is unchanged; otherwise it fails with a
// clear message and writes nothing.
func TestGuardedUpdate(t *testing.T) {
	cases := []struct {
		name string
		// meanwhile is the object another writer stored after the read.
		meanwhile *unstructured.Unstructured
		err       string
	}{
		{name: "only status and state changed: retried", meanwhile: fedObj(3, "11", map[string]any{rollout.AnnotationState: "Progressing"})},
		{name: "the controller recorded a template: retried", meanwhile: fedObj(3, "11", map[string]any{
			rollout.AnnotationState: "Progressing", rollout.AnnotationTemplateHash: "abc", rollout.AnnotationProgressSince: "2026-11-23T10:00:00Z"})},
		{name: "spec changed", meanwhile: fedObj(4, "11", nil), err: "changed since it was read (its spec changed: generation 3, now 4); nothing was written: re-run the command"},
		{name: "paused meanwhile", meanwhile: fedObj(3, "11", map[string]any{rollout.AnnotationPaused: "true"}),
			err: "its rollout annotations changed: rollout.cellfed.io/paused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			read := fedObj(3, "10", nil)
			client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), tc.meanwhile.DeepCopy())
			var writes []*unstructured.Unstructured
			client.PrependReactor("update", "federateddeployments", func(a clienttesting.Action) (bool, runtime.Object, error) {
				obj := a.(clienttesting.UpdateAction).GetObject().(*unstructured.Unstructured)
				if obj.GetResourceVersion() != tc.meanwhile.GetResourceVersion() {
					return true, nil, apierrors.NewConflict(fedDeployV2.GroupResource(), "web", nil)
				}
				writes = append(writes, obj.DeepCopy())
				return true, obj, nil
			})
			tg := &target{c: &planeClients{Clients: federatedtypes.Clients{Dynamic: client}}, ns: "shop", name: "web", obj: read,
				typ: fedType{Kind: "FederatedDeployment", Plural: "federateddeployments", Group: "types.kubefed.io"}}
			_, err := tg.update(context.Background(), func(obj *unstructured.Unstructured) error {
				return placement.SetMask(obj, []string{"rz00a", "rz10a"})
			})
			if tc.err == "" {
				if err != nil || len(writes) != 1 {
					t.Fatalf("err %v, %d writes; want the update retried once", err, len(writes))
				}
				if writes[0].GetAnnotations()[rollout.AnnotationState] != "Progressing" {
					t.Errorf("the retry dropped what the other writer stored: %v", writes[0].GetAnnotations())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "federateddeployment shop/web") {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
			if len(writes) != 0 {
				t.Errorf("%d writes after a conflict, want none", len(writes))
			}
		})
	}
}

func TestStatusView(t *testing.T) {
	obj := fedObj(4, "1", map[string]any{rollout.AnnotationState: "Progressing", rollout.AnnotationMessage: "started"})
	obj.SetLabels(map[string]string{rollout.LabelActive: "true"})
	status := map[string]any{"observedGeneration": int64(4), "topologies": []any{
		map[string]any{"name": "rz00a", "cluster": "shop.rz00a", "status": "OK", "generation": int64(4), "ready": true,
			"remoteStatus": map[string]any{"replicas": int64(2), "readyReplicas": int64(2)}},
		map[string]any{"name": "rz10a", "cluster": "shop.rz10a", "status": "HeldBack", "generation": int64(2), "ready": true},
	}}
	obj.Object["status"] = status
	tg := &target{typ: fedType{Kind: "FederatedDeployment"}, ns: "shop", name: "web"}
	if err := tg.use(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	v := viewOf(tg)
	want := []string{
		"federateddeployment shop/web: generation 4, 1 of 2 placed cells released",
		"Rollout: manual; Progressing: started",
		"rz00a   updated     4            true    2/2        OK",
		"rz10a   held back   2            true    -          HeldBack",
		"batch complete: 1 released cell(s) updated and ready, 1 held back",
	}
	for _, w := range want {
		if !strings.Contains(v.text, w) {
			t.Errorf("status output lacks %q:\n%s", w, v.text)
		}
	}
	if !v.done {
		t.Errorf("done = false, want true (exit code 0)")
	}

	// Not ready: not done (exit code 2).
	status["topologies"].([]any)[0].(map[string]any)["ready"] = false
	_ = tg.use(context.Background(), obj)
	if v := viewOf(tg); v.done || !strings.Contains(v.text, "waiting: 0 of 1 released cell(s) updated and ready; not yet: rz00a (not ready)") {
		t.Errorf("not ready: done %v\n%s", v.done, v.text)
	}

	// An automatic rollout is done only once finished; paused, it is stuck.
	status["topologies"].([]any)[0].(map[string]any)["ready"] = true
	rollout.SetAnnotations(obj, map[string]string{rollout.AnnotationAuto: "true", rollout.AnnotationPaused: "true", rollout.AnnotationPauseReason: "deadline"})
	_ = tg.use(context.Background(), obj)
	if v := viewOf(tg); v.done || !strings.Contains(v.stuck, "paused: deadline") || !strings.Contains(v.text, "PAUSED: deadline") {
		t.Errorf("paused automatic rollout: done %v stuck %q\n%s", v.done, v.stuck, v.text)
	}
}

func TestExitCode(t *testing.T) {
	if code, print := exitCodeOf(exitCode{code: ExitNotDone}); code != 2 || print {
		t.Errorf("not done: code %d print %v", code, print)
	}
	if code, print := exitCodeOf(fixError{"x; y"}); code != 1 || !print {
		t.Errorf("error: code %d print %v", code, print)
	}
}

func TestWriteRowsAssigned(t *testing.T) {
	four := int32(4)
	tests := []struct {
		name string
		rows []rollout.Row
		want []string
	}{
		{"not divided: no ASSIGNED column",
			[]rollout.Row{{Cell: "a", State: rollout.Updated, Replicas: "2/2"}},
			[]string{"CELL   STATE", "REPLICAS   PROPAGATION", "a      updated"}},
		{"divided: assigned next to ready/desired",
			[]rollout.Row{{Cell: "a", State: rollout.Updated, Replicas: "3/4", Assigned: &four}, {Cell: "b", State: rollout.HeldBack}},
			[]string{"ASSIGNED   REPLICAS", "4          3/4"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			writeRows(&b, tc.rows)
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("table lacks %q:\n%s", w, b.String())
				}
			}
			if got := strings.Contains(b.String(), "ASSIGNED"); got != (tc.rows[0].Assigned != nil) {
				t.Errorf("ASSIGNED column shown: %v\n%s", got, b.String())
			}
		})
	}
}
