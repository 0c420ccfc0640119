// Package annotationrules is the rule that says which annotations of a
// federated object's template are propagated as spec: the annotation
// key patterns a FederatedTypeConfig lists in spec.propagatingAnnotations
// (a cellfed extension of KubeFed's API, which upstream KubeFed ignores).
// Admission validates the patterns, cellfedctl enable writes them and the
// propagation controller matches member annotations against them.
package annotationrules

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Field is the FederatedTypeConfig spec field listing the annotation key
// patterns propagated as spec: spec.propagatingAnnotations.
const Field = "propagatingAnnotations"

// ValidatePattern checks an annotation key pattern: an annotation key
// (an optional DNS-subdomain prefix and "/", then a name) in which "*"
// stands for any run of characters, e.g. service.beta.kubernetes.io/* or
// example.com/exact-key.
func ValidatePattern(p string) error {
	if p == "" {
		return fmt.Errorf("an empty pattern matches nothing; remove it")
	}
	// Every "*" replaced by a letter must leave a valid key.
	if errs := validation.IsQualifiedName(strings.ReplaceAll(p, "*", "x")); len(errs) > 0 {
		return fmt.Errorf("%q is not an annotation key pattern: %s (write keys like service.beta.kubernetes.io/* or example.com/exact-key)", p, strings.Join(errs, "; "))
	}
	return nil
}

// Match reports whether key matches one of the patterns ("*" matches
// any run of characters, "/" included).
func Match(patterns []string, key string) bool {
	for _, p := range patterns {
		if matchGlob(p, key) {
			return true
		}
	}
	return false
}

func matchGlob(p, s string) bool {
	parts := strings.Split(p, "*")
	if len(parts) == 1 {
		return p == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return strings.HasSuffix(s, last)
}
