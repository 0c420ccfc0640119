package monitoring

import (
	"bufio"
	"fmt"
	"sort"
	"strings"
	"unicode"
)

// Selector is a series selector of an expression: the metric name and
// the names of the labels it matches on.
type Selector struct {
	Metric string
	Labels []string
}

// Use is what an expression reads: its selectors, and the label names
// it groups or matches by (by, without, on, ignoring, group_left,
// group_right).
type Use struct {
	Selectors []Selector
	Grouping  []string
}

// keywords are identifiers of PromQL that are not metric names when not
// followed by "(".
var keywords = map[string]bool{
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true, "atan2": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	// Aggregations may be followed by "by (...)" before their "(".
	"sum": true, "min": true, "max": true, "avg": true, "count": true, "stddev": true, "stdvar": true, "group": true,
	"topk": true, "bottomk": true, "quantile": true, "count_values": true, "limitk": true, "limit_ratio": true,
}

// groupingWords introduce a list of label names.
var groupingWords = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

type token struct {
	kind byte // 'i' identifier, 's' string, 'n' number or duration, else the punctuation itself
	text string
}

// lex splits a PromQL expression into tokens; operators other than the
// brackets and "," come out one character at a time, which is all Parse
// needs.
func lex(expr string) ([]token, error) {
	var out []token
	r := []rune(expr)
	for i := 0; i < len(r); {
		c := r[i]
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '#': // a comment runs to the end of the line
			for i < len(r) && r[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(r) && r[j] != c {
				if r[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			if j >= len(r) {
				return nil, fmt.Errorf("unterminated string at %d", i)
			}
			out = append(out, token{'s', string(r[i+1 : j])})
			i = j + 1
		case unicode.IsDigit(c) || (c == '.' && i+1 < len(r) && unicode.IsDigit(r[i+1])):
			j := i
			for j < len(r) && (unicode.IsLetter(r[j]) || unicode.IsDigit(r[j]) || r[j] == '.' ||
				((r[j] == '+' || r[j] == '-') && (r[j-1] == 'e' || r[j-1] == 'E') && !strings.ContainsAny(string(r[i:j]), "smhdwy"))) {
				j++
			}
			out = append(out, token{'n', string(r[i:j])})
			i = j
		case unicode.IsLetter(c) || c == '_' || c == ':':
			j := i
			for j < len(r) && (unicode.IsLetter(r[j]) || unicode.IsDigit(r[j]) || r[j] == '_' || r[j] == ':') {
				j++
			}
			out = append(out, token{'i', string(r[i:j])})
			i = j
		default:
			out = append(out, token{byte(c), string(c)})
			i++
		}
	}
	return out, nil
}

// Parse finds the selectors and grouping labels of a PromQL expression.
// It is no full parser (promtool checks that the expression parses); it
// finds what an expression reads so tests can hold it against /metrics.
func Parse(expr string) (Use, error) {
	toks, err := lex(expr)
	if err != nil {
		return Use{}, err
	}
	var u Use
	next := func(i int) token {
		if i+1 < len(toks) {
			return toks[i+1]
		}
		return token{}
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.kind == '[': // a range or subquery: durations only
			for i < len(toks) && toks[i].kind != ']' {
				i++
			}
		case t.kind == 'i' && groupingWords[t.text] && next(i).kind == '(':
			i += 2
			for ; i < len(toks) && toks[i].kind != ')'; i++ {
				if toks[i].kind == 'i' {
					u.Grouping = append(u.Grouping, toks[i].text)
				}
			}
		case t.kind == 'i' && next(i).kind == '(':
			// a function or an aggregation
		case t.kind == 'i' && keywords[t.text]:
		case t.kind == 'i' || t.kind == '{':
			s := Selector{}
			if t.kind == 'i' {
				s.Metric = t.text
				if next(i).kind != '{' {
					u.Selectors = append(u.Selectors, s)
					continue
				}
				i++
			}
			// matchers: name op "value" [, ...] }
			for i++; i < len(toks) && toks[i].kind != '}'; i++ {
				if toks[i].kind != 'i' {
					continue
				}
				name := toks[i].text
				for i++; i < len(toks) && toks[i].kind != 's'; i++ {
				}
				if name == "__name__" && i < len(toks) {
					s.Metric = toks[i].text
					continue
				}
				s.Labels = append(s.Labels, name)
			}
			if i >= len(toks) {
				return Use{}, fmt.Errorf("unterminated selector in %q", expr)
			}
			if s.Metric == "" {
				return Use{}, fmt.Errorf("a selector without a metric name in %q", expr)
			}
			u.Selectors = append(u.Selectors, s)
		}
	}
	if len(u.Selectors) == 0 {
		return Use{}, fmt.Errorf("no metric selected in %q", expr)
	}
	return u, nil
}

// Exposition is what a /metrics page exports: each metric name (a
// histogram's _bucket, _sum and _count apart) with its label names.
type Exposition map[string]map[string]bool

// ParseExposition reads a Prometheus text exposition.
func ParseExposition(text string) (Exposition, error) {
	out := Exposition{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		end := strings.IndexAny(line, "{ ")
		if end < 0 {
			return nil, fmt.Errorf("malformed sample %q", line)
		}
		name := line[:end]
		if out[name] == nil {
			out[name] = map[string]bool{}
		}
		if line[end] != '{' {
			continue
		}
		rest := line[end+1:]
		for {
			rest = strings.TrimLeft(rest, ", ")
			if strings.HasPrefix(rest, "}") {
				break
			}
			eq := strings.Index(rest, "=\"")
			if eq < 0 {
				return nil, fmt.Errorf("malformed labels in %q", line)
			}
			out[name][rest[:eq]] = true
			j := eq + 2
			for j < len(rest) && rest[j] != '"' {
				if rest[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(rest) {
				return nil, fmt.Errorf("unterminated label value in %q", line)
			}
			rest = rest[j+1:]
		}
	}
	return out, sc.Err()
}

// Merge adds other's metrics and labels to e.
func (e Exposition) Merge(other Exposition) {
	for name, labels := range other {
		if e[name] == nil {
			e[name] = map[string]bool{}
		}
		for l := range labels {
			e[name][l] = true
		}
	}
}

// Missing lists what u reads that e does not export: metrics, labels
// of a selector, and grouping labels none of u's metrics has. A metric
// recorded by a rule (records: its grouping labels) counts as exported
// with those labels.
func (e Exposition) Missing(u Use, records map[string][]string) []string {
	var missing []string
	labelsOf := func(metric string) (map[string]bool, bool) {
		if ls, ok := records[metric]; ok {
			m := map[string]bool{}
			for _, l := range ls {
				m[l] = true
			}
			return m, true
		}
		m, ok := e[metric]
		return m, ok
	}
	all := map[string]bool{}
	for _, s := range u.Selectors {
		labels, ok := labelsOf(s.Metric)
		if !ok {
			missing = append(missing, "metric "+s.Metric)
			continue
		}
		for l := range labels {
			all[l] = true
		}
		for _, l := range s.Labels {
			if !labels[l] {
				missing = append(missing, fmt.Sprintf("label %s of %s", l, s.Metric))
			}
		}
	}
	for _, g := range u.Grouping {
		if !all[g] {
			missing = append(missing, fmt.Sprintf("grouping label %s", g))
		}
	}
	sort.Strings(missing)
	return missing
}

// RecordedLabels maps each recording rule's metric to the labels its
// series carry: its expression's grouping labels, le aside.
func RecordedLabels(rf RulesFile) (map[string][]string, error) {
	out := map[string][]string{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Record == "" {
				continue
			}
			u, err := Parse(r.Expr)
			if err != nil {
				return nil, fmt.Errorf("record %s: %w", r.Record, err)
			}
			var ls []string
			for _, l := range u.Grouping {
				if l != "le" {
					ls = append(ls, l)
				}
			}
			out[r.Record] = ls
		}
	}
	return out, nil
}
