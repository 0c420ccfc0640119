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

// docsPage is the page whose runnable blocks TestDocs runs.
const docsPage = "docs/getting-started.md"

// docsRunFence opens a block TestDocs runs: ```sh run. Other fences
// (```sh, ```console, ```text) are shown, not run.
var docsRunFence = regexp.MustCompile("^```sh[ \t]+run[ \t]*$")

// docsBlock is one runnable block of a page.
type docsBlock struct {
	Line int    // the line of its opening fence, counted from 1
	Text string // its content, without the fences
}

// docsRunBlocks returns the page's ```sh run blocks in order. A fence
// left open is an error: a block that swallowed the rest of the page
// would run prose.
func docsRunBlocks(page []byte) ([]docsBlock, error) {
	var blocks []docsBlock
	var cur *docsBlock
	var body []string
	open := "" // the fence of the block we are in ("" outside blocks)
	sc := bufio.NewScanner(bytes.NewReader(page))
	sc.Buffer(make([]byte, 1024*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case open != "" && strings.HasPrefix(trimmed, open) && strings.Trim(trimmed, "`") == "":
			// A closing fence: at least as many backticks, nothing else.
			if cur != nil {
				cur.Text = strings.Join(body, "\n") + "\n"
				blocks = append(blocks, *cur)
			}
			open, cur, body = "", nil, nil
		case open != "":
			if cur != nil {
				body = append(body, line)
			}
		case strings.HasPrefix(trimmed, "```"):
			open = trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, "`"))]
			if docsRunFence.MatchString(line) {
				cur = &docsBlock{Line: n}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("the block opened on line %d is never closed", cur.Line)
	}
	if open != "" {
		return nil, fmt.Errorf("a fenced block is never closed")
	}
	return blocks, nil
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

// docsScript is one bash script running the blocks in order, as a reader
// pastes them into one shell: each starts with a marker line, and the
// first failing command stops the script (set -e) after an ERR trap has
// named it.
func docsScript(blocks []docsBlock) string {
	var b strings.Builder
	b.WriteString("set -Eeuo pipefail\n")
	b.WriteString(`trap 'echo "@@docs-failed: $BASH_COMMAND (exit $?)"' ERR` + "\n")
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

// TestDocs runs the ```sh run blocks of docs/getting-started.md with bash
// against a scratch federation — a plane, cellfed-controller and two
// member kube-apiservers — so the page's commands stay correct. It
// provides what the page's skipped steps would: KUBECONFIG (the plane),
// PATH with the binaries first, MEMBER1_KUBECONFIG and MEMBER2_KUBECONFIG.
func TestDocs(t *testing.T) {
	t.Parallel()
	root := framework.RepoRoot(t)
	page, err := os.ReadFile(filepath.Join(root, docsPage))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := docsRunBlocks(page)
	if err != nil {
		t.Fatalf("%s: %v", docsPage, err)
	}
	if len(blocks) < 5 {
		t.Fatalf("%s has %d ```sh run blocks; the page's story needs more (is the fence spelt ```sh run?)", docsPage, len(blocks))
	}

	bin := filepath.Dir(framework.Binary(t, "cellfedctl"))
	framework.Binary(t, "kubectl-cellfed")
	plane, members := framework.StartPlaneWithMembers(t, framework.PlaneOptions{}, 2)
	framework.StartController(t, plane) // its log's tail is printed when the test fails

	path := bin + string(os.PathListSeparator) + os.Getenv("PATH")
	if k := os.Getenv("CELLFED_KUBECTL"); k != "" {
		path = filepath.Dir(k) + string(os.PathListSeparator) + path
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-c", docsScript(blocks))
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(),
		"KUBECONFIG="+plane.Kubeconfig,
		"PATH="+path,
		"MEMBER1_KUBECONFIG="+members[0].Kubeconfig,
		"MEMBER2_KUBECONFIG="+members[1].Kubeconfig,
	)
	// Background jobs a block may start die with the shell's group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	began := time.Now()
	runErr := cmd.Run()
	took := time.Since(began).Round(100 * time.Millisecond)

	outputs := docsBlockOutputs(out.String())
	if runErr == nil && strings.Contains(out.String(), "@@docs-done") {
		t.Logf("%d blocks of %s ran in %s", len(blocks), docsPage, took)
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
		t.Fatalf("bash did not start the blocks of %s: %v\n%s", docsPage, runErr, out.String())
	}
	bl := blocks[failed]
	t.Fatalf("%s: the ```sh run block on line %d failed (%v after %s):\n%s--- its output ---\n%s",
		docsPage, bl.Line, runErr, took, bl.Text, outputs[failed])
}
