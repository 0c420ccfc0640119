package cellfedctl

import "testing"

// TestDrainState: a cell is deleted only once the controller works from
// the drain and counts nothing left on it; each state says what is awaited.
func TestDrainState(t *testing.T) {
	for _, tc := range []struct {
		name    string
		s       drainState
		drained bool
		line    string
	}{
		{"controller has not seen the label", drainState{counted: true, held: 0}, false, "cell shop/rz00a: waiting for cellfed-controller to see the drain\n"},
		{"not counted yet", drainState{seen: true}, false, "cell shop/rz00a: waiting for cellfed-controller to count its objects\n"},
		{"objects left", drainState{seen: true, counted: true, held: 3}, false, "cell shop/rz00a: 3 objects left on its cluster\n"},
		{"empty", drainState{seen: true, counted: true}, true, "cell shop/rz00a: 0 objects left on its cluster\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.drained(); got != tc.drained {
				t.Errorf("drained() = %v, want %v", got, tc.drained)
			}
			if got := tc.s.progress("shop", "rz00a"); got != tc.line {
				t.Errorf("progress = %q, want %q", got, tc.line)
			}
		})
	}
}
