package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cellfed/cellfed/test/framework"
)

// docsRunFence opens a block TestDocs runs: ```sh run. Other fences
// (```sh, ```console, ```text) are shown, not run.
var docsRunFence = regexp.MustCompile("^```sh[ \t]+run[ \t]*$")

// docsNotRun is the visible line that marks the command block right below
// it (blank lines between are allowed) as not run by TestDocs, with the
// reason a reader sees rendered in italics:
//
//	*Not run here: needs a kubelet.*
var docsNotRun = regexp.MustCompile(`^\*Not run here: ([^*]*[^* .][^*]*)\*$`)

// docsCommandLangs are the fence languages of blocks a user types. A
// ```console block is one only when it has a "$ " prompt line; without one
// it shows output.
var docsCommandLangs = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}

// docsBlock is one fenced block of a page.
type docsBlock struct {
	Line   int    // the line of its opening fence, counted from 1
	Text   string // its content, without the fences
	Info   string // the fence's info string: "sh run", "console", "text"
	NotRun string // the reason on the *Not run here: …* line above it, if any
	// Follows: only blank lines separate it from the block before.
	Follows bool
	// Expect: for a run block, the lines of the ```text expect block right
	// below it, which its output must show (see docsCheckOutput).
	Expect string
}

// Run reports whether TestDocs runs the block.
func (b docsBlock) Run() bool { return docsRunFence.MatchString("```" + b.Info) }

// Command reports whether the block holds commands a user would type.
func (b docsBlock) Command() bool {
	lang, _, _ := strings.Cut(b.Info, " ")
	if !docsCommandLangs[lang] {
		return false
	}
	if lang != "console" {
		return true
	}
	for _, l := range strings.Split(b.Text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "$ ") {
			return true
		}
	}
	return false
}

// docsBlocks returns the page's fenced blocks in order. A fence left open
// is an error: a block that swallowed the rest of the page would run prose.
func docsBlocks(page []byte) ([]docsBlock, error) {
	var blocks []docsBlock
	var cur *docsBlock
	var body []string
	open := ""     // the fence of the block we are in ("" outside blocks)
	lastText := "" // the last non-blank line outside blocks since the last block
	sc := bufio.NewScanner(bytes.NewReader(page))
	sc.Buffer(make([]byte, 1024*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case open != "" && strings.HasPrefix(trimmed, open) && strings.Trim(trimmed, "`") == "":
			// A closing fence: at least as many backticks, nothing else.
			cur.Text = strings.Join(body, "\n") + "\n"
			blocks = append(blocks, *cur)
			open, cur, body, lastText = "", nil, nil, ""
		case open != "":
			body = append(body, line)
		case strings.HasPrefix(trimmed, "```") && !strings.Contains(strings.TrimLeft(trimmed, "`"), "`"):
			// An opening fence; a line like "```` ```sh ```` is a code
			// span" is prose (CommonMark: no backtick in the info string).
			open = trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, "`"))]
			cur = &docsBlock{Line: n, Info: strings.TrimSpace(strings.TrimPrefix(trimmed, open))}
			cur.Follows = lastText == "" && len(blocks) > 0
			if m := docsNotRun.FindStringSubmatch(lastText); m != nil {
				cur.NotRun = strings.TrimSpace(m[1])
			}
		case trimmed != "":
			lastText = trimmed
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("the block opened on line %d is never closed", cur.Line)
	}
	return blocks, nil
}

// docsRunBlocks returns the page's ```sh run blocks in order.
func docsRunBlocks(page []byte) ([]docsBlock, error) {
	all, err := docsBlocks(page)
	if err != nil {
		return nil, err
	}
	var run []docsBlock
	for i, b := range all {
		if b.Run() {
			r := docsBlock{Line: b.Line, Text: b.Text}
			if i+1 < len(all) && all[i+1].Follows && all[i+1].Info == docsExpectInfo {
				r.Expect = all[i+1].Text
			}
			run = append(run, r)
		}
	}
	return run, nil
}

// docsExpectInfo is the fence info of the output a run block must show:
// a ```text expect block right below it (blank lines only between).
// Renderers show it as text (they read the first word only).
const docsExpectInfo = "text expect"

// docsCheckOutput checks a block's output against its ```text expect
// block: each non-blank line of the expectation, with runs of spaces
// collapsed, must be part of an output line, in order. A stable prefix of
// a table row ("web cell 1/3") thus matches a row that goes on with an AGE.
func docsCheckOutput(out, expect string) error {
	collapse := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	lines := strings.Split(out, "\n")
	next := 0
	for _, want := range strings.Split(expect, "\n") {
		want = collapse(want)
		if want == "" {
			continue
		}
		found := false
		for next < len(lines) {
			got := collapse(lines[next])
			next++
			if strings.Contains(got, want) {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("the output does not show %q (after the lines matched before it)", want)
		}
	}
	return nil
}

func TestDocsRunBlocks(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, page string
		want       []docsBlock
		err        string
	}{
		{
			name: "only sh run blocks",
			page: "# T\n```sh\nmake run\n```\ntext\n```sh run\necho a\necho b\n```\n```console\n$ x\n```\n```sh run\necho c\n```\n",
			want: []docsBlock{{Line: 6, Text: "echo a\necho b\n"}, {Line: 13, Text: "echo c\n"}},
		},
		{
			name: "a text expect block right below a run block is its expectation",
			page: "```sh run\necho a\n```\n\n```text expect\na\n```\n```sh run\necho b\n```\nprose\n```text expect\nb\n```\n",
			want: []docsBlock{{Line: 1, Text: "echo a\n", Expect: "a\n"}, {Line: 8, Text: "echo b\n"}},
		},
		{
			name: "a run fence inside another block is text",
			page: "````markdown\n```sh run\necho no\n```\n````\n",
		},
		{
			name: "an unclosed run block",
			page: "```sh run\necho a\n",
			err:  "opened on line 1 is never closed",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := docsRunBlocks([]byte(c.page))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("blocks = %+v, want %+v", got, c.want)
			}
		})
	}
}

// docsMarker starts each block's output in the script's output.
const docsMarker = "@@docs-block "

// docsScript is one bash script running the prelude and then the blocks
// in order, as a reader pastes them into one shell: each block starts with
// a marker line, and the
// first failing command stops the script (set -e) after an ERR trap has
// named it.
func docsScript(prelude string, blocks []docsBlock) string {
	var b strings.Builder
	b.WriteString("set -Eeuo pipefail\n")
	b.WriteString(`trap 'echo "@@docs-failed: $BASH_COMMAND (exit $?)"' ERR` + "\n")
	b.WriteString(prelude)
	for i, bl := range blocks {
		fmt.Fprintf(&b, "echo '%s%d'\n", docsMarker, i)
		b.WriteString(bl.Text)
	}
	b.WriteString("echo '@@docs-done'\n")
	return b.String()
}

// docsBlockOutputs splits the script's output by block index.
func docsBlockOutputs(out string) map[int]string {
	outputs := map[int]string{}
	cur := -1
	for _, line := range strings.SplitAfter(out, "\n") {
		if rest, ok := strings.CutPrefix(line, docsMarker); ok {
			if i, err := strconv.Atoi(strings.TrimSpace(rest)); err == nil {
				cur, outputs[i] = i, ""
				continue
			}
		}
		outputs[cur] += line
	}
	return outputs
}

// docsFederation is one scratch federation of TestDocs and the pages run
// on it, in order: pages that describe the same setup share one, each
// starting from what the pages before it left (starting a federation
// takes 20-40 s on 2 busy cores, a page's blocks 5-10 s).
type docsFederation struct {
	Name    string
	Members int // member kube-apiservers, MEMBER1_KUBECONFIG … MEMBERn_KUBECONFIG
	// Join joins the members as member-1 … member-n before the first
	// page, for pages that start from a federation with members.
	Join bool
	// Spare members, the last ones, are started but not joined: a page
	// joins them itself.
	Spare int
	Pages []docsPageCase
}

// docsPageCase is one page TestDocs runs.
type docsPageCase struct {
	Page string // relative to the repository root
	// Prelude is bash run before the page's blocks: what the page's prose
	// says a reader has done already.
	Prelude string
	// MinBlocks guards against a page losing its run fences by mistake.
	MinBlocks int
	// Timeout bounds the page's script.
	Timeout time.Duration
}

// docsFederations are the pages TestDocs runs; every other page's command
// blocks carry a visible *Not run here: …* line (TestDocsBlocksMarked).
var docsFederations = []docsFederation{
	{Name: "getting-started", Members: 2, Pages: []docsPageCase{
		{Page: "docs/getting-started.md", MinBlocks: 5, Timeout: 3 * time.Minute},
	}},
	// shop with cells rz00a (member-1) and rz10a (member-2) and web on both.
	{Name: "two-cells", Members: 2, Join: true, Pages: []docsPageCase{
		{Page: "docs/federation-api.md", Prelude: docsWidgets, MinBlocks: 7, Timeout: time.Minute}, // creates them
		{Page: "docs/working-with-a-cell.md", Prelude: docsWorkspace, MinBlocks: 3, Timeout: time.Minute},
		{Page: "docs/cellfedctl.md", MinBlocks: 3, Timeout: time.Minute},
		{Page: "docs/cell-lifecycle.md", MinBlocks: 1, Timeout: time.Minute}, // drains and deletes rz00a
	}},
	// shop with cells rz00a, rz10a and rz20a on three members, web on all.
	{Name: "three-cells", Members: 3, Join: true, Pages: []docsPageCase{
		{Page: "docs/dividing-replicas.md", Prelude: docsWorkspace + docsCell("rz00a", "member-1") +
			docsCell("rz10a", "member-2") + docsCell("rz20a", "member-3") + docsWorkers, MinBlocks: 4, Timeout: time.Minute}, // creates web
		{Page: "docs/release-control.md", MinBlocks: 4, Timeout: time.Minute},
		{Page: "docs/kubefed.md", Prelude: docsConfigMapWeb, MinBlocks: 1, Timeout: time.Minute},
	}},
	// the workspace shop of tenant acme, alice in its app team.
	// member-3's kubeconfig is edge-1.kubeconfig, for tenancy.md to join.
	{Name: "workspace", Members: 3, Join: true, Spare: 1, Pages: []docsPageCase{
		{Page: "docs/tenancy.md", Prelude: `cp "$MEMBER3_KUBECONFIG" edge-1.kubeconfig
`, MinBlocks: 5, Timeout: time.Minute}, // creates shop, rz00a on member-1; joins edge-1
		{Page: "docs/native-objects.md", Prelude: docsCell("rz10a", "member-2") + docsNativeApp, MinBlocks: 4, Timeout: time.Minute},
	}},
	// Two members not joined yet, their kubeconfigs as member-1.kubeconfig
	// and edge-1.kubeconfig, and tenant acme's workspace shop.
	{Name: "registration", Members: 2, Pages: []docsPageCase{
		{Page: "docs/registration.md", Prelude: docsWorkspace + `cp "$MEMBER1_KUBECONFIG" member-1.kubeconfig
cp "$MEMBER2_KUBECONFIG" edge-1.kubeconfig
`, MinBlocks: 4, Timeout: 2 * time.Minute}, // joins, unjoins, tokens and policies of tenant acme
	}},
}

// docsEnvPrelude runs before every page: the plane's URL and CA as a
// reader of the page has them ($PLANE, ca.crt), as in <data-dir>/pki.
const docsEnvPrelude = `PLANE=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
cp "$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.certificate-authority}')" ca.crt
`

// docsWorkspace is the workspace most pages use: shop of tenant acme,
// with alice in its app team.
const docsWorkspace = `cellfedctl tenant create shop --tenant=acme --workspace=prod >/dev/null
cellfedctl tenant grant alice -n shop --role=app-team >/dev/null
`

// docsCell creates a cell in shop on a joined member and waits until it
// is Ready.
func docsCell(name, cluster string) string {
	return fmt.Sprintf("cellfedctl cell create %s --cluster=%s -n shop >/dev/null\n"+
		"kubectl wait cells.core.cellfed.io/%s -n shop --for=condition=Ready --timeout=60s >/dev/null\n", name, cluster, name)
}

// docsWidgets is what federation-api.md's "Enabling and disabling types"
// assumes: member-1's kubeconfig as member1.kubeconfig, and a CRD
// widgets.example.com on it.
var docsWidgets = `cp "$MEMBER1_KUBECONFIG" member1.kubeconfig
` + docsMemberCRD("Widget", "widgets", "{size: {type: integer}}")

// docsConfigMapWeb is the FederatedConfigMap web in shop on rz00a and
// rz10a that kubefed.md reads the PropagatedVersion view of, once
// cellfed-controller has written its record.
const docsConfigMapWeb = `kubectl apply -f - >/dev/null <<'EOF'
apiVersion: types.kubefed.io/v1beta2
kind: FederatedConfigMap
metadata: {name: web, namespace: shop}
spec:
  placement: {topologies: [{name: rz00a}, {name: rz10a}]}
  template: {data: {greeting: hello}}
EOF
for i in $(seq 60); do
  [ -n "$(kubectl get federatedconfigmaps.v1beta2.types.kubefed.io -n shop web -o jsonpath='{.status.record}')" ] && break
  sleep 1
done
`

// docsWorkers is the custom workload dividing-replicas.md sets a
// replicasPath on: a CRD workers.example.com (its count at
// spec.workers.count) on member-1, enabled as a federated type.
var docsWorkers = docsMemberCRD("Worker", "workers", "{workers: {type: object, properties: {count: {type: integer}}}}") +
	`cellfedctl enable workers.example.com --from-cluster="$MEMBER1_KUBECONFIG" >/dev/null
`

// docsMemberCRD creates the namespaced CRD <plural>.example.com (version
// v1, its spec's properties as a YAML flow mapping) on member-1 and
// waits until it is established.
func docsMemberCRD(kind, plural, specProperties string) string {
	return fmt.Sprintf(`kubectl --kubeconfig="$MEMBER1_KUBECONFIG" apply -f - >/dev/null <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %[2]s.example.com}
spec:
  group: example.com
  names: {kind: %[1]s, plural: %[2]s, singular: %[3]s}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: %[4]s}
YAML
kubectl --kubeconfig="$MEMBER1_KUBECONFIG" wait crd/%[2]s.example.com --for=condition=Established --timeout=60s >/dev/null
`, kind, plural, strings.ToLower(kind), specProperties)
}

// docsNativeApp is native-objects.md's app.yaml, an app team's Deployment
// web, and the ConfigMap settings no policy places.
const docsNativeApp = `cat > app.yaml <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx:1.27}]}
YAML
kubectl -n shop create configmap settings --from-literal=mode=a >/dev/null
`

// docsJoin joins n members as member-1 … member-n and waits until the
// plane sees them Ready.
func docsJoin(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "cellfedctl join member-%d --kubeconfig-member=\"$MEMBER%d_KUBECONFIG\" >/dev/null\n", i, i)
	}
	b.WriteString("kubectl wait kubefedclusters --all -n kube-federation-system --for=condition=Ready --timeout=60s >/dev/null\n")
	return b.String()
}

// TestDocs runs the ```sh run blocks of each page of docsFederations
// with bash against scratch federations — a plane, cellfed-controller and
// member kube-apiservers — so the pages' commands stay correct.
// Federations run in parallel; the pages of one run in order, each bounded
// by its Timeout. It provides what a page's skipped steps would:
// KUBECONFIG (the plane), PATH with the binaries first,
// MEMBERn_KUBECONFIG, and $PLANE with ca.crt in the working directory.
func TestDocs(t *testing.T) {
	t.Parallel()
	root := framework.RepoRoot(t)
	bin := filepath.Dir(framework.Binary(t, "cellfedctl"))
	framework.Binary(t, "kubectl-cellfed")
	path := bin + string(os.PathListSeparator) + os.Getenv("PATH")
	if k := os.Getenv("CELLFED_KUBECTL"); k != "" {
		path = filepath.Dir(k) + string(os.PathListSeparator) + path
	}
	for _, fed := range docsFederations {
		t.Run(fed.Name, func(t *testing.T) {
			t.Parallel()
			began := time.Now()
			plane, members := framework.StartPlaneWithMembers(t, framework.PlaneOptions{}, fed.Members)
			framework.StartController(t, plane) // its log's tail is printed when the test fails
			env := append(os.Environ(), "KUBECONFIG="+plane.Kubeconfig, "PATH="+path)
			for i, m := range members {
				env = append(env, fmt.Sprintf("MEMBER%d_KUBECONFIG=%s", i+1, m.Kubeconfig))
			}
			dir := t.TempDir() // shared by the pages, like a reader's shell
			prelude := docsEnvPrelude
			if fed.Join {
				prelude += docsJoin(fed.Members - fed.Spare)
			}
			t.Logf("federation %s started in %s", fed.Name, time.Since(began).Round(100*time.Millisecond))
			for _, pc := range fed.Pages {
				ok := t.Run(strings.TrimSuffix(filepath.Base(pc.Page), ".md"), func(t *testing.T) {
					testDocsPage(t, root, dir, env, prelude+pc.Prelude, pc)
				})
				if !ok {
					t.Fatalf("%s failed; the pages after it start from what it should have left", pc.Page)
				}
				prelude = docsEnvPrelude
			}
		})
	}
}

func testDocsPage(t *testing.T, root, dir string, env []string, prelude string, pc docsPageCase) {
	page, err := os.ReadFile(filepath.Join(root, pc.Page))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := docsRunBlocks(page)
	if err != nil {
		t.Fatalf("%s: %v", pc.Page, err)
	}
	if len(blocks) < pc.MinBlocks {
		t.Fatalf("%s has %d ```sh run blocks, want at least %d (is the fence spelt ```sh run?)", pc.Page, len(blocks), pc.MinBlocks)
	}

	ctx, cancel := context.WithTimeout(context.Background(), pc.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-c", docsScript(prelude, blocks))
	cmd.Dir, cmd.Env = dir, env
	// Background jobs a block may start die with the shell's group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	ran := time.Now()
	runErr := cmd.Run()
	took := time.Since(ran).Round(100 * time.Millisecond)

	outputs := docsBlockOutputs(out.String())
	if runErr == nil && strings.Contains(out.String(), "@@docs-done") {
		for i, bl := range blocks {
			if bl.Expect == "" {
				continue
			}
			if err := docsCheckOutput(outputs[i], bl.Expect); err != nil {
				t.Errorf("%s: the ```sh run block on line %d: %v\n%s--- its output ---\n%s--- the ```%s block below it ---\n%s",
					pc.Page, bl.Line, err, bl.Text, outputs[i], docsExpectInfo, bl.Expect)
			}
		}
		t.Logf("%d blocks of %s ran in %s", len(blocks), pc.Page, took)
		return
	}
	// The failing block is the last one that started.
	failed := -1
	for i := range blocks {
		if _, ok := outputs[i]; ok {
			failed = i
		}
	}
	if failed < 0 {
		t.Fatalf("%s: the prelude or bash failed before the first block: %v\n%s", pc.Page, runErr, out.String())
	}
	bl := blocks[failed]
	t.Fatalf("%s: the ```sh run block on line %d failed (%v after %s):\n%s--- its output ---\n%s",
		pc.Page, bl.Line, runErr, took, bl.Text, outputs[failed])
}

func TestDocsCheckOutput(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, out, expect, err string
	}{
		{name: "lines in order, spaces collapsed", out: "x\nNAME   AGE\nweb    cell   1/3   17s\n", expect: "NAME AGE\n\nweb cell 1/3\n"},
		{name: "a missing line", out: "yes\nyes\n", expect: "yes\nno\n", err: `does not show "no"`},
		{name: "out of order", out: "no\nyes\n", expect: "yes\nno\n", err: `does not show "no"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := docsCheckOutput(c.out, c.expect)
			if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
				t.Fatalf("err = %v, want %q", err, c.err)
			}
		})
	}
}

func TestDocsBlocksMarked(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, page string
		command    []bool   // per block: Command()
		run        []bool   // per block: Run()
		notRun     []string // per block: NotRun
	}{
		{
			name:    "run, marked and unmarked commands",
			page:    "```sh run\na\n```\n*Not run here: needs a kubelet.*\n\n```sh\nb\n```\n```bash\nc\n```\n",
			command: []bool{true, true, true},
			run:     []bool{true, false, false},
			notRun:  []string{"", "needs a kubelet.", ""},
		},
		{
			name:    "a console block is a command only with a prompt",
			page:    "```console\nout\n```\n```console\n$ cmd\nout\n```\n```text\n$ x\n```\n",
			command: []bool{false, true, false},
			run:     []bool{false, false, false},
			notRun:  []string{"", "", ""},
		},
		{
			name:    "the marker must be the last text above the block",
			page:    "*Not run here: reason.*\nmore prose\n```sh\nb\n```\n  *Not run here: in a list.*\n\n  ```sh\n  c\n  ```\n",
			command: []bool{true, true},
			run:     []bool{false, false},
			notRun:  []string{"", "in a list."},
		},
		{
			name:    "a code span of backticks starting a line is prose",
			page:    "```` ```text ```` shows output\n```sh\nb\n```\n",
			command: []bool{true},
			run:     []bool{false},
			notRun:  []string{""},
		},
		{
			name:    "a marker without a reason marks nothing",
			page:    "*Not run here: .*\n```sh\nb\n```\n",
			command: []bool{true},
			run:     []bool{false},
			notRun:  []string{""},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			blocks, err := docsBlocks([]byte(c.page))
			if err != nil {
				t.Fatal(err)
			}
			var command, run []bool
			var notRun []string
			for _, b := range blocks {
				command, run, notRun = append(command, b.Command()), append(run, b.Run()), append(notRun, b.NotRun)
			}
			if fmt.Sprint(command, run, notRun) != fmt.Sprint(c.command, c.run, c.notRun) {
				t.Fatalf("command, run, not run = %v %v %q; want %v %v %q", command, run, notRun, c.command, c.run, c.notRun)
			}
		})
	}

	// Every page: each block of commands is run or visibly marked.
	root := framework.RepoRoot(t)
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var unmarked []string
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		blocks, err := docsBlocks(b)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		for _, bl := range blocks {
			if bl.Command() && !bl.Run() && bl.NotRun == "" {
				unmarked = append(unmarked, fmt.Sprintf("%s:%d: ```%s", rel, bl.Line, bl.Info))
			}
		}
	}
	if len(unmarked) > 0 {
		t.Errorf("%d blocks of commands are neither run by TestDocs (fence them ```sh run and add the page to TestDocs) "+
			"nor marked as not run here (the last line of text above the block: *Not run here: <why>.*):\n%s",
			len(unmarked), strings.Join(unmarked, "\n"))
	}
}
