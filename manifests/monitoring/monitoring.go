// Package monitoring holds cellfed's Prometheus rules and Grafana
// dashboards (the files beside it) and reads them: the rules' and the
// panels' PromQL expressions, and the metrics and labels each one
// selects, so tests can hold them against what the binaries export.
package monitoring

import (
	"embed"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

//go:embed rules.yaml prometheusrule.yaml dashboards/*.json
var files embed.FS

// Rule is one recording or alerting rule of rules.yaml.
type Rule struct {
	Record      string            `json:"record,omitempty"`
	Alert       string            `json:"alert,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Group is a rule group.
type Group struct {
	Name  string `json:"name"`
	Rules []Rule `json:"rules"`
}

// RulesFile is the plain Prometheus rules file.
type RulesFile struct {
	Groups []Group `json:"groups"`
}

// Rules reads rules.yaml.
func Rules() (RulesFile, error) {
	var rf RulesFile
	b, err := files.ReadFile("rules.yaml")
	if err != nil {
		return rf, err
	}
	if err := yaml.UnmarshalStrict(b, &rf); err != nil {
		return rf, fmt.Errorf("rules.yaml: %w", err)
	}
	return rf, nil
}

// PrometheusRule is the prometheus-operator object holding the same
// groups as rules.yaml, as prometheusrule.yaml has it.
func PrometheusRule() ([]byte, error) {
	rf, err := Rules()
	if err != nil {
		return nil, err
	}
	obj := map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "PrometheusRule",
		"metadata": map[string]any{
			"name": "cellfed", "namespace": "cellfed-system",
			"labels": map[string]any{"app.kubernetes.io/name": "cellfed", "app.kubernetes.io/component": "monitoring"},
		},
		"spec": rf,
	}
	b, err := yaml.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return append([]byte("# Generated from rules.yaml by `go test ./manifests/monitoring/ -run TestPrometheusRule -update`; do not edit.\n"), b...), nil
}

// PrometheusRuleFile is prometheusrule.yaml as committed.
func PrometheusRuleFile() ([]byte, error) { return files.ReadFile("prometheusrule.yaml") }

// Query is one PromQL expression of a rule or a dashboard, with where it
// comes from.
type Query struct {
	Source string // e.g. "rules.yaml: alert CellfedClusterNotReady"
	Expr   string
}

// RuleQueries are the expressions of every rule.
func RuleQueries() ([]Query, error) {
	rf, err := Rules()
	if err != nil {
		return nil, err
	}
	var out []Query
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			name := "alert " + r.Alert
			if r.Record != "" {
				name = "record " + r.Record
			}
			out = append(out, Query{Source: "rules.yaml: " + name, Expr: r.Expr})
		}
	}
	return out, nil
}

// Dashboard is what the tests read of a Grafana dashboard.
type Dashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID      int    `json:"id"`
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// Dashboards reads every dashboard, by file name.
func Dashboards() (map[string]Dashboard, error) {
	entries, err := files.ReadDir("dashboards")
	if err != nil {
		return nil, err
	}
	out := map[string]Dashboard{}
	for _, e := range entries {
		b, err := files.ReadFile(path.Join("dashboards", e.Name()))
		if err != nil {
			return nil, err
		}
		var d Dashboard
		if err := json.Unmarshal(b, &d); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		out[e.Name()] = d
	}
	return out, nil
}

// PanelQueries are the expressions of every dashboard panel, with
// Grafana's variables given values Prometheus takes: $__rate_interval is
// 1m and every other variable matches anything.
func PanelQueries() ([]Query, error) {
	ds, err := Dashboards()
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ds))
	for n := range ds {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Query
	for _, n := range names {
		for _, p := range ds[n].Panels {
			for i, t := range p.Targets {
				out = append(out, Query{Source: fmt.Sprintf("%s: panel %d %q target %d", n, p.ID, p.Title, i), Expr: Expand(t.Expr)})
			}
		}
	}
	return out, nil
}

// VariableSelectors are the metric and label each dashboard variable's
// label_values(metric, label) query reads.
func VariableSelectors() ([]Query, []Selector, error) {
	ds, err := Dashboards()
	if err != nil {
		return nil, nil, err
	}
	var qs []Query
	var sels []Selector
	for n, d := range ds {
		for _, v := range d.Templating.List {
			if v.Type != "query" {
				continue
			}
			q, _ := v.Query.(map[string]any)
			s, _ := q["query"].(string)
			metric, label, ok := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(s, "label_values("), ")"), ",")
			if !ok || !strings.HasPrefix(s, "label_values(") {
				return nil, nil, fmt.Errorf("%s: variable %s: want label_values(metric, label), got %q", n, v.Name, s)
			}
			qs = append(qs, Query{Source: fmt.Sprintf("%s: variable %s", n, v.Name), Expr: s})
			sels = append(sels, Selector{Metric: strings.TrimSpace(metric), Labels: []string{strings.TrimSpace(label)}})
		}
	}
	return qs, sels, nil
}

// Expand gives Grafana's variables in expr values Prometheus takes.
func Expand(expr string) string {
	expr = strings.ReplaceAll(expr, "$__rate_interval", "1m")
	for _, v := range []string{"$workspace", "$type", "$cluster"} {
		expr = strings.ReplaceAll(expr, v, ".*")
	}
	return expr
}
