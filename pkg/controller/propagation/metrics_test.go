package propagation

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestSince(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newSince(newObjects(), propagatingMark)
	s.start("ns/a", 1, t0)
	s.start("ns/a", 1, t0.Add(time.Second)) // the same generation again: the first stays
	if d, ok := s.finish("ns/a", 2, t0.Add(2*time.Second)); ok {
		t.Fatalf("finished generation 2 while 1 waits: %v", d)
	}
	if d, ok := s.finish("ns/a", 1, t0.Add(2*time.Second)); !ok || d != 2*time.Second {
		t.Errorf("finish = %v %v, want 2s from the first observation", d, ok)
	}
	if _, ok := s.finish("ns/a", 1, t0.Add(3*time.Second)); ok {
		t.Error("finished twice")
	}
	s.start("ns/b", 1, t0)
	s.start("ns/b", 2, t0.Add(time.Second)) // overtaken: generation 2 from its own observation
	if d, ok := s.finish("ns/b", 2, t0.Add(3*time.Second)); !ok || d != 2*time.Second {
		t.Errorf("finish of the newer generation = %v %v, want 2s", d, ok)
	}
	s.start("ns/c", 0, t0)
	if d, ok := s.finish("ns/c", -1, t0.Add(time.Second)); !ok || d != time.Second {
		t.Errorf("finish of any generation = %v %v, want 1s", d, ok)
	}
	s.start("ns/d", 1, t0)
	s.forget("ns/d")
	if n := s.objs.len(); n != 0 {
		t.Errorf("waits left for %d objects", n)
	}
}

func TestErrorReason(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	tests := []struct {
		err  error
		want string
	}{
		{apierrors.NewNotFound(gr, "a"), "NotFound"},
		{apierrors.NewConflict(gr, "a", errors.New("x")), "Conflict"},
		{fmt.Errorf("wrapped: %w", context.DeadlineExceeded), "Timeout"},
		{apierrors.NewGenericServerResponse(502, "GET", gr, "a", "", 0, false), "InternalError"},
		{errors.New("connection refused"), "Unknown"},
	}
	for _, tc := range tests {
		if got := errorReason(tc.err); got != tc.want {
			t.Errorf("errorReason(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
