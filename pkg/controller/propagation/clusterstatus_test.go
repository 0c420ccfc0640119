package propagation

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	typesv1b1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
)

// TestClusterStatuses: intents, results and the members' caches → status
// rows, one rule per row of the table.
func TestClusterStatuses(t *testing.T) {
	remote := &runtime.RawExtension{Raw: []byte(`{"replicas":1}`)}
	ensure := func(member, cluster string) Intent {
		return Intent{Verb: Ensure, Member: member, Clusters: []string{cluster}, Writer: cluster, Report: true}
	}
	type row struct {
		name, status string
		gen          int64
		ready        *bool
		remote       bool
		message      string
	}
	tests := []struct {
		name       string
		cur        []typesv1b1.ClusterStatus
		deleting   bool
		intents    []Intent
		results    []result
		seen       map[string]observation
		want       []row
		placed     []string
		requeue    bool
		pending    bool
		everywhere bool
	}{
		{
			name:    "written and seen ready",
			intents: []Intent{ensure("m1", "a")},
			results: []result{{status: StatusOK, version: "gen:1"}},
			seen:    map[string]observation{"m1": {state: observedPresent, version: "gen:1", ready: true, remoteStatus: remote}},
			want:    []row{{"a", StatusOK, 3, ptr.To(true), true, ""}}, placed: []string{"a"}, everywhere: true,
		},
		{
			name:    "written, the cache not there yet: pending, not ready",
			intents: []Intent{ensure("m1", "a")},
			results: []result{{status: StatusOK, version: "gen:2"}},
			seen:    map[string]observation{"m1": {state: observedPresent, version: "gen:1", ready: true, remoteStatus: remote}},
			want:    []row{{"a", StatusOK, 3, ptr.To(false), true, ""}}, placed: []string{"a"}, pending: true, everywhere: true,
		},
		{
			name:    "created, absent from the cache: pending",
			intents: []Intent{ensure("m1", "a")},
			results: []result{{status: StatusOK, version: "gen:1"}},
			seen:    map[string]observation{"m1": {state: observedAbsent}},
			want:    []row{{"a", StatusOK, 3, ptr.To(false), false, ""}}, placed: []string{"a"}, pending: true, everywhere: true,
		},
		{
			name:    "member not ready: the last known values stay",
			cur:     []typesv1b1.ClusterStatus{{Name: "a", Generation: 2, Ready: ptr.To(true), RemoteStatus: remote}},
			intents: []Intent{ensure("m1", "a")},
			results: []result{{status: StatusClusterNotReady, unknown: true}},
			seen:    map[string]observation{"m1": {state: observedNothing}},
			want:    []row{{"a", StatusClusterNotReady, 2, ptr.To(true), true, ""}}, placed: []string{"a"},
		},
		{
			name:    "member cache loading: requeue",
			intents: []Intent{ensure("m1", "a")},
			results: []result{{status: StatusOK, version: "gen:1"}},
			seen:    map[string]observation{"m1": {state: observedLoading}},
			want:    []row{{"a", StatusOK, 3, nil, false, ""}}, placed: []string{"a"}, requeue: true, everywhere: true,
		},
		{
			name:    "a failed write: requeue, not everywhere",
			intents: []Intent{ensure("m1", "a")},
			results: []result{{status: StatusCreationFailed, err: errors.New("quota")}},
			seen:    map[string]observation{"m1": {state: observedAbsent}},
			want:    []row{{"a", StatusCreationFailed, 0, ptr.To(false), false, "quota"}}, placed: []string{"a"}, requeue: true,
		},
		{
			name: "held back and in conflict: placed, conflict without readiness",
			intents: []Intent{ensure("m1", "a"),
				{Verb: Leave, Member: "m1", Clusters: []string{"b"}, Writer: "a", Status: StatusPlacementConflict, Report: true},
				{Verb: Leave, Member: "m2", Clusters: []string{"c"}, Writer: "c", Status: StatusHeldBack, Report: true}},
			results: []result{{status: StatusOK, version: "gen:1"}, {status: StatusPlacementConflict}, {status: StatusHeldBack}},
			seen: map[string]observation{"m1": {state: observedPresent, version: "gen:1", ready: true},
				"m2": {state: observedPresent, version: "gen:0", ready: true}},
			want: []row{{"a", StatusOK, 3, ptr.To(true), false, ""}, {"b", StatusPlacementConflict, 0, nil, false, ""},
				{"c", StatusHeldBack, 0, ptr.To(true), false, ""}},
			placed: []string{"a", "b", "c"}, everywhere: true,
		},
		{
			name:    "a member's refusal is shown, cut to size; the next success clears it",
			cur:     []typesv1b1.ClusterStatus{{Name: "a", Generation: 2, Message: "old"}, {Name: "b", Generation: 2, Message: "old"}},
			intents: []Intent{ensure("m1", "a"), ensure("m2", "b")},
			results: []result{{status: StatusUpdateFailed, err: errors.New(`Deployment.apps "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0`)},
				{status: StatusOK, version: "gen:3"}},
			seen: map[string]observation{"m1": {state: observedNothing}, "m2": {state: observedNothing}},
			want: []row{{"a", StatusUpdateFailed, 2, nil, false, `Deployment.apps "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0`},
				{"b", StatusOK, 3, nil, false, ""}},
			placed: []string{"a", "b"}, requeue: true,
		},
		{
			name:     "deleting: removed clusters are not reported, failures are, unplaced",
			deleting: true,
			intents:  []Intent{{Verb: Remove, Member: "m1", Clusters: []string{"a"}}, {Verb: Remove, Member: "m2", Clusters: []string{"b"}}},
			results:  []result{{status: StatusOK}, {status: StatusDeletionFailed, err: errors.New("x")}},
			want:     []row{{"b", StatusDeletionFailed, 0, nil, false, "x"}}, requeue: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := clusterStatuses(typesv1b1.Status{Clusters: tc.cur}, 3, tc.deleting, false, tc.intents, tc.results, tc.seen)
			var got []row
			for _, cs := range out.report.clusters {
				got = append(got, row{cs.Name, cs.Status, cs.Generation, cs.Ready, cs.RemoteStatus != nil, cs.Message})
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("rows = %+v\nwant   %+v", got, tc.want)
			}
			if placed := sortedKeys(out.report.placed); !reflect.DeepEqual(placed, tc.placed) && (len(placed) > 0 || len(tc.placed) > 0) {
				t.Errorf("placed = %v, want %v", placed, tc.placed)
			}
			if out.requeue != tc.requeue || out.pending != tc.pending || out.everywhere != tc.everywhere {
				t.Errorf("requeue/pending/everywhere = %v/%v/%v, want %v/%v/%v", out.requeue, out.pending, out.everywhere, tc.requeue, tc.pending, tc.everywhere)
			}
		})
	}
}

func TestMemberMessage(t *testing.T) {
	long := strings.Repeat("é", maxMessage) // two bytes a rune
	for _, tc := range []struct{ in, want string }{
		{"quota exceeded", "quota exceeded"},
		{long, long[:maxMessage] + "…"},
		{"x" + long, "x" + long[:maxMessage-2] + "…"},
	} {
		got := memberMessage(errors.New(tc.in))
		if got != tc.want || !utf8.ValidString(got) {
			t.Errorf("memberMessage(%d bytes) = %d bytes %q…, want %d bytes", len(tc.in), len(got), got[:min(len(got), 10)], len(tc.want))
		}
	}
}

func sortedKeys[T comparable](s map[string]T) []string {
	out := make([]string, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
