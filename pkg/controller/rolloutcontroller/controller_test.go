package rolloutcontroller

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/placement"
	"github.com/cellfed/cellfed/pkg/rollout"
)

var fedDeploy = schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta2", Resource: "federateddeployments"}

var now = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// object is a FederatedDeployment on a, b, c under an automatic rollout
// with mask, template image, and every released cell reported OK and
// ready at the object's generation.
func object(image string, mask []string, ann map[string]string) *unstructured.Unstructured {
	var tops, maskTops []any
	for _, c := range []string{"a", "b", "c"} {
		status := "HeldBack"
		for _, m := range mask {
			if m == c {
				status = "OK"
			}
		}
		tops = append(tops, map[string]any{"name": c, "status": status, "generation": int64(5), "ready": true})
	}
	for _, m := range mask {
		maskTops = append(maskTops, map[string]any{"name": m})
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta2", "kind": "FederatedDeployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "uid": "u1", "generation": int64(5), "resourceVersion": "7",
			"labels": map[string]any{rollout.LabelActive: "true"}},
		"spec": map[string]any{
			"template":      map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"image": image}}}}}},
			"placement":     map[string]any{"topologies": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}, map[string]any{"name": "c"}}},
			"placementMask": map[string]any{"topologies": maskTops},
		},
		"status": map[string]any{"observedGeneration": int64(5), "topologies": tops},
	}}
	base := object0()
	all := map[string]string{
		rollout.AnnotationAuto: "true", rollout.AnnotationBatchSize: "1", rollout.AnnotationPauseOnFailure: "true",
		rollout.AnnotationBaselineHash: rollout.TemplateHash(base), rollout.AnnotationTemplateHash: rollout.TemplateHash(base),
		rollout.AnnotationProgressSince: rollout.FormatTime(now.Add(-time.Minute)),
	}
	for k, v := range ann {
		all[k] = v
	}
	rollout.SetAnnotations(obj, all)
	return obj
}

// object0 carries the template the rollout started from (app:1).
func object0() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"template": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"image": "app:1"}}}}}},
	}}}
}

func TestReconcile(t *testing.T) {
	cases := []struct {
		name string
		obj  *unstructured.Unstructured
		// conflict makes the update fail with a conflict; refuse makes
		// the first update fail as admission refuses it.
		conflict, refuse bool
		// unconfirmed: the propagation controller does not stand behind
		// the object's status.
		unconfirmed bool
		// event is the reason of the event expected ("" none).
		event string
		check func(t *testing.T, written *unstructured.Unstructured, revisions int)
	}{
		{
			name: "new template: recorded, clock restarted, mask unchanged",
			obj:  object("app:2", []string{"a"}, nil),
			check: func(t *testing.T, w *unstructured.Unstructured, revisions int) {
				ann := w.GetAnnotations()
				if ann[rollout.AnnotationTemplateHash] != rollout.TemplateHash(w) || ann[rollout.AnnotationProgressSince] != rollout.FormatTime(now) {
					t.Errorf("annotations %v", ann)
				}
				if revisions != 1 {
					t.Errorf("%d revisions, want the new template recorded", revisions)
				}
				if m, _ := rollout.Decode(w); strings.Join(placement.Mask(m), ",") != "a" {
					t.Errorf("mask moved while recording")
				}
			},
		},
		{
			name:  "batch done: next cell released",
			event: "RolloutAdvanced",
			obj:   object("app:2", []string{"a"}, map[string]string{rollout.AnnotationTemplateHash: rollout.TemplateHash(object("app:2", nil, nil))}),
			check: func(t *testing.T, w *unstructured.Unstructured, _ int) {
				m, _ := rollout.Decode(w)
				if got := strings.Join(placement.Mask(m), ","); got != "a,b" {
					t.Errorf("mask = %s, want a,b", got)
				}
				if ann := w.GetAnnotations(); ann[rollout.AnnotationState] != rollout.StateProgressing || ann[rollout.AnnotationProgressSince] != rollout.FormatTime(now) {
					t.Errorf("annotations %v", ann)
				}
			},
		},
		{
			name:        "batch done by a status the propagation controller did not confirm: nothing moved",
			obj:         object("app:2", []string{"a"}, map[string]string{rollout.AnnotationTemplateHash: rollout.TemplateHash(object("app:2", nil, nil))}),
			unconfirmed: true,
			check:       func(t *testing.T, w *unstructured.Unstructured, _ int) { expectNoWrite(t, w) },
		},
		{
			name:  "last batch done: finished, mask and label gone",
			event: "RolloutFinished",
			obj:   object("app:2", []string{"a", "b", "c"}, map[string]string{rollout.AnnotationTemplateHash: rollout.TemplateHash(object("app:2", nil, nil))}),
			check: func(t *testing.T, w *unstructured.Unstructured, _ int) {
				if _, has, _ := unstructured.NestedFieldNoCopy(w.Object, "spec", "placementMask"); has || w.GetLabels()[rollout.LabelActive] != "" {
					t.Errorf("finished object keeps mask or label: %v", w.Object)
				}
				if ann := w.GetAnnotations(); ann[rollout.AnnotationState] != rollout.StateFinished || ann[rollout.AnnotationAuto] != "" {
					t.Errorf("annotations %v", ann)
				}
			},
		},
		{
			name:  "paused: nothing written",
			obj:   object("app:2", []string{"a"}, map[string]string{rollout.AnnotationTemplateHash: rollout.TemplateHash(object("app:2", nil, nil)), rollout.AnnotationPaused: "true"}),
			check: func(t *testing.T, w *unstructured.Unstructured, _ int) { expectNoWrite(t, w) },
		},
		{
			name:     "conflict: nothing written, no error (the newer object comes through the informer)",
			obj:      object("app:2", []string{"a"}, map[string]string{rollout.AnnotationTemplateHash: rollout.TemplateHash(object("app:2", nil, nil))}),
			conflict: true,
			check:    func(t *testing.T, w *unstructured.Unstructured, _ int) { expectNoWrite(t, w) },
		},
		{
			name:   "step refused by admission: the reason recorded, no retry",
			obj:    object("app:2", []string{"a"}, map[string]string{rollout.AnnotationTemplateHash: rollout.TemplateHash(object("app:2", nil, nil))}),
			refuse: true,
			check: func(t *testing.T, w *unstructured.Unstructured, _ int) {
				m, _ := rollout.Decode(w)
				if msg := w.GetAnnotations()[rollout.AnnotationMessage]; !strings.Contains(msg, "the plane refused to advance") || strings.Join(placement.Mask(m), ",") != "a" {
					t.Errorf("message %q mask %v", msg, placement.Mask(m))
				}
			},
		},
		{
			name: "bad annotation: the reason recorded, nothing moved",
			obj:  object("app:2", []string{"a"}, map[string]string{rollout.AnnotationBatchSize: "many"}),
			check: func(t *testing.T, w *unstructured.Unstructured, _ int) {
				if msg := w.GetAnnotations()[rollout.AnnotationMessage]; !strings.Contains(msg, "batch-size") {
					t.Errorf("message %q", msg)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
				fedDeploy: "FederatedDeploymentList", cellv1alpha1.TemplateRevisionsResource: "TemplateRevisionList",
			}, tc.obj.DeepCopy())
			var written *unstructured.Unstructured
			client.PrependReactor("update", "federateddeployments", func(a clienttesting.Action) (bool, runtime.Object, error) {
				if tc.conflict {
					return true, nil, apierrors.NewConflict(fedDeploy.GroupResource(), "web", nil)
				}
				if tc.refuse {
					tc.refuse = false
					return true, nil, apierrors.NewInvalid(schema.GroupKind{Group: "types.kubefed.io", Kind: "FederatedDeployment"}, "web",
						field.ErrorList{field.Invalid(field.NewPath("spec", "placementMask"), "b", "not placed")})
				}
				written = a.(clienttesting.UpdateAction).GetObject().(*unstructured.Unstructured).DeepCopy()
				return true, written, nil
			})
			recorder := record.NewFakeRecorder(10)
			confirmed := func(o *unstructured.Unstructured) bool {
				if o.GetResourceVersion() != tc.obj.GetResourceVersion() {
					t.Errorf("asked to confirm resourceVersion %q, cached %q", o.GetResourceVersion(), tc.obj.GetResourceVersion())
				}
				return !tc.unconfirmed
			}
			c := New(fedDeploy, client, Caches{StatusConfirmed: confirmed}, recorder, DefaultOptions())
			c.now = func() time.Time { return now }
			if err := c.informer.GetStore().Add(tc.obj); err != nil {
				t.Fatal(err)
			}
			after, err := c.reconcile(context.Background(), "shop/web")
			if err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			if tc.unconfirmed && after <= 0 {
				t.Errorf("an unconfirmed status is not looked at again (after %v)", after)
			}
			revs, _ := client.Resource(cellv1alpha1.TemplateRevisionsResource).Namespace("shop").List(context.Background(), metav1.ListOptions{})
			tc.check(t, written, len(revs.Items))
			select {
			case e := <-recorder.Events:
				if tc.event == "" || !strings.Contains(e, tc.event) {
					t.Errorf("event %q, want %q", e, tc.event)
				}
			default:
				if tc.event != "" {
					t.Errorf("no event, want %s", tc.event)
				}
			}
		})
	}
}

func expectNoWrite(t *testing.T, w *unstructured.Unstructured) {
	t.Helper()
	if w != nil {
		t.Errorf("wrote %v", w.GetAnnotations())
	}
}

// Reading the propagation controller's cache of every object of the
// type, the rollout controller leaves the objects not under a rollout
// alone.
func TestSharedCacheSkipsObjectsNotUnderRollout(t *testing.T) {
	obj := object("app:2", []string{"a"}, nil)
	obj.SetLabels(nil)
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		fedDeploy: "FederatedDeploymentList", cellv1alpha1.TemplateRevisionsResource: "TemplateRevisionList",
	}, obj.DeepCopy())
	shared := cache.NewSharedIndexInformer(&cache.ListWatch{}, &unstructured.Unstructured{}, 0, cache.Indexers{})
	if err := shared.GetStore().Add(obj); err != nil {
		t.Fatal(err)
	}
	c := New(fedDeploy, client, Caches{Federated: shared}, nil, DefaultOptions())
	if c.ownInformer {
		t.Fatal("built a cache of its own although one was given")
	}
	client.ClearActions()
	if _, err := c.reconcile(context.Background(), "shop/web"); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if a := client.Actions(); len(a) != 0 {
		t.Errorf("%d requests for an object not under a rollout: %v", len(a), a)
	}
	if active(obj) || !active(cache.DeletedFinalStateUnknown{Obj: object("app:2", nil, nil)}) {
		t.Error("active() misreads the label")
	}
}
