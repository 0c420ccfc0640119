package annotationrules

import "testing"

func TestMatch(t *testing.T) {
	tests := []struct {
		patterns []string
		key      string
		want     bool
	}{
		{[]string{"service.beta.kubernetes.io/*"}, "service.beta.kubernetes.io/aws-load-balancer-type", true},
		{[]string{"service.beta.kubernetes.io/*"}, "status.cafe.sofastack.io/loadbalancer", false},
		{[]string{"example.com/exact-key"}, "example.com/exact-key", true},
		{[]string{"example.com/exact-key"}, "example.com/exact-key-2", false},
		{[]string{"*.example.com/*"}, "a.b.example.com/x", true},
		{[]string{"*.example.com/*"}, "example.com/x", false},
		{[]string{"a*b*c"}, "abc", true},
		{[]string{"a*b*c"}, "axxbyyc", true},
		{[]string{"a*b*c"}, "acb", false},
		{[]string{"*"}, "anything/at-all", true},
		{nil, "x", false},
	}
	for _, tc := range tests {
		if got := Match(tc.patterns, tc.key); got != tc.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tc.patterns, tc.key, got, tc.want)
		}
	}
}

func TestValidatePattern(t *testing.T) {
	for _, ok := range []string{"service.beta.kubernetes.io/*", "example.com/exact-key", "*", "app", "*.example.com/*"} {
		if err := ValidatePattern(ok); err != nil {
			t.Errorf("ValidatePattern(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "Bad Key", "example.com/", "a/b/c", "-x"} {
		if err := ValidatePattern(bad); err == nil {
			t.Errorf("ValidatePattern(%q) = nil, want an error", bad)
		}
	}
}
