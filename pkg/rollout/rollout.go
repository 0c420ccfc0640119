// Package rollout is cellfed's progressive release of federated objects:
// the placement mask moved batch by batch, by hand (`cellfedctl rollout
// start|next|finish`) or by the rollout controller (`rollout start
// --auto`), the state of each placed cell as the propagation controller
// reports it, and the template history `rollout undo` restores from.
//
// Everything here reads and writes the v1beta2 shape of federated
// objects. The state of a rollout lives on the federated object itself
// (its placement mask and the annotations below), so a restarted
// controller or another cellfedctl picks it up where it was.
package rollout

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cellfed/cellfed/pkg/apis"
	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
	"github.com/cellfed/cellfed/pkg/placement"
)

// Prefix is the prefix of the rollout annotations and labels.
const Prefix = "rollout.cellfed.io/"

// Labels.
const (
	// LabelActive ("true") marks a federated object under a rollout
	// started by `cellfedctl rollout start`: the rollout controller
	// watches only these objects, records their templates and, with
	// AnnotationAuto, moves their mask.
	LabelActive = Prefix + "active"
	// LabelOwnerUID is the UID of the federated object a
	// TemplateRevision belongs to.
	LabelOwnerUID = Prefix + "owner-uid"
)

// Annotations on the federated object. The first group is what the user
// asks for (written by cellfedctl), the second what the rollout
// controller records.
const (
	// AnnotationPaused ("true") freezes the mask: neither the rollout
	// controller nor `rollout next` moves it. `rollout resume` removes it.
	AnnotationPaused = Prefix + "paused"
	// AnnotationPauseReason says why (a person, a failed cell, a missed
	// deadline, an undo).
	AnnotationPauseReason = Prefix + "pause-reason"
	// AnnotationAuto ("true"): the rollout controller widens the mask by
	// AnnotationBatchSize cells each time every released cell is updated
	// and ready, and removes it after the last batch.
	AnnotationAuto = Prefix + "auto"
	// AnnotationBatchSize is the number of cells each automatic step
	// releases (a positive integer).
	AnnotationBatchSize = Prefix + "batch-size"
	// AnnotationPauseOnFailure ("true"): a released cell that fails
	// (propagation failure, or the member reports its own progress
	// deadline exceeded) pauses the rollout.
	AnnotationPauseOnFailure = Prefix + "pause-on-failure"
	// AnnotationProgressDeadline (a Go duration, e.g. 5m0s): each batch
	// must be updated and ready within it, counted from its release (or
	// from the template change that started it, or a resume); otherwise
	// the rollout pauses.
	AnnotationProgressDeadline = Prefix + "progress-deadline"

	// AnnotationBaselineHash is the template hash (TemplateHash) when
	// the rollout started: an automatic rollout advances only once the
	// template differs from it.
	AnnotationBaselineHash = Prefix + "baseline-hash"
	// AnnotationTemplateHash is the template hash the rollout
	// controller last recorded in the history.
	AnnotationTemplateHash = Prefix + "template-hash"
	// AnnotationProgressSince (RFC 3339) is when the current batch
	// started: its release, the latest template change, or a resume.
	AnnotationProgressSince = Prefix + "progress-since"
	// AnnotationState is the rollout's state as its last writer saw it:
	// Waiting, Progressing, Paused or Finished.
	AnnotationState = Prefix + "state"
	// AnnotationMessage explains the state.
	AnnotationMessage = Prefix + "message"
)

// States recorded in AnnotationState.
const (
	StateWaiting     = "Waiting"
	StateProgressing = "Progressing"
	StatePaused      = "Paused"
	StateFinished    = "Finished"
)

// controlAnnotations are removed when a rollout ends; state and message
// stay to tell how it ended.
var controlAnnotations = []string{
	AnnotationPaused, AnnotationPauseReason, AnnotationAuto, AnnotationBatchSize, AnnotationPauseOnFailure,
	AnnotationProgressDeadline, AnnotationBaselineHash, AnnotationTemplateHash, AnnotationProgressSince,
}

// DefaultHistoryLimit is how many TemplateRevisions are kept per object.
const DefaultHistoryLimit = 10

// Settings are a rollout's annotations, decoded.
type Settings struct {
	Active           bool
	Paused           bool
	PauseReason      string
	Auto             bool
	BatchSize        int
	PauseOnFailure   bool
	ProgressDeadline time.Duration
	BaselineHash     string
	TemplateHash     string
	ProgressSince    time.Time
	State, Message   string
}

// SettingsOf decodes the rollout annotations of obj. A malformed value
// is an error naming the annotation.
func SettingsOf(obj *unstructured.Unstructured) (Settings, error) {
	ann := obj.GetAnnotations()
	s := Settings{
		Active:         obj.GetLabels()[LabelActive] == "true",
		Paused:         ann[AnnotationPaused] == "true",
		PauseReason:    ann[AnnotationPauseReason],
		Auto:           ann[AnnotationAuto] == "true",
		PauseOnFailure: ann[AnnotationPauseOnFailure] == "true",
		BaselineHash:   ann[AnnotationBaselineHash],
		TemplateHash:   ann[AnnotationTemplateHash],
		State:          ann[AnnotationState],
		Message:        ann[AnnotationMessage],
		BatchSize:      1,
	}
	if v := ann[AnnotationBatchSize]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return s, fmt.Errorf("annotation %s=%q is not a positive integer", AnnotationBatchSize, v)
		}
		s.BatchSize = n
	}
	if v := ann[AnnotationProgressDeadline]; v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return s, fmt.Errorf("annotation %s=%q is not a positive duration (e.g. 5m)", AnnotationProgressDeadline, v)
		}
		s.ProgressDeadline = d
	}
	if v := ann[AnnotationProgressSince]; v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return s, fmt.Errorf("annotation %s=%q is not an RFC 3339 time", AnnotationProgressSince, v)
		}
		s.ProgressSince = t
	}
	return s, nil
}

// SetAnnotations sets (value != "") or removes (value == "") annotations
// of obj.
func SetAnnotations(obj *unstructured.Unstructured, kv map[string]string) {
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	for k, v := range kv {
		if v == "" {
			delete(ann, k)
		} else {
			ann[k] = v
		}
	}
	if len(ann) == 0 {
		ann = nil
	}
	obj.SetAnnotations(ann)
}

// FormatTime is how times are written into annotations.
func FormatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// End ends a rollout on obj: the mask, the active label and the control
// annotations go; state and message say how it ended.
func End(obj *unstructured.Unstructured, state, message string) {
	placement.RemoveMask(obj)
	labels := obj.GetLabels()
	delete(labels, LabelActive)
	if len(labels) == 0 {
		labels = nil
	}
	obj.SetLabels(labels)
	kv := map[string]string{AnnotationState: state, AnnotationMessage: message}
	for _, k := range controlAnnotations {
		kv[k] = ""
	}
	SetAnnotations(obj, kv)
}

// Decode reads the v1beta2 shape of a federated object.
func Decode(obj *unstructured.Unstructured) (*typesv1beta2.FederatedObject, error) {
	var fed typesv1beta2.FederatedObject
	if err := apis.Decode(obj.Object, &fed); err != nil {
		return nil, fmt.Errorf("%s %s is malformed: %w", obj.GetKind(), objectName(obj), err)
	}
	return &fed, nil
}

// TemplateHash identifies the object's template and overrides: hex
// sha256 of their JSON (maps are encoded with sorted keys, so equal
// content gives equal hashes).
func TemplateHash(obj *unstructured.Unstructured) string {
	tmpl, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "template")
	ovr, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "overrides")
	if l, ok := ovr.([]any); ok && len(l) == 0 {
		ovr = nil
	}
	raw, _ := json.Marshal(map[string]any{"template": tmpl, "overrides": ovr})
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// ShortHash is the first 10 hex digits of a hash, for names and output.
func ShortHash(h string) string {
	if len(h) > 10 {
		return h[:10]
	}
	return h
}

func objectName(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}

// joinOr lists names, or says none.
func joinOr(names []string, none string) string {
	if len(names) == 0 {
		return none
	}
	return strings.Join(names, ", ")
}

// TemplateHashOfBytes is hex sha256 of b.
func TemplateHashOfBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
