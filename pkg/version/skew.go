package version

import (
	"fmt"
	"regexp"

	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/component-base/version"

	"github.com/cellfed/cellfed"
)

// releasePattern is a cellfed release as VERSION holds it: v<major>.<minor>.<patch>
// with an optional pre-release without dots, so that it stays readable
// inside a Kubernetes version's build metadata.
var releasePattern = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z-]+)?$`)

// inMetadata finds the release in a version this package made:
// v1.36.4+cellfed.v0.1.0[.<commit>].
var inMetadata = regexp.MustCompile(`\+cellfed\.(v[0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z-]+)?)(?:\.|$)`)

func parseRelease(s string) (*utilversion.Version, bool) {
	if !releasePattern.MatchString(s) {
		return nil, false
	}
	v, err := utilversion.ParseSemantic(s)
	return v, err == nil
}

// ReleaseOf is the cellfed release in a version string a cellfed binary
// reports (/version's gitVersion, --version): v0.1.0 of
// v1.36.4+cellfed.v0.1.0.9c01e190bac5. It reports false for a version
// without one: a build from before releases were versioned
// (v1.36.4+cellfed.9c01e190bac5) or a server that is no cellfed plane.
func ReleaseOf(gitVersion string) (*utilversion.Version, bool) {
	m := inMetadata.FindStringSubmatch(gitVersion)
	if m == nil {
		return nil, false
	}
	return parseRelease(m[1])
}

// Own is this binary's cellfed release: the one its version reports (so
// --version and the skew check agree), else VERSION's.
func Own() *utilversion.Version {
	if v, ok := ReleaseOf(version.Get().GitVersion); ok {
		return v
	}
	v, ok := parseRelease(cellfed.Release())
	if !ok {
		panic(fmt.Sprintf("VERSION holds %q, not a release like v0.1.0", cellfed.Release()))
	}
	return v
}

// Skew is how far, in release lines, the plane may be from a component
// that talks to it. A release line is a major.minor (v0.1.x); patch
// releases of one line always work together, and different majors never do.
type Skew struct {
	// PlaneNewer is how many lines the plane may be ahead of the component.
	PlaneNewer int
	// PlaneOlder is how many lines the plane may be behind the component.
	PlaneOlder int
}

// The skew policy (docs/operations.md, "Versions and skew").
var (
	// ControllerSkew is cellfed-controller's and cellfed-agent's: the
	// plane's line or the one before it. They are upgraded after the
	// plane, so during an upgrade they run one line behind it; a
	// component newer than the plane is refused.
	ControllerSkew = Skew{PlaneNewer: 1}
	// ClientSkew is cellfedctl's: one line either way (kubectl's rule).
	ClientSkew = Skew{PlaneNewer: 1, PlaneOlder: 1}
)

// Check decides whether component, of release own, may work with a plane
// that reports planeVersion (its /version gitVersion). The error says
// which plane releases are supported and what to upgrade.
func (s Skew) Check(component string, own *utilversion.Version, planeVersion string) error {
	supported := s.supported(own)
	plane, ok := ReleaseOf(planeVersion)
	if !ok {
		return fmt.Errorf("the plane reports version %s, which names no cellfed release (a build from before releases were versioned, or not a cellfed plane); %s %s works with planes of %s: upgrade the plane first",
			planeVersion, component, release(own), supported)
	}
	if plane.Major() != own.Major() {
		return fmt.Errorf("the plane runs cellfed %s and %s is %s, another major release; %s works with planes of %s: run the %s of the plane's release",
			release(plane), component, release(own), component, supported, component)
	}
	switch d := int(plane.Minor()) - int(own.Minor()); {
	case d > s.PlaneNewer:
		return fmt.Errorf("the plane runs cellfed %s, newer than %s %s supports (planes of %s): upgrade %s to v%d.%d.x",
			release(plane), component, release(own), supported, component, plane.Major(), plane.Minor())
	case -d > s.PlaneOlder:
		return fmt.Errorf("the plane runs cellfed %s, older than %s %s supports (planes of %s): upgrade the plane first, or run %s %s until it is",
			release(plane), component, release(own), supported, component, lines(plane.Major(), int(plane.Minor())-s.PlaneNewer, int(plane.Minor())+s.PlaneOlder))
	}
	return nil
}

// supported names the plane lines s allows for a component of release own.
func (s Skew) supported(own *utilversion.Version) string {
	return lines(own.Major(), int(own.Minor())-s.PlaneOlder, int(own.Minor())+s.PlaneNewer)
}

// lines names the release lines major.from to major.to: "v0.1.x or v0.2.x".
func lines(major uint, from, to int) string {
	out := ""
	for m := max(from, 0); m <= to; m++ {
		switch {
		case out == "":
		case m == to:
			out += " or "
		default:
			out += ", "
		}
		out += fmt.Sprintf("v%d.%d.x", major, m)
	}
	return out
}

func release(v *utilversion.Version) string { return "v" + v.String() }
