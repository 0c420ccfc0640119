package tenancy

import (
	"strings"
	"testing"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

func TestMayReach(t *testing.T) {
	acme := map[string]string{cellv1alpha1.LabelTenant: "acme"}
	other := map[string]string{cellv1alpha1.LabelTenant: "other"}
	for _, tc := range []struct {
		name              string
		namespace, tenant string
		cluster           string
		labels            map[string]string
		want              bool
	}{
		{"cluster-scoped objects reach every cluster", "", "", "m1", other, true},
		{"cluster-scoped objects reach every cell", "", "", "shop.a", nil, true},
		{"own namespace's cell", "shop", "acme", "shop.a", nil, true},
		{"another namespace's cell", "shop", "acme", "blog.a", nil, false},
		{"shared physical cluster", "shop", "acme", "m1", nil, true},
		{"physical cluster dedicated to the tenant", "shop", "acme", "m1", acme, true},
		{"physical cluster dedicated to another tenant", "shop", "acme", "m1", other, false},
		{"tenant-less namespace on a dedicated cluster", "shop", "", "m1", acme, false},
		{"tenant-less namespace on a shared cluster", "shop", "", "m1", map[string]string{"region": "eu"}, true},
		{"own cell on a cluster dedicated to the tenant", "shop", "acme", "shop.a", map[string]string{cellv1alpha1.LabelClusterTenant: "acme"}, true},
		{"own cell on a cluster dedicated to another tenant", "shop", "acme", "shop.a", map[string]string{cellv1alpha1.LabelClusterTenant: "other"}, false},
		{"own move cluster to a shared cluster", "shop", "acme", "shop.a.move", map[string]string{cellv1alpha1.LabelMove: cellv1alpha1.MoveCopy}, true},
		{"own move cluster to a cluster dedicated to another tenant", "shop", "acme", "shop.a.move", map[string]string{cellv1alpha1.LabelMove: cellv1alpha1.MoveCopy, cellv1alpha1.LabelClusterTenant: "other"}, false},
		{"own cell whose namespace tenant label says other, cluster tenant own", "shop", "acme", "shop.a", map[string]string{cellv1alpha1.LabelTenant: "other", cellv1alpha1.LabelClusterTenant: "acme"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := MayReach(tc.namespace, tc.tenant, tc.cluster, tc.labels); got != tc.want {
				t.Errorf("MayReach(%q, %q, %q, %v) = %v, want %v", tc.namespace, tc.tenant, tc.cluster, tc.labels, got, tc.want)
			}
		})
	}
}

func TestLabels(t *testing.T) {
	ws := map[string]string{cellv1alpha1.LabelTenant: "acme", cellv1alpha1.LabelWorkspace: "prod", "team": "x"}
	tenantOnly := map[string]string{cellv1alpha1.LabelTenant: "acme"}
	for _, tc := range []struct {
		name         string
		labels       map[string]string
		workspace    bool
		objectLabels int
	}{
		{"workspace", ws, true, 2},
		{"tenant only", tenantOnly, false, 1},
		{"no labels", nil, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsWorkspace(tc.labels); got != tc.workspace {
				t.Errorf("IsWorkspace = %v, want %v", got, tc.workspace)
			}
			if got := ObjectLabels(tc.labels); len(got) != tc.objectLabels || got["team"] != "" {
				t.Errorf("ObjectLabels = %v, want %d tenancy labels", got, tc.objectLabels)
			}
		})
	}
	if tn, w := Of(ws); tn != "acme" || w != "prod" {
		t.Errorf("Of = %q, %q", tn, w)
	}
	if Changed(ws, ws) || !Changed(ws, tenantOnly) || !Changed(tenantOnly, nil) {
		t.Error("Changed: wrong answer")
	}
	if !IsTenancyLabel(cellv1alpha1.LabelWorkspace) || IsTenancyLabel("team") {
		t.Error("IsTenancyLabel: wrong answer")
	}
}

func TestErrors(t *testing.T) {
	acmeProd := map[string]string{cellv1alpha1.LabelTenant: "acme", cellv1alpha1.LabelWorkspace: "prod"}
	for _, tc := range []struct {
		name string
		err  error
		want string // "" for no error
	}{
		{"tenant required", TenantNameError(""), "a tenant is required"},
		{"tenant not a label value", TenantNameError("a b"), `"a b" is not a tenant name; tenants are label values`},
		{"tenant ok", TenantNameError("acme"), ""},
		{"no workspace", WorkspaceNameError(""), ""},
		{"workspace not a DNS label", WorkspaceNameError("Prod"), `"Prod" is not a workspace name; workspaces are DNS labels`},
		{"claim unchanged", ClaimError("shop", acmeProd, "acme", "prod"), ""},
		{"claim unlabelled", ClaimError("shop", nil, "acme", "prod"), ""},
		{"claim of another tenant", ClaimError("shop", acmeProd, "other", "prod"), `namespace shop belongs to tenant "acme", not "other"`},
		{"claim of another workspace", ClaimError("shop", acmeProd, "acme", "dev"), `namespace shop is workspace "prod" of tenant "acme", not "dev"; choose another namespace name, or pass --workspace=prod`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			switch {
			case tc.want == "" && tc.err != nil:
				t.Errorf("got %v, want no error", tc.err)
			case tc.want != "" && (tc.err == nil || !strings.Contains(tc.err.Error(), tc.want)):
				t.Errorf("got %v, want %q", tc.err, tc.want)
			}
		})
	}
}

func TestReasons(t *testing.T) {
	for _, tc := range []struct {
		name, got, want string
	}{
		{"label on a namespace without tenancy", LabelReason("shop", cellv1alpha1.LabelTenant, "", "acme"), "namespace shop is not a tenant workspace (it has no cellfed.io/tenant label)"},
		{"label of another tenant", LabelReason("shop", cellv1alpha1.LabelTenant, "acme", "other"), `objects in namespace shop belong to cellfed.io/tenant "acme", not "other"`},
		{"label as the namespace says", LabelReason("shop", cellv1alpha1.LabelTenant, "acme", "acme"), ""},
		{"not a workspace", NotWorkspaceReason("shop"), "kubectl label namespace shop cellfed.io/tenant=<tenant> cellfed.io/workspace=<workspace>"},
		{"dedicated", DedicatedReason("m1", "other", "shop", "acme"), `cluster "m1" is dedicated to tenant "other" (its label cellfed.io/tenant=other), and namespace shop belongs to tenant "acme"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if (tc.want == "") != (tc.got == "") || !strings.Contains(tc.got, tc.want) {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
}
