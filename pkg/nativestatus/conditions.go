package nativestatus

import (
	"fmt"
	"strings"
	"time"
)

// condition is one entry of status.conditions.
type condition struct {
	Type, Status, Reason, Message string
	// progress: the condition's lastUpdateTime moves to now (a
	// Deployment's Progressing condition on progress); otherwise it
	// moves only when status, reason or message change.
	progress bool
}

// conditionsOf reads status.conditions.
func conditionsOf(status map[string]any) []map[string]any {
	list, _ := status["conditions"].([]any)
	out := make([]map[string]any, 0, len(list))
	for _, e := range list {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// find is the condition of type t in status, nil when absent.
func find(status map[string]any, t string) map[string]any {
	for _, c := range conditionsOf(status) {
		if c["type"] == t {
			return c
		}
	}
	return nil
}

// is reports whether status has condition t with status s.
func is(status map[string]any, t, s string) bool {
	c := find(status, t)
	return c != nil && c["status"] == s
}

// stamped turns cs into status.conditions, keeping each one's times from
// prev while it holds: lastTransitionTime while its status is the same,
// lastUpdateTime while status, reason and message are (and it made no
// progress).
func stamped(cs []condition, prev map[string]any, now time.Time) []any {
	ts := now.UTC().Format(time.RFC3339)
	out := make([]any, 0, len(cs))
	for _, c := range cs {
		m := map[string]any{"type": c.Type, "status": c.Status, "lastUpdateTime": ts, "lastTransitionTime": ts}
		if c.Reason != "" {
			m["reason"] = c.Reason
		}
		if c.Message != "" {
			m["message"] = c.Message
		}
		if old := find(prev, c.Type); old != nil && old["status"] == c.Status {
			if t, ok := old["lastTransitionTime"].(string); ok {
				m["lastTransitionTime"] = t
			}
			if t, ok := old["lastUpdateTime"].(string); ok && !c.progress && old["reason"] == m["reason"] && old["message"] == m["message"] {
				m["lastUpdateTime"] = t
			}
		}
		out = append(out, m)
	}
	return out
}

// since is how long ago condition t of prev was last updated; ok is
// false when unknown.
func since(prev map[string]any, t string, now time.Time) (time.Duration, bool) {
	c := find(prev, t)
	if c == nil {
		return 0, false
	}
	s, _ := c["lastUpdateTime"].(string)
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return 0, false
	}
	return now.Sub(at), true
}

// cellList is "a, b, c" for messages, at most five names and a count.
func cellList(cells []string) string {
	const most = 5
	if len(cells) <= most {
		return strings.Join(cells, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(cells[:most], ", "), len(cells)-most)
}
