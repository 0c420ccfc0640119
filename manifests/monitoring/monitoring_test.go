package monitoring

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "write prometheusrule.yaml from rules.yaml")

// TestPrometheusRule: prometheusrule.yaml is rules.yaml's groups in a
// PrometheusRule, byte for byte what PrometheusRule generates.
func TestPrometheusRule(t *testing.T) {
	want, err := PrometheusRule()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("prometheusrule.yaml", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("prometheusrule.yaml is not generated from rules.yaml: run go test ./manifests/monitoring/ -run TestPrometheusRule -update")
	}
	var obj struct {
		Spec RulesFile `json:"spec"`
	}
	if err := yaml.Unmarshal(got, &obj); err != nil {
		t.Fatal(err)
	}
	rf, err := Rules()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(obj.Spec, rf) {
		t.Errorf("the PrometheusRule's spec differs from rules.yaml")
	}
}

// promtool is Debian's promtool (make prometheus installs it).
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found (make prometheus installs Debian's prometheus package): %v", err)
	}
	return p
}

func run(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// alertTests is what tests.yaml asks of each alert.
type alertTests struct {
	Tests []struct {
		Name          string `json:"name"`
		AlertRuleTest []struct {
			Alertname string `json:"alertname"`
			ExpAlerts []any  `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// TestRulesFireAndStaySilent: promtool accepts rules.yaml and its unit
// tests pass, and those tests make every alert fire on a synthetic fault
// and stay silent on a healthy series.
func TestRulesFireAndStaySilent(t *testing.T) {
	p := promtool(t)
	run(t, ".", p, "check", "rules", "rules.yaml")
	run(t, ".", p, "test", "rules", "tests.yaml")

	b, err := os.ReadFile("tests.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var at alertTests
	if err := yaml.Unmarshal(b, &at); err != nil {
		t.Fatal(err)
	}
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range at.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
		}
	}
	rf, err := Rules()
	if err != nil {
		t.Fatal(err)
	}
	alerts := 0
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts++
			if !fires[r.Alert] {
				t.Errorf("alert %s fires in no test of tests.yaml", r.Alert)
			}
			if !silent[r.Alert] {
				t.Errorf("alert %s has no healthy test in tests.yaml", r.Alert)
			}
		}
	}
	t.Logf("%d alerts, each fired and kept silent by promtool test rules", alerts)
}

// TestQueriesParse: Prometheus' own parser (promtool check rules) takes
// every panel query, with Grafana's variables expanded, and each panel
// and variable reads at least one metric.
func TestQueriesParse(t *testing.T) {
	p := promtool(t)
	qs, err := PanelQueries()
	if err != nil {
		t.Fatal(err)
	}
	var rules []Rule
	for i, q := range qs {
		if _, err := Parse(q.Expr); err != nil {
			t.Errorf("%s: %v", q.Source, err)
		}
		rules = append(rules, Rule{Record: fmt.Sprintf("cellfed_panel_%d", i), Expr: q.Expr})
	}
	b, err := yaml.Marshal(RulesFile{Groups: []Group{{Name: "panels", Rules: rules}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "panels.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := run(t, dir, p, "check", "rules", "panels.yaml")
	if want := fmt.Sprintf("SUCCESS: %d rules found", len(qs)); !strings.Contains(out, want) {
		t.Errorf("promtool check rules on the panel queries: %s, want %s", out, want)
	}
	if _, sels, err := VariableSelectors(); err != nil || len(sels) == 0 {
		t.Errorf("dashboard variables: %v (%d)", err, len(sels))
	}
	ds, err := Dashboards()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cellfed-plane.json", "cellfed-controller.json", "cellfed-releases.json"} {
		if d, ok := ds[want]; !ok || d.UID == "" || len(d.Panels) == 0 {
			t.Errorf("dashboard %s missing or without uid or panels", want)
		}
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, expr string
		want       Use
		wantErr    bool
	}{
		{name: "a bare metric", expr: "cellfed_cluster_ready == 0",
			want: Use{Selectors: []Selector{{Metric: "cellfed_cluster_ready"}}}},
		{name: "matchers, a range, grouping and a function",
			expr: `histogram_quantile(0.99, sum by (verb, le) (rate(apiserver_request_duration_seconds_bucket{verb!~"WATCH|CONNECT", le="1"}[5m])))`,
			want: Use{Selectors: []Selector{{Metric: "apiserver_request_duration_seconds_bucket", Labels: []string{"verb", "le"}}}, Grouping: []string{"verb", "le"}}},
		{name: "binary operators, offset, or vector(0), a string with a brace",
			expr: `(sum(rate(kine_sql_total{error_code!="}"}[1m])) or vector(0)) / sum(kine_sql_total offset 1d) > 1e-3`,
			want: Use{Selectors: []Selector{{Metric: "kine_sql_total", Labels: []string{"error_code"}}, {Metric: "kine_sql_total"}}}},
		{name: "a recorded metric and aggregation after its argument",
			expr: `sum(cellfed:kine_sql_errors:ratio_rate5m) without (instance) and on (job) up`,
			want: Use{Selectors: []Selector{{Metric: "cellfed:kine_sql_errors:ratio_rate5m"}, {Metric: "up"}}, Grouping: []string{"instance", "job"}}},
		{name: "__name__ names the metric", expr: `{__name__="up", job="x"}`,
			want: Use{Selectors: []Selector{{Metric: "up", Labels: []string{"job"}}}}},
		{name: "no metric", expr: `vector(1)`, wantErr: true},
		{name: "no metric name", expr: `{job="x"}`, wantErr: true},
		{name: "unterminated", expr: `up{job="x"`, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.expr)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Parse(%q) error = %v, want error %v", tc.expr, err, tc.wantErr)
			}
			if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Parse(%q) = %+v, want %+v", tc.expr, got, tc.want)
			}
		})
	}
}

func TestMissing(t *testing.T) {
	e, err := ParseExposition(`# HELP x y
# TYPE kine_sql_total counter
kine_sql_total{error_code="",name="get"} 3
kine_sql_total{error_code="a,\"b}",name="list"} 1
up 1
`)
	if err != nil {
		t.Fatal(err)
	}
	records := map[string][]string{"cellfed:x": {"verb"}}
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`sum by (name) (rate(kine_sql_total{error_code!=""}[1m]))`, nil},
		{`cellfed:x{verb="GET"} and on (verb) up`, nil},
		{`sum by (nam) (kine_sql_totals{code="1"})`, []string{"grouping label nam", "metric kine_sql_totals"}},
		{`kine_sql_total{code="1"} + cellfed:x{instance="a"}`, []string{"label code of kine_sql_total", "label instance of cellfed:x"}},
	} {
		u, err := Parse(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.Missing(u, records); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Missing(%q) = %v, want %v", tc.expr, got, tc.want)
		}
	}
}
