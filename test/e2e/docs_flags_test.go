package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cellfed/cellfed/test/framework"
)

// docsFlagsBinaries are the binaries under cmd/ whose --help (and whose
// subcommands' --help) TestDocsFlags reads.
var docsFlagsBinaries = []string{
	"cellfed-apiserver", "cellfed-controller", "cellfed-agent", "cellfed-webhook",
	"cellfed-proxy", "cellfed-kms", "cellfedctl",
}

// docsFlagsOtherTools are flags docs/*.md mention that belong to other
// tools, not to a cellfed binary. Each entry names the tool; a flag that
// is in no cellfed --help and not here fails TestDocsFlags, so a renamed
// cellfed flag cannot hide behind this list unless someone adds it here.
var docsFlagsOtherTools = map[string]string{
	// kubectl
	"all": "kubectl", "clusterrole": "kubectl", "dry-run": "kubectl", "duration": "kubectl",
	"embed-certs": "kubectl", "field-selector": "kubectl", "for": "kubectl", "from-file": "kubectl",
	"from-literal": "kubectl", "group": "kubectl", "list": "kubectl", "minify": "kubectl",
	"raw": "kubectl", "server-side": "kubectl", "serviceaccount": "kubectl", "subresource": "kubectl",
	"type": "kubectl", "validate": "kubectl", "warnings-as-errors": "kubectl",
	// kind get kubeconfig --name
	"name": "kind",
	// helm
	"atomic": "helm", "rollback-on-failure": "helm", "set": "helm",
	// docker build
	"build-arg": "docker",
	// upstream kubefedctl and KubeFed's controller-manager
	"cluster-context": "kubefedctl", "contents": "kubefedctl", "host-cluster-context": "kubefedctl",
	"kubefed-namespace": "kubefedctl", "healthz-addr": "kubefed controller-manager",
	"metrics-addr": "kubefed controller-manager",
}

// docsFlagsHiddenCommands are subcommands their parent's --help does not
// list under "Available Commands".
var docsFlagsHiddenCommands = [][]string{
	{"cellfed-apiserver", "init"},
	{"cellfed-apiserver", "migrate"},
	{"cellfed-apiserver", "backup"},
	{"cellfed-apiserver", "restore"},
	{"cellfed-apiserver", "split"},
}

// helpFlag is one flag as a --help page lists it.
type helpFlag struct {
	Name       string
	Default    string // as --help prints it after "(default "; "" when it prints none
	HasDefault bool
}

// helpCommand is the --help of one command: a binary or a subcommand.
type helpCommand struct {
	Path  string // "cellfedctl cell move"
	Flags map[string]helpFlag
	Subs  []string
}

var (
	helpFlagLine = regexp.MustCompile(`^\s{2,}(?:-[A-Za-z0-9], )?--([A-Za-z0-9][A-Za-z0-9._-]*)(.*)$`)
	helpDefault  = regexp.MustCompile(`\(default ([^:].*)\)\s*$`)
)

// parseHelp reads a cobra/pflag --help page: its flags, their printed
// defaults and the names of its subcommands.
func parseHelp(path, text string) helpCommand {
	cmd := helpCommand{Path: path, Flags: map[string]helpFlag{}}
	var cur *helpFlag
	var curText string
	flush := func() {
		if cur == nil {
			return
		}
		if m := helpDefault.FindStringSubmatch(curText); m != nil {
			cur.Default, cur.HasDefault = m[1], true
		}
		cmd.Flags[cur.Name] = *cur
		cur = nil
	}
	inCommands := false
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1024*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "Available Commands:" || strings.HasSuffix(trimmed, " Commands:"):
			flush()
			inCommands = true
		case inCommands && trimmed == "":
			inCommands = false
		case inCommands:
			if f := strings.Fields(trimmed); len(f) > 0 && f[0] != "help" && f[0] != "completion" {
				cmd.Subs = append(cmd.Subs, f[0])
			}
		case helpFlagLine.MatchString(line):
			flush()
			m := helpFlagLine.FindStringSubmatch(line)
			cur, curText = &helpFlag{Name: m[1]}, strings.TrimSpace(m[2])
		case cur != nil && trimmed != "" && strings.HasPrefix(line, "          "):
			curText += " " + trimmed // a continuation of the flag's usage
		default:
			flush()
		}
	}
	flush()
	return cmd
}

// readHelps runs --help on every binary and, recursively, every
// subcommand, a few at a time.
func readHelps(t *testing.T) map[string]helpCommand {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		errs  []string
		cmds  = map[string]helpCommand{}
		slots = make(chan struct{}, 4)
	)
	var visit func(bin string, args []string)
	visit = func(bin string, args []string) {
		defer wg.Done()
		slots <- struct{}{}
		path := strings.Join(append([]string{filepath.Base(bin)}, args...), " ")
		out, err := exec.CommandContext(ctx, bin, append(append([]string{}, args...), "--help")...).CombinedOutput()
		<-slots
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s --help: %v\n%s", path, err, out))
			return
		}
		c := parseHelp(path, string(out))
		if len(c.Flags) == 0 {
			errs = append(errs, fmt.Sprintf("%s --help: no flags parsed from:\n%s", path, out))
		}
		cmds[path] = c
		for _, s := range c.Subs {
			wg.Add(1)
			go visit(bin, append(append([]string{}, args...), s))
		}
	}
	for _, b := range docsFlagsBinaries {
		wg.Add(1)
		go visit(framework.Binary(t, b), nil)
	}
	for _, c := range docsFlagsHiddenCommands {
		wg.Add(1)
		go visit(framework.Binary(t, c[0]), c[1:])
	}
	wg.Wait()
	if len(errs) > 0 {
		sort.Strings(errs)
		t.Fatalf("reading --help:\n%s", strings.Join(errs, "\n"))
	}
	return cmds
}

// docFlagToken is a --flag in a page: --name, or --prefix-* (Wild).
var docFlagToken = regexp.MustCompile(`(?:^|[^A-Za-z0-9_/.-])--([a-z0-9][a-z0-9-]*[a-z0-9]|[a-z0-9])(-\*)?`)

// docsFlagContext finds, from a heading or a label line, the command a
// page's following flag table belongs to ("" when the line names none).
func docsFlagContext(page, line string, cmds map[string]helpCommand) string {
	trimmed := strings.TrimSpace(line)
	heading := strings.HasPrefix(trimmed, "#")
	label := strings.HasSuffix(trimmed, ":") || strings.HasPrefix(trimmed, "**")
	if !heading && !label {
		return ""
	}
	// "... the data dir. Plane flags:" before the plane's tunnel flags.
	if label && strings.HasSuffix(strings.ToLower(trimmed), "plane flags:") {
		return "cellfed-apiserver"
	}
	// "## Running cellfed-controller", "**cellfed-apiserver flags**"
	for _, b := range docsFlagsBinaries {
		if regexp.MustCompile(`(^|[^a-z-])`+regexp.QuoteMeta(b)+`([^a-z-]|$)`).MatchString(trimmed) && b != "cellfedctl" {
			return b
		}
	}
	if filepath.Base(page) != "cellfedctl.md" {
		if heading {
			return "-" // a heading naming no binary ends the previous one's section
		}
		return ""
	}
	// cellfedctl.md: "## cell", and "`cell move`:" before a subcommand's table.
	words := ""
	switch {
	case heading:
		words = strings.TrimSpace(strings.TrimLeft(trimmed, "#"))
	case strings.HasPrefix(trimmed, "`") && strings.HasSuffix(trimmed, "`:"):
		words = strings.Trim(trimmed, "`:")
	default:
		return ""
	}
	words = strings.TrimPrefix(words, "cellfedctl ")
	if _, ok := cmds["cellfedctl "+words]; ok {
		return "cellfedctl " + words
	}
	if heading {
		return "cellfedctl"
	}
	return ""
}

// commandsUnder returns the command and every subcommand below it.
func commandsUnder(cmds map[string]helpCommand, path string) []helpCommand {
	var out []helpCommand
	for p, c := range cmds {
		if p == path || strings.HasPrefix(p, path+" ") {
			out = append(out, c)
		}
	}
	return out
}

// flagsUnder returns flag f of the command at path and of its subcommands.
func flagsUnder(cmds map[string]helpCommand, path, f string) []helpFlag {
	var under []helpFlag
	for _, c := range commandsUnder(cmds, path) {
		if hf, ok := c.Flags[f]; ok {
			under = append(under, hf)
		}
	}
	return under
}

// docTableFlags reads the flag cell of a table row: `--a`, `-b`, `--c=<x>`.
// A token with one dash and more than one letter shortens the first flag:
// `--datastore-cafile`, `-certfile` means --datastore-certfile, and
// `--tunnel-keepalive-time` / `-timeout` means --tunnel-keepalive-timeout:
// the longest prefix of the first flag that makes a flag exists says.
// `--tunnel-*` (a family) is skipped.
func docTableFlags(cell string, exists func(string) bool) []string {
	var flags []string
	first := ""
	for _, tok := range regexp.MustCompile("`([^`]*)`").FindAllStringSubmatch(cell, -1) {
		f := tok[1]
		if i := strings.IndexByte(f, '='); i >= 0 {
			f = f[:i]
		}
		switch {
		case strings.HasSuffix(f, "*"):
		case strings.HasPrefix(f, "--"):
			name := strings.TrimPrefix(f, "--")
			if first == "" {
				first = name
			}
			flags = append(flags, name)
		case strings.HasPrefix(f, "-") && len(f) > 2 && first != "":
			name := "" // the shortest candidate, unless a longer one exists
			for i := len(first) - 1; i > 0; i-- {
				if first[i] != '-' {
					continue
				}
				if name = first[:i] + f; exists(name) {
					break
				}
			}
			if name != "" {
				flags = append(flags, name)
			}
		}
	}
	return flags
}

// normalizeDefault turns a default as a page or --help writes it into
// a comparable form: no quotes or backticks, no "(explanation)", lists
// without brackets, durations in Go's canonical form.
func normalizeDefault(s string) string {
	s = strings.TrimSpace(strings.ReplaceAll(s, "`", ""))
	if i := strings.Index(s, " ("); i > 0 && strings.HasSuffix(s, ")") {
		s = strings.TrimSpace(s[:i])
	}
	if u, err := strconv.Unquote(s); err == nil {
		s = u
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	if d, err := time.ParseDuration(s); err == nil && s != "0" {
		return d.String()
	}
	return s
}

// docDefaultIsLiteral says whether a page's default is a value to check
// rather than prose ("host name + random suffix", "<data-dir>/kms/keys",
// "in-process", "$KUBECONFIG, then in-cluster").
func docDefaultIsLiteral(s string) bool {
	s = strings.TrimSpace(strings.ReplaceAll(s, "`", ""))
	if i := strings.Index(s, " ("); i > 0 && strings.HasSuffix(s, ")") {
		s = strings.TrimSpace(s[:i])
	}
	if s == "" || strings.ContainsAny(s, " <$") {
		return false
	}
	if strings.HasPrefix(s, `"`) || s == "true" || s == "false" {
		return true
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return true
	}
	if _, err := time.ParseDuration(s); err == nil {
		return true
	}
	// A bare word is a value only when --help prints one to compare with
	// (checked by the caller); "in-process" is prose.
	return regexp.MustCompile(`^[A-Za-z0-9._:,/=-]+$`).MatchString(s)
}

// zeroDefault is what pflag prints no default for.
func zeroDefault(s string) bool {
	switch normalizeDefault(s) {
	case "", "0", "0s", "false":
		return true
	}
	return false
}

func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	cells := strings.Split(line, "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

// splitDefaults splits "2s / 1s / 3s" or "true, true, 5" into n parts,
// or returns nil when the cell does not hold n parts.
func splitDefaults(cell string, n int) []string {
	if n == 1 {
		return []string{cell}
	}
	for _, sep := range []string{" / ", ", "} {
		if parts := strings.Split(cell, sep); len(parts) == n {
			return parts
		}
	}
	return nil
}

// TestDocsFlags checks docs/*.md against the binaries' --help: every
// --flag a page names exists in some cellfed binary (or subcommand) or is
// another tool's flag listed in docsFlagsOtherTools, and every default a
// flag table states equals the default --help prints for that flag in the
// command the table documents.
func TestDocsFlags(t *testing.T) {
	cmds := readHelps(t)
	all := map[string]bool{}
	for _, c := range cmds {
		for n := range c.Flags {
			all[n] = true
		}
	}
	t.Logf("read --help of %d commands: %d distinct flags", len(cmds), len(all))

	pages, err := filepath.Glob(filepath.Join(framework.RepoRoot(t), "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no docs/*.md pages (%v)", err)
	}
	checkedDefaults := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel := "docs/" + filepath.Base(page)
		cmdCtx := ""
		defaultCol := -1
		for i, line := range strings.Split(string(data), "\n") {
			n := i + 1
			// 1. every --flag exists somewhere.
			for _, m := range docFlagToken.FindAllStringSubmatch(line, -1) {
				name, wild := m[1], m[2] != ""
				if wild {
					found := false
					for f := range all {
						found = found || strings.HasPrefix(f, name+"-")
					}
					if !found {
						t.Errorf("%s:%d: --%s-* matches no flag of any cellfed binary", rel, n, name)
					}
					continue
				}
				if !all[name] && docsFlagsOtherTools[name] == "" {
					t.Errorf("%s:%d: --%s is in no cellfed binary's --help (a stale name? another tool's flag goes in docsFlagsOtherTools)", rel, n, name)
				}
			}
			// 2. defaults stated in flag tables.
			if c := docsFlagContext(page, line, cmds); c == "-" {
				cmdCtx = ""
			} else if c != "" {
				cmdCtx = c
			}
			if !strings.HasPrefix(strings.TrimSpace(line), "|") {
				defaultCol = -1
				continue
			}
			cells := splitRow(line)
			if defaultCol < 0 {
				if len(cells) > 1 && cells[0] == "flag" {
					for j, c := range cells {
						if c == "default" {
							defaultCol = j
						}
					}
				}
				if defaultCol >= 0 && cmdCtx == "" {
					t.Errorf("%s:%d: a flag table with a default column, but no heading or label line before it names the command it documents", rel, n)
				}
				continue
			}
			if cmdCtx == "" || defaultCol >= len(cells) || strings.HasPrefix(cells[0], "---") {
				continue
			}
			flags := docTableFlags(cells[0], func(f string) bool { return len(flagsUnder(cmds, cmdCtx, f)) > 0 })
			defaults := splitDefaults(cells[defaultCol], len(flags))
			for j, f := range flags {
				under := flagsUnder(cmds, cmdCtx, f)
				if len(under) == 0 {
					t.Errorf("%s:%d: --%s is not a flag of %s (nor of its subcommands)", rel, n, f, cmdCtx)
					continue
				}
				if defaults == nil || !docDefaultIsLiteral(defaults[j]) {
					continue
				}
				want := normalizeDefault(defaults[j])
				ok, saw := false, []string{}
				for _, hf := range under {
					got := normalizeDefault(hf.Default)
					if !hf.HasDefault {
						// pflag prints no default for a zero value; a
						// bare word with nothing to compare is prose.
						ok = ok || zeroDefault(defaults[j]) || (!strings.HasPrefix(strings.TrimSpace(strings.Trim(defaults[j], "` ")), `"`) &&
							!regexp.MustCompile(`^[0-9.]+[a-z]*$|^true$`).MatchString(want))
						got = "(none)"
					}
					ok = ok || got == want
					saw = append(saw, got)
				}
				checkedDefaults++
				if !ok {
					t.Errorf("%s:%d: --%s of %s: the page says default %q, --help says %s", rel, n, f, cmdCtx, want, strings.Join(saw, " / "))
				}
			}
		}
	}
	t.Logf("checked %d stated defaults in %d pages", checkedDefaults, len(pages))
}

// TestDocsFlagsParse checks the pieces TestDocsFlags relies on, so that a
// parser that finds nothing cannot make it pass.
func TestDocsFlagsParse(t *testing.T) {
	help := "Flags:\n" +
		"      --cluster-timeout duration   time allowed (default 30s)\n" +
		"      --health-address string      host:port serving /healthz\n" +
		"                                   (empty: off) (default \"127.0.0.1:10358\")\n" +
		"  -l, --label stringArray          topology label\n" +
		"      --kubeconfig string          kubeconfig (default: $KUBECONFIG)\n"
	c := parseHelp("x", help)
	for _, tc := range []struct {
		flag, def string
		has       bool
	}{
		{"cluster-timeout", "30s", true},
		{"health-address", `"127.0.0.1:10358"`, true},
		{"label", "", false},
		{"kubeconfig", "", false},
	} {
		f, ok := c.Flags[tc.flag]
		if !ok || f.Default != tc.def || f.HasDefault != tc.has {
			t.Errorf("--%s: got %+v (found %v), want default %q (%v)", tc.flag, f, ok, tc.def, tc.has)
		}
	}
	for _, tc := range []struct{ doc, help string }{
		{"`30m`", "30m0s"}, {"720h", "720h0m0s"}, {"`\"kube-federation-system\"`", `"kube-federation-system"`},
		{"`system:masters`", "[system:masters]"}, {"0 (unlimited)", "0"},
	} {
		if normalizeDefault(tc.doc) != normalizeDefault(tc.help) {
			t.Errorf("normalizeDefault(%q) = %q, normalizeDefault(%q) = %q: want equal", tc.doc, normalizeDefault(tc.doc), tc.help, normalizeDefault(tc.help))
		}
	}
	if normalizeDefault("2s") == normalizeDefault("3s") {
		t.Error("2s and 3s normalize equal")
	}
	got := docTableFlags("`--datastore-connection-max-lifetime` / `-max-idle-time`", func(f string) bool { return f == "datastore-connection-max-idle-time" })
	if strings.Join(got, ",") != "datastore-connection-max-lifetime,datastore-connection-max-idle-time" {
		t.Errorf("docTableFlags: got %v", got)
	}
}
