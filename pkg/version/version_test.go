package version

import (
	"runtime/debug"
	"testing"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

func TestDerive(t *testing.T) {
	rev := "580ab8fd62b62a3bf476f6cb5de72ddd38f2cbac"
	kubernetes := &debug.Module{Path: "k8s.io/kubernetes", Version: "v1.36.4"}
	// Staging modules are replaced by their v0 version in cellfed's go.mod.
	componentBase := &debug.Module{Path: "k8s.io/component-base", Version: "v0.0.0", Replace: &debug.Module{Path: "k8s.io/component-base", Version: "v0.36.4"}}
	vcs := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: "2026-11-21T12:30:40Z"}, {Key: "vcs.modified", Value: "false"}}
	cases := []struct {
		name string
		info debug.BuildInfo
		want Build
		ok   bool
	}{
		{
			name: "go build in a clean checkout",
			info: debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Deps: []*debug.Module{componentBase, kubernetes}, Settings: vcs},
			want: Build{GitVersion: "v1.36.4+cellfed.v0.1.0.580ab8fd62b6", Major: "1", Minor: "36", GitCommit: rev, GitTreeState: "clean", BuildDate: "2026-11-21T12:30:40Z"},
			ok:   true,
		},
		{
			name: "go build in a modified checkout",
			info: debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261121123040-580ab8fd62b6+dirty"}, Deps: []*debug.Module{kubernetes},
				Settings: append(vcs[:3:3], debug.BuildSetting{Key: "vcs.modified", Value: "true"})},
			want: Build{GitVersion: "v1.36.4+cellfed.v0.1.0.580ab8fd62b6", Major: "1", Minor: "36", GitCommit: rev, GitTreeState: "dirty", BuildDate: "2026-11-21T12:30:40Z"},
			ok:   true,
		},
		{
			name: "go install module@version of the release: no VCS stamp, the release alone",
			info: debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}, Deps: []*debug.Module{kubernetes}},
			want: Build{GitVersion: "v1.36.4+cellfed.v0.1.0", Major: "1", Minor: "36"},
			ok:   true,
		},
		{
			name: "go install module@version of another version: the module version after the release",
			info: debug.BuildInfo{Main: debug.Module{Version: "v0.3.0"}, Deps: []*debug.Module{kubernetes}},
			want: Build{GitVersion: "v1.36.4+cellfed.v0.1.0.v0.3.0", Major: "1", Minor: "36"},
			ok:   true,
		},
		{
			name: "a pseudo-version with +dirty is made valid metadata",
			info: debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261121123040-580ab8fd62b6+dirty"}, Deps: []*debug.Module{kubernetes}},
			want: Build{GitVersion: "v1.36.4+cellfed.v0.1.0.v0.0.0-20261121123040-580ab8fd62b6.dirty", Major: "1", Minor: "36"},
			ok:   true,
		},
		{
			name: "only component-base (a client binary): v0.X.Y is Kubernetes v1.X.Y",
			info: debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Deps: []*debug.Module{componentBase}},
			want: Build{GitVersion: "v1.36.4+cellfed.v0.1.0", Major: "1", Minor: "36"},
			ok:   true,
		},
		{
			name: "a release candidate keeps its pre-release",
			info: debug.BuildInfo{Deps: []*debug.Module{{Path: "k8s.io/kubernetes", Version: "v1.37.0-rc.1"}}},
			want: Build{GitVersion: "v1.37.0-rc.1+cellfed.v0.1.0", Major: "1", Minor: "37"},
			ok:   true,
		},
		{
			name: "no Kubernetes module: nothing to derive",
			info: debug.BuildInfo{Deps: []*debug.Module{{Path: "k8s.io/component-base", Version: "(devel)"}}},
			ok:   false,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := Derive(&c.info, "v0.1.0")
			if ok != c.ok || got != c.want {
				t.Fatalf("Derive = %+v, %v; want %+v, %v", got, ok, c.want, c.ok)
			}
			if ok {
				if _, err := utilversion.ParseSemantic(got.GitVersion); err != nil {
					t.Errorf("%q is not a semantic version: %v", got.GitVersion, err)
				}
			}
		})
	}
}
