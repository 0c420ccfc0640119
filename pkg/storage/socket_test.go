package storage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSocketPathFallsBackAndCleansUp(t *testing.T) {
	long := t.TempDir() + "/" + strings.Repeat("d", 120)
	path, cleanup, err := socketPath(long, "kine.sock")
	if err != nil {
		t.Fatal(err)
	}
	if len(path) > maxUnixSocketPath || strings.HasPrefix(path, long) {
		t.Fatalf("socket path %q does not fit the unix socket limit", path)
	}
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("fallback socket dir missing: %v", err)
	}
	cleanup()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("fallback socket dir %s left behind (%v)", dir, err)
	}
}
