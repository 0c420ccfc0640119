package kms

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/kms/pkg/service"
)

const (
	// apiVersion is the KMS API version Status reports.
	apiVersion = "v2"
	// healthzOK is the Healthz Status reports when the plugin works.
	healthzOK = "ok"
	// nonceSize is the size of the AES-GCM nonce prepended to a ciphertext.
	nonceSize = 12
	// reloadInterval bounds how often Encrypt and Decrypt look at the key file.
	reloadInterval = time.Second
)

// keySet is one loaded version of the key file.
type keySet struct {
	aeads   map[string]cipher.AEAD
	ids     []string
	primary string
	stamp   fileStamp
}

// fileStamp identifies a version of the key file.
type fileStamp struct {
	modTime time.Time
	size    int64
}

func stampOf(fi fs.FileInfo) fileStamp {
	return fileStamp{modTime: fi.ModTime(), size: fi.Size()}
}

// Service is a KMS v2 service (k8s.io/kms/pkg/service.Service) that
// encrypts with AES-256-GCM under keys from a local key file. See the
// package documentation for the key file and rotation.
type Service struct {
	keyFile string

	mu        sync.RWMutex
	keys      *keySet
	reloadErr error     // the last reload's error, nil once a reload succeeds
	failed    fileStamp // the version of the file that failed to load
	lastCheck time.Time // when the key file was last looked at

	checkMu sync.Mutex // serializes reloads
}

var _ service.Service = (*Service)(nil)

// NewService loads keyFile and returns a Service using its keys.
func NewService(keyFile string) (*Service, error) {
	if keyFile == "" {
		return nil, errors.New("no key file given; pass the path of a key file (create one with `cellfed-kms generate`)")
	}
	ks, err := loadKeySet(keyFile)
	if err != nil {
		return nil, err
	}
	klog.InfoS("Loaded KMS key file", "keyFile", keyFile, "keyIDs", ks.ids, "primaryKeyID", ks.primary)
	return &Service{keyFile: keyFile, keys: ks, lastCheck: time.Now()}, nil
}

func loadKeySet(path string) (*keySet, error) {
	entries, _, fi, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	ks := &keySet{aeads: map[string]cipher.AEAD{}, stamp: stampOf(fi)}
	for _, e := range entries {
		block, err := aes.NewCipher(e.key)
		if err != nil {
			return nil, fmt.Errorf("key file %s: key %q: %w", path, e.id, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("key file %s: key %q: %w", path, e.id, err)
		}
		ks.aeads[e.id] = aead
		ks.ids = append(ks.ids, e.id)
	}
	ks.primary = ks.ids[len(ks.ids)-1]
	if err := selfTest(ks); err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	return ks, nil
}

// KeyFile returns the path of the key file.
func (s *Service) KeyFile() string { return s.keyFile }

// PrimaryKeyID returns the ID of the key that encrypts.
func (s *Service) PrimaryKeyID() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.keys.primary
}

// reloadIfChanged reloads the key file if its modification time or size
// changed. With force false it looks at the file at most once per
// reloadInterval. A failed reload keeps the loaded keys and is remembered
// (and returned by Status) until a reload succeeds.
func (s *Service) reloadIfChanged(force bool) {
	if !force {
		s.mu.RLock()
		due := time.Since(s.lastCheck) >= reloadInterval
		s.mu.RUnlock()
		if !due {
			return
		}
	}
	s.checkMu.Lock()
	defer s.checkMu.Unlock()
	now := time.Now()
	s.mu.RLock()
	due := force || now.Sub(s.lastCheck) >= reloadInterval
	loaded, failed, lastErr := s.keys.stamp, s.failed, s.reloadErr
	s.mu.RUnlock()
	if !due {
		return
	}
	var (
		ks    *keySet
		err   error
		stamp fileStamp
	)
	fi, statErr := os.Stat(s.keyFile)
	if statErr == nil {
		stamp = stampOf(fi)
		if stamp == loaded || (lastErr != nil && stamp == failed) {
			// Unchanged since the last load, or since the last failed load.
			s.mu.Lock()
			s.lastCheck = now
			if stamp == loaded {
				s.reloadErr, s.failed = nil, fileStamp{} // back to the loaded version
			}
			s.mu.Unlock()
			return
		}
		ks, err = loadKeySet(s.keyFile)
	} else {
		err = fmt.Errorf("key file %s: %w; restore it (from a backup) so the plugin can load its keys again", s.keyFile, statErr)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastCheck = now
	if err != nil {
		s.failed = stamp
		s.reloadErr = fmt.Errorf("reloading the KMS key file failed, still using the keys loaded before (primary %q): %w", s.keys.primary, err)
		if lastErr == nil || lastErr.Error() != s.reloadErr.Error() {
			klog.ErrorS(err, "Reloading the KMS key file failed; keeping the keys loaded before", "keyFile", s.keyFile, "primaryKeyID", s.keys.primary)
		}
		return
	}
	old := s.keys.primary
	s.keys, s.reloadErr, s.failed = ks, nil, fileStamp{}
	klog.InfoS("Reloaded KMS key file", "keyFile", s.keyFile, "keyIDs", ks.ids, "primaryKeyID", ks.primary, "previousPrimaryKeyID", old)
}

func (s *Service) current() *keySet {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.keys
}

// additionalData binds a ciphertext to the ID of the key that made it.
func additionalData(keyID string) []byte {
	return []byte("cellfed-kms/aes-256-gcm/" + keyID)
}

func seal(aead cipher.AEAD, keyID string, plaintext []byte) ([]byte, error) {
	nonce := make([]byte, nonceSize, nonceSize+len(plaintext)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("generating a nonce: %w", err)
	}
	return aead.Seal(nonce, nonce, plaintext, additionalData(keyID)), nil
}

func selfTest(ks *keySet) error {
	want := []byte("cellfed-kms self-test")
	ct, err := seal(ks.aeads[ks.primary], ks.primary, want)
	if err != nil {
		return err
	}
	got, err := open(ks, "", ks.primary, ct)
	if err != nil {
		return fmt.Errorf("self-test with primary key %q: %w", ks.primary, err)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("self-test with primary key %q: decryption returned other data", ks.primary)
	}
	return nil
}

func open(ks *keySet, keyFile, keyID string, ciphertext []byte) ([]byte, error) {
	aead, ok := ks.aeads[keyID]
	if !ok {
		if keyID == "" {
			return nil, errors.New("the decrypt request names no key ID")
		}
		return nil, fmt.Errorf("key ID %q is not in key file %s, which holds %s: the data was encrypted with a key that has since been removed; restore the retired key's line (%q) to the key file from a backup", keyID, keyFile, strings.Join(ks.ids, ", "), keyID+":...")
	}
	if len(ciphertext) < nonceSize+aead.Overhead() {
		return nil, fmt.Errorf("ciphertext for key %q is %d bytes, shorter than a nonce and tag (%d bytes): it is truncated or not from this plugin", keyID, len(ciphertext), nonceSize+aead.Overhead())
	}
	pt, err := aead.Open(nil, ciphertext[:nonceSize], ciphertext[nonceSize:], additionalData(keyID))
	if err != nil {
		return nil, fmt.Errorf("decrypting with key %q failed authentication: the ciphertext was altered or corrupted, or the key file's line for %q holds other key bytes than the key that encrypted it", keyID, keyID)
	}
	return pt, nil
}

// Encrypt encrypts plaintext with the primary key (AES-256-GCM, a random
// 12-byte nonce prepended) and returns the ciphertext and the key's ID.
func (s *Service) Encrypt(ctx context.Context, uid string, plaintext []byte) (*service.EncryptResponse, error) {
	s.reloadIfChanged(false)
	ks := s.current()
	ct, err := seal(ks.aeads[ks.primary], ks.primary, plaintext)
	if err != nil {
		klog.ErrorS(err, "KMS encrypt failed", "uid", uid, "keyID", ks.primary)
		return nil, err
	}
	return &service.EncryptResponse{Ciphertext: ct, KeyID: ks.primary}, nil
}

// Decrypt decrypts req.Ciphertext with the key req.KeyID names.
func (s *Service) Decrypt(ctx context.Context, uid string, req *service.DecryptRequest) ([]byte, error) {
	if req == nil {
		return nil, errors.New("empty decrypt request")
	}
	s.reloadIfChanged(false)
	ks := s.current()
	if _, known := ks.aeads[req.KeyID]; !known && req.KeyID != "" {
		// The key may have just been restored to the file: look now.
		s.reloadIfChanged(true)
		ks = s.current()
	}
	pt, err := open(ks, s.keyFile, req.KeyID, req.Ciphertext)
	if err != nil {
		klog.ErrorS(err, "KMS decrypt failed", "uid", uid, "keyID", req.KeyID)
		return nil, err
	}
	return pt, nil
}

// Status reloads the key file if it changed, runs an encrypt/decrypt
// self-test with the primary key and reports the primary key's ID. It
// returns an error while the key file fails to reload.
func (s *Service) Status(ctx context.Context) (*service.StatusResponse, error) {
	s.reloadIfChanged(true)
	s.mu.RLock()
	ks, reloadErr := s.keys, s.reloadErr
	s.mu.RUnlock()
	if reloadErr != nil {
		return nil, reloadErr
	}
	if err := selfTest(ks); err != nil {
		return nil, err
	}
	return &service.StatusResponse{Version: apiVersion, Healthz: healthzOK, KeyID: ks.primary}, nil
}
