package kinedata_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/cellfed/cellfed/pkg/storage"
	"github.com/cellfed/cellfed/pkg/storage/kinedata"
)

// TestBackupFilesArePrivate backs a live SQLite store up next to files an
// earlier run or another user left at the backup's temporary names: a
// stale FILE.tmp readable by all, symlinks at FILE.tmp, at the snapshot
// and at FILE pointing at a victim file. The victim is never written, the
// backup is a regular file of mode 0600, the snapshot was one too while
// it existed, and neither temporary file is left behind, also when the
// backup fails.
func TestBackupFilesArePrivate(t *testing.T) {
	ctx := context.Background()
	src := storage.NewOptions()
	src.DataDir = t.TempDir()
	c, _ := startKine(t, src)
	fill(t, c, 20)
	from, err := src.Database()
	if err != nil {
		t.Fatal(err)
	}
	const victimText = "the victim's own content\n"
	errFail := errors.New("failing after the snapshot")
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, file, victim string)
		fail    bool
	}{
		{name: "nothing there", prepare: func(*testing.T, string, string) {}},
		{name: "a stale FILE.tmp of mode 0644", prepare: func(t *testing.T, file, _ string) {
			write(t, file+".tmp", "stale", 0o644)
		}},
		{name: "FILE.tmp is a symlink to a victim", prepare: func(t *testing.T, file, victim string) {
			symlink(t, victim, file+".tmp")
		}},
		{name: "the snapshot is a symlink to a victim", prepare: func(t *testing.T, file, victim string) {
			symlink(t, victim, file+".sqlite-snapshot")
		}},
		{name: "FILE is a symlink to a victim", prepare: func(t *testing.T, file, victim string) {
			symlink(t, victim, file)
		}},
		{name: "the backup fails after the snapshot", fail: true, prepare: func(*testing.T, string, string) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file, victim := filepath.Join(dir, "b.kine.gz"), filepath.Join(dir, "victim")
			write(t, victim, victimText, 0o644)
			tc.prepare(t, file, victim)
			var snapMode fs.FileMode
			_, err := kinedata.Backup(ctx, kinedata.BackupOptions{From: from, To: file, AfterSnapshot: func(snap string) error {
				fi, err := os.Lstat(snap)
				if err != nil {
					return err
				}
				snapMode = fi.Mode()
				if tc.fail {
					return errFail
				}
				return nil
			}})
			if tc.fail != (err != nil) {
				t.Fatalf("Backup: %v (want failure: %v)", err, tc.fail)
			}
			if snapMode != 0o600 {
				t.Errorf("the snapshot's mode was %v, want -rw------- (a regular file only its owner reads)", snapMode)
			}
			if b, err := os.ReadFile(victim); err != nil || string(b) != victimText {
				t.Errorf("the victim now holds %q (%v), want it untouched", b, err)
			}
			for _, left := range []string{file + ".tmp", file + ".sqlite-snapshot"} {
				if _, err := os.Lstat(left); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s is left behind (%v)", filepath.Base(left), err)
				}
			}
			if tc.fail {
				return
			}
			fi, err := os.Lstat(file)
			if err != nil || fi.Mode() != 0o600 {
				t.Fatalf("the backup file: mode %v (%v), want -rw-------", fi.Mode(), err)
			}
			if _, err := kinedata.ReadHeader(file); err != nil {
				t.Errorf("the backup does not read back: %v", err)
			}
		})
	}
}

func write(t *testing.T, path, content string, mode fs.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
