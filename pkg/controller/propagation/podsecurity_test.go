package propagation

import (
	"errors"
	"maps"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	typesv1b1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
	"github.com/cellfed/cellfed/pkg/tenancy"
)

// TestPodSecurityLabels: a member Namespace carries the platform's Pod
// Security level whatever its FederatedNamespace's template and
// overrides say; other types are left alone.
func TestPodSecurityLabels(t *testing.T) {
	enforce := tenancy.PodSecurityPrefix + "enforce"
	tenantTemplate := map[string]any{"metadata": map[string]any{"labels": map[string]any{"team": "a", enforce: "privileged"}}}
	privileged := []typesv1b1.ClusterOverride{{Path: "/metadata/labels/pod-security.kubernetes.io~1enforce", Value: &runtime.RawExtension{Raw: []byte(`"privileged"`)}}}
	wholeLabels := []typesv1b1.ClusterOverride{{Path: "/metadata/labels", Value: &runtime.RawExtension{Raw: []byte(`{"team":"b"}`)}}}
	levels := func(level string, err error) func(string) (string, error) {
		return func(string) (string, error) { return level, err }
	}
	for _, tc := range []struct {
		name      string
		typ       *Type
		level     func(string) (string, error)
		overrides []typesv1b1.ClusterOverride
		want      map[string]string // wanted labels besides the managed label
		wantErr   bool
	}{
		{"baseline replaces the tenant's privileged", namespaceType, levels("baseline", nil), nil,
			map[string]string{"team": "a", enforce: "baseline", enforce + "-version": "latest", tenancy.PodSecurityPrefix + "warn": "baseline", tenancy.PodSecurityPrefix + "warn-version": "latest"}, false},
		{"an override cannot set it", namespaceType, levels("restricted", nil), privileged,
			map[string]string{"team": "a", enforce: "restricted", enforce + "-version": "latest", tenancy.PodSecurityPrefix + "warn": "restricted", tenancy.PodSecurityPrefix + "warn-version": "latest"}, false},
		{"an override of all labels cannot drop it", namespaceType, levels("baseline", nil), wholeLabels,
			map[string]string{"team": "b", enforce: "baseline", enforce + "-version": "latest", tenancy.PodSecurityPrefix + "warn": "baseline", tenancy.PodSecurityPrefix + "warn-version": "latest"}, false},
		{"a reserved namespace keeps its template", namespaceType, levels("", nil), nil, map[string]string{"team": "a", enforce: "privileged"}, false},
		{"other types are left alone", deploymentType, levels("baseline", nil), nil, map[string]string{"team": "a", enforce: "privileged"}, false},
		{"an unknown level is an error", namespaceType, levels("", errors.New("namespaces are not loaded yet")), nil, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Controller{typ: tc.typ, env: Env{PodSecurity: tc.level}}
			fed := fedObj("shop", "shop")
			tmpl, err := c.withPodSecurity("shop", tenantTemplate)
			if (err != nil) != tc.wantErr {
				t.Fatalf("withPodSecurity: %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			d, err := build(tc.typ, fed, tmpl, tc.overrides, false)
			if err != nil {
				t.Fatal(err)
			}
			got := d.obj.GetLabels()
			delete(got, "kubefed.io/managed")
			if !maps.Equal(got, tc.want) {
				t.Errorf("member labels %v, want %v", got, tc.want)
			}
			if l := tenantTemplate["metadata"].(map[string]any)["labels"].(map[string]any)[enforce]; l != "privileged" {
				t.Errorf("the federated object's template changed: %v", l)
			}
		})
	}
}
