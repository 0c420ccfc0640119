package registration_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cellfed/cellfed/pkg/registration"
	"github.com/cellfed/cellfed/test/framework"
)

func certExpiring(t *testing.T, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(notAfter.UnixNano()), Subject: pkix.Name{CommonName: "cellfed:agent:edge-1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestSecretStore keeps the agent's state in a Secret of a real
// kube-apiserver: a second store (a rescheduled pod) reads what the
// first wrote, and a store writing from a stale read never replaces a
// newer certificate (resourceVersion-guarded update, then MergeState).
func TestSecretStore(t *testing.T) {
	t.Parallel()
	member := framework.StartMember(t, "state")
	ctx := context.Background()
	c := member.Client(t)
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cellfed-agent"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a := registration.NewSecretStore(c, "cellfed-agent", "cellfed-agent-state", "edge-1")
	b := registration.NewSecretStore(c, "cellfed-agent", "cellfed-agent-state", "edge-1")
	if st, err := a.Load(ctx); err != nil || st.Cert != nil {
		t.Fatalf("no Secret yet: %+v, %v", st, err)
	}
	if _, err := b.Load(ctx); err != nil {
		t.Fatal(err)
	}
	since := time.Now().Truncate(time.Second)
	older, newer := certExpiring(t, time.Now().Add(time.Hour)), certExpiring(t, time.Now().Add(2*time.Hour))

	// a creates the Secret with the newer pair.
	if kept, err := a.Save(ctx, registration.State{Cert: newer, Key: []byte("key-new"), Since: since}); err != nil || string(kept.Cert) != string(newer) {
		t.Fatalf("first save: %v", err)
	}
	// b, which read before a created it, stores an older pair: the create
	// fails, b merges and keeps a's newer pair.
	kept, err := b.Save(ctx, registration.State{Cert: older, Key: []byte("key-old"), Since: since})
	if err != nil {
		t.Fatal(err)
	}
	if string(kept.Cert) != string(newer) || string(kept.Key) != "key-new" {
		t.Errorf("b's stale save kept key %q, want a's newer pair", kept.Key)
	}
	sec, err := c.CoreV1().Secrets("cellfed-agent").Get(ctx, "cellfed-agent-state", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(sec.Data["tls.crt"]) != string(newer) || string(sec.Data["tls.key"]) != "key-new" || sec.Labels["cellfed.io/registered-cluster"] != "edge-1" {
		t.Errorf("Secret after the stale save: key %q labels %v", sec.Data["tls.key"], sec.Labels)
	}

	// A fresh store (a rescheduled pod) loads the pair and its date.
	c2 := registration.NewSecretStore(c, "cellfed-agent", "cellfed-agent-state", "edge-1")
	st, err := c2.Load(ctx)
	if err != nil || string(st.Key) != "key-new" || !st.Since.Equal(since) {
		t.Errorf("a new store loaded key %q since %v (%v), want key-new since %v", st.Key, st.Since, err, since)
	}

	// a, now stale, saves a pending key: its update conflicts, and the
	// merge keeps the pair and adds the pending key.
	if _, err := c2.Save(ctx, registration.State{Cert: st.Cert, Key: st.Key, Since: st.Since, PendingKey: []byte("pending-c2")}); err != nil {
		t.Fatal(err)
	}
	kept, err = a.Save(ctx, registration.State{Cert: newer, Key: []byte("key-new"), Since: since, PendingKey: []byte("pending-a")})
	if err != nil {
		t.Fatal(err)
	}
	if string(kept.PendingKey) != "pending-c2" {
		t.Errorf("after a conflicting pending key, kept %q, want the first stored (pending-c2)", kept.PendingKey)
	}
}
