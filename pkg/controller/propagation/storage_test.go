package propagation

import (
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestNotServed(t *testing.T) {
	gr := schema.GroupResource{Group: "types.kubefed.io", Resource: "federateddeployments"}
	resourceMissing := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 404, Reason: metav1.StatusReasonNotFound,
		Message: "the server could not find the requested resource",
	}}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"the version is not served", resourceMissing, true},
		{"the object is gone", apierrors.NewNotFound(gr, "web"), false},
		{"a conflict", apierrors.NewConflict(gr, "web", errors.New("changed")), false},
		{"no error", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := notServed(tc.err); got != tc.want {
				t.Errorf("notServed = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFinalizerPatches(t *testing.T) {
	f := &finalizerPatches{m: map[string]finalizerPatch{}}
	if f.pending("ns/a", "5") {
		t.Fatal("pending without a patch")
	}
	f.wrote("ns/a", "10")
	for _, tc := range []struct {
		cached string
		want   bool
	}{
		{"9", true},   // the cache has not seen the patch
		{"10", false}, // it has: forgotten
		{"9", false},  // forgotten stays forgotten
	} {
		if got := f.pending("ns/a", tc.cached); got != tc.want {
			t.Errorf("pending(cached %s) = %v, want %v", tc.cached, got, tc.want)
		}
	}
	f.wrote("ns/b", "x")
	if f.pending("ns/b", "9") {
		t.Error("a resourceVersion that is no number must not hold the reconcile back")
	}
	f.m["ns/c"] = finalizerPatch{resourceVersion: "20", at: time.Now().Add(-2 * finalizerPatchPatience)}
	if f.pending("ns/c", "19") {
		t.Error("an old patch must not hold the reconcile back forever")
	}
}
