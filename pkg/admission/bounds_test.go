package admission

import (
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// namesYAML is a YAML list of n topology entries named prefix-0 … .
func namesYAML(key, prefix string, n int) string {
	var b strings.Builder
	b.WriteString(key + ":\n")
	for i := range n {
		fmt.Fprintf(&b, "- %s: %s-%d\n", "name", prefix, i)
	}
	return b.String()
}

// One tenant must not tie up the shared plane with a huge list: oversized
// placements, masks and override lists are refused with one short error,
// and no request yields more than a handful of errors whatever it holds.
func TestValidateBoundsCost(t *testing.T) {
	placement := "placement:\n  topologyType: cell\n  topologies:\n  - name: rz00a\n"
	cases := []struct {
		name, spec string
		msgs       []string
	}{
		{
			name: "mask of 4,000 unknown names",
			spec: placement + "placementMask:\n" + indent(namesYAML("topologies", "nope", 4000), 2),
			msgs: []string{"spec.placementMask.topologies", "Too many: 4000", "at most 1000"},
		},
		{
			name: "placement of 20,000 names",
			spec: "placement:\n  topologyType: cell\n" + indent(namesYAML("topologies", "rz", 20000), 2),
			msgs: []string{"spec.placement.topologies", "Too many: 20000", "topologySelector"},
		},
		{
			name: "1,001 overrides",
			spec: placement + strings.ReplaceAll(namesYAML("overrides", "c", 1001), "- name:", "- topologyName:"),
			msgs: []string{"spec.overrides", "Too many: 1001"},
		},
		{
			name: "500 unknown cells, each an error",
			spec: "placement:\n  topologyType: cell\n" + indent(namesYAML("topologies", "nope", 500), 2),
			msgs: []string{"spec.placement.topologies[0].name", "and 490 more errors"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := newAdmitter().Validate(request(Create, "", object(t, v2(c.spec)), nil))
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want Invalid, got %v", err)
			}
			for _, m := range c.msgs {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("message lacks %q:\n%.2000s", m, err.Error())
				}
			}
			if n := len(err.Error()); n > 4096 {
				t.Errorf("error message is %d bytes; want a short one (≤ 4 KiB)", n)
			}
			var status apierrors.APIStatus
			if s, ok := err.(apierrors.APIStatus); ok {
				status = s
			}
			if d := status.Status().Details; d != nil && len(d.Causes) > maxErrors+1 {
				t.Errorf("%d causes; want at most %d", len(d.Causes), maxErrors+1)
			}
		})
	}
}
