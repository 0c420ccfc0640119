package tenancy

import (
	"maps"
	"testing"
)

func TestPodSecurityLevel(t *testing.T) {
	for _, tc := range []struct {
		name, namespace string
		labels          map[string]string
		def, want       string
	}{
		{"platform default", "shop", nil, "baseline", "baseline"},
		{"workspace set by a platform admin", "shop", map[string]string{LabelPodSecurity: "restricted"}, "baseline", "restricted"},
		{"workspace opened up by a platform admin", "infra", map[string]string{LabelPodSecurity: "privileged"}, "baseline", "privileged"},
		{"invalid label is baseline", "shop", map[string]string{LabelPodSecurity: "none"}, "privileged", "baseline"},
		{"invalid label keeps a restricted default", "shop", map[string]string{LabelPodSecurity: "none"}, "restricted", "restricted"},
		{"kube-system is left alone", "kube-system", map[string]string{LabelPodSecurity: "restricted"}, "baseline", ""},
		{"default is left alone", "default", nil, "baseline", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PodSecurityLevel(tc.namespace, tc.labels, tc.def); got != tc.want {
				t.Errorf("PodSecurityLevel(%s, %v, %s) = %q, want %q", tc.namespace, tc.labels, tc.def, got, tc.want)
			}
		})
	}
}

func TestWithPodSecurity(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		level  string
		want   map[string]string
	}{
		{"a template's own Pod Security labels are replaced", map[string]string{"team": "a", PodSecurityPrefix + "enforce": "privileged", PodSecurityPrefix + "audit": "privileged", LabelPodSecurity: "privileged"}, "baseline",
			map[string]string{"team": "a", PodSecurityPrefix + "enforce": "baseline", PodSecurityPrefix + "enforce-version": "latest", PodSecurityPrefix + "warn": "baseline", PodSecurityPrefix + "warn-version": "latest"}},
		{"no labels", nil, "restricted",
			map[string]string{PodSecurityPrefix + "enforce": "restricted", PodSecurityPrefix + "enforce-version": "latest", PodSecurityPrefix + "warn": "restricted", PodSecurityPrefix + "warn-version": "latest"}},
		{"no level removes them", map[string]string{"team": "a", PodSecurityPrefix + "enforce": "privileged"}, "", map[string]string{"team": "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := maps.Clone(tc.labels)
			if got := WithPodSecurity(tc.labels, tc.level); !maps.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if !maps.Equal(before, tc.labels) {
				t.Errorf("the labels given changed: %v", tc.labels)
			}
		})
	}
}

func TestPodSecurityLevelError(t *testing.T) {
	for level, ok := range map[string]bool{"privileged": true, "baseline": true, "restricted": true, "": false, "Baseline": false} {
		if err := PodSecurityLevelError(level); (err == nil) != ok {
			t.Errorf("PodSecurityLevelError(%q) = %v", level, err)
		}
	}
}
