package kms

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// keySize is the length of every key: AES-256.
const keySize = 32

// keyIDPattern is the form of a key ID in the key file.
var keyIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// keyFileHeader opens a file written by GenerateKeyFile.
const keyFileHeader = `# cellfed-kms key file: one key per line, "<key-id>:<base64 of 32 bytes>".
# The last key is the primary (it encrypts); every key decrypts.
# Keep this file secret (mode 0600) and backed up: data encrypted with a
# key cannot be read once that key is lost.
`

// keyEntry is one key line of the key file.
type keyEntry struct {
	id   string
	key  []byte
	line int // 1-based line number in the file
}

// parseKeyFile parses the key file's content. Errors name the file and the
// line, never the line's content: it holds key material.
func parseKeyFile(path string, data []byte) ([]keyEntry, error) {
	var entries []keyEntry
	seen := map[string]int{}
	for i, raw := range strings.Split(string(data), "\n") {
		n := i + 1
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, enc, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("key file %s: line %d is corrupt: want \"<key-id>:<base64 key>\" (no ':' found); fix or remove the line, or restore the file from a backup", path, n)
		}
		id, enc = strings.TrimSpace(id), strings.TrimSpace(enc)
		if !keyIDPattern.MatchString(id) {
			return nil, fmt.Errorf("key file %s: line %d is corrupt: the key ID is not 1-64 characters of [A-Za-z0-9._-]; fix the line or restore the file from a backup", path, n)
		}
		key, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			return nil, fmt.Errorf("key file %s: line %d (key %q) is corrupt: the key is not valid base64; restore the line from a backup", path, n, id)
		}
		if len(key) != keySize {
			return nil, fmt.Errorf("key file %s: line %d (key %q) holds a %d-byte key, want %d bytes (AES-256); restore the line from a backup", path, n, id, len(key), keySize)
		}
		if first, dup := seen[id]; dup {
			return nil, fmt.Errorf("key file %s: key ID %q appears on lines %d and %d; key IDs must be unique: remove one of the lines (keep the one whose key encrypted your data)", path, id, first, n)
		}
		seen[id] = n
		entries = append(entries, keyEntry{id: id, key: key, line: n})
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("key file %s holds no keys; restore it from a backup, or create a new one with `cellfed-kms generate` if nothing was encrypted yet", path)
	}
	return entries, nil
}

// checkMode refuses a key file that others may read, or that anyone but
// its owner may write. Group read is allowed: a Kubernetes Secret volume
// with an fsGroup is mounted root-owned and group-readable (0440), the only
// way a non-root plugin can read it.
func checkMode(path string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("key file %s is not a regular file (%s)", path, fi.Mode().Type())
	}
	if perm := fi.Mode().Perm(); perm&0o027 != 0 {
		return fmt.Errorf("key file %s has mode %04o: others may read it or the group may write it, which exposes the keys; run `chmod 600 %s`", path, perm, path)
	}
	return nil
}

// readKeyFile reads, checks and parses the key file; it also returns the
// file's stat information as read.
func readKeyFile(path string) ([]keyEntry, []byte, fs.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, nil, fmt.Errorf("key file %s does not exist; create it with `cellfed-kms generate --key-file %s` (or restore it from a backup if data was encrypted with it)", path, path)
		}
		return nil, nil, nil, fmt.Errorf("opening key file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reading key file %s: %w", path, err)
	}
	if err := checkMode(path, fi); err != nil {
		return nil, nil, nil, err
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, nil, nil, fmt.Errorf("reading key file %s: %w", path, err)
	}
	entries, err := parseKeyFile(path, buf.Bytes())
	if err != nil {
		return nil, nil, nil, err
	}
	return entries, buf.Bytes(), fi, nil
}

// newKeyID returns a sortable key ID not in taken: k-<UTC time>-<4 hex>.
func newKeyID(now time.Time, taken map[string]bool) (string, error) {
	for range 100 {
		var b [2]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", fmt.Errorf("generating a key ID: %w", err)
		}
		id := "k-" + now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
		if !taken[id] {
			return id, nil
		}
	}
	return "", errors.New("could not find an unused key ID; the key file holds too many keys made in the same second")
}

// newKeyLine returns a new random key as a key file line, and its ID.
func newKeyLine(taken map[string]bool) (id string, line []byte, err error) {
	id, err = newKeyID(time.Now(), taken)
	if err != nil {
		return "", nil, err
	}
	key := make([]byte, keySize)
	if _, err := rand.Read(key); err != nil {
		return "", nil, fmt.Errorf("generating a key: %w", err)
	}
	return id, []byte(id + ":" + base64.StdEncoding.EncodeToString(key) + "\n"), nil
}

// GenerateKeyFile creates a new key file at path holding one new key, and
// returns its ID. Missing directories are created with mode 0700, the file
// with mode 0600. It refuses to overwrite an existing file; that error
// matches errors.Is(err, fs.ErrExist).
func GenerateKeyFile(path string) (keyID string, err error) {
	if path == "" {
		return "", errors.New("no key file path given")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("creating the key file's directory: %w", err)
	}
	id, line, err := newKeyLine(nil)
	if err != nil {
		return "", err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("key file %s: %w; refusing to overwrite it (its keys may be needed to decrypt stored data); to rotate, add a key with `cellfed-kms add-key --key-file %s`", path, fs.ErrExist, path)
		}
		return "", fmt.Errorf("creating key file: %w", err)
	}
	data := append([]byte(keyFileHeader), line...)
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return "", fmt.Errorf("writing key file %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return "", fmt.Errorf("writing key file %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return "", fmt.Errorf("writing key file %s: %w", path, err)
	}
	syncDir(filepath.Dir(path))
	return id, nil
}

// AddKey appends a new key to the key file, making it the primary, and
// returns its ID. The file is replaced atomically and keeps mode 0600.
func AddKey(path string) (keyID string, err error) {
	unlock, err := lockDir(filepath.Dir(path))
	if err != nil {
		return "", err
	}
	defer unlock()
	entries, data, _, err := readKeyFile(path)
	if err != nil {
		return "", err
	}
	taken := map[string]bool{}
	for _, e := range entries {
		taken[e.id] = true
	}
	id, line, err := newKeyLine(taken)
	if err != nil {
		return "", err
	}
	out := append([]byte(nil), data...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	out = append(out, line...)
	if err := writeFileAtomic(path, out); err != nil {
		return "", err
	}
	return id, nil
}

// RemoveKey removes the key keyID from the key file. It refuses to remove
// the primary key or the only key. Data still encrypted with the removed
// key can no longer be decrypted: rewrite it first (cellfedctl rotate-key).
func RemoveKey(path, keyID string) error {
	unlock, err := lockDir(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer unlock()
	entries, data, _, err := readKeyFile(path)
	if err != nil {
		return err
	}
	primary := entries[len(entries)-1].id
	var found *keyEntry
	for i := range entries {
		if entries[i].id == keyID {
			found = &entries[i]
		}
	}
	switch {
	case found == nil:
		return fmt.Errorf("key file %s holds no key %q (it holds %s)", path, keyID, strings.Join(ids(entries), ", "))
	case len(entries) == 1:
		return fmt.Errorf("key %q is the only key in %s; refusing to remove it (nothing could be encrypted or decrypted)", keyID, path)
	case keyID == primary:
		return fmt.Errorf("key %q is the primary key of %s (it encrypts new data); refusing to remove it: add a new key with `cellfed-kms add-key` first", keyID, path)
	}
	lines := strings.Split(string(data), "\n")
	out := make([]string, 0, len(lines))
	for i, l := range lines {
		if i+1 != found.line {
			out = append(out, l)
		}
	}
	return writeFileAtomic(path, []byte(strings.Join(out, "\n")))
}

// ReadKeyIDs returns the IDs of the keys in the key file, in file order,
// and the primary key's ID (the last).
func ReadKeyIDs(path string) (keyIDs []string, primary string, err error) {
	entries, _, _, err := readKeyFile(path)
	if err != nil {
		return nil, "", err
	}
	return ids(entries), entries[len(entries)-1].id, nil
}

func ids(entries []keyEntry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.id
	}
	return out
}

// writeFileAtomic replaces path with data: it writes a temporary file in
// the same directory with mode 0600, syncs it and renames it over path.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing key file %s: creating a temporary file beside it: %w", path, err)
	}
	name := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("writing key file %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("writing key file %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("writing key file %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing key file %s: %w", path, err)
	}
	if err := os.Rename(name, path); err != nil {
		return fmt.Errorf("writing key file %s: replacing it: %w", path, err)
	}
	ok = true
	syncDir(dir)
	return nil
}

// syncDir makes a new or renamed directory entry durable; failures are
// ignored, as some file systems do not support syncing directories.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// DefaultResources are the resources the plane encrypts with this plugin
// unless told otherwise (its --encrypted-resources): Secrets, the Secrets
// it federates (their template holds the data), ClusterRegistrations
// (an agent hands the member's service-account token over in one, before
// the plane moves it into a Secret), and TemplateRevisions (rollout
// history: templates may carry credentials in env values or config, and
// revisions written before cellfed kept a FederatedSecret's data apart
// hold it).
var DefaultResources = []string{"secrets", "federatedsecrets.types.kubefed.io", "clusterregistrations.core.cellfed.io", "templaterevisions.core.cellfed.io"}
