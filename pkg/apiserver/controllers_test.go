package apiserver

import (
	"context"
	"os"
	"regexp"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestLeaseHolderIdentity: a replica's Lease holder identity is
// <hostname>_<uuid>, made anew at each start: nothing in it names the
// replica's address, and a restarted replica is another holder.
func TestLeaseHolderIdentity(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skipf("no hostname: %v", err)
	}
	want := regexp.MustCompile("^" + regexp.QuoteMeta(host) + "_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
	holder := func(t *testing.T, lease string) string {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		client := fake.NewClientset()
		leading := make(chan struct{})
		if err := runLeaderElected(ctx, client, lease, func(context.Context) { close(leading) }); err != nil {
			t.Fatalf("runLeaderElected: %v", err)
		}
		select {
		case <-leading:
		case <-time.After(30 * time.Second):
			t.Fatalf("lease %s: not leading after 30s, want the only replica to lead", lease)
		}
		l, err := client.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, lease, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("lease %s: %v", lease, err)
		}
		if l.Spec.HolderIdentity == nil {
			t.Fatalf("lease %s has no holder identity, want one", lease)
		}
		return *l.Spec.HolderIdentity
	}
	for _, tc := range []struct{ name, lease string }{
		{"the core controllers' Lease", controllersLease},
		{"the registration controller's Lease", registrationsLease},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first := holder(t, tc.lease)
			if !want.MatchString(first) {
				t.Errorf("holder identity %q, want %s_<uuid>", first, host)
			}
			if again := holder(t, tc.lease); again == first {
				t.Errorf("a restarted replica holds the Lease as %q again, want a new identity", again)
			} else if !want.MatchString(again) {
				t.Errorf("holder identity after a restart %q, want %s_<uuid>", again, host)
			}
		})
	}
}
