package propagation

import (
	"testing"
	"time"
)

func TestFinalizerPatches(t *testing.T) {
	f := &finalizerPatches{objs: newObjects()}
	if f.pending("ns/a", "5") {
		t.Fatal("pending without a patch")
	}
	f.wrote("ns/a", "10")
	for _, tc := range []struct {
		cached string
		want   bool
	}{
		{"9", true},   // the cache has not seen the patch
		{"10", false}, // it has: forgotten
		{"9", false},  // forgotten stays forgotten
	} {
		if got := f.pending("ns/a", tc.cached); got != tc.want {
			t.Errorf("pending(cached %s) = %v, want %v", tc.cached, got, tc.want)
		}
	}
	f.wrote("ns/b", "x")
	if f.pending("ns/b", "9") {
		t.Error("a resourceVersion that is no number must not hold the reconcile back")
	}
	f.objs.update("ns/c", func(s *state) {
		s.finalizer = finalizerPatch{resourceVersion: "20", at: time.Now().Add(-2 * finalizerPatchPatience)}
	})
	if f.pending("ns/c", "19") {
		t.Error("an old patch must not hold the reconcile back forever")
	}
}
