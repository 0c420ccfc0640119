package board

import (
	"encoding/json"
	"fmt"

	"github.com/pmezard/go-difflib/difflib"
	"sigs.k8s.io/yaml"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/rollout"
)

// revisionYAML is a revision's template and overrides as YAML, a
// Secret kind's values as digests (rollout.Redact: revisions recorded
// before cellfed redacted them included), so a diff says which value
// changed and never what it holds.
func revisionYAML(r *cellv1alpha1.TemplateRevision) (string, error) {
	r, err := rollout.Redact(r)
	if err != nil {
		return "", err
	}
	v := map[string]any{}
	for field, raw := range map[string][]byte{"template": r.Spec.Template.Raw, "overrides": r.Spec.Overrides.Raw} {
		if len(raw) == 0 {
			continue
		}
		var x any
		if err := json.Unmarshal(raw, &x); err != nil {
			return "", fmt.Errorf("template revision %s: %s is not JSON: %w", r.Name, field, err)
		}
		v[field] = x
	}
	out, err := yaml.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("template revision %s: %w", r.Name, err)
	}
	return string(out), nil
}

// RevisionDiff is the unified diff of the template and overrides from
// older to newer, "" when they are equal.
func RevisionDiff(older, newer *cellv1alpha1.TemplateRevision) (string, error) {
	a, err := revisionYAML(older)
	if err != nil {
		return "", err
	}
	b, err := revisionYAML(newer)
	if err != nil {
		return "", err
	}
	diff, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(a), B: difflib.SplitLines(b),
		FromFile: fmt.Sprintf("revision %d", older.Spec.Revision), ToFile: fmt.Sprintf("revision %d", newer.Spec.Revision), Context: 3,
	})
	if err != nil {
		return "", fmt.Errorf("diffing revisions %d and %d: %w", older.Spec.Revision, newer.Spec.Revision, err)
	}
	return diff, nil
}
