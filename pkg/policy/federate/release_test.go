package federate

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/cellfed/cellfed/pkg/apis/policy/v1alpha1"
	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
	"github.com/cellfed/cellfed/pkg/rollout"
)

func TestStartRollout(t *testing.T) {
	const stored = `apiVersion: types.kubefed.io/v1beta2
kind: FederatedDeployment
metadata:
  name: web
  namespace: shop
  labels: {policy.cellfed.io/propagationpolicy: web}
  annotations: {policy.cellfed.io/policy: PropagationPolicy/shop/web}
spec:
  template: {spec: {template: {spec: {containers: [{name: web, image: "nginx:1.27"}]}}}}
  placement: {topologies: [{name: rz00a}, {name: rz10a}]}
`
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	rolloutRelease := policyv1alpha1.Release{Strategy: policyv1alpha1.ReleaseRollout}
	newImage := func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"name": "web", "image": "nginx:1.28"}}, "spec", "template", "spec", "template", "spec", "containers")
	}
	tests := []struct {
		name     string
		release  policyv1alpha1.Release
		existing func(*unstructured.Unstructured)
		change   func(*unstructured.Unstructured)
		started  bool
		// annotations the started rollout must carry
		want map[string]string
		// the mask merged must have afterwards (nil: none)
		mask []string
	}{
		{
			name: "Immediate: a new template goes everywhere", release: policyv1alpha1.Release{Strategy: policyv1alpha1.ReleaseImmediate},
			change: newImage,
		},
		{
			name: "Rollout with defaults: a new template starts an automatic rollout", release: rolloutRelease,
			change: newImage, started: true, mask: []string{},
			want: map[string]string{rollout.AnnotationAuto: "true", rollout.AnnotationBatchSize: "1", rollout.AnnotationState: rollout.StateProgressing,
				rollout.AnnotationProgressSince: "2026-12-07T12:00:00Z", rollout.AnnotationPauseOnFailure: "", rollout.AnnotationProgressDeadline: "", rollout.AnnotationTemplateHash: ""},
		},
		{
			name: "Rollout with batch size, pause on failure and a deadline",
			release: policyv1alpha1.Release{Strategy: policyv1alpha1.ReleaseRollout, BatchSize: ptr.To[int32](2), PauseOnFailure: true,
				ProgressDeadlineSeconds: ptr.To[int32](90)},
			change: newImage, started: true, mask: []string{},
			want: map[string]string{rollout.AnnotationAuto: "true", rollout.AnnotationBatchSize: "2", rollout.AnnotationPauseOnFailure: "true",
				rollout.AnnotationProgressDeadline: "1m30s"},
		},
		{
			name: "Rollout: new overrides start one too", release: rolloutRelease,
			change: func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"topologyName": "rz10a"}}, "spec", "overrides")
			},
			started: true, mask: []string{},
		},
		{
			name: "Rollout: a placement change alone starts none", release: rolloutRelease,
			change: func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"name": "rz00a"}}, "spec", "placement", "topologies")
			},
		},
		{
			name: "Rollout: a rollout under way keeps its mask", release: rolloutRelease,
			existing: func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, map[string]any{"topologies": []any{map[string]any{"name": "rz00a"}}}, "spec", "placementMask")
				u.SetLabels(map[string]string{rollout.LabelActive: "true"})
			},
			change: newImage, mask: []string{"rz00a"},
		},
		{
			name: "Rollout: a person's rollout (active, no mask yet) is left alone", release: rolloutRelease,
			existing: func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{rollout.LabelActive: "true"}) },
			change:   newImage,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			existing := object(t, stored)
			if tt.existing != nil {
				tt.existing(existing)
			}
			merged := existing.DeepCopy()
			tt.change(merged)
			got, err := StartRollout(existing, merged, tt.release, now)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.started {
				t.Fatalf("started = %v, want %v", got, tt.started)
			}
			tops, found, _ := unstructured.NestedSlice(merged.Object, "spec", "placementMask", "topologies")
			if found != (tt.mask != nil) || len(tops) != len(tt.mask) {
				t.Errorf("mask = %v (found %v), want %v", tops, found, tt.mask)
			}
			active := merged.GetLabels()[rollout.LabelActive] == "true"
			if tt.started && !active {
				t.Error("started, but merged lacks the rollout's active label")
			}
			if !tt.started {
				if _, ok := merged.GetAnnotations()[rollout.AnnotationAuto]; ok {
					t.Error("not started, but merged is marked as an automatic rollout")
				}
				return
			}
			ann := merged.GetAnnotations()
			if ann[rollout.AnnotationBaselineHash] != rollout.TemplateHash(existing) {
				t.Errorf("baseline hash %q, want the stored template's %q", ann[rollout.AnnotationBaselineHash], rollout.TemplateHash(existing))
			}
			for k, v := range tt.want {
				if ann[k] != v {
					t.Errorf("annotation %s = %q, want %q", k, ann[k], v)
				}
			}
			if ann[policyv1alpha1.AnnotationPolicy] != "PropagationPolicy/shop/web" {
				t.Error("the policy's annotation was lost")
			}
			// What the rollout controller reads back.
			set, err := rollout.SettingsOf(merged)
			if err != nil {
				t.Fatalf("the rollout controller cannot read the settings: %v", err)
			}
			if !set.Active || !set.Auto || set.Paused {
				t.Errorf("settings %+v: want active, auto, not paused", set)
			}
			// The first decision releases the first batch: nothing is
			// released yet, so nothing is waited for.
			d := rollout.Decide(rollout.Input{Settings: set, Placed: []string{"rz00a", "rz10a"}, Mask: []string{},
				Rows: rollout.Rows(decoded(t, merged), []string{"rz00a", "rz10a"}), Hash: rollout.TemplateHash(merged), Now: now})
			if d.Step != rollout.Advance || len(d.Mask) != set.BatchSize || d.Mask[0] != "rz00a" {
				t.Errorf("the rollout controller's first step: %+v, want to release the first %d cell(s)", d, set.BatchSize)
			}
		})
	}
}

func decoded(t *testing.T, u *unstructured.Unstructured) *typesv1beta2.FederatedObject {
	t.Helper()
	fed, err := rollout.Decode(u)
	if err != nil {
		t.Fatal(err)
	}
	return fed
}
