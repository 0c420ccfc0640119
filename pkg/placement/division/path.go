package division

import (
	"fmt"
	"strings"
)

// ReplicasPathField is cellfed's extension of KubeFed's FederatedTypeConfig
// naming where the target type keeps its replicas, as a JSON pointer
// (spec.replicasPath): a division writes each cell's share there, and an
// override of that path is an explicit per-cell count.
const ReplicasPathField = "replicasPath"

// DefaultReplicasPath is the replicas of the workload kinds (Deployment,
// StatefulSet, ReplicaSet) and of most custom ones.
const DefaultReplicasPath = "/spec/replicas"

// ValidateReplicasPath checks a replicas path: a normalised JSON pointer
// to a field below spec (no "~" escapes, no empty, "." or ".." segment,
// no trailing "/"). Whether the field holds an integer is the target
// type's schema's to say (admission checks it where the plane knows the
// schema).
func ValidateReplicasPath(p string) error {
	segs, err := ReplicasPathSegments(p)
	if err != nil {
		return err
	}
	if segs[0] != "spec" || len(segs) < 2 {
		return fmt.Errorf("%q is not below spec; name the field that holds the replicas, e.g. /spec/replicas", p)
	}
	return nil
}

// ReplicasPathSegments splits a replicas path into field names, refusing
// one that is not normalised.
func ReplicasPathSegments(p string) ([]string, error) {
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("%q is not a JSON pointer; write it like /spec/replicas", p)
	}
	segs := strings.Split(p[1:], "/")
	for _, s := range segs {
		switch {
		case s == "" || strings.Contains(s, "~"):
			return nil, fmt.Errorf("%q has an empty or escaped segment (\"//\", a trailing \"/\" or \"~\"); write plain field names, like /spec/replicas", p)
		case s == "." || s == "..":
			return nil, fmt.Errorf("%q is not normalised: a JSON pointer has no %q segments; name the field directly, like /spec/replicas", p, s)
		}
	}
	return segs, nil
}
