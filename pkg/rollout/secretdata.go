package rollout

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

// A TemplateRevision is readable by everyone who may read the workspace's
// history (the viewer role included), so the revision of a federated
// Secret never holds its data: the revision's template and overrides
// carry a digest in place of every value (RedactedPrefix), and the real
// template and overrides go into a Secret of the same name, owned by the
// revision. Reading that Secret takes `get secrets` in the namespace,
// which Kubernetes' view role and cellfed:viewer lack and
// cellfed:app-team, edit and admin have. `rollout undo` reads it
// (History.Load); history printouts and the board's diffs only ever see
// digests (Redact).

// AnnotationDataSecret on a TemplateRevision names the Secret (in the
// revision's namespace) that holds its template and overrides; set on
// the revisions of Secret kinds, whose own template is redacted.
const AnnotationDataSecret = Prefix + "data-secret"

// SecretTypeRevisionData is the type of the Secrets holding revision data.
const SecretTypeRevisionData corev1.SecretType = "rollout.cellfed.io/template-revision-data"

// Keys of a revision data Secret.
const (
	dataKeyTemplate  = "template"
	dataKeyOverrides = "overrides"
)

// RedactedPrefix starts every redacted value: "(redacted sha256:<12 hex>)".
// The digest covers the owner's UID, the key and the value, so two
// revisions of one object show whether a value changed, and nothing
// else; like the revision's hash, it is as guessable as the value.
const RedactedPrefix = "(redacted sha256:"

var secretsResource = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// IsSecretKind says whether a federated kind's template holds Secret data
// (FederatedSecret).
func IsSecretKind(kind string) bool { return kind == "FederatedSecret" }

// redactValue is the digest shown in place of value.
func redactValue(salt, key string, value any) string {
	if s, ok := value.(string); ok && strings.HasPrefix(s, RedactedPrefix) {
		return s // redacted already
	}
	raw, _ := json.Marshal(value)
	sum := sha256.Sum256([]byte(salt + "\x00" + key + "\x00" + string(raw)))
	return RedactedPrefix + hex.EncodeToString(sum[:])[:12] + ")"
}

// RedactTemplate returns a Secret template (JSON) with every value of
// data and stringData replaced by its digest; salt is the owner's UID.
// Redacting twice changes nothing.
func RedactTemplate(raw []byte, salt string) ([]byte, error) {
	if len(raw) == 0 {
		return raw, nil
	}
	var tmpl map[string]any
	if err := json.Unmarshal(raw, &tmpl); err != nil {
		return nil, fmt.Errorf("decoding the template: %w", err)
	}
	for _, field := range []string{"data", "stringData"} {
		m, ok := tmpl[field].(map[string]any)
		if !ok {
			if tmpl[field] != nil {
				tmpl[field] = redactValue(salt, field, tmpl[field])
			}
			continue
		}
		for k, v := range m {
			m[k] = redactValue(salt, field+"/"+k, v)
		}
	}
	return json.Marshal(tmpl)
}

// RedactOverrides returns overrides (JSON) with every "value" replaced by
// its digest, at any depth: an override of a Secret sets data.
func RedactOverrides(raw []byte, salt string) ([]byte, error) {
	if len(raw) == 0 {
		return raw, nil
	}
	var ovr any
	if err := json.Unmarshal(raw, &ovr); err != nil {
		return nil, fmt.Errorf("decoding the overrides: %w", err)
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, child := range x {
				if k == "value" {
					p, _ := x["path"].(string)
					x[k] = redactValue(salt, "override:"+p, child)
					continue
				}
				x[k] = walk(child)
			}
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		}
		return v
	}
	return json.Marshal(walk(ovr))
}

// Redact returns rev with its template and overrides redacted when it
// belongs to a Secret kind (revisions recorded before redaction existed
// included), rev itself otherwise.
func Redact(rev *cellv1alpha1.TemplateRevision) (*cellv1alpha1.TemplateRevision, error) {
	if !IsSecretKind(rev.Spec.FederatedObject.Kind) {
		return rev, nil
	}
	out := rev.DeepCopy()
	salt := rev.Spec.FederatedObject.UID
	tmpl, err := RedactTemplate(rev.Spec.Template.Raw, salt)
	if err != nil {
		return nil, fmt.Errorf("template revision %s: %w", rev.Name, err)
	}
	ovr, err := RedactOverrides(rev.Spec.Overrides.Raw, salt)
	if err != nil {
		return nil, fmt.Errorf("template revision %s: %w", rev.Name, err)
	}
	out.Spec.Template.Raw, out.Spec.Overrides.Raw = tmpl, ovr
	return out, nil
}

// writeDataSecret stores rev's real template and overrides in the Secret
// rev names, owned by rev (so deleting the revision deletes it).
func (h History) writeDataSecret(ctx context.Context, rev *cellv1alpha1.TemplateRevision, template, overrides []byte) error {
	s := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name: rev.Annotations[AnnotationDataSecret], Namespace: rev.Namespace,
			Labels: map[string]string{LabelOwnerUID: rev.Labels[LabelOwnerUID]},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: cellv1alpha1.SchemeGroupVersion.String(), Kind: "TemplateRevision", Name: rev.Name, UID: rev.UID,
			}},
		},
		Type: SecretTypeRevisionData,
		Data: map[string][]byte{},
	}
	if len(template) > 0 {
		s.Data[dataKeyTemplate] = template
	}
	if len(overrides) > 0 {
		s.Data[dataKeyOverrides] = overrides
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
	if err != nil {
		return fmt.Errorf("encoding the data Secret of revision %s: %w", rev.Name, err)
	}
	u := &unstructured.Unstructured{Object: content}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	_, err = h.Client.Resource(secretsResource).Namespace(rev.Namespace).Create(ctx, u, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil // written by the writer that created the revision
	}
	if err != nil {
		return fmt.Errorf("storing the data of revision %s in Secret %s/%s: %w (recording a FederatedSecret's template needs create on secrets in %s; the app-team role has it)",
			rev.Name, rev.Namespace, s.Name, err, rev.Namespace)
	}
	return nil
}

// Load returns rev with its real template and overrides: read from its
// data Secret when it has one (a Secret kind's revision), rev itself
// otherwise. Only a reader who may get that Secret can load it.
func (h History) Load(ctx context.Context, rev *cellv1alpha1.TemplateRevision) (*cellv1alpha1.TemplateRevision, error) {
	name := rev.Annotations[AnnotationDataSecret]
	if name == "" {
		return rev, nil
	}
	u, err := h.Client.Resource(secretsResource).Namespace(rev.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the data of revision %d (Secret %s/%s; restoring a FederatedSecret needs get on secrets in %s, which the app-team role has): %w",
			rev.Spec.Revision, rev.Namespace, name, rev.Namespace, err)
	}
	var s corev1.Secret
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s); err != nil {
		return nil, fmt.Errorf("decoding Secret %s/%s: %w", rev.Namespace, name, err)
	}
	if s.Type != SecretTypeRevisionData || !ownedBy(s.OwnerReferences, rev.UID) {
		return nil, fmt.Errorf("secret %s/%s is not the data of revision %d (type %q, not owned by %s); delete the revision and record it again with `cellfedctl rollout start`",
			rev.Namespace, name, rev.Spec.Revision, s.Type, rev.Name)
	}
	out := rev.DeepCopy()
	out.Spec.Template.Raw, out.Spec.Overrides.Raw = s.Data[dataKeyTemplate], s.Data[dataKeyOverrides]
	return out, nil
}

func ownedBy(refs []metav1.OwnerReference, uid types.UID) bool {
	for _, r := range refs {
		if r.UID == uid && r.Kind == "TemplateRevision" {
			return true
		}
	}
	return false
}

// redactStored moves the data of a Secret kind's revisions recorded
// before redaction (no AnnotationDataSecret) into data Secrets and
// redacts the revisions, so viewers stop seeing it. Failures are logged:
// the next Record retries.
func (h History) redactStored(ctx context.Context, revs []cellv1alpha1.TemplateRevision) {
	for i := range revs {
		rev := &revs[i]
		if !IsSecretKind(rev.Spec.FederatedObject.Kind) || rev.Annotations[AnnotationDataSecret] != "" {
			continue
		}
		if err := h.redactOne(ctx, rev); err != nil {
			klog.FromContext(ctx).Error(err, "Moving the data of a template revision into a Secret", "revision", rev.Namespace+"/"+rev.Name)
		}
	}
}

func (h History) redactOne(ctx context.Context, rev *cellv1alpha1.TemplateRevision) error {
	redacted, err := Redact(rev)
	if err != nil {
		return err
	}
	withName := rev.DeepCopy()
	if withName.Annotations == nil {
		withName.Annotations = map[string]string{}
	}
	withName.Annotations[AnnotationDataSecret] = rev.Name
	if err := h.writeDataSecret(ctx, withName, rev.Spec.Template.Raw, rev.Spec.Overrides.Raw); err != nil {
		return err
	}
	ops := []map[string]any{
		{"op": "test", "path": "/metadata/resourceVersion", "value": rev.ResourceVersion},
		{"op": "add", "path": "/metadata/annotations", "value": withName.Annotations},
	}
	if len(redacted.Spec.Template.Raw) > 0 {
		ops = append(ops, map[string]any{"op": "add", "path": "/spec/template", "value": json.RawMessage(redacted.Spec.Template.Raw)})
	}
	if len(redacted.Spec.Overrides.Raw) > 0 {
		ops = append(ops, map[string]any{"op": "add", "path": "/spec/overrides", "value": json.RawMessage(redacted.Spec.Overrides.Raw)})
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	if _, err := h.Client.Resource(cellv1alpha1.TemplateRevisionsResource).Namespace(rev.Namespace).Patch(ctx, rev.Name, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("redacting template revision %s/%s: %w", rev.Namespace, rev.Name, err)
	}
	rev.Annotations = withName.Annotations
	rev.Spec.Template.Raw, rev.Spec.Overrides.Raw = redacted.Spec.Template.Raw, redacted.Spec.Overrides.Raw
	return nil
}
