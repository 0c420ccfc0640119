package version

import (
	"strings"
	"testing"

	"github.com/cellfed/cellfed"
)

func TestReleaseOf(t *testing.T) {
	cases := []struct {
		name, gitVersion, want string
	}{
		{"make build", "v1.36.4+cellfed.v0.1.0.9c01e190bac5", "0.1.0"},
		{"no commit", "v1.36.4+cellfed.v0.2.3", "0.2.3"},
		{"pre-release", "v1.36.4+cellfed.v0.2.0-rc1.9c01e190bac5", "0.2.0-rc1"},
		{"go install of another version", "v1.36.4+cellfed.v0.2.0.v0.0.0-20261121123040-580ab8fd62b6", "0.2.0"},
		{"before releases were versioned", "v1.36.4+cellfed.9c01e190bac5", ""},
		{"no commit, no release", "v1.36.4+cellfed", ""},
		{"a plain Kubernetes API server", "v1.36.4", ""},
		{"component-base's placeholder", placeholder, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, ok := ReleaseOf(c.gitVersion)
			got := ""
			if ok {
				got = v.String()
			}
			if got != c.want {
				t.Errorf("ReleaseOf(%q) = %q, want %q", c.gitVersion, got, c.want)
			}
		})
	}
}

// TestVERSION checks that the VERSION file holds a release this package
// can put into a version and read back.
func TestVERSION(t *testing.T) {
	r := cellfed.Release()
	if _, ok := parseRelease(r); !ok {
		t.Fatalf("VERSION holds %q; it must look like v0.1.0 or v0.2.0-rc1 (a pre-release without dots)", r)
	}
	if v, ok := ReleaseOf("v1.36.4+cellfed." + r + ".9c01e190bac5"); !ok || "v"+v.String() != r {
		t.Fatalf("ReleaseOf does not read %s back out of a version", r)
	}
}

func TestSkewCheck(t *testing.T) {
	own := func(s string) string { return "v1.36.4+cellfed." + s + ".9c01e190bac5" }
	cases := []struct {
		name  string
		skew  Skew
		own   string
		plane string
		// Every substring must be in the error; nil means supported.
		want []string
	}{
		{"controller: same release", ControllerSkew, "v0.2.0", own("v0.2.0"), nil},
		{"controller: another patch of the line", ControllerSkew, "v0.2.0", own("v0.2.5"), nil},
		{"controller: plane one line ahead (mid-upgrade)", ControllerSkew, "v0.2.0", own("v0.3.0"), nil},
		{"controller: plane's pre-release of the next line", ControllerSkew, "v0.2.0", own("v0.3.0-rc1"), nil},
		{"controller: plane two lines ahead", ControllerSkew, "v0.2.0", own("v0.4.1"),
			[]string{"plane runs cellfed v0.4.1, newer than cellfed-controller v0.2.0 supports (planes of v0.2.x or v0.3.x)", "upgrade cellfed-controller to v0.4.x"}},
		{"controller: plane one line behind", ControllerSkew, "v0.2.0", own("v0.1.9"),
			[]string{"plane runs cellfed v0.1.9, older than cellfed-controller v0.2.0 supports (planes of v0.2.x or v0.3.x)", "upgrade the plane first, or run cellfed-controller v0.0.x or v0.1.x until it is"}},
		{"controller: another major", ControllerSkew, "v1.0.0", own("v0.9.0"),
			[]string{"plane runs cellfed v0.9.0 and cellfed-controller is v1.0.0, another major release"}},
		{"controller: a plane from before versioned releases", ControllerSkew, "v0.1.0", "v1.36.4+cellfed.9c01e190bac5",
			[]string{"reports version v1.36.4+cellfed.9c01e190bac5, which names no cellfed release", "works with planes of v0.1.x or v0.2.x: upgrade the plane first"}},
		{"controller: a plain Kubernetes API server", ControllerSkew, "v0.1.0", "v1.36.4",
			[]string{"names no cellfed release"}},
		{"cellfedctl: plane one line behind", ClientSkew, "v0.2.0", own("v0.1.0"), nil},
		{"cellfedctl: plane one line ahead", ClientSkew, "v0.2.0", own("v0.3.0"), nil},
		{"cellfedctl: plane two lines behind", ClientSkew, "v0.3.0", own("v0.1.0"),
			[]string{"older than cellfedctl v0.3.0 supports (planes of v0.2.x, v0.3.x or v0.4.x)", "run cellfedctl v0.0.x, v0.1.x or v0.2.x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			component := "cellfed-controller"
			if c.skew == ClientSkew {
				component = "cellfedctl"
			}
			o, ok := parseRelease(c.own)
			if !ok {
				t.Fatalf("bad own release %q", c.own)
			}
			err := c.skew.Check(component, o, c.plane)
			if c.want == nil {
				if err != nil {
					t.Fatalf("Check = %v, want supported", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Check = nil, want an error with %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Check = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}
