package propagation

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	typesv1b1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
	"github.com/cellfed/cellfed/pkg/controller/clusters"
	"github.com/cellfed/cellfed/pkg/propagatedversion"
)

func TestSettler(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newSettler(newObjects(), time.Second)
	s.now = func() time.Time { return now }
	if got := s.hold("a"); got != time.Second {
		t.Fatalf("first hold = %v, want the whole second", got)
	}
	now = now.Add(300 * time.Millisecond)
	if got := s.hold("a"); got != 700*time.Millisecond {
		t.Errorf("hold after 300ms = %v, want 700ms: counted from the first hold", got)
	}
	if got := s.hold("b"); got != time.Second {
		t.Errorf("another object's first hold = %v, want 1s", got)
	}
	now = now.Add(time.Second)
	if got := s.hold("a"); got != 0 {
		t.Errorf("hold past the limit = %v, want 0 (write now)", got)
	}
	s.done("a")
	if got := s.hold("a"); got != time.Second {
		t.Errorf("hold after done = %v, want a new second", got)
	}
	if n := s.objs.len(); n != 2 {
		t.Errorf("holds kept for %d objects, want a and b", n)
	}
	var none *settler
	if got := none.hold("a"); got != 0 {
		t.Errorf("nil settler holds %v", got)
	}
	none.done("a")
	if newSettler(newObjects(), 0) != nil {
		t.Error("--status-interval=0 must not hold")
	}
}

func TestStatusOnly(t *testing.T) {
	base := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"template": map[string]any{}}}}
		u.SetGeneration(3)
		u.SetResourceVersion("10")
		u.SetLabels(map[string]string{"app": "web"})
		u.SetAnnotations(map[string]string{"kubefed.io/orphan": "false"})
		u.SetFinalizers([]string{Finalizer})
		return u
	}
	ts := metav1.Now()
	tests := []struct {
		name   string
		change func(u *unstructured.Unstructured)
		want   bool
	}{
		{"status and resourceVersion only", func(u *unstructured.Unstructured) {
			u.SetResourceVersion("11")
			u.Object["status"] = map[string]any{"observedGeneration": int64(3)}
		}, true},
		{"spec (generation)", func(u *unstructured.Unstructured) { u.SetGeneration(4) }, false},
		{"deletion", func(u *unstructured.Unstructured) { u.SetDeletionTimestamp(&ts) }, false},
		{"finalizer removed", func(u *unstructured.Unstructured) { u.SetFinalizers(nil) }, false},
		{"label", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"app": "db"}) }, false},
		{"orphan annotation", func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{"kubefed.io/orphan": "true"})
		}, false},
		{"no generation: never skipped", func(u *unstructured.Unstructured) {}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old, cur := base(), base()
			if tc.name == "no generation: never skipped" {
				old.SetGeneration(0)
				cur.SetGeneration(0)
			}
			tc.change(cur)
			if got := clusters.StatusOnly(old, cur); got != tc.want {
				t.Errorf("statusOnly = %v, want %v", got, tc.want)
			}
		})
	}
	if clusters.StatusOnly("tombstone", base()) {
		t.Error("a non-object is never status only")
	}
}

func TestLastWrites(t *testing.T) {
	l := newLastWrites(newObjects())
	st := typesv1b1.Status{ObservedGeneration: 2, Propagated: "1/1"}
	l.set("ns/a", "5", st, propagatedversion.Versions{})
	l.seen("ns/a", "5") // the cache still at the version written over
	if w, ok := l.get("ns/a"); !ok || w.over != "5" || !sameStatus(w.status, st) {
		t.Fatalf("get = %+v %v, want the write over 5", w, ok)
	}
	l.seen("ns/a", "6") // the cache shows the write
	if _, ok := l.get("ns/a"); ok {
		t.Error("kept after the cache moved on")
	}
	l.set("ns/b", "7", st, propagatedversion.Versions{})
	l.seen("ns/b", "") // the object is gone
	if n := l.objs.len(); n != 0 {
		t.Errorf("writes kept for %d objects", n)
	}
	var none *lastWrites
	none.set("x", "1", st, propagatedversion.Versions{})
	none.seen("x", "2")
	if _, ok := none.get("x"); ok {
		t.Error("a nil lastWrites remembered")
	}
}
