package federatedtypes

import "testing"

func TestMatchKey(t *testing.T) {
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
		if got := MatchKey(tc.patterns, tc.key); got != tc.want {
			t.Errorf("MatchKey(%q, %q) = %v, want %v", tc.patterns, tc.key, got, tc.want)
		}
	}
}

func TestValidateKeyPattern(t *testing.T) {
	for _, ok := range []string{"service.beta.kubernetes.io/*", "example.com/exact-key", "*", "app", "*.example.com/*"} {
		if err := ValidateKeyPattern(ok); err != nil {
			t.Errorf("ValidateKeyPattern(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "Bad Key", "example.com/", "a/b/c", "-x"} {
		if err := ValidateKeyPattern(bad); err == nil {
			t.Errorf("ValidateKeyPattern(%q) = nil, want an error", bad)
		}
	}
}
