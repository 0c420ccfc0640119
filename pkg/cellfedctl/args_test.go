package cellfedctl

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

func TestTypeName(t *testing.T) {
	tests := []struct {
		arg, want, wantErr string
	}{
		{arg: "deployments.apps", want: "deployments.apps"},
		{arg: " Services ", want: "services"},
		{arg: "widgets.example.com", want: "widgets.example.com"},
		{arg: "", wantErr: "no type given"},
		{arg: "apps/v1/deployments", wantErr: "is not a resource name"},
		{arg: "deployments.", wantErr: "is not a resource name"},
		{arg: "deploy ments", wantErr: "is not a resource name"},
	}
	for _, tc := range tests {
		got, err := typeName(tc.arg)
		checkErr(t, "typeName("+tc.arg+")", err, tc.wantErr)
		if got != tc.want {
			t.Errorf("typeName(%q) = %q, want %q", tc.arg, got, tc.want)
		}
	}
}

func TestParseLabels(t *testing.T) {
	tests := []struct {
		args    []string
		want    map[string]string
		wantErr string
	}{
		{args: nil, want: nil},
		{args: []string{"zone=z1"}, want: map[string]string{"zone": "z1"}},
		{args: []string{"zone=z1", "topology.example.com/region=eu-1", "empty="}, want: map[string]string{"zone": "z1", "topology.example.com/region": "eu-1", "empty": ""}},
		{args: []string{"zone=z1", "zone=z1"}, want: map[string]string{"zone": "z1"}},
		{args: []string{"zone"}, wantErr: "is not key=value"},
		{args: []string{"=z1"}, wantErr: "invalid label key"},
		{args: []string{"bad key=z1"}, wantErr: "invalid label key"},
		{args: []string{"zone=not ok"}, wantErr: "invalid label value"},
		{args: []string{"zone=z1", "zone=z2"}, wantErr: "sets zone twice"},
	}
	for _, tc := range tests {
		got, err := ParseLabels(tc.args)
		checkErr(t, "ParseLabels("+strings.Join(tc.args, " ")+")", err, tc.wantErr)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseLabels(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

func TestNewCell(t *testing.T) {
	tests := []struct {
		name, cluster string
		labels        []string
		wantErr       string
	}{
		{name: "rz00a", cluster: "member1", labels: []string{"zone=z1"}},
		{name: "rz00a", cluster: "", wantErr: "--cluster is required"},
		{name: "rz00a", cluster: "shop.rz00b", wantErr: "not a physical cluster name"},
		{name: "RZ00A", cluster: "member1", wantErr: "not a valid cell name"},
		{name: "a.b", cluster: "member1", wantErr: "not a valid cell name"},
		{name: "rz00a", cluster: "member1", labels: []string{"zone"}, wantErr: "not key=value"},
	}
	for _, tc := range tests {
		cell, err := NewCell("shop", tc.name, tc.cluster, tc.labels)
		checkErr(t, "NewCell("+tc.name+", "+tc.cluster+")", err, tc.wantErr)
		if err != nil {
			continue
		}
		if cell.Namespace != "shop" || cell.Name != tc.name || cell.Spec.Cluster != tc.cluster || cell.Labels["zone"] != "z1" ||
			cell.APIVersion != "core.cellfed.io/v1alpha1" || cell.Kind != "Cell" {
			t.Errorf("NewCell = %+v", cell)
		}
	}
}

func TestCommandName(t *testing.T) {
	tests := []struct{ argv0, want string }{
		{"cellfedctl", "cellfedctl"},
		{"/usr/local/bin/cellfedctl", "cellfedctl"},
		{"/home/me/bin/kubectl-cellfed", "kubectl cellfed"},
		{"kubectl-cell_fed", "kubectl cell-fed"},
		{"", "cellfedctl"},
	}
	for _, tc := range tests {
		if got := commandName(tc.argv0); got != tc.want {
			t.Errorf("commandName(%q) = %q, want %q", tc.argv0, got, tc.want)
		}
	}
}

// TestBadInvocations runs the command line with bad arguments against a
// kubeconfig naming an unreachable server: each fails with one error line
// that says how to fix it, before talking to any server.
func TestBadInvocations(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"enabel", "deployments.apps"}, `unknown command "enabel" for "cellfedctl" (did you mean "enable"?)`},
		{[]string{"enable"}, "takes one type"},
		{[]string{"enable", "a", "b"}, "takes one type"},
		{[]string{"enable", "deployment"}, `(did you mean "deployments.apps"?); for a CRD use --from-cluster`},
		{[]string{"enable", "deployments.apps", "--bogus"}, "unknown flag: --bogus; see 'cellfedctl enable --help'"},
		{[]string{"enable", "deployments.apps", "--from-cluster-context=x"}, "--from-cluster-context needs --from-cluster"},
		{[]string{"enable", "services", "--from-cluster=/nonexistent"}, "is not a CRD name"},
		{[]string{"disable", "deployments.apps", "--force"}, "--force only applies to --delete-crd"},
		{[]string{"cell", "crate"}, `unknown command "crate" for "cellfedctl cell" (did you mean "create"?)`},
		{[]string{"cell", "create", "rz00a"}, "--cluster is required"},
		{[]string{"cell", "create", "rz00a", "--cluster=m1", "-l", "zone"}, "not key=value"},
		{[]string{"cell", "list", "extra"}, "takes no arguments"},
		{[]string{"cell", "delete"}, "takes at least one cell name"},
		{[]string{"cell", "delete", "Bad.Name"}, "is not a cell name"},
		{[]string{"version", "--clinet"}, "unknown flag: --clinet"},
		{[]string{"token", "create"}, "--tenant: a tenant is required"},
		{[]string{"token", "create", "--tenant=a b"}, `--tenant: "a b" is not a tenant name`},
		{[]string{"token", "create", "--tenant=acme", "--workspace=Prod"}, `--workspace: "Prod" is not a workspace name`},
		{[]string{"token", "create", "--tenant=acme", "--ttl=10s"}, "--ttl=10s is out of range; a bootstrap token lives from 1m0s to 168h0m0s"},
		{[]string{"token", "create", "--tenant=acme", "--ttl=200h"}, "--ttl=200h0m0s is out of range"},
		{[]string{"token", "create", "extra", "--tenant=acme"}, "takes no arguments"},
		{[]string{"token", "crate"}, `unknown command "crate" for "cellfedctl token" (did you mean "create"?)`},
		{[]string{"registration", "aprove", "x"}, `(did you mean "approve"?)`},
		{[]string{"registration", "approve"}, "takes one registration (cluster) name"},
		{[]string{"registration", "deny", "ns.cell"}, "names with a dot are reserved for per-cell clusters"},
		{[]string{"registration", "revoke", "Bad"}, "is not a valid cluster name"},
		{[]string{"registration", "list", "x"}, "takes no arguments"},
		{[]string{"registration", "auto-approve"}, "takes one tenant name"},
		{[]string{"registration", "auto-approve", "a b"}, `"a b" is not a tenant name`},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := append([]string{"--kubeconfig=/nonexistent/kubeconfig", "--server=https://127.0.0.1:1"}, tc.args...)
			code := Run("cellfedctl", args, genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
			if code != 1 {
				t.Errorf("exit code %d, want 1", code)
			}
			lines := strings.Split(strings.TrimRight(errOut.String(), "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "error: ") || !strings.Contains(lines[0], "; ") {
				t.Errorf("stderr = %q, want one line `error: <what>; <how to fix>`", errOut.String())
			}
			if !strings.Contains(errOut.String(), tc.wantErr) {
				t.Errorf("stderr = %q, want it to contain %q", errOut.String(), tc.wantErr)
			}
			if out.Len() != 0 {
				t.Errorf("stdout = %q, want nothing", out.String())
			}
		})
	}
}

func TestPluginUsage(t *testing.T) {
	var out bytes.Buffer
	code := Run("/somewhere/kubectl-cellfed", []string{"cell", "--help"}, genericiooptions.IOStreams{Out: &out, ErrOut: &out})
	if code != 0 {
		t.Fatalf("exit code %d: %s", code, out.String())
	}
	for _, want := range []string{"kubectl cellfed cell [command]", "kubectl cellfed cell create rz00a"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help does not contain %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "cellfedctl") {
		t.Errorf("plugin help mentions cellfedctl:\n%s", out.String())
	}
}

func TestPrintCells(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	cell := func(ns, name, cluster, kfc string, labels map[string]string) cellv1alpha1.Cell {
		return cellv1alpha1.Cell{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, CreationTimestamp: metav1.NewTime(now.Add(-90 * time.Minute))},
			Spec:       cellv1alpha1.CellSpec{Cluster: cluster},
			Status:     cellv1alpha1.CellStatus{KubeFedCluster: kfc},
		}
	}
	cells := []cellv1alpha1.Cell{
		cell("shop", "rz00b", "member2", "", nil),
		cell("shop", "rz00a", "member1", "shop.rz00a", map[string]string{"zone": "z1", "region": "eu", cellv1alpha1.LabelTenant: "t", cellv1alpha1.LabelWorkspace: "w"}),
	}
	tests := []struct {
		withNamespace bool
		want          string
	}{
		{false, `NAME    CLUSTER   KUBEFEDCLUSTER   LABELS              AGE
rz00a   member1   shop.rz00a       region=eu,zone=z1   90m
rz00b   member2   shop.rz00b       <none>              90m
`},
		{true, `NAMESPACE   NAME    CLUSTER   KUBEFEDCLUSTER   LABELS              AGE
shop        rz00a   member1   shop.rz00a       region=eu,zone=z1   90m
shop        rz00b   member2   shop.rz00b       <none>              90m
`},
	}
	for _, tc := range tests {
		var b bytes.Buffer
		if err := PrintCells(&b, append([]cellv1alpha1.Cell(nil), cells...), tc.withNamespace, now); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("PrintCells(withNamespace=%v) =\n%s\nwant\n%s", tc.withNamespace, b.String(), tc.want)
		}
	}
}

func TestChangeNote(t *testing.T) {
	none := objectState{}
	v1 := objectState{exists: true, generation: 1, labels: map[string]string{"a": "b"}}
	v2 := objectState{exists: true, generation: 2, labels: map[string]string{"a": "b"}}
	relabelled := objectState{exists: true, generation: 1, labels: map[string]string{"a": "c"}}
	tests := []struct {
		name                                     string
		ftcBefore, ftcAfter, crdBefore, crdAfter objectState
		want                                     string
	}{
		{"created", none, v1, none, v1, ""},
		{"unchanged", v1, v1, v1, v1, " (unchanged)"},
		{"CRD updated", v1, v1, v1, v2, " (updated)"},
		{"CRD relabelled", v1, v1, v1, relabelled, " (updated)"},
		{"FederatedTypeConfig recreated", none, v1, v1, v1, " (updated)"},
	}
	for _, tc := range tests {
		if got := changeNote(tc.ftcBefore, tc.ftcAfter, tc.crdBefore, tc.crdAfter); got != tc.want {
			t.Errorf("%s: changeNote = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func checkErr(t *testing.T, what string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: %v", what, err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("%s: err = %v, want one containing %q", what, err, want)
	}
}
