package propagation

import (
	"errors"
	"testing"

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
