package admission

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cellfed/cellfed/pkg/tenancy"
)

// Pod Security is the platform's: a FederatedNamespace may not carry
// Kubernetes' pod-security.kubernetes.io/ labels (nor the platform's
// cellfed.io/pod-security) in its template or overrides, since they
// would decide what the workspace's pods may do on members. The level
// comes from the controller's --pod-security-level, or from the label
// cellfed.io/pod-security on the plane namespace, which a platform admin
// sets and admission checks here.

// platformLabelReason is why a FederatedNamespace of namespace may not
// set label key.
func platformLabelReason(namespace, key string) string {
	return fmt.Sprintf("label %s is the platform's: member namespaces enforce the Pod Security level a platform admin sets "+
		"(cellfed-controller --pod-security-level, or: kubectl label namespace %s %s=<privileged|baseline|restricted>); remove it",
		key, namespace, tenancy.LabelPodSecurity)
}

// validatePlatformLabels refuses platform labels in a FederatedNamespace's
// template and overrides; other federated types are not checked.
func (a *Admitter) validatePlatformLabels(r Request, overrides []override) (field.ErrorList, error) {
	t, ok, err := a.Lookup.Target(r.Kind.Kind)
	if err != nil || !ok || t.Group != "" || t.Kind != "Namespace" {
		return nil, err
	}
	return platformLabelErrors(r.Namespace, r.Object.Object, overrides), nil
}

// platformLabelErrors lists the platform labels a FederatedNamespace's
// content (template) and overrides set, each at its field path.
func platformLabelErrors(namespace string, content map[string]any, overrides []override) field.ErrorList {
	var errs field.ErrorList
	labelsPath := field.NewPath("spec", "template", "metadata", "labels")
	spec, _ := content["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	md, _ := tmpl["metadata"].(map[string]any)
	labels, _ := md["labels"].(map[string]any)
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if tenancy.IsPlatformLabel(k) {
			errs = append(errs, field.Forbidden(labelsPath.Key(k), platformLabelReason(namespace, k)))
		}
	}
	for _, ov := range overrides {
		for j, op := range ov.ops {
			path := ov.path.Child("clusterOverrides").Index(j)
			for _, k := range overrideLabelKeys(op.Path, op.Op, rawValue(op.Value)) {
				if tenancy.IsPlatformLabel(k) {
					errs = append(errs, field.Forbidden(path, platformLabelReason(namespace, k)))
				}
			}
		}
	}
	return errs
}

func rawValue(v *runtime.RawExtension) []byte {
	if v == nil {
		return nil
	}
	return v.Raw
}

// overrideLabelKeys are the label keys a JSON-patch operation at pointer
// with value raw touches: the key named by the path, or the keys of the
// labels object it writes (at /metadata/labels or /metadata).
func overrideLabelKeys(pointer, op string, raw []byte) []string {
	if key, ok := strings.CutPrefix(pointer, "/metadata/labels/"); ok {
		return []string{unescapePointer(key)}
	}
	if op == "remove" || len(raw) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil // validateOverrides reports it
	}
	m, _ := v.(map[string]any)
	switch pointer {
	case "/metadata":
		m, _ = m["labels"].(map[string]any)
	case "/metadata/labels":
	default:
		return nil
	}
	return slices.Sorted(maps.Keys(m))
}

// validateNamespacePodSecurity checks the platform's level label on a
// plane namespace.
func validateNamespacePodSecurity(r Request) field.ErrorList {
	level, set := r.Object.GetLabels()[tenancy.LabelPodSecurity]
	if !set || !podSecurityChanged(r) {
		return nil
	}
	if err := tenancy.PodSecurityLevelError(level); err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("metadata", "labels").Key(tenancy.LabelPodSecurity), level, err.Error())}
	}
	return nil
}

// podSecurityChanged reports whether r sets or changes the platform's
// level label of a namespace.
func podSecurityChanged(r Request) bool {
	cur, set := r.Object.GetLabels()[tenancy.LabelPodSecurity]
	if r.OldObject == nil {
		return set
	}
	old, oldSet := r.OldObject.GetLabels()[tenancy.LabelPodSecurity]
	return set != oldSet || cur != old
}
