package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/storage/value/encrypt/envelope/kmsv2"

	"github.com/cellfed/cellfed/pkg/kms"
)

// runCmd runs the command line in-process and returns its exit code and
// output.
func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys")
	if code, _, stderr := runCmd(t, "generate", "--key-file", keys); code != 0 {
		t.Fatalf("generate: exit %d: %s", code, stderr)
	}
	loose := filepath.Join(dir, "loose")
	if _, err := kms.GenerateKeyFile(loose); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(loose, 0o644); err != nil {
		t.Fatal(err)
	}
	_, primary, err := kms.ReadKeyIDs(keys)
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")

	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"unknown command", []string{"bogus"}, `unknown command "bogus"`},
		{"unknown flag", []string{"list", "--bogus"}, "unknown flag: --bogus"},
		{"extra argument", []string{"list", "--key-file", keys, "extra"}, `takes no arguments, got "extra"`},
		{"generate over an existing file", []string{"generate", "--key-file", keys}, "already exists; refusing to overwrite"},
		{"empty key file flag", []string{"list", "--key-file", ""}, "--key-file is empty"},
		{"list a missing file", []string{"list", "--key-file", missing}, "does not exist"},
		{"list a loose file", []string{"list", "--key-file", loose}, "chmod 600 " + loose},
		{"add-key to a missing file", []string{"add-key", "--key-file", missing}, "does not exist"},
		{"remove-key without an ID", []string{"remove-key", "--key-file", keys}, "--key-id is required"},
		{"remove the primary", []string{"remove-key", "--key-file", keys, "--key-id", primary}, "refusing to remove it"},
		{"remove an unknown key", []string{"remove-key", "--key-file", keys, "--key-id", "k-nope"}, `holds no key "k-nope"`},
		{"serve a missing file", []string{"serve", "--key-file", missing, "--listen", "unix://" + dir + "/s.sock"}, "does not exist"},
		{"serve on tcp", []string{"serve", "--key-file", keys, "--listen", "tcp://127.0.0.1:1"}, `scheme "tcp" is not supported`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, tt.args...)
			if code == 0 {
				t.Fatalf("exit 0, want non-zero; stdout %q stderr %q", stdout, stderr)
			}
			if !strings.HasPrefix(stderr, "cellfed-kms: ") || strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
				t.Errorf("stderr is not one error line: %q", stderr)
			}
			if !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("stderr %q lacks %q", stderr, tt.wantErr)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing on an error", stdout)
			}
		})
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("a failed command created %s", missing)
	}
}

func TestKeyCommands(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "sub", "keys")
	code, first, stderr := runCmd(t, "generate", "--key-file", keys)
	if code != 0 {
		t.Fatalf("generate: exit %d: %s", code, stderr)
	}
	first = strings.TrimSpace(first)

	code, second, stderr := runCmd(t, "add-key", "--key-file", keys)
	if code != 0 {
		t.Fatalf("add-key: exit %d: %s", code, stderr)
	}
	second = strings.TrimSpace(second)
	for _, want := range []string{"cellfedctl rotate-key", "cellfed-kms remove-key --key-file " + keys + " --key-id " + first, "Status"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("add-key's next steps lack %q:\n%s", want, stderr)
		}
	}

	code, list, stderr := runCmd(t, "list", "--key-file", keys)
	if code != 0 {
		t.Fatalf("list: exit %d: %s", code, stderr)
	}
	if want := first + "\n" + second + "\tprimary\n"; list != want {
		t.Errorf("list printed %q, want %q", list, want)
	}

	if code, _, stderr := runCmd(t, "remove-key", "--key-file", keys, "--key-id", first); code != 0 {
		t.Fatalf("remove-key: exit %d: %s", code, stderr)
	}
	if _, list, _ = runCmd(t, "list", "--key-file", keys); list != second+"\tprimary\n" {
		t.Errorf("list after remove-key printed %q", list)
	}
}

func TestServe(t *testing.T) {
	sockDir, err := os.MkdirTemp("", "kmscmd")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	endpoint := "unix://" + sockDir + "/kms.sock"
	keys := filepath.Join(t.TempDir(), "keys")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exited := make(chan int, 1)
	var stderr bytes.Buffer
	go func() {
		exited <- run(ctx, []string{"serve", "--listen", endpoint, "--key-file", keys, "--generate-if-missing"}, &bytes.Buffer{}, &stderr)
	}()

	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Lstat(sockDir + "/kms.sock"); err == nil {
			break
		}
		select {
		case code := <-exited:
			t.Fatalf("serve exited %d before listening: %s", code, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("serve did not create its socket within 10s")
		}
	}
	client, err := kmsv2.NewGRPCService(ctx, endpoint, "cellfed-kms", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	st, err := client.Status(ctx)
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	_, primary, err := kms.ReadKeyIDs(keys)
	if err != nil {
		t.Fatalf("serve --generate-if-missing did not create the key file: %v", err)
	}
	if st.KeyID != primary || st.Healthz != "ok" {
		t.Errorf("Status = %+v, want healthy with KeyID %s", st, primary)
	}

	cancel()
	select {
	case code := <-exited:
		if code != 0 {
			t.Errorf("serve exited %d after cancellation: %s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return within 10s of cancellation")
	}
	if _, err := os.Lstat(sockDir + "/kms.sock"); !os.IsNotExist(err) {
		t.Errorf("serve left its socket behind: %v", err)
	}
}
