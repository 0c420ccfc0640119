package datasplit

import (
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cellfed/cellfed/pkg/storage"
)

func TestMissing(t *testing.T) {
	frozen := time.Date(2026, 11, 26, 20, 0, 0, 0, time.UTC)
	after := storage.ServingRecord{Started: frozen.Add(time.Minute)}
	before := storage.ServingRecord{Started: frozen.Add(-time.Minute)}
	for _, tt := range []struct {
		name    string
		live    []string
		serving map[string]storage.ServingRecord
		want    []string
	}{
		{"every replica restarted with the override", []string{"a", "b"}, map[string]storage.ServingRecord{"a": after, "b": after}, nil},
		{"one not restarted yet", []string{"b", "a"}, map[string]storage.ServingRecord{"a": after}, []string{"b"}},
		{"a record from before the freeze is a start without it", []string{"a"}, map[string]storage.ServingRecord{"a": before}, []string{"a"}},
		{"records of replicas no longer running do not count", []string{"c"}, map[string]storage.ServingRecord{"a": after}, []string{"c"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Missing(tt.live, tt.serving, frozen); !slices.Equal(got, tt.want) {
				t.Errorf("Missing = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLive(t *testing.T) {
	now := time.Date(2026, 11, 26, 20, 0, 0, 0, time.UTC)
	lease := func(renewed time.Duration) coordinationv1.Lease {
		l := coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "apiserver-x"}}
		if renewed >= 0 {
			l.Spec.RenewTime = &metav1.MicroTime{Time: now.Add(-renewed)}
		}
		return l
	}
	for _, tt := range []struct {
		name  string
		lease coordinationv1.Lease
		want  bool
	}{
		{"renewed 5 s ago", lease(5 * time.Second), true},
		{"renewed 2 min ago: stopped", lease(2 * time.Minute), false},
		{"never renewed", lease(-1), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id, ok := Live(tt.lease, 45*time.Second, now)
			if ok != tt.want || (ok && id != "apiserver-x") {
				t.Errorf("Live = %q, %v; want apiserver-x, %v", id, ok, tt.want)
			}
		})
	}
}
