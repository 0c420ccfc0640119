package kms

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/kms/pkg/service"
)

// newTestService generates a key file and loads it.
func newTestService(t *testing.T) (*Service, string) {
	t.Helper()
	path := t.TempDir() + "/keys"
	if _, err := GenerateKeyFile(path); err != nil {
		t.Fatal(err)
	}
	s, err := NewService(path)
	if err != nil {
		t.Fatal(err)
	}
	return s, path
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestEncryptDecrypt(t *testing.T) {
	ctx := context.Background()
	s, path := newTestService(t)
	if s.KeyFile() != path {
		t.Errorf("KeyFile() = %q, want %q", s.KeyFile(), path)
	}
	for _, tt := range []struct {
		name      string
		plaintext []byte
	}{
		{"empty", []byte{}},
		{"DEK seed", bytes.Repeat([]byte{7}, 32)},
		{"large", bytes.Repeat([]byte("x"), 64<<10)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := s.Encrypt(ctx, "uid", tt.plaintext)
			if err != nil {
				t.Fatal(err)
			}
			if resp.KeyID != s.PrimaryKeyID() || resp.KeyID == "" {
				t.Errorf("Encrypt KeyID %q, want the primary %q", resp.KeyID, s.PrimaryKeyID())
			}
			if want := len(tt.plaintext) + nonceSize + 16; len(resp.Ciphertext) != want {
				t.Errorf("ciphertext is %d bytes, want %d", len(resp.Ciphertext), want)
			}
			if len(tt.plaintext) > 0 && bytes.Contains(resp.Ciphertext, tt.plaintext) {
				t.Error("ciphertext contains the plaintext")
			}
			again, err := s.Encrypt(ctx, "uid", tt.plaintext)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(again.Ciphertext[:nonceSize], resp.Ciphertext[:nonceSize]) {
				t.Error("two encryptions used the same nonce")
			}
			got, err := s.Decrypt(ctx, "uid", &service.DecryptRequest{Ciphertext: resp.Ciphertext, KeyID: resp.KeyID})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.plaintext) {
				t.Error("Decrypt returned other data than was encrypted")
			}
		})
	}
}

func TestDecryptErrors(t *testing.T) {
	ctx := context.Background()
	s, path := newTestService(t)
	primary := s.PrimaryKeyID()
	resp, err := s.Encrypt(ctx, "uid", []byte("data encryption key"))
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte {
		c := bytes.Clone(resp.Ciphertext)
		c[i] ^= 1
		return c
	}
	// A second key lets a ciphertext be presented under the wrong ID.
	other, err := AddKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Status(ctx); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		req     *service.DecryptRequest
		wantErr []string
	}{
		{"unknown key ID", &service.DecryptRequest{Ciphertext: resp.Ciphertext, KeyID: "k-retired"},
			[]string{`"k-retired"`, path, primary, other, "restore the retired key"}},
		{"no key ID", &service.DecryptRequest{Ciphertext: resp.Ciphertext}, []string{"no key ID"}},
		{"tampered body", &service.DecryptRequest{Ciphertext: flip(len(resp.Ciphertext) - 20), KeyID: primary},
			[]string{"failed authentication", "altered or corrupted"}},
		{"tampered nonce", &service.DecryptRequest{Ciphertext: flip(0), KeyID: primary}, []string{"failed authentication"}},
		{"tampered tag", &service.DecryptRequest{Ciphertext: flip(len(resp.Ciphertext) - 1), KeyID: primary}, []string{"failed authentication"}},
		{"wrong key ID", &service.DecryptRequest{Ciphertext: resp.Ciphertext, KeyID: other}, []string{"failed authentication"}},
		{"truncated", &service.DecryptRequest{Ciphertext: resp.Ciphertext[:20], KeyID: primary}, []string{"truncated"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pt, err := s.Decrypt(ctx, "uid", tt.req)
			if err == nil {
				t.Fatalf("Decrypt succeeded (%d bytes), want an error", len(pt))
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	// The untampered ciphertext still decrypts.
	if _, err := s.Decrypt(ctx, "uid", &service.DecryptRequest{Ciphertext: resp.Ciphertext, KeyID: primary}); err != nil {
		t.Errorf("the original ciphertext no longer decrypts: %v", err)
	}
}

func TestRotation(t *testing.T) {
	ctx := context.Background()
	s, path := newTestService(t)
	st, err := s.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old := st.KeyID
	if st.Version != "v2" || st.Healthz != "ok" || old != s.PrimaryKeyID() {
		t.Fatalf("Status = %+v, want v2, ok, KeyID %q", st, s.PrimaryKeyID())
	}
	oldResp, err := s.Encrypt(ctx, "uid", []byte("old secret"))
	if err != nil {
		t.Fatal(err)
	}

	newID, err := AddKey(path)
	if err != nil {
		t.Fatal(err)
	}
	// Status looks at the file on every call.
	st, err = s.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.KeyID != newID || s.PrimaryKeyID() != newID {
		t.Fatalf("after AddKey Status KeyID %q, PrimaryKeyID %q, want %q", st.KeyID, s.PrimaryKeyID(), newID)
	}
	resp, err := s.Encrypt(ctx, "uid", []byte("new secret"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.KeyID != newID {
		t.Errorf("Encrypt after the reload used %q, want %q", resp.KeyID, newID)
	}
	got, err := s.Decrypt(ctx, "uid", &service.DecryptRequest{Ciphertext: oldResp.Ciphertext, KeyID: old})
	if err != nil || string(got) != "old secret" {
		t.Fatalf("decrypting with the old key after rotation: %q, %v", got, err)
	}

	// Retiring the old key makes its ciphertexts undecryptable, with a
	// message that names the key.
	backup, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := RemoveKey(path, old); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Status(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = s.Decrypt(ctx, "uid", &service.DecryptRequest{Ciphertext: oldResp.Ciphertext, KeyID: old})
	if err == nil || !strings.Contains(err.Error(), old) || !strings.Contains(err.Error(), newID) {
		t.Errorf("decrypting with a removed key: %v, want an error naming %s and the held %s", err, old, newID)
	}

	// Restoring the key's line fixes that at once, without a Status call.
	if err := writeFileAtomic(path, backup); err != nil {
		t.Fatal(err)
	}
	got, err = s.Decrypt(ctx, "uid", &service.DecryptRequest{Ciphertext: oldResp.Ciphertext, KeyID: old})
	if err != nil || string(got) != "old secret" {
		t.Fatalf("decrypting with a restored key: %q, %v", got, err)
	}
}

func TestEncryptNoticesNewKeyWithoutStatus(t *testing.T) {
	ctx := context.Background()
	s, path := newTestService(t)
	newID, err := AddKey(path)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*reloadInterval, "Encrypt to use the added key", func() bool {
		resp, err := s.Encrypt(ctx, "uid", []byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		return resp.KeyID == newID
	})
}

func TestFailedReloadKeepsKeys(t *testing.T) {
	ctx := context.Background()
	s, path := newTestService(t)
	primary := s.PrimaryKeyID()
	resp, err := s.Encrypt(ctx, "uid", []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		name    string
		breakIt func() error
		wantErr string
	}{
		{"corrupt line", func() error {
			return writeFileAtomic(path, append(bytes.Clone(good), "garbage without colon\n"...))
		}, "line 6 is corrupt"},
		{"world readable", func() error { return os.Chmod(path, 0o604) }, "chmod 600"},
		{"removed", func() error { return os.Remove(path) }, "restore it"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.breakIt(); err != nil {
				t.Fatal(err)
			}
			// Changing only the mode does not change mtime or size; make the
			// change visible as the size would be after an edit.
			if fi, err := os.Stat(path); err == nil && fi.Size() == int64(len(good)) {
				future := time.Now().Add(time.Hour)
				if err := os.Chtimes(path, future, future); err != nil {
					t.Fatal(err)
				}
			}
			_, err := s.Status(ctx)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "still using the keys loaded before") {
				t.Fatalf("Status after breaking the key file: %v, want an error containing %q", err, tt.wantErr)
			}
			for _, k := range keyMaterial(good) {
				if strings.Contains(err.Error(), k) {
					t.Errorf("Status error contains key material: %v", err)
				}
			}
			if s.PrimaryKeyID() != primary {
				t.Errorf("primary changed to %q after a failed reload", s.PrimaryKeyID())
			}
			again, err := s.Encrypt(ctx, "uid", []byte("more"))
			if err != nil || again.KeyID != primary {
				t.Errorf("Encrypt after a failed reload: %+v, %v; want the old primary %q", again, err, primary)
			}
			got, err := s.Decrypt(ctx, "uid", &service.DecryptRequest{Ciphertext: resp.Ciphertext, KeyID: primary})
			if err != nil || string(got) != "secret" {
				t.Errorf("Decrypt after a failed reload: %q, %v", got, err)
			}
			// The error persists until the file is fixed.
			if _, err := s.Status(ctx); err == nil {
				t.Error("a second Status call forgot the failed reload")
			}

			// Restoring the file makes Status healthy again.
			if err := writeFileAtomic(path, good); err != nil {
				t.Fatal(err)
			}
			st, err := s.Status(ctx)
			if err != nil || st.KeyID != primary || st.Healthz != "ok" {
				t.Fatalf("Status after restoring the key file: %+v, %v", st, err)
			}
		})
	}
}

// keyMaterial returns the base64 keys of a key file.
func keyMaterial(data []byte) []string {
	var keys []string
	for _, l := range strings.Split(string(data), "\n") {
		if _, k, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(l, "#") {
			keys = append(keys, strings.TrimSpace(k))
		}
	}
	return keys
}

// TestCiphertextBoundToKeyID: a ciphertext only decrypts under the key ID
// it was made with, even where two IDs hold the same key bytes.
func TestCiphertextBoundToKeyID(t *testing.T) {
	ctx := context.Background()
	path := writeKeyFile(t, "a:"+keyB64(9)+"\nb:"+keyB64(9)+"\n")
	s, err := NewService(path)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.Encrypt(ctx, "uid", []byte("seed"))
	if err != nil || resp.KeyID != "b" {
		t.Fatalf("Encrypt: %+v, %v; want key b", resp, err)
	}
	if _, err := s.Decrypt(ctx, "uid", &service.DecryptRequest{Ciphertext: resp.Ciphertext, KeyID: "b"}); err != nil {
		t.Fatalf("Decrypt under b: %v", err)
	}
	if _, err := s.Decrypt(ctx, "uid", &service.DecryptRequest{Ciphertext: resp.Ciphertext, KeyID: "a"}); err == nil || !strings.Contains(err.Error(), "failed authentication") {
		t.Errorf("Decrypt under a: %v, want an authentication failure", err)
	}
}
