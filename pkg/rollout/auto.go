package rollout

import (
	"fmt"
	"strings"
	"time"
)

// Step is what the rollout controller does next with an automatic
// rollout.
type Step string

const (
	// Wait changes no mask; State and Message may still be new.
	Wait Step = "wait"
	// Advance widens the mask to Mask.
	Advance Step = "advance"
	// Pause pauses the rollout with Message as the reason.
	Pause Step = "pause"
	// Finish removes the mask: every placed cell is released.
	Finish Step = "finish"
)

// Decision is the next step of an automatic rollout.
type Decision struct {
	Step    Step
	Mask    []string
	State   string
	Message string
	// RequeueAfter is when to look again without news: the progress
	// deadline of the current batch.
	RequeueAfter time.Duration
	// DeadlineExceeded: the pause is for a batch past its progress
	// deadline (not for a failed cell).
	DeadlineExceeded bool
}

// Input is what an automatic rollout's next step is decided from.
type Input struct {
	Settings Settings
	Placed   []string
	// Mask is the object's mask, nil when it has none.
	Mask []string
	Rows []Row
	// Hash is the object's current TemplateHash.
	Hash string
	Now  time.Time
}

// Decide is the rollout controller's decision for an automatic rollout,
// a pure function: release the next Settings.BatchSize cells once every
// released cell is updated and ready, finish after the last batch, pause
// on a failed cell (with pause-on-failure) or when a batch misses the
// progress deadline. A paused or manual rollout is left alone; so is one
// whose template is still the one it started from (there is nothing to
// roll out yet, and no deadline runs).
func Decide(in Input) Decision {
	s := in.Settings
	if !s.Auto || s.Paused {
		return Decision{Step: Wait, State: s.State, Message: s.Message}
	}
	if in.Mask == nil {
		return Decision{Step: Finish, State: StateFinished, Message: "the placement mask was removed: every placed cell is released"}
	}
	if s.BaselineHash != "" && in.Hash == s.BaselineHash {
		return Decision{Step: Wait, State: StateWaiting, Message: fmt.Sprintf(
			"waiting for a new template: spec.template and overrides are still those running when the rollout started; change them to roll out to %s first",
			joinOr(in.Mask, "no cell"))}
	}
	sum := Summarize(in.Rows)
	released := fmt.Sprintf("%d of %d placed cells released", sum.Released, sum.Placed)
	if len(sum.Failed) > 0 && s.PauseOnFailure {
		return Decision{Step: Pause, State: StatePaused, Message: fmt.Sprintf("paused on failure: %s (%s)", strings.Join(sum.Failed, "; "), released)}
	}
	if sum.Done {
		next := NextBatch(in.Placed, in.Mask, s.BatchSize)
		if len(next) == 0 {
			return Decision{Step: Finish, State: StateFinished, Message: fmt.Sprintf("released to all %d placed cells, every one updated and ready", sum.Placed)}
		}
		mask := Widen(in.Placed, in.Mask, next)
		return Decision{Step: Advance, Mask: mask, State: StateProgressing, Message: fmt.Sprintf(
			"released %s (%d of %d placed cells released)", strings.Join(next, ", "), len(mask), sum.Placed)}
	}
	msg := fmt.Sprintf("waiting for %s to be updated and ready (%s)", strings.Join(sum.Waiting, ", "), released)
	d := Decision{Step: Wait, State: StateProgressing, Message: msg}
	if s.ProgressDeadline > 0 && !s.ProgressSince.IsZero() {
		left := s.ProgressSince.Add(s.ProgressDeadline).Sub(in.Now)
		if left <= 0 {
			return Decision{Step: Pause, State: StatePaused, DeadlineExceeded: true, Message: fmt.Sprintf(
				"progress deadline %s exceeded: %s not updated and ready since %s (%s)",
				s.ProgressDeadline, strings.Join(sum.Waiting, ", "), FormatTime(s.ProgressSince), released)}
		}
		d.RequeueAfter = left
	}
	return d
}
