package propagation

import (
	"testing"
	"time"

	"github.com/cellfed/cellfed/pkg/propagatedversion"
)

// Every piece of an object's state lives in one entry, which is dropped
// once nothing is left in it, and forget drops all of it at once.
func TestObjects(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		set   func(o *objects)
		clear func(o *objects)
	}{
		{"record", func(o *objects) { o.update("k", func(s *state) { s.record = newRecord("t", "o") }) },
			func(o *objects) { (&versionStore{objs: o}).forget("k") }},
		{"finalizer patch", func(o *objects) { (&finalizerPatches{objs: o}).wrote("k", "5") },
			func(o *objects) { (&finalizerPatches{objs: o}).forget("k") }},
		{"status write time", func(o *objects) { o.update("k", func(s *state) { s.statusAt = now.Add(-time.Hour) }) },
			func(o *objects) {
				(&writeLimiter{interval: time.Second, objs: o}).wait(fedObj("", "k"))
			}},
		{"last status write", func(o *objects) {
			newLastWrites(o).set("k", "5", statusOf(fedObj("", "k")), propagatedversion.Versions{})
		},
			func(o *objects) { newLastWrites(o).seen("k", "6") }},
		{"settle hold", func(o *objects) { newSettler(o, time.Second).hold("k") },
			func(o *objects) { newSettler(o, time.Second).done("k") }},
		{"propagation mark", func(o *objects) { newSince(o, propagatingMark).start("k", 1, now) },
			func(o *objects) { newSince(o, propagatingMark).finish("k", 1, now) }},
		{"reflow mark", func(o *objects) { newSince(o, reflowingMark).start("k", 0, now) },
			func(o *objects) { newSince(o, reflowingMark).forget("k") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := newObjects()
			tc.set(o)
			if n := o.len(); n != 1 {
				t.Fatalf("%d entries after setting, want 1", n)
			}
			tc.clear(o)
			if n := o.len(); n != 0 {
				t.Errorf("%d entries after clearing the only piece, want 0", n)
			}
			tc.set(o)
			o.forget("k")
			if n := o.len(); n != 0 {
				t.Errorf("%d entries after forget, want 0", n)
			}
		})
	}
}
