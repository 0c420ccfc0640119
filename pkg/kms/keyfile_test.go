package kms

import (
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// keyB64 returns a valid base64 key whose bytes are all b.
func keyB64(b byte) string {
	k := make([]byte, keySize)
	for i := range k {
		k[i] = b
	}
	return base64.StdEncoding.EncodeToString(k)
}

// writeKeyFile writes content to a new 0600 key file in a test directory.
func writeKeyFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestParseKeyFile(t *testing.T) {
	short := base64.StdEncoding.EncodeToString(make([]byte, 16))
	tests := []struct {
		name        string
		content     string
		wantIDs     []string
		wantErr     []string // substrings of the error
		mustNotLeak string   // must not appear in the error
	}{
		{
			name:    "one key",
			content: "a:" + keyB64(1) + "\n",
			wantIDs: []string{"a"},
		},
		{
			name:    "comments, blank lines, spaces and no final newline",
			content: "# header\n\n  a : " + keyB64(1) + "  \n# more\nb.c_d-9:" + keyB64(2),
			wantIDs: []string{"a", "b.c_d-9"},
		},
		{
			name:    "empty file",
			content: "# only a comment\n\n",
			wantErr: []string{"holds no keys"},
		},
		{
			name:        "no colon",
			content:     "a:" + keyB64(1) + "\n" + keyB64(2) + "\n",
			wantErr:     []string{"line 2 is corrupt", "no ':'"},
			mustNotLeak: keyB64(2),
		},
		{
			name:    "bad id characters",
			content: "a b:" + keyB64(1) + "\n",
			wantErr: []string{"line 1 is corrupt", "key ID"},
		},
		{
			name:    "id too long",
			content: strings.Repeat("x", 65) + ":" + keyB64(1) + "\n",
			wantErr: []string{"line 1 is corrupt", "1-64"},
		},
		{
			name:        "bad base64",
			content:     "# c\na:" + keyB64(1)[:10] + "!!\n",
			wantErr:     []string{"line 2", `"a"`, "not valid base64"},
			mustNotLeak: keyB64(1)[:10],
		},
		{
			name:        "short key",
			content:     "a:" + short + "\n",
			wantErr:     []string{"line 1", "16-byte key, want 32"},
			mustNotLeak: short,
		},
		{
			name:    "duplicate id",
			content: "a:" + keyB64(1) + "\nb:" + keyB64(2) + "\na:" + keyB64(3) + "\n",
			wantErr: []string{`"a" appears on lines 1 and 3`, "unique"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeKeyFile(t, tt.content)
			ids, primary, err := ReadKeyIDs(path)
			_, svcErr := NewService(path)
			if tt.wantErr == nil {
				if err != nil || svcErr != nil {
					t.Fatalf("ReadKeyIDs: %v; NewService: %v", err, svcErr)
				}
				if !slices.Equal(ids, tt.wantIDs) || primary != tt.wantIDs[len(tt.wantIDs)-1] {
					t.Fatalf("got IDs %v primary %q, want %v with the last as primary", ids, primary, tt.wantIDs)
				}
				return
			}
			for _, e := range []error{err, svcErr} {
				if e == nil {
					t.Fatalf("no error, want one containing %q", tt.wantErr)
				}
				for _, w := range append(tt.wantErr, path) {
					if !strings.Contains(e.Error(), w) {
						t.Errorf("error %q lacks %q", e, w)
					}
				}
				if tt.mustNotLeak != "" && strings.Contains(e.Error(), tt.mustNotLeak) {
					t.Errorf("error %q contains key material", e)
				}
			}
		})
	}
}

func TestKeyFilePermissions(t *testing.T) {
	tests := []struct {
		mode    os.FileMode
		wantErr bool
	}{
		{0o600, false},
		{0o400, false},
		{0o640, false}, // a Secret volume with fsGroup: root-owned, group-readable
		{0o440, false},
		{0o604, true},
		{0o660, true},
		{0o644, true},
	}
	for _, tt := range tests {
		t.Run(tt.mode.String(), func(t *testing.T) {
			path := writeKeyFile(t, "a:"+keyB64(1)+"\n")
			if err := os.Chmod(path, tt.mode); err != nil {
				t.Fatal(err)
			}
			checks := map[string]func() error{
				"NewService": func() error { _, err := NewService(path); return err },
				"ReadKeyIDs": func() error { _, _, err := ReadKeyIDs(path); return err },
				"AddKey":     func() error { _, err := AddKey(path); return err },
			}
			for name, check := range checks {
				if name == "AddKey" && !tt.wantErr {
					continue // would change the file for the other checks
				}
				err := check()
				if !tt.wantErr {
					if err != nil {
						t.Errorf("%s: %v", name, err)
					}
					continue
				}
				if err == nil || !strings.Contains(err.Error(), "chmod 600 "+path) {
					t.Errorf("%s: error %v, want a refusal that says `chmod 600 %s`", name, err, path)
				}
			}
		})
	}
}

func TestMissingKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope")
	for name, err := range map[string]error{
		"NewService": func() error { _, err := NewService(path); return err }(),
		"AddKey":     func() error { _, err := AddKey(path); return err }(),
		"RemoveKey":  RemoveKey(path, "a"),
		"ReadKeyIDs": func() error { _, _, err := ReadKeyIDs(path); return err }(),
	} {
		if err == nil || !strings.Contains(err.Error(), "does not exist") || !strings.Contains(err.Error(), "cellfed-kms generate") {
			t.Errorf("%s: error %v, want one saying the file does not exist and how to create it", name, err)
		}
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("a failed call created %s", path)
	}
}

func TestGenerateAddRemove(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "dir")
	path := filepath.Join(dir, "keys")

	first, err := GenerateKeyFile(path)
	if err != nil {
		t.Fatalf("GenerateKeyFile: %v", err)
	}
	if !keyIDPattern.MatchString(first) || !strings.HasPrefix(first, "k-") {
		t.Errorf("generated key ID %q is not of the form k-<time>-<hex>", first)
	}
	assertMode(t, dir, 0o700)
	assertMode(t, path, 0o600)
	if _, err := GenerateKeyFile(path); err == nil || !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("GenerateKeyFile over an existing file: %v, want a refusal", err)
	}

	second, err := AddKey(path)
	if err != nil {
		t.Fatalf("AddKey: %v", err)
	}
	third, err := AddKey(path)
	if err != nil {
		t.Fatalf("AddKey: %v", err)
	}
	assertMode(t, path, 0o600)
	ids, primary, err := ReadKeyIDs(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{first, second, third}; !slices.Equal(ids, want) || primary != third {
		t.Fatalf("after two AddKey: IDs %v primary %q, want %v primary %q", ids, primary, want, third)
	}
	for i := 1; i < len(ids); i++ { // "k-" and the UTC time sort by creation
		if ids[i-1][:18] > ids[i][:18] {
			t.Errorf("key IDs %v do not sort by creation time", ids)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), "# cellfed-kms key file") {
		t.Errorf("AddKey dropped the file's header comment:\n%s", data)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".*tmp*")); len(leftovers) > 0 {
		t.Errorf("temporary files left behind: %v", leftovers)
	}

	for _, tt := range []struct {
		id      string
		wantErr string
	}{
		{third, "primary"},
		{"k-unknown", "holds no key"},
		{second, ""},
		{first, ""},
		{third, "only key"},
	} {
		err := RemoveKey(path, tt.id)
		if tt.wantErr == "" && err != nil {
			t.Errorf("RemoveKey(%s): %v", tt.id, err)
		}
		if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("RemoveKey(%s): error %v, want one containing %q", tt.id, err, tt.wantErr)
		}
	}
	ids, primary, err = ReadKeyIDs(path)
	if err != nil || !slices.Equal(ids, []string{third}) || primary != third {
		t.Fatalf("after removals: IDs %v primary %q err %v, want only %s", ids, primary, err, third)
	}
	assertMode(t, path, 0o600)
}

func TestAddKeyCorruptFile(t *testing.T) {
	content := "a:" + keyB64(1) + "\nbroken\n"
	path := writeKeyFile(t, content)
	if _, err := AddKey(path); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("AddKey on a corrupt file: %v, want an error naming line 2", err)
	}
	if data, _ := os.ReadFile(path); string(data) != content {
		t.Errorf("AddKey changed a corrupt file")
	}
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s has mode %04o, want %04o", path, got, want)
	}
}

// TestConcurrentAddKey: AddKey calls running at once all keep their key.
func TestConcurrentAddKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys")
	if _, err := GenerateKeyFile(path); err != nil {
		t.Fatal(err)
	}
	const n = 8
	added := make(chan string, n)
	errs := make(chan error, n)
	for range n {
		go func() {
			id, err := AddKey(path)
			added <- id
			errs <- err
		}()
	}
	want := map[string]bool{}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
		want[<-added] = true
	}
	ids, _, err := ReadKeyIDs(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		delete(want, id)
	}
	if len(ids) != n+1 || len(want) > 0 {
		t.Errorf("after %d concurrent AddKey calls the file holds %d keys %v; lost %v", n, len(ids), ids, want)
	}
}
