package board

import (
	"fmt"
	"strconv"
)

// Rollout verbs the board offers, as `cellfedctl rollout <verb>` names
// them.
const (
	VerbStart  = "start"
	VerbNext   = "next"
	VerbPause  = "pause"
	VerbResume = "resume"
	VerbFinish = "finish"
	VerbUndo   = "undo"
)

// Action is a button on the object page.
type Action struct {
	Verb string
	// Confirm is the question the page asks before acting.
	Confirm string
	// Batch: the action takes a batch size.
	Batch bool
}

// Actions are what a rollout in this state allows, in the order the page
// shows them: start when none is on; next (while cells are held back)
// and pause, or resume when paused; finish and undo while one is on.
func Actions(ref string, active, paused bool, placed, released int) []Action {
	if !active {
		return []Action{{Verb: VerbStart, Batch: true, Confirm: "Start a rollout of " + ref + ": release the first batch of cells and hold back the others?"}}
	}
	var out []Action
	if paused {
		out = append(out, Action{Verb: VerbResume, Confirm: "Resume the rollout of " + ref + "?"})
	} else {
		if released < placed {
			out = append(out, Action{Verb: VerbNext, Batch: true, Confirm: "Release the next batch of " + ref + "?"})
		}
		out = append(out, Action{Verb: VerbPause, Confirm: "Pause the rollout of " + ref + "?"})
	}
	return append(out,
		Action{Verb: VerbFinish, Confirm: "Finish the rollout of " + ref + ": remove the mask, every placed cell gets the change?"},
		Action{Verb: VerbUndo, Confirm: "Undo: restore the previous template of " + ref + " in the released cells?"})
}

// RolloutArgs are the cellfedctl arguments of a rollout action on the
// object kind/name in ns. batch ("" for the default 1) applies to start
// and next.
func RolloutArgs(verb, ns, kind, name, batch string) ([]string, error) {
	args := []string{"rollout", verb, CommandRef(kind, name), "-n", ns}
	switch verb {
	case VerbStart, VerbNext:
		n := 1
		if batch != "" {
			v, err := strconv.Atoi(batch)
			if err != nil || v < 1 || v > 1000 {
				return nil, fmt.Errorf("batch %q is not a number of cells between 1 and 1000", batch)
			}
			n = v
		}
		return append(args, "--batch="+strconv.Itoa(n)), nil
	case VerbPause:
		return append(args, "--reason=paused on the release board"), nil
	case VerbResume, VerbFinish, VerbUndo:
		return args, nil
	}
	return nil, fmt.Errorf("unknown rollout action %q; one of start, next, pause, resume, finish, undo", verb)
}

// RegistrationArgs are the cellfedctl arguments to approve or deny a
// registration (without waiting: the cells page shows the outcome).
func RegistrationArgs(verb, name string) ([]string, error) {
	if verb != "approve" && verb != "deny" {
		return nil, fmt.Errorf("unknown registration action %q; approve or deny", verb)
	}
	return []string{"registration", verb, name, "--wait=0", "--reason=decided on the release board"}, nil
}
