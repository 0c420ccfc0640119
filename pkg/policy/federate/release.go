package federate

import (
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	policyv1alpha1 "github.com/cellfed/cellfed/pkg/apis/policy/v1alpha1"
	"github.com/cellfed/cellfed/pkg/placement"
	"github.com/cellfed/cellfed/pkg/rollout"
)

// StartRollout starts the automatic rollout that release strategy
// Rollout gives a change: when merged (Merge's result) carries another
// template or other overrides than existing (the stored federated
// object) and existing is under no rollout (no placement mask, no
// rollout.cellfed.io/active label), it holds every placed cell back (an
// empty mask) and marks merged as an automatic rollout, as `cellfedctl
// rollout start --auto` does, from the policy's batchSize,
// pauseOnFailure and progressDeadlineSeconds. The rollout controller
// then releases batchSize cells at a time, each batch once the ones
// before are updated and ready, and removes the mask after the last.
// It reports whether it started one. A rollout under way (started by an
// earlier change or by a person) is left to run: merged keeps its mask.
func StartRollout(existing, merged *unstructured.Unstructured, release policyv1alpha1.Release, now time.Time) (bool, error) {
	if release.Strategy != policyv1alpha1.ReleaseRollout {
		return false, nil
	}
	if _, masked, _ := unstructured.NestedFieldNoCopy(existing.Object, "spec", "placementMask"); masked || existing.GetLabels()[rollout.LabelActive] == "true" {
		return false, nil
	}
	baseline := rollout.TemplateHash(existing)
	if rollout.TemplateHash(merged) == baseline {
		return false, nil
	}
	if err := placement.SetMask(merged, []string{}); err != nil {
		return false, fmt.Errorf("holding every cell back: %w", err)
	}
	labels := merged.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[rollout.LabelActive] = "true"
	merged.SetLabels(labels)
	batch := int32(1)
	if release.BatchSize != nil {
		batch = *release.BatchSize
	}
	deadline := ""
	if release.ProgressDeadlineSeconds != nil {
		deadline = (time.Duration(*release.ProgressDeadlineSeconds) * time.Second).String()
	}
	pauseOnFailure := ""
	if release.PauseOnFailure {
		pauseOnFailure = "true"
	}
	rollout.SetAnnotations(merged, map[string]string{
		rollout.AnnotationPaused: "", rollout.AnnotationPauseReason: "",
		rollout.AnnotationAuto:             "true",
		rollout.AnnotationBatchSize:        strconv.Itoa(int(batch)),
		rollout.AnnotationPauseOnFailure:   pauseOnFailure,
		rollout.AnnotationProgressDeadline: deadline,
		rollout.AnnotationBaselineHash:     baseline,
		// The rollout controller records the new template in the
		// history (the caller records the one running now).
		rollout.AnnotationTemplateHash:  "",
		rollout.AnnotationProgressSince: rollout.FormatTime(now),
		rollout.AnnotationState:         rollout.StateProgressing,
		rollout.AnnotationMessage:       fmt.Sprintf("started by %s (release Rollout): every placed cell held back, %d released at a time", PolicyOf(merged), batch),
	})
	return true, nil
}
