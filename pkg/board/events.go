package board

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// EventLine is one event of an object, as the object page shows it.
type EventLine struct {
	Age, Type, Reason, Message string
	Count                      int32
}

// EventLines are the events about the federated object kind/name, newest
// first, at most limit of them; now dates their age.
func EventLines(events []corev1.Event, kind, name string, limit int, now time.Time) []EventLine {
	var mine []corev1.Event
	for _, e := range events {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name {
			mine = append(mine, e)
		}
	}
	last := func(e corev1.Event) time.Time {
		switch {
		case !e.LastTimestamp.IsZero():
			return e.LastTimestamp.Time
		case !e.EventTime.IsZero():
			return e.EventTime.Time
		}
		return e.CreationTimestamp.Time
	}
	sort.SliceStable(mine, func(i, j int) bool { return last(mine[i]).After(last(mine[j])) })
	if len(mine) > limit {
		mine = mine[:limit]
	}
	out := make([]EventLine, 0, len(mine))
	for _, e := range mine {
		count := e.Count
		if count == 0 {
			count = 1
		}
		out = append(out, EventLine{Age: age(now.Sub(last(e))), Type: e.Type, Reason: e.Reason, Message: e.Message, Count: count})
	}
	return out
}

// age is d as kubectl prints ages: 45s, 12m, 3h, 2d.
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
