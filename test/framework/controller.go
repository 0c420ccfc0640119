package framework

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
)

// Controller is a running cellfed-controller with its health endpoint.
//
// Like the Deployment in manifests/deploy, it is started again when it
// exits because it lost its leader Lease (a plane too slow or down for
// longer than the renew deadline); any other exit leaves it stopped, so
// a crash fails the test. Stop, Signal and Kill are deliberate: no
// restart follows them.
type Controller struct {
	*Process
	HealthURL string

	stopped atomic.Bool
}

// StartController starts bin/cellfed-controller against the plane with
// fast health probing (1 s period, two failures) and the production
// leader-election timing, and waits until it leads and has loaded the
// clusters. args are extra flags and win over these defaults.
func StartController(t testing.TB, plane *Server, args ...string) *Controller {
	t.Helper()
	c, err := startController(t, plane, true, args...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// StartStandbyController starts a controller that is not expected to lead
// (another replica holds the Lease); it does not wait for readiness.
func StartStandbyController(t testing.TB, plane *Server, args ...string) *Controller {
	t.Helper()
	c, err := startController(t, plane, false, args...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func startController(t testing.TB, plane *Server, wait bool, args ...string) (*Controller, error) {
	port := FreePort(t)
	base := []string{
		"--kubeconfig=" + plane.Kubeconfig,
		"--health-address=127.0.0.1:" + strconv.Itoa(port),
		"--cluster-probe-period=1s",
		"--cluster-probe-timeout=1s",
		"--cluster-failure-threshold=2",
		"--cluster-timeout=10s",
		// The production timing (cellfed-controller's defaults): a
		// shorter renew deadline lost the Lease on a loaded CI machine.
		"--leader-elect-lease-duration=15s",
		"--leader-elect-renew-deadline=10s",
		"--leader-elect-retry-period=2s",
	}
	p := StartProcess(t, "cellfed-controller", filepath.Join(t.TempDir(), "controller.log"), Binary(t, "cellfed-controller"), append(base, args...)...)
	c := &Controller{Process: p, HealthURL: fmt.Sprintf("http://127.0.0.1:%d", port)}
	ctx, cancel := context.WithCancel(context.Background())
	supervised := make(chan struct{})
	go func() {
		defer close(supervised)
		c.supervise(ctx)
	}()
	t.Cleanup(func() {
		c.stopped.Store(true)
		cancel()
		<-supervised
	})
	if wait {
		if err := c.WaitReady(context.Background(), 60*time.Second); err != nil {
			return nil, fmt.Errorf("cellfed-controller not ready: %w\n%s", err, p.Tail(30))
		}
	}
	return c, nil
}

// lostLease is what cellfed-controller logs before it exits on a lost
// Lease (pkg/controller).
const lostLease = "Lost the leader Lease"

// supervise restarts the controller each time it exits on a lost Lease,
// until ctx ends or the controller is stopped on purpose.
func (c *Controller) supervise(ctx context.Context) {
	for {
		_ = c.Process.Wait(ctx)
		if ctx.Err() != nil {
			return
		}
		if c.stopped.Load() || !strings.Contains(c.Tail(5), lostLease) {
			return
		}
		c.note("framework: cellfed-controller exited on a lost Lease; starting it again, as its Deployment would")
		if err := c.Restart(); err != nil {
			c.note("framework: restarting cellfed-controller: " + err.Error())
			return
		}
	}
}

// note appends a line to the controller's log, which a failing test
// prints.
func (c *Controller) note(line string) {
	f, err := os.OpenFile(c.LogPath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = fmt.Fprintln(f, line)
}

// Stop stops the controller for good (SIGTERM, then SIGKILL after grace).
func (c *Controller) Stop(grace time.Duration) {
	c.stopped.Store(true)
	c.Process.Stop(grace)
}

// Signal sends sig; the controller is not restarted after it.
func (c *Controller) Signal(sig syscall.Signal) {
	c.stopped.Store(true)
	c.Process.Signal(sig)
}

// Kill kills the controller for good.
func (c *Controller) Kill() {
	c.stopped.Store(true)
	c.Process.Kill()
}

// Ready reports whether the controller answers /readyz with ok.
func (c *Controller) Ready(ctx context.Context) bool {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.HealthURL+"/readyz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == http.StatusOK && string(body) == "ok"
}

// WaitReady polls /readyz.
func (c *Controller) WaitReady(ctx context.Context, timeout time.Duration) error {
	return Poll(ctx, 100*time.Millisecond, timeout, func(ctx context.Context) (bool, error) {
		if err := exitedError(c.Process); err != nil {
			return false, err
		}
		return c.Ready(ctx), nil
	})
}

// Writes counts the create (POST) and update (PUT and PATCH) requests a
// server has answered for a resource, from its apiserver_request_total
// metric: what a controller cost the server in writes. Conflicts are the
// writes of any verb answered 409 Conflict (counted in their verb too).
type Writes struct{ Creates, Updates, Deletes, Conflicts int }

// CountWrites reads a server's /metrics for resource (e.g. "configmaps"),
// its subresources left out.
func CountWrites(ctx context.Context, c kubernetes.Interface, resource string) (Writes, error) {
	return CountSubresourceWrites(ctx, c, resource, "")
}

// CountSubresourceWrites is CountWrites for one subresource of resource
// (e.g. "status"); "" is the resource itself.
func CountSubresourceWrites(ctx context.Context, c kubernetes.Interface, resource, subresource string) (Writes, error) {
	raw, err := c.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return Writes{}, fmt.Errorf("reading /metrics: %w", err)
	}
	var w Writes
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="`+resource+`"`) {
			continue
		}
		if subresource == "" && strings.Contains(line, `subresource="`) && !strings.Contains(line, `subresource=""`) ||
			subresource != "" && !strings.Contains(line, `subresource="`+subresource+`"`) {
			continue
		}
		fields := strings.Fields(line)
		n, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			continue
		}
		write := true
		switch {
		case strings.Contains(line, `verb="POST"`):
			w.Creates += int(n)
		case strings.Contains(line, `verb="PUT"`), strings.Contains(line, `verb="PATCH"`), strings.Contains(line, `verb="APPLY"`):
			w.Updates += int(n)
		case strings.Contains(line, `verb="DELETE"`):
			w.Deletes += int(n)
		default:
			write = false
		}
		if write && strings.Contains(line, `code="409"`) {
			w.Conflicts += int(n)
		}
	}
	return w, nil
}
