package registration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cellfed/cellfed/pkg/pki"
)

// State is what the agent keeps across restarts: its current key and
// certificate, and the key of a certificate request still outstanding.
type State struct {
	// Cert and Key are the current pair (PEM); nil before the first
	// approval.
	Cert, Key []byte
	// Since is when the agent received Cert: its lifetime counts from
	// there (the plane backdates notBefore for clock skew).
	Since time.Time
	// PendingKey is the key of the request the plane has not signed yet
	// (PEM), reused by a restart while waiting.
	PendingKey []byte
}

// Store keeps the State: in a directory (--state-dir) or in a Secret of
// the member (--state-secret), so that a rescheduled agent keeps its
// identity.
type Store interface {
	// Load returns the stored state; the zero State when there is none.
	Load(ctx context.Context) (State, error)
	// Save replaces the stored state with want and returns the state now
	// stored: want, or, when another writer stored a newer certificate
	// meanwhile, the merge of both (MergeState).
	Save(ctx context.Context, want State) (State, error)
	// String names the store in messages, as the flag that chose it.
	String() string
}

// MergeState is what to store when ours is written over stored, written
// by another agent of the same cluster since ours was read: the pair
// whose certificate expires last (an unreadable certificate counts as
// the oldest; on a tie, ours), and the pending key stored first (so two
// agents send the same request), unless ours just consumed it.
func MergeState(stored, ours State) State {
	out := ours
	if certNewer(stored.Cert, ours.Cert) {
		out.Cert, out.Key, out.Since = stored.Cert, stored.Key, stored.Since
	}
	switch {
	case ours.PendingKey != nil && stored.PendingKey != nil:
		out.PendingKey = stored.PendingKey
	case ours.PendingKey == nil && !bytes.Equal(stored.PendingKey, ours.Key):
		// ours stored a new pair from our own pending key; another
		// request in flight stays.
		out.PendingKey = stored.PendingKey
	}
	if bytes.Equal(out.PendingKey, out.Key) {
		out.PendingKey = nil
	}
	return out
}

// certNewer reports whether certificate a (PEM) expires after b.
func certNewer(a, b []byte) bool {
	ca, err := pki.ParseCertificatePEM(a)
	if err != nil {
		return false
	}
	cb, err := pki.ParseCertificatePEM(b)
	if err != nil {
		return true
	}
	return ca.NotAfter.After(cb.NotAfter)
}

// Files of the state dir. The key files are 0600.
const (
	certFile       = "agent.crt"
	keyFile        = "agent.key"
	pendingKeyFile = "pending.key"
)

// dirStore keeps the State in files of a directory.
type dirStore struct{ dir string }

// NewDirStore returns a Store in dir, created (0700) if missing.
func NewDirStore(dir string) (Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating --state-dir %s: %w", dir, err)
	}
	return dirStore{dir: dir}, nil
}

func (s dirStore) String() string { return "--state-dir " + s.dir }

func (s dirStore) Load(context.Context) (State, error) {
	var st State
	for _, f := range []struct {
		name string
		dst  *[]byte
	}{{certFile, &st.Cert}, {keyFile, &st.Key}, {pendingKeyFile, &st.PendingKey}} {
		b, err := os.ReadFile(filepath.Join(s.dir, f.name))
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return State{}, fmt.Errorf("reading %s: %w", filepath.Join(s.dir, f.name), err)
		default:
			*f.dst = b
		}
	}
	if fi, err := os.Stat(filepath.Join(s.dir, certFile)); err == nil {
		st.Since = fi.ModTime()
	}
	return st, nil
}

// Save writes each file atomically; the key before its certificate, so
// a crash between leaves a pair that does not match (refused, with what
// to delete) rather than a certificate without its key.
func (s dirStore) Save(_ context.Context, want State) (State, error) {
	for _, f := range []struct {
		name string
		data []byte
	}{{keyFile, want.Key}, {certFile, want.Cert}, {pendingKeyFile, want.PendingKey}} {
		path := filepath.Join(s.dir, f.name)
		if f.data == nil {
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return State{}, fmt.Errorf("removing %s: %w", path, err)
			}
			continue
		}
		if err := writeFileAtomic(path, f.data); err != nil {
			return State{}, err
		}
	}
	if want.Cert != nil && !want.Since.IsZero() {
		if err := os.Chtimes(filepath.Join(s.dir, certFile), want.Since, want.Since); err != nil {
			return State{}, fmt.Errorf("dating %s: %w", filepath.Join(s.dir, certFile), err)
		}
	}
	return want, nil
}

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	return nil
}
