package admission

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestTraceparentAfter(t *testing.T) {
	const (
		a   = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
		b   = "00-1af7651916cd43dd8448eb211c80319c-c7ad6b7169203331-01"
		req = "00-2af7651916cd43dd8448eb211c80319c-d7ad6b7169203331-01"
	)
	for _, tc := range []struct {
		name, old, written, request, want string
	}{
		{name: "create traced", request: req, want: req},
		{name: "update keeps no stale trace", old: a, written: a, request: req, want: req},
		{name: "user sets it on create", written: a, request: req, want: a},
		{name: "user changes it", old: a, written: b, request: req, want: b},
		{name: "untraced request keeps the object's", old: a, written: a, want: a},
		{name: "user removes it, untraced", old: a, want: ""},
		{name: "user removes it, traced", old: a, request: req, want: req},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := traceparentAfter(tc.old, tc.written, tc.request); got != tc.want {
				t.Errorf("traceparentAfter(%q, %q, %q) = %q, want %q", tc.old, tc.written, tc.request, got, tc.want)
			}
		})
	}
}

func TestTraced(t *testing.T) {
	for _, tc := range []struct {
		gr   schema.GroupResource
		want bool
	}{
		{schema.GroupResource{Group: "types.kubefed.io", Resource: "federateddeployments"}, true},
		{schema.GroupResource{Group: "apps", Resource: "deployments"}, true},
		{schema.GroupResource{Resource: "configmaps"}, true},
		{schema.GroupResource{Group: "autoscaling", Resource: "horizontalpodautoscalers"}, true},
		{schema.GroupResource{Resource: "events"}, false},
		{schema.GroupResource{Resource: "namespaces"}, false},
		{schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, false},
		{schema.GroupResource{Group: "core.cellfed.io", Resource: "cells"}, false},
		{schema.GroupResource{Group: "example.com", Resource: "deployments"}, false},
	} {
		if got := traced(tc.gr); got != tc.want {
			t.Errorf("traced(%v) = %v, want %v", tc.gr, got, tc.want)
		}
	}
}
