// Package framework starts the real processes tests run against:
// cellfed-apiserver, member kube-apiservers and private MariaDB servers.
// Every process is killed when its test ends, and also when the test
// binary itself dies (Pdeathsig), so no process outlives a test run.
package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// RepoRoot is the directory holding go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	root, err := findRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func findRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("getwd: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the test's directory")
		}
		dir = parent
	}
}

// Binary returns the path of a binary built by `make build`
// (bin/<name>, or $CELLFED_BIN_DIR/<name>), failing the test with the
// command to run when it is missing.
func Binary(t testing.TB, name string) string {
	t.Helper()
	dir := os.Getenv("CELLFED_BIN_DIR")
	if dir == "" {
		dir = filepath.Join(RepoRoot(t), "bin")
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is missing: run `make build` first (the tests use the binaries it builds): %v", p, err)
	}
	return p
}

// Process is a child process whose output goes to a log file.
type Process struct {
	Name    string
	LogPath string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// StartProcess starts bin with args; the process is killed at test end.
func StartProcess(t testing.TB, name, logPath, bin string, args ...string) *Process {
	t.Helper()
	p, err := startProcess(t, name, logPath, bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// startProcess is StartProcess for use off the test goroutine: it returns
// errors instead of failing the test.
func startProcess(t testing.TB, name, logPath, bin string, args ...string) (*Process, error) {
	p := &Process{Name: name, LogPath: logPath}
	if err := p.start(bin, args...); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	t.Cleanup(func() {
		p.Stop(10 * time.Second)
		dir := os.Getenv("CELLFED_TEST_LOG_DIR")
		if dir == "" && !t.Failed() {
			return
		}
		if dir == "" {
			// A failed test's logs outlive its temporary directory, in
			// a place its message names.
			dir = failedLogDir()
		}
		kept, err := keepLog(dir, t.Name(), name, logPath)
		if err != nil {
			t.Logf("keeping the %s log: %v", name, err)
			kept = logPath
		}
		if t.Failed() {
			t.Logf("%s log kept in %s; its last lines:\n%s", name, kept, p.Tail(15))
		}
	})
	return p, nil
}

// failedLogDir is where the logs of a failed test's processes are kept
// when CELLFED_TEST_LOG_DIR is not set: _output/test-logs in the
// repository, or the system's temporary directory.
func failedLogDir() string {
	wd, err := os.Getwd()
	for err == nil {
		if _, serr := os.Stat(filepath.Join(wd, "go.mod")); serr == nil {
			return filepath.Join(wd, "_output", "test-logs")
		}
		parent := filepath.Dir(wd)
		if parent == wd {
			break
		}
		wd = parent
	}
	return filepath.Join(os.TempDir(), "cellfed-test-logs")
}

// keepLog copies a process log into dir (CELLFED_TEST_LOG_DIR), which
// outlives the test's temporary directories, as
// <test>/<process>-<n>.log.
func keepLog(dir, test, name, logPath string) (string, error) {
	b, err := os.ReadFile(logPath)
	if err != nil {
		return "", err
	}
	sub := filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(test))
	if err := os.MkdirAll(sub, 0o755); err != nil {
		return "", err
	}
	for i := 0; ; i++ {
		p := filepath.Join(sub, fmt.Sprintf("%s-%d.log", name, i))
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		_, err = f.Write(b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return p, err
	}
}

func (p *Process) start(bin string, args ...string) error {
	logFile, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Die with the test binary, and get our own process group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return err
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.done, p.err = cmd, done, nil
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		logFile.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// Restart starts the same command again after the process has stopped.
func (p *Process) Restart() error { return p.RestartWith() }

// RestartWith starts the same command with extra arguments added after
// the process has stopped; later restarts keep them.
func (p *Process) RestartWith(extra ...string) error {
	p.mu.Lock()
	cmd := p.cmd
	done := p.done
	p.mu.Unlock()
	select {
	case <-done:
	default:
		return fmt.Errorf("%s is still running", p.Name)
	}
	return p.start(cmd.Path, append(slices.Clone(cmd.Args[1:]), extra...)...)
}

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.doneCh():
		p.mu.Lock()
		defer p.mu.Unlock()
		return true, p.err
	default:
		return false, nil
	}
}

// Wait waits for the process to end.
func (p *Process) Wait(ctx context.Context) error {
	select {
	case <-p.doneCh():
		_, err := p.Exited()
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Signal sends sig to the process group.
func (p *Process) Signal(sig syscall.Signal) {
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, sig)
	}
}

// Stop asks the process to stop (SIGTERM) and kills it after grace.
func (p *Process) Stop(grace time.Duration) {
	if done, _ := p.Exited(); done {
		return
	}
	p.Signal(syscall.SIGTERM)
	select {
	case <-p.doneCh():
	case <-time.After(grace):
		p.Kill()
	}
}

// Kill kills the process group at once and waits for it.
func (p *Process) Kill() {
	p.Signal(syscall.SIGKILL)
	<-p.doneCh()
}

// doneCh is closed when the current run of the process ends (a restart
// makes a new one).
func (p *Process) doneCh() chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// Pid is the process id.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

// Log returns the whole log.
func (p *Process) Log() string {
	b, _ := os.ReadFile(p.LogPath)
	return string(b)
}

// Tail returns the last n lines of the log.
func (p *Process) Tail(n int) string {
	lines := bytes.Split(bytes.TrimRight([]byte(p.Log()), "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// FreePort returns a loopback port that was free a moment ago, for a
// process the test starts to listen on. It is taken below the kernel's
// ephemeral range (net.ipv4.ip_local_port_range), which outgoing
// connections and ":0" listeners draw from: a port of that range can be
// handed to another connection between this probe and the process's
// bind (TestTunnelAcrossReplicas failed so: "bind: address already in
// use"). Calls move on from a random start, so parallel tests, and the
// test binaries of other packages, rarely probe the same port.
func FreePort(t testing.TB) int {
	t.Helper()
	lo, hi := portRange()
	if hi-lo < 1000 {
		// No room below the ephemeral range: the kernel's choice.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("finding a free port: %v", err)
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}
	for range hi - lo {
		p := lo + int(nextPort.Add(1)%int64(hi-lo))
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		l.Close()
		return p
	}
	t.Fatalf("finding a free port: none in %d-%d", lo, hi-1)
	return 0
}

// nextPort counts FreePort's probes on from a random start.
var nextPort atomic.Int64

func init() { nextPort.Store(rand.Int64N(1 << 30)) }

// portRange is where FreePort looks: from 10000 up to the first port of
// the kernel's ephemeral range (32768 when it cannot be read), read once.
var portRange = sync.OnceValues(func() (lo, hi int) {
	lo, hi = 10000, 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	if f := strings.Fields(string(b)); len(f) == 2 {
		if first, err := strconv.Atoi(f[0]); err == nil {
			hi = first
		}
	}
	return lo, hi
})

// Poll calls cond every interval until it returns true or timeout passes.
// Condition errors are retried (the last one is reported on timeout),
// except that a process that has exited ends the poll at once.
func Poll(ctx context.Context, interval, timeout time.Duration, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		ok, err := cond(ctx)
		if ok {
			return nil
		}
		if errors.Is(err, errExited) {
			return err
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("timed out after %s: %w", timeout, last)
			}
			return fmt.Errorf("timed out after %s", timeout)
		case <-time.After(interval):
		}
	}
}

// errExited is returned by readiness polls when the process has ended.
var errExited = errors.New("process exited")

func exitedError(p *Process) error {
	done, err := p.Exited()
	if !done {
		return nil
	}
	return fmt.Errorf("%w (%v); last log lines:\n%s", errExited, err, strings.TrimSpace(p.Tail(15)))
}

// ProcessCPU is a process's user+system CPU time, from /proc.
func ProcessCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the CPU time of process %d: %w", pid, err)
	}
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+2:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("process %d: short /proc stat %q", pid, raw)
	}
	var ticks int64
	for _, s := range f[11:13] { // utime, stime
		var n int64
		if _, err := fmt.Sscan(s, &n); err != nil {
			return 0, fmt.Errorf("process %d: /proc stat field %q: %w", pid, s, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil // USER_HZ = 100
}
