package cellfedctl

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cellfed/cellfed/pkg/doctor"
)

func TestLabelValue(t *testing.T) {
	tests := []struct{ name, labels, label, want string }{
		{"one label", `cluster="edge-1"`, "cluster", "edge-1"},
		{"among others", `a="x",cluster="edge-2",b="y"`, "cluster", "edge-2"},
		{"escaped quote", `cluster="a\"b"`, "cluster", `a"b`},
		{"absent", `a="x"`, "cluster", ""},
		{"malformed", `cluster=edge`, "cluster", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := labelValue(tc.labels, tc.label); got != tc.want {
				t.Errorf("labelValue(%q, %q) = %q, want %q", tc.labels, tc.label, got, tc.want)
			}
		})
	}
}

func TestPrintDoctor(t *testing.T) {
	tests := []struct {
		name   string
		report doctor.Report
		want   []string
	}{
		{"clean, one check not done", doctor.Report{Checks: []doctor.Check{
			{Name: "plane", Checked: true, Summary: "2 readiness checks"},
			{Name: "registrations", Summary: "listing ClusterRegistrations is forbidden to you"},
		}}, []string{
			"checked      plane              2 readiness checks\n",
			"not checked  registrations      listing ClusterRegistrations is forbidden to you\n",
			"No problems found; 1 check(s) not done.\n",
		}},
		{"a finding with its fix", doctor.Report{Findings: []doctor.Finding{
			{Name: "member-unreachable", Severity: doctor.Error, Object: "cluster m", Message: "down", Fix: "cellfedctl status"},
		}}, []string{
			"ERROR    member-unreachable  cluster m\n         down\n         fix: cellfedctl status\n",
			"1 problem(s) found.\n",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := PrintDoctor(&b, tc.report); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, b.String())
				}
			}
		})
	}
}
