package apiserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cellfed/cellfed/pkg/pki"
)

func TestSharedPKI(t *testing.T) {
	shared := t.TempDir()
	if err := InitSharedFiles(shared, "admin"); err != nil {
		t.Fatal(err)
	}
	for _, name := range append(append([]string{}, SharedPKIFiles...), "kms-keys", "admin/admin.crt", "admin/admin.key") {
		fi, err := os.Stat(filepath.Join(shared, name))
		if err != nil {
			t.Fatalf("init wrote no %s: %v", name, err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %04o, want owner-only", name, fi.Mode().Perm())
		}
	}
	if err := InitSharedFiles(shared, "admin"); err == nil || !strings.Contains(err.Error(), "never overwrites") {
		t.Errorf("a second init into the same dir: %v, want a refusal", err)
	}

	t.Run("copies into an empty data dir, then is idempotent", func(t *testing.T) {
		files := pki.Files{Dir: filepath.Join(t.TempDir(), "pki")}
		for range 2 {
			if err := copySharedPKI(shared, files); err != nil {
				t.Fatal(err)
			}
		}
		if err := pki.Ensure(files, pki.Options{AdminUser: "admin"}); err != nil {
			t.Fatalf("a serving certificate from the shared CA: %v", err)
		}
		want, _ := os.ReadFile(filepath.Join(shared, "ca.crt"))
		got, _ := os.ReadFile(files.CACert())
		if string(got) != string(want) {
			t.Error("the data dir's CA is not the shared one")
		}
	})
	t.Run("refuses a data dir of another plane", func(t *testing.T) {
		files := pki.Files{Dir: filepath.Join(t.TempDir(), "pki")}
		if err := pki.Ensure(files, pki.Options{AdminUser: "admin"}); err != nil {
			t.Fatal(err)
		}
		before, _ := os.ReadFile(files.CACert())
		err := copySharedPKI(shared, files)
		if err == nil || !strings.Contains(err.Error(), "belongs to another plane") {
			t.Fatalf("got %v, want a refusal naming the other plane", err)
		}
		if after, _ := os.ReadFile(files.CACert()); string(after) != string(before) {
			t.Error("the refused copy changed the data dir's CA")
		}
	})
	t.Run("names missing files", func(t *testing.T) {
		partial := t.TempDir()
		b, _ := os.ReadFile(filepath.Join(shared, "ca.crt"))
		if err := os.WriteFile(filepath.Join(partial, "ca.crt"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		err := copySharedPKI(partial, pki.Files{Dir: filepath.Join(t.TempDir(), "pki")})
		if err == nil || !strings.Contains(err.Error(), "lacks ca.key, sa.key") {
			t.Fatalf("got %v, want the missing files named", err)
		}
	})
}
