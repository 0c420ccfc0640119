package cellfedctl

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

func TestParseSubject(t *testing.T) {
	user := func(n string) rbacv1.Subject {
		return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: n}
	}
	tests := []struct {
		name, in string
		want     rbacv1.Subject
		wantErr  string
	}{
		{name: "bare user", in: "alice", want: user("alice")},
		{name: "user prefix", in: "user:alice", want: user("alice")},
		{name: "email user", in: "alice@example.com", want: user("alice@example.com")},
		{name: "user with another prefix", in: "oidc:alice", want: user("oidc:alice")},
		{name: "group", in: "group:devs", want: rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "devs"}},
		{name: "group with colons", in: "group:system:authenticated", want: rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:authenticated"}},
		{name: "service account", in: "serviceaccount:ci:deployer", want: rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "ci", Name: "deployer"}},
		{name: "empty", in: "", wantErr: `subject "" has no name`},
		{name: "empty group", in: "group:", wantErr: `subject "group:" has no name`},
		{name: "service account without namespace", in: "serviceaccount:deployer", wantErr: "is not serviceaccount:<namespace>:<name>"},
		{name: "service account bad namespace", in: "serviceaccount:CI:deployer", wantErr: "is not serviceaccount:<namespace>:<name>"},
		{name: "slash", in: "team/alice", wantErr: "cannot name a RoleBinding"},
		{name: "spaces", in: " alice", wantErr: "cannot name a RoleBinding"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSubject(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "; ") {
					t.Fatalf("ParseSubject(%q) = %v, %v; want an error with %q and a fix", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseSubject(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestGrantBinding(t *testing.T) {
	b, err := GrantBinding("shop", "app-team", "group:devs")
	if err != nil {
		t.Fatal(err)
	}
	if b.Name != "cellfed:app-team:group:devs" || b.Namespace != "shop" || b.RoleRef.Kind != "ClusterRole" || b.RoleRef.Name != "cellfed:app-team" {
		t.Errorf("binding %s/%s → %+v", b.Namespace, b.Name, b.RoleRef)
	}
	if b, _ := GrantBinding("shop", "viewer", "alice"); b.Name != "cellfed:viewer:user:alice" || b.RoleRef.Name != "cellfed:viewer" {
		t.Errorf("viewer binding %s → %s", b.Name, b.RoleRef.Name)
	}
	for _, tc := range []struct{ role, subject, want string }{
		{"", "alice", "--role is required"},
		{"admin", "alice", `unknown role "admin"; pass --role=app-team or --role=viewer`},
		{"platform-admin", "alice", "ClusterRoleBinding"},
		{"viewer", "serviceaccount:x", "serviceaccount:<namespace>:<name>"},
	} {
		if _, err := GrantBinding("shop", tc.role, tc.subject); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("GrantBinding(%q, %q) = %v, want an error with %q", tc.role, tc.subject, err, tc.want)
		}
	}
}

func TestCheckWorkspace(t *testing.T) {
	for _, tc := range []struct{ ns, tenant, workspace, want string }{
		{"shop", "acme", "prod", ""},
		{"Shop", "acme", "prod", "not a valid namespace name"},
		{"kube-federation-system", "acme", "prod", "reserved for the plane"},
		{"kube-system", "acme", "prod", "reserved for the plane"},
		{"shop", "", "prod", "--tenant is required"},
		{"shop", "acme", "", "--workspace is required"},
		{"shop", "acme corp", "prod", `--tenant="acme corp" is not a valid label value`},
	} {
		err := CheckWorkspace(tc.ns, tc.tenant, tc.workspace)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckWorkspace(%q, %q, %q) = %v, want %q", tc.ns, tc.tenant, tc.workspace, err, tc.want)
		}
	}
}

func TestPrintWorkspaces(t *testing.T) {
	ns := func(name, tenant, workspace string) corev1.Namespace {
		return corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			cellv1alpha1.LabelTenant: tenant, cellv1alpha1.LabelWorkspace: workspace}}}
	}
	cell := func(ns, name, cluster string) cellv1alpha1.Cell {
		return cellv1alpha1.Cell{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: cellv1alpha1.CellSpec{Cluster: cluster}}
	}
	var out bytes.Buffer
	err := PrintWorkspaces(&out,
		[]corev1.Namespace{ns("shop", "acme", "prod"), ns("empty", "beta", "dev"), ns("blog", "acme", "staging")},
		[]cellv1alpha1.Cell{
			cell("shop", "rz10a", "member-2"), cell("shop", "rz00a", "member-1"), cell("shop", "rz01a", "member-1"),
			cell("blog", "rz00b", "member-1"),
			cell("elsewhere", "x", "member-9"), // not a listed workspace
		})
	if err != nil {
		t.Fatal(err)
	}
	want := `NAMESPACE   TENANT   WORKSPACE   CELLS               CLUSTERS
blog        acme     staging     rz00b               member-1
empty       beta     dev         <none>              <none>
shop        acme     prod        rz00a,rz01a,rz10a   member-1,member-2
`
	if out.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", out.String(), want)
	}
}
