package registration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// testCert is a self-signed certificate (PEM) expiring at notAfter.
func testCert(t *testing.T, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(notAfter.Unix()), Subject: pkix.Name{CommonName: "cellfed:agent:edge-1"},
		NotBefore: notAfter.Add(-time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestMergeState(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	older, newer := testCert(t, now.Add(time.Hour)), testCert(t, now.Add(2*time.Hour))
	k1, k2, k3 := []byte("key-1"), []byte("key-2"), []byte("key-3")
	for _, tc := range []struct {
		name         string
		stored, ours State
		want         State
	}{
		{"ours is newer: ours wins",
			State{Cert: older, Key: k1, Since: now}, State{Cert: newer, Key: k2, Since: now.Add(time.Minute)},
			State{Cert: newer, Key: k2, Since: now.Add(time.Minute)}},
		{"stored is newer: the newer certificate is never lost",
			State{Cert: newer, Key: k2, Since: now.Add(time.Minute)}, State{Cert: older, Key: k1, Since: now},
			State{Cert: newer, Key: k2, Since: now.Add(time.Minute)}},
		{"a tie: ours",
			State{Cert: older, Key: k1}, State{Cert: older, Key: k2},
			State{Cert: older, Key: k2}},
		{"stored unreadable: ours",
			State{Cert: []byte("garbage"), Key: k1}, State{Cert: older, Key: k2},
			State{Cert: older, Key: k2}},
		{"ours has none yet: stored",
			State{Cert: older, Key: k1}, State{PendingKey: k3},
			State{Cert: older, Key: k1, PendingKey: k3}},
		{"two pending keys: the first stored, so both agents send one request",
			State{Cert: older, Key: k1, PendingKey: k2}, State{Cert: older, Key: k1, PendingKey: k3},
			State{Cert: older, Key: k1, PendingKey: k2}},
		{"ours consumed the stored pending key",
			State{Cert: older, Key: k1, PendingKey: k2}, State{Cert: newer, Key: k2},
			State{Cert: newer, Key: k2}},
		{"another request in flight stays",
			State{Cert: older, Key: k1, PendingKey: k3}, State{Cert: newer, Key: k2},
			State{Cert: newer, Key: k2, PendingKey: k3}},
		{"a stored pending key that became the stored pair is dropped",
			State{Cert: newer, Key: k2, PendingKey: k2}, State{Cert: older, Key: k1, PendingKey: k2},
			State{Cert: newer, Key: k2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := MergeState(tc.stored, tc.ours); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("MergeState = %+v, want %+v", summary(got), summary(tc.want))
			}
		})
	}
}

func summary(s State) map[string]any {
	return map[string]any{"cert": len(s.Cert), "key": string(s.Key), "pending": string(s.PendingKey), "since": s.Since}
}

// TestDirStore: the files keep their names and modes (existing state dirs
// go on working), nil removes a file, and Since is the certificate's
// modification time.
func TestDirStore(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "state")
	s, err := NewDirStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := s.Load(ctx); err != nil || !reflect.DeepEqual(st, State{}) {
		t.Fatalf("empty dir: %+v, %v", st, err)
	}
	since := time.Date(2026, 11, 26, 10, 0, 0, 0, time.Local)
	want := State{Cert: []byte("cert"), Key: []byte("key"), Since: since, PendingKey: []byte("pending")}
	if _, err := s.Save(ctx, want); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"agent.crt": "cert", "agent.key": "key", "pending.key": "pending"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		fi, serr := os.Stat(filepath.Join(dir, name))
		if err != nil || serr != nil || string(b) != data || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %q %v, mode %v", name, b, err, fi)
		}
	}
	got, err := s.Load(ctx)
	if err != nil || !got.Since.Equal(since) || string(got.Cert) != "cert" || string(got.PendingKey) != "pending" {
		t.Errorf("Load = %+v, %v", summary(got), err)
	}
	if _, err := s.Save(ctx, State{Cert: []byte("cert2"), Key: []byte("key2"), Since: since}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "pending.key")); !os.IsNotExist(err) {
		t.Errorf("pending.key after a save without one: %v", err)
	}
	if !strings.HasPrefix(s.String(), "--state-dir ") {
		t.Errorf("String() = %q", s.String())
	}
}

func TestParseStateSecret(t *testing.T) {
	for _, tc := range []struct {
		flag, podNS      string
		wantNS, wantName string
		wantErr          string
	}{
		{"cellfed-agent-state", "cellfed-agent", "cellfed-agent", "cellfed-agent-state", ""},
		{"edge/agent-state", "cellfed-agent", "edge", "agent-state", ""},
		{"edge/agent.state", "", "edge", "agent.state", ""},
		{"agent-state", "", "", "", "names no namespace"},
		{"edge/Agent", "", "", "", "is not a Secret name"},
		{"Edge/agent", "", "", "", "is not a namespace name"},
		{"edge/", "", "", "", "is not a Secret name"},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			ns, name, err := ParseStateSecret(tc.flag, tc.podNS)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %v, want %q", err, tc.wantErr)
				}
			case err != nil || ns != tc.wantNS || name != tc.wantName:
				t.Errorf("= %q, %q, %v; want %q, %q", ns, name, err, tc.wantNS, tc.wantName)
			}
		})
	}
}
