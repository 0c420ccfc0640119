package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// readyTimeout is how long a server may take to answer /readyz with ok.
// Idle, the plane is ready in about 7 s; with the end-to-end tests
// running four at a time on two CPUs the load reaches 8–9, and CI
// machines have run the suite up to three times slower still.
const readyTimeout = 180 * time.Second

// Server is a running API server process with an admin kubeconfig.
type Server struct {
	*Process
	DataDir    string
	Port       int
	Kubeconfig string
	// ProxyURL, when set, is the HTTP proxy clients reach the server
	// through (a tunnelled member: the hub's CONNECT frontend).
	ProxyURL string
	// ProxyCA is the PEM CA of an https ProxyURL (the hub's TLS CONNECT
	// frontend): clients add it to the CAs they verify the server with,
	// as a KubeFedCluster's caBundle holds both.
	ProxyCA []byte
	// Endpoint, when set, is the address the federation is given for the
	// server instead of its kubeconfig's (a member whose address is
	// withheld).
	Endpoint string
}

// withProxy applies ProxyURL to cfg.
func (s *Server) withProxy(cfg *rest.Config) error {
	if s.ProxyURL == "" {
		return nil
	}
	p, err := proxyFunc(s.ProxyURL)
	if err != nil {
		return err
	}
	cfg.Proxy = p
	return AddCA(cfg, s.ProxyCA)
}

// AddCA adds PEM CA certificates to those cfg verifies servers (and an
// https proxy) with.
func AddCA(cfg *rest.Config, ca []byte) error {
	if len(ca) == 0 {
		return nil
	}
	have := cfg.CAData
	if len(have) == 0 && cfg.CAFile != "" {
		b, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return fmt.Errorf("reading CA file: %w", err)
		}
		have = b
	}
	cfg.CAData = append(append(append([]byte{}, have...), '\n'), ca...)
	cfg.CAFile = ""
	return nil
}

// RESTConfig loads the admin kubeconfig.
func (s *Server) RESTConfig(t testing.TB) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatalf("loading %s: %v", s.Kubeconfig, err)
	}
	if err := s.withProxy(cfg); err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	return cfg
}

// Client is a clientset for the admin user.
func (s *Server) Client(t testing.TB) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(s.RESTConfig(t))
	if err != nil {
		t.Fatalf("client for %s: %v", s.Name, err)
	}
	return c
}

// WaitReady polls /readyz until it answers ok. On a timeout it reports
// the checks /readyz?verbose names as failing.
func (s *Server) WaitReady(ctx context.Context) error {
	err := s.pollReady(ctx)
	if err == nil || errors.Is(err, errExited) {
		return err
	}
	return fmt.Errorf("%w (%s)", err, s.readyzVerbose())
}

// readyzVerbose is the status and failing lines of /readyz?verbose.
func (s *Server) readyzVerbose() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := s.readyzClient()
	if err != nil {
		return err.Error()
	}
	var code int
	body, err := c.Discovery().RESTClient().Get().AbsPath("/readyz").Param("verbose", "").Do(ctx).StatusCode(&code).Raw()
	var failing []string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "[-]") {
			failing = append(failing, l)
		}
	}
	if len(failing) == 0 {
		return fmt.Sprintf("/readyz?verbose: HTTP %d, %v", code, err)
	}
	return fmt.Sprintf("/readyz?verbose: HTTP %d, failing: %s", code, strings.Join(failing, "; "))
}

// readyzClient reaches s as its admin kubeconfig says, through its proxy
// when it has one.
func (s *Server) readyzClient() (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		return nil, err
	}
	if err := s.withProxy(cfg); err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

func (s *Server) pollReady(ctx context.Context) error {
	return Poll(ctx, 50*time.Millisecond, readyTimeout, func(ctx context.Context) (bool, error) {
		if err := exitedError(s.Process); err != nil {
			return false, err
		}
		c, err := s.readyzClient()
		if err != nil {
			return false, err // the kubeconfig is not written yet
		}
		body, err := c.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return false, fmt.Errorf("%v: %s", err, body)
		}
		return string(body) == "ok", nil
	})
}

// RestartAndWait restarts a stopped server and waits until it is ready.
func (s *Server) RestartAndWait(t testing.TB) {
	t.Helper()
	if err := s.Restart(); err != nil {
		t.Fatalf("restarting %s: %v", s.Name, err)
	}
	if err := s.WaitReady(context.Background()); err != nil {
		t.Fatalf("%s not ready after restart: %v", s.Name, err)
	}
}

// PlaneOptions configures StartPlane.
type PlaneOptions struct {
	// DataDir defaults to a new temporary directory.
	DataDir string
	// Endpoint is --datastore-endpoint ("" = SQLite).
	Endpoint string
	// Args are extra flags.
	Args []string
	// NoWait returns without waiting for readiness.
	NoWait bool
	// Port is --secure-port (0: a free port).
	Port int
}

// PlaneArgs are the flags StartPlane passes for a data dir and port.
func PlaneArgs(dataDir string, port int, o PlaneOptions) []string {
	args := []string{
		"--data-dir=" + dataDir,
		"--secure-port=" + strconv.Itoa(port),
		"--bind-address=127.0.0.1",
		// The tunnel hub's fixed default ports would collide between
		// parallel planes: tests that use it pass free ports in Args.
		"--tunnel-agent-port=0", "--tunnel-grpc-port=0", "--tunnel-connect-port=0",
	}
	if o.Endpoint != "" {
		args = append(args, "--datastore-endpoint="+o.Endpoint)
	}
	return append(args, o.Args...)
}

// StartPlane starts bin/cellfed-apiserver and waits until it is ready.
func StartPlane(t testing.TB, o PlaneOptions) *Server {
	t.Helper()
	if o.DataDir == "" {
		o.DataDir = t.TempDir()
	}
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	port := o.Port
	if port == 0 {
		port = FreePort(t)
	}
	p := StartProcess(t, "cellfed-apiserver", filepath.Join(o.DataDir, "apiserver.log"),
		Binary(t, "cellfed-apiserver"), PlaneArgs(o.DataDir, port, o)...)
	s := &Server{Process: p, DataDir: o.DataDir, Port: port, Kubeconfig: filepath.Join(o.DataDir, "admin.kubeconfig")}
	if !o.NoWait {
		if err := s.WaitReady(context.Background()); err != nil {
			t.Fatalf("cellfed-apiserver did not become ready: %v", err)
		}
	}
	return s
}

// StartPlaneWithMembers starts the plane and n members at once (named as
// StartMembers names them, with memberArgs) and waits until all are ready:
// the plane's start-up overlaps the members' instead of preceding it.
func StartPlaneWithMembers(t testing.TB, o PlaneOptions, n int, memberArgs ...string) (*Server, []*Server) {
	t.Helper()
	wait := !o.NoWait
	o.NoWait = true
	plane := StartPlane(t, o)
	members := StartMembers(t, n, memberArgs...)
	if wait {
		if err := plane.WaitReady(context.Background()); err != nil {
			t.Fatalf("cellfed-apiserver did not become ready: %v", err)
		}
	}
	return plane, members
}

// StartMember starts one real kube-apiserver (bin/member-apiserver) on a
// loopback port with its own SQLite database.
func StartMember(t testing.TB, name string) *Server {
	t.Helper()
	s, err := startMember(t, Binary(t, "member-apiserver"), name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// StartMembers starts n members in parallel, named member-0 … member-(n-1).
// args are extra member-apiserver flags (e.g. "--token-controller").
func StartMembers(t testing.TB, n int, args ...string) []*Server {
	t.Helper()
	bin := Binary(t, "member-apiserver")
	members := make([]*Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			members[i], errs[i] = startMember(t, bin, fmt.Sprintf("member-%d", i), args...)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return members
}

// startMember may run off the test goroutine, so it returns errors
// instead of failing the test.
func startMember(t testing.TB, bin, name string, args ...string) (*Server, error) {
	dir := t.TempDir()
	port := FreePort(t)
	p, err := startProcess(t, "member "+name, filepath.Join(dir, "apiserver.log"), bin,
		append([]string{"--data-dir=" + dir, "--secure-port=" + strconv.Itoa(port), "--v=0"}, args...)...)
	if err != nil {
		return nil, err
	}
	s := &Server{Process: p, DataDir: dir, Port: port, Kubeconfig: filepath.Join(dir, "admin.kubeconfig")}
	if err := s.WaitReady(context.Background()); err != nil {
		return nil, fmt.Errorf("member %s did not become ready: %w", name, err)
	}
	return s, nil
}
