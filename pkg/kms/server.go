package kms

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"k8s.io/klog/v2"
	kmsapi "k8s.io/kms/apis/v2"
	"k8s.io/kms/pkg/service"
)

const (
	// maxSocketPath is the longest path a unix socket address may have on
	// Linux (sun_path is 108 bytes with the terminating NUL).
	maxSocketPath = 107
	// gracefulStopTimeout bounds how long Stop waits for running calls.
	gracefulStopTimeout = 5 * time.Second
)

// Server serves a Service with the KMS v2 gRPC API on a unix socket.
type Server struct {
	endpoint string
	path     string
	grpc     *grpc.Server

	stopOnce sync.Once
	done     chan struct{}
	err      error // Serve's error, set before done is closed
}

// socketPath returns the file system path of a "unix:///abs/path" endpoint.
func socketPath(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", fmt.Errorf("KMS endpoint %q is not a URL: %w; use unix:///absolute/path.sock", endpoint, err)
	}
	if u.Scheme != "unix" {
		return "", fmt.Errorf("KMS endpoint %q: scheme %q is not supported; use unix:///absolute/path.sock", endpoint, u.Scheme)
	}
	if u.Host != "" || u.Opaque != "" {
		return "", fmt.Errorf("KMS endpoint %q is not of the form unix:///absolute/path.sock (three slashes)", endpoint)
	}
	p := u.Path
	if strings.HasPrefix(p, "/@") {
		return "", fmt.Errorf("KMS endpoint %q names an abstract socket, which has no file permissions to restrict it; use a socket file, unix:///absolute/path.sock", endpoint)
	}
	if !filepath.IsAbs(p) || p != filepath.Clean(p) || p == "/" {
		return "", fmt.Errorf("KMS endpoint %q does not name a clean absolute socket path; use unix:///absolute/path.sock", endpoint)
	}
	if len(p) > maxSocketPath {
		return "", fmt.Errorf("KMS endpoint %q: the socket path is %d bytes, longer than the %d a unix socket allows; choose a shorter path", endpoint, len(p), maxSocketPath)
	}
	return p, nil
}

// removeStaleSocket removes a socket file at path that no process serves.
// It refuses to remove anything else, or a socket that answers.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("checking the socket path: %w", err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s exists and is not a socket; refusing to replace it: remove it or choose another endpoint", path)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("another process is serving on %s; stop it or choose another endpoint", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the stale socket: %w", err)
	}
	klog.InfoS("Removed a stale KMS socket", "path", path)
	return nil
}

// Start serves svc with the KMS v2 gRPC API on endpoint, a
// "unix:///absolute/path.sock" URL. It removes a stale socket file, creates
// a missing directory with mode 0700 and the socket with mode 0600, and
// returns once the socket accepts connections. The server stops when ctx
// is cancelled or Stop is called.
func Start(ctx context.Context, endpoint string, svc *Service) (*Server, error) {
	if svc == nil {
		return nil, errors.New("kms.Start: no Service given")
	}
	path, err := socketPath(endpoint)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating the KMS socket's directory: %w", err)
	}
	if err := removeStaleSocket(path); err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listening on KMS endpoint %s: %w", endpoint, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("restricting the KMS socket to its owner: %w", err)
	}

	gs := grpc.NewServer(grpc.ChainUnaryInterceptor(logErrors))
	// service.GRPCService adapts a service.Service to the generated gRPC
	// server interface; its own listener (ListenAndServe) is not used, so
	// that this package controls the socket's location and mode.
	kmsapi.RegisterKeyManagementServiceServer(gs, service.NewGRPCService(path, 0, svc))

	s := &Server{endpoint: endpoint, path: path, grpc: gs, done: make(chan struct{})}
	go func() {
		err := gs.Serve(ln)
		if err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			klog.ErrorS(err, "KMS gRPC server failed", "endpoint", endpoint)
			s.err = fmt.Errorf("serving KMS endpoint %s: %w", endpoint, err)
		}
		close(s.done)
	}()
	go func() {
		select {
		case <-ctx.Done():
			s.Stop()
		case <-s.done:
		}
	}()
	klog.InfoS("KMS v2 plugin listening", "endpoint", endpoint, "keyFile", svc.KeyFile(), "primaryKeyID", svc.PrimaryKeyID())
	return s, nil
}

// logErrors logs failed calls at verbosity 2 (errors carry no key material).
func logErrors(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err != nil {
		klog.V(2).InfoS("KMS call failed", "method", info.FullMethod, "err", err)
	}
	return resp, err
}

// Stop stops the server: it lets running calls finish (for a few seconds)
// and removes the socket. It is safe to call more than once.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		stopped := make(chan struct{})
		go func() {
			s.grpc.GracefulStop()
			close(stopped)
		}()
		select {
		case <-stopped:
		case <-time.After(gracefulStopTimeout):
			s.grpc.Stop()
		}
		<-s.done
		klog.InfoS("KMS v2 plugin stopped", "endpoint", s.endpoint)
	})
}

// Wait blocks until the server has stopped and returns why it stopped, if
// not by Stop or the cancellation of Start's context.
func (s *Server) Wait() error {
	<-s.done
	return s.err
}

// Endpoint returns the endpoint the server listens on.
func (s *Server) Endpoint() string { return s.endpoint }
