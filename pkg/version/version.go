// Package version makes every cellfed binary report a Kubernetes version
// that clients can parse, however it was built.
//
// Kubernetes' version (k8s.io/component-base/version, served on /version
// and printed by --version and `cellfedctl version`) comes from -ldflags
// -X settings; `make build` sets them (v1.36.4+cellfed.<release>.<commit>,
// the release read from the VERSION file at the repository's root). A binary
// built with plain `go build` or `go install` keeps component-base's
// placeholder, "v0.0.0-master+$Format:%H$", which is no semantic version:
// `kubectl version` fails on it ("could not parse pre-release/metadata").
// Imported by every main package, this package's init fills in what the
// Makefile would have, derived from the binary's build information: the
// Kubernetes line the binary is built from (the version of k8s.io/kubernetes,
// else of k8s.io/component-base with v0 → v1) with "+cellfed" metadata and
// the VCS revision, tree state and time Go stamped, if any. A binary built
// with the Makefile's -ldflags is left alone, and so are `go test` binaries,
// whose build information lists no modules.
package version

import (
	"regexp"
	"runtime/debug"
	"strconv"
	_ "unsafe" // go:linkname

	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/component-base/version"

	"github.com/cellfed/cellfed"
)

// placeholder is component-base's gitVersion when no -ldflags set it.
const placeholder = "v0.0.0-master+$Format:%H$"

// The variables `-ldflags -X k8s.io/component-base/version.<name>=…` sets.
var (
	//go:linkname gitMajor k8s.io/component-base/version.gitMajor
	gitMajor string
	//go:linkname gitMinor k8s.io/component-base/version.gitMinor
	gitMinor string
	//go:linkname gitVersion k8s.io/component-base/version.gitVersion
	gitVersion string
	//go:linkname gitCommit k8s.io/component-base/version.gitCommit
	gitCommit string
	//go:linkname gitTreeState k8s.io/component-base/version.gitTreeState
	gitTreeState string
	//go:linkname buildDate k8s.io/component-base/version.buildDate
	buildDate string
)

func init() {
	if gitVersion != placeholder {
		return // set by -ldflags
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	b, ok := Derive(info, cellfed.Release())
	if !ok {
		return
	}
	gitVersion, gitMajor, gitMinor = b.GitVersion, b.Major, b.Minor
	if b.GitCommit != "" {
		gitCommit, gitTreeState, buildDate = b.GitCommit, b.GitTreeState, b.BuildDate
	}
	// component-base read gitVersion in its own init; storing the value it
	// now holds passes SetDynamicVersion's check as a no-op change.
	if err := version.SetDynamicVersion(gitVersion); err != nil {
		panic("cellfed version " + gitVersion + ": " + err.Error())
	}
}

// Build is what Derive makes of a binary's build information: the values
// the Makefile passes with -ldflags.
type Build struct {
	GitVersion, Major, Minor string
	// Empty when Go stamped no VCS information (go install module@version,
	// -buildvcs=false, go test).
	GitCommit, GitTreeState, BuildDate string
}

// Derive computes the version of a binary built without -ldflags from the
// cellfed release it is built from (VERSION):
// v<Kubernetes line>+cellfed.<release>[.<12 hex digits of the VCS revision>],
// or +cellfed.<release>.<sanitized main module version> for `go install
// module@version` when that version is not the release itself.
// It reports false if the build information names no Kubernetes module.
func Derive(info *debug.BuildInfo, release string) (Build, bool) {
	k8s := kubernetesVersion(info)
	if k8s == nil {
		return Build{}, false
	}
	b := Build{Major: strconv.FormatUint(uint64(k8s.Major()), 10), Minor: strconv.FormatUint(uint64(k8s.Minor()), 10)}
	meta := "cellfed"
	if _, ok := parseRelease(release); ok {
		meta += "." + release
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	switch rev := settings["vcs.revision"]; {
	case rev != "":
		b.GitCommit, b.BuildDate, b.GitTreeState = rev, settings["vcs.time"], "clean"
		if settings["vcs.modified"] == "true" {
			b.GitTreeState = "dirty"
		}
		meta += "." + rev[:min(12, len(rev))]
	case info.Main.Version != "" && info.Main.Version != "(devel)" && info.Main.Version != release:
		meta += "." + nonMetadata.ReplaceAllString(info.Main.Version, ".")
	}
	line := "v" + k8s.WithBuildMetadata("").String()
	b.GitVersion = line + "+" + meta
	if _, err := utilversion.ParseSemantic(b.GitVersion); err != nil {
		b.GitVersion = line + "+cellfed"
		if _, ok := parseRelease(release); ok {
			b.GitVersion += "." + release
		}
	}
	return b, true
}

// nonMetadata matches what semantic-version build metadata cannot hold.
var nonMetadata = regexp.MustCompile(`[^0-9A-Za-z.-]+`)

// kubernetesVersion is the version of k8s.io/kubernetes the binary is
// built with, else that of k8s.io/component-base as v1.<minor>.<patch>
// (the staging modules' v0.X.Y is Kubernetes' v1.X.Y).
func kubernetesVersion(info *debug.BuildInfo) *utilversion.Version {
	versions := map[string]string{}
	for _, d := range info.Deps {
		v := d.Version
		if d.Replace != nil && d.Replace.Version != "" {
			v = d.Replace.Version
		}
		versions[d.Path] = v
	}
	if v, err := utilversion.ParseSemantic(versions["k8s.io/kubernetes"]); err == nil && v.Major() == 1 {
		return v
	}
	if v, err := utilversion.ParseSemantic(versions["k8s.io/component-base"]); err == nil && v.Major() == 0 && v.Minor() > 0 {
		return v.WithMajor(1)
	}
	return nil
}
