package propagation

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestAnswered: a create the member refused is known not to have landed;
// one whose connection broke (an agent or tunnel dying mid-request) may
// have, and create then keeps the cluster in the record (present), so a
// later deletion visits it (found by the fault soak: an object left on a
// tunnelled member after its federated object was deleted).
func TestAnswered(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"refused by the member", apierrors.NewForbidden(gr, "web", errors.New("no")), true},
		{"invalid", apierrors.NewBadRequest("bad"), true},
		{"wrapped status", fmt.Errorf("creating: %w", apierrors.NewAlreadyExists(gr, "web")), true},
		{"connection reset mid-request", &url.Error{Op: "Post", URL: "https://member/api", Err: syscall.ECONNRESET}, false},
		{"unexpected EOF", &url.Error{Op: "Post", URL: "https://member/api", Err: io.ErrUnexpectedEOF}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := answered(tc.err); got != tc.want {
				t.Fatalf("answered(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
