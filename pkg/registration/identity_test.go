package registration

import (
	"crypto/x509"
	"testing"
	"time"
)

func TestRenewAt(t *testing.T) {
	received := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	id := &Identity{leaf: &x509.Certificate{NotBefore: received.Add(-5 * time.Minute), NotAfter: received.Add(30 * time.Second)}, since: received}
	if got, want := id.renewAt(2.0/3.0), received.Add(20*time.Second); !got.Equal(want) {
		t.Errorf("renewAt = %s, want %s (two thirds from receipt, not from the backdated notBefore)", got, want)
	}
	id.since = received.Add(-time.Hour) // a file older than the certificate
	id.leaf.NotBefore = received
	if got, want := id.renewAt(0.5), received.Add(15*time.Second); !got.Equal(want) {
		t.Errorf("renewAt = %s, want %s (from notBefore when it is later)", got, want)
	}
}
