// A real browser for the e2e tests: Debian's Chromium (hack/chromium.sh
// installs it) driven with chromedp.

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cellfed/cellfed/test/framework"
)

// chromiumPath finds Chromium: $CELLFED_CHROMIUM, else chromium on PATH.
// The test skips, saying why, only when there is none.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CELLFED_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium: install it with hack/chromium.sh (make test runs it; it needs root and apt-get) or point CELLFED_CHROMIUM at one")
	return ""
}

// newBrowser starts a headless Chromium with an empty profile and
// returns a tab's context; everything ends with the test.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true), // root in CI
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx
}

// browse runs chromedp actions with a deadline.
func browse(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, actions...); err != nil {
		t.Fatalf("browser: %s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression (awaiting a promise) in the page.
func eval[T any](t *testing.T, ctx context.Context, what, expr string) T {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(tctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("browser: %s: %v", what, err)
	}
	return v
}

// jsTrue polls a JavaScript expression in the page until it is true and
// returns how long that took.
func jsTrue(t *testing.T, ctx context.Context, what, expr string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	var last string
	for time.Since(start) < within {
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ok, err := chromedp.Run(tctx, chromedp.Evaluate[bool](expr))
		cancel()
		if err == nil && ok {
			return time.Since(start)
		}
		if err != nil {
			last = err.Error()
		}
		time.Sleep(25 * time.Millisecond) // polling the page, with a deadline
	}
	body, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + (document.body ? document.body.innerText.slice(0, 3000) : "")`))
	if err != nil {
		body = err.Error()
	}
	t.Fatalf("browser: %s: not true within %s (%s); page:\n%s", what, within, last, body)
	return 0
}

// board is a running `cellfedctl board` and the address it printed.
type boardProcess struct {
	url string
}

// startBoard runs bin/cellfedctl board with args on a free loopback port.
func startBoard(t *testing.T, kubeconfig string, args ...string) boardProcess {
	t.Helper()
	cmd := exec.Command(framework.Binary(t, "cellfedctl"), append([]string{"--kubeconfig=" + kubeconfig, "board", "--address=127.0.0.1:0"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting cellfedctl board: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("cellfedctl board %s said:\n%s", strings.Join(args, " "), stderr.String())
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if i := strings.Index(sc.Text(), "http://"); i >= 0 {
				lines <- sc.Text()[i:]
			}
		}
		close(lines)
	}()
	select {
	case u, ok := <-lines:
		if !ok {
			t.Fatalf("cellfedctl board %s exited without an address: %s", strings.Join(args, " "), stderr.String())
		}
		return boardProcess{url: u}
	case <-time.After(30 * time.Second):
		t.Fatalf("cellfedctl board printed no address within 30s: %s", stderr.String())
	}
	return boardProcess{}
}

// origin is the board's http://host:port.
func (b boardProcess) origin() string {
	u := strings.TrimPrefix(b.url, "http://")
	return "http://" + u[:strings.Index(u, "/")]
}

// squareIs is a JS expression: the square of row key in cell has state.
func squareIs(key, cell, state string) string {
	return fmt.Sprintf(`!!document.querySelector('tr[data-key=%q] td[data-cell=%q] .s-%s')`, key, cell, state)
}

// lockedBuffer is a strings.Builder safe for a process to write while a
// test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
