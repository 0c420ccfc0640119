package kms

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/storage/value/encrypt/envelope/kmsv2"
	"k8s.io/kms/pkg/service"
)

// socketDir returns a short directory for unix sockets: t.TempDir() paths
// can exceed the 107 bytes a socket path may have.
func socketDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kms")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// TestServerWithAPIServerClient talks to the plugin over a real unix socket
// with the KMS v2 client the API server itself uses.
func TestServerWithAPIServerClient(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc, keyFile := newTestService(t)
	dir := filepath.Join(socketDir(t), "run")
	endpoint := "unix://" + dir + "/kms.sock"

	srv, err := Start(ctx, endpoint, svc)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if srv.Endpoint() != endpoint {
		t.Errorf("Endpoint() = %q, want %q", srv.Endpoint(), endpoint)
	}
	assertMode(t, dir, 0o700)
	assertMode(t, dir+"/kms.sock", 0o600)

	client, err := kmsv2.NewGRPCService(ctx, endpoint, "cellfed-kms", 10*time.Second)
	if err != nil {
		t.Fatalf("kmsv2.NewGRPCService: %v", err)
	}
	st, err := client.Status(ctx)
	if err != nil {
		t.Fatalf("Status over gRPC: %v", err)
	}
	old := svc.PrimaryKeyID()
	if st.Version != "v2" || st.Healthz != "ok" || st.KeyID != old {
		t.Fatalf("Status over gRPC = %+v, want v2, ok, %s", st, old)
	}
	if _, err := kmsv2.ValidateKeyID(st.KeyID); err != nil {
		t.Errorf("the API server would reject the key ID: %v", err)
	}

	seed := bytes.Repeat([]byte{42}, 32)
	enc, err := client.Encrypt(ctx, "uid-1", seed)
	if err != nil {
		t.Fatalf("Encrypt over gRPC: %v", err)
	}
	if enc.KeyID != st.KeyID {
		t.Errorf("Encrypt KeyID %q differs from Status KeyID %q", enc.KeyID, st.KeyID)
	}
	if len(enc.Ciphertext) > 1024 {
		t.Errorf("ciphertext of a DEK seed is %d bytes, more than the API server accepts (1 KiB)", len(enc.Ciphertext))
	}
	pt, err := client.Decrypt(ctx, "uid-2", &service.DecryptRequest{Ciphertext: enc.Ciphertext, KeyID: enc.KeyID})
	if err != nil || !bytes.Equal(pt, seed) {
		t.Fatalf("Decrypt over gRPC: %x, %v", pt, err)
	}

	// Rotation: the API server polls Status and sees the new key.
	newID, err := AddKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	st, err = client.Status(ctx)
	if err != nil || st.KeyID != newID {
		t.Fatalf("Status after AddKey: %+v, %v; want KeyID %s", st, err, newID)
	}
	enc2, err := client.Encrypt(ctx, "uid-3", seed)
	if err != nil || enc2.KeyID != newID {
		t.Fatalf("Encrypt after AddKey: %+v, %v; want KeyID %s", enc2, err, newID)
	}
	pt, err = client.Decrypt(ctx, "uid-4", &service.DecryptRequest{Ciphertext: enc.Ciphertext, KeyID: old})
	if err != nil || !bytes.Equal(pt, seed) {
		t.Fatalf("Decrypt of the old ciphertext after AddKey: %x, %v", pt, err)
	}
	_, err = client.Decrypt(ctx, "uid-5", &service.DecryptRequest{Ciphertext: enc.Ciphertext, KeyID: "k-gone"})
	if err == nil || !strings.Contains(err.Error(), `"k-gone"`) || !strings.Contains(err.Error(), keyFile) {
		t.Errorf("Decrypt with an unknown key over gRPC: %v, want the plugin's error naming the key and the file", err)
	}

	// Cancelling the context stops the server and removes the socket.
	cancel()
	waitStopped(t, srv)
	if _, err := os.Lstat(dir + "/kms.sock"); !os.IsNotExist(err) {
		t.Errorf("the socket is still there after the server stopped: %v", err)
	}
}

func waitStopped(t *testing.T, srv *Server) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Wait: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop within 10s")
	}
}

func TestStartEndpoints(t *testing.T) {
	svc, _ := newTestService(t)
	dir := socketDir(t)

	stale := dir + "/stale.sock"
	ln, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // leaves the socket file, with no one serving it

	busy := dir + "/busy.sock"
	busyLn, err := net.Listen("unix", busy)
	if err != nil {
		t.Fatal(err)
	}
	defer busyLn.Close()

	regular := dir + "/file"
	if err := os.WriteFile(regular, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		endpoint string
		wantErr  string
	}{
		{"stale socket is replaced", "unix://" + stale, ""},
		{"busy socket", "unix://" + busy, "another process is serving"},
		{"regular file", "unix://" + regular, "not a socket"},
		{"tcp", "tcp://127.0.0.1:1234", `scheme "tcp" is not supported`},
		{"relative", "unix://run/kms.sock", "three slashes"},
		{"no scheme", dir + "/x.sock", "is not supported"},
		{"too long", "unix:///" + strings.Repeat("a", 120) + ".sock", "longer than"},
		{"empty", "", "is not supported"},
		{"abstract", "unix:///@cellfed-kms", "abstract socket"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			srv, err := Start(ctx, tt.endpoint, svc)
			if tt.wantErr != "" {
				if err == nil {
					srv.Stop()
					t.Fatalf("Start(%q) succeeded, want an error containing %q", tt.endpoint, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Start(%q): %v, want an error containing %q", tt.endpoint, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Start(%q): %v", tt.endpoint, err)
			}
			client, err := kmsv2.NewGRPCService(ctx, tt.endpoint, "cellfed-kms", 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := client.Status(ctx); err != nil {
				t.Errorf("Status: %v", err)
			}
			srv.Stop()
			srv.Stop() // idempotent
			waitStopped(t, srv)
		})
	}
	if fi, err := os.Stat(regular); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("Start touched the regular file at the endpoint: %v", err)
	}
}
