package version

import (
	"strings"
	"testing"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

func TestDecideDataRelease(t *testing.T) {
	v := utilversion.MustParseSemantic
	for _, tc := range []struct {
		name          string
		stored        DataRelease
		own, readable string
		want          DataRelease
		write         bool
		refused       string
	}{
		{"a new database", DataRelease{}, "v0.1.0", "v0.1.0", DataRelease{"v0.1.0", "v0.1.0"}, true, ""},
		{"the same release again", DataRelease{"v0.1.0", "v0.1.0"}, "v0.1.0", "v0.1.0", DataRelease{"v0.1.0", "v0.1.0"}, false, ""},
		{"an upgrade whose data the older release reads", DataRelease{"v0.1.0", "v0.1.0"}, "v0.2.0", "v0.1.0", DataRelease{"v0.2.0", "v0.1.0"}, true, ""},
		{"an upgrade that stores what older ones cannot read", DataRelease{"v0.1.0", "v0.1.0"}, "v0.2.0", "v0.2.0", DataRelease{"v0.2.0", "v0.2.0"}, true, ""},
		{"a rollback the newer data allows", DataRelease{"v0.2.0", "v0.1.0"}, "v0.1.0", "v0.1.0", DataRelease{"v0.2.0", "v0.1.0"}, false, ""},
		{"a rollback the newer data refuses", DataRelease{"v0.2.0", "v0.2.0"}, "v0.1.0", "v0.1.0", DataRelease{"v0.2.0", "v0.2.0"}, false, "releases older than v0.2.0 cannot read"},
		{"an older replica beside a newer one keeps the newer record", DataRelease{"v0.2.0", "v0.1.0"}, "v0.1.1", "v0.1.0", DataRelease{"v0.2.0", "v0.1.0"}, false, ""},
		{"a record that cannot be parsed is replaced", DataRelease{"junk", "also junk"}, "v0.1.0", "v0.1.0", DataRelease{"v0.1.0", "v0.1.0"}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, write, err := DecideDataRelease(tc.stored, v(tc.own), v(tc.readable))
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refused) || !strings.Contains(err.Error(), "nothing was written") {
					t.Fatalf("err = %v, want a refusal saying %q and that nothing was written", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if got != tc.want || write != tc.write {
				t.Errorf("got %+v (write %v), want %+v (write %v)", got, write, tc.want, tc.write)
			}
		})
	}
}
