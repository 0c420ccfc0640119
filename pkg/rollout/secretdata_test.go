package rollout

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

func TestRedact(t *testing.T) {
	secretRev := func(uid, template, overrides string) *cellv1alpha1.TemplateRevision {
		r := &cellv1alpha1.TemplateRevision{}
		r.Name = "db-1"
		r.Spec.FederatedObject = cellv1alpha1.FederatedObjectReference{Kind: "FederatedSecret", Name: "db", UID: uid}
		r.Spec.Template = runtime.RawExtension{Raw: []byte(template)}
		if overrides != "" {
			r.Spec.Overrides = runtime.RawExtension{Raw: []byte(overrides)}
		}
		return r
	}
	const tmpl = `{"data":{"password":"aHVudGVyMg==","user":"YWRtaW4="},"stringData":{"token":"t0ps3cret"},"type":"Opaque","metadata":{"labels":{"app":"db"}}}`
	const ovr = `[{"clusterName":"c1","clusterOverrides":[{"path":"/data/password","value":"b3ZlcnJpZGRlbg=="},{"path":"/data","op":"add","value":{"k":"dmFsdWU="}}]}]`
	secrets := []string{"aHVudGVyMg==", "YWRtaW4=", "t0ps3cret", "b3ZlcnJpZGRlbg==", "dmFsdWU="}
	redacted, err := Redact(secretRev("uid-1", tmpl, ovr))
	if err != nil {
		t.Fatal(err)
	}
	again, err := Redact(redacted)
	if err != nil {
		t.Fatal(err)
	}
	otherUID, err := Redact(secretRev("uid-2", tmpl, ovr))
	if err != nil {
		t.Fatal(err)
	}
	changed, err := Redact(secretRev("uid-1", strings.Replace(tmpl, "aHVudGVyMg==", "czNjcjN0", 1), ovr))
	if err != nil {
		t.Fatal(err)
	}
	plain := &cellv1alpha1.TemplateRevision{}
	plain.Spec.FederatedObject.Kind = "FederatedDeployment"
	plain.Spec.Template.Raw = []byte(`{"data":{"password":"aHVudGVyMg=="}}`)
	plainOut, err := Redact(plain)
	if err != nil {
		t.Fatal(err)
	}
	both := string(redacted.Spec.Template.Raw) + string(redacted.Spec.Overrides.Raw)
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"no value in clear", !containsAny(both, secrets)},
		{"every value a digest", strings.Count(both, RedactedPrefix) == 5},
		{"other fields kept", strings.Contains(both, `"type":"Opaque"`) && strings.Contains(both, `"app":"db"`) && strings.Contains(both, `"/data/password"`)},
		{"redacting twice changes nothing", string(again.Spec.Template.Raw) == string(redacted.Spec.Template.Raw) && string(again.Spec.Overrides.Raw) == string(redacted.Spec.Overrides.Raw)},
		{"the input is left alone", !strings.Contains(both, "hunter") && strings.Contains(tmpl, "aHVudGVyMg==")},
		{"another object's digests differ", string(otherUID.Spec.Template.Raw) != string(redacted.Spec.Template.Raw)},
		{"a changed value changes its digest only", digestOf(changed, "password") != digestOf(redacted, "password") && digestOf(changed, "user") == digestOf(redacted, "user")},
		{"other kinds are not redacted", string(plainOut.Spec.Template.Raw) == `{"data":{"password":"aHVudGVyMg=="}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.ok {
				t.Errorf("does not hold; redacted template %s, overrides %s", redacted.Spec.Template.Raw, redacted.Spec.Overrides.Raw)
			}
		})
	}
}

func containsAny(s string, subs []string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

// digestOf is the redacted value of data.key in r's template.
func digestOf(r *cellv1alpha1.TemplateRevision, key string) string {
	s := string(r.Spec.Template.Raw)
	i := strings.Index(s, `"`+key+`":"`)
	if i < 0 {
		return ""
	}
	rest := s[i+len(key)+4:]
	return rest[:strings.Index(rest, `"`)]
}

// TestHistorySecretData records a FederatedSecret's templates: each
// revision holds digests, its data Secret (owned by it) the real template
// and overrides, which Load gives back; a revision recorded in clear
// before redaction is moved into a data Secret by the next Record.
func TestHistorySecretData(t *testing.T) {
	ctx := context.Background()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{cellv1alpha1.TemplateRevisionsResource: "TemplateRevisionList", secretsResource: "SecretList"})
	h := History{Client: client}
	fedSecret := func(password string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "types.kubefed.io/v1beta2", "kind": "FederatedSecret",
			"metadata": map[string]any{"name": "db", "namespace": "shop", "uid": "uid-s", "generation": int64(1)},
			"spec": map[string]any{
				"template":  map[string]any{"type": "Opaque", "data": map[string]any{"password": password}},
				"overrides": []any{map[string]any{"topologyName": "rz10a", "clusterOverrides": []any{map[string]any{"path": "/data/password", "value": "b3Zy"}}}},
			},
		}}
	}
	// A revision of the old kind: the data in clear in the revision.
	old := fedSecret("b2xk")
	oldRev := &cellv1alpha1.TemplateRevision{
		TypeMeta:   metav1.TypeMeta{APIVersion: cellv1alpha1.SchemeGroupVersion.String(), Kind: "TemplateRevision"},
		ObjectMeta: metav1.ObjectMeta{Name: "db-old", Namespace: "shop", Labels: map[string]string{LabelOwnerUID: "uid-s"}, ResourceVersion: "1"},
		Spec: cellv1alpha1.TemplateRevisionSpec{
			FederatedObject: cellv1alpha1.FederatedObjectReference{Kind: "FederatedSecret", Name: "db", UID: "uid-s"},
			Revision:        1, Hash: TemplateHash(old), Generation: 1,
			Template:  runtime.RawExtension{Raw: []byte(`{"type":"Opaque","data":{"password":"b2xk"}}`)},
			Overrides: runtime.RawExtension{Raw: []byte(`[{"topologyName":"rz10a","clusterOverrides":[{"path":"/data/password","value":"b3Zy"}]}]`)},
		},
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(oldRev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Resource(cellv1alpha1.TemplateRevisionsResource).Namespace("shop").Create(ctx, &unstructured.Unstructured{Object: content}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	rev, err := h.Record(ctx, fedSecret("bmV3"))
	if err != nil {
		t.Fatal(err)
	}
	revs, err := h.List(ctx, fedSecret(""))
	if err != nil {
		t.Fatal(err)
	}
	if len(revs) != 2 {
		t.Fatalf("%d revisions, want 2", len(revs))
	}
	for _, r := range revs {
		stored := string(r.Spec.Template.Raw) + string(r.Spec.Overrides.Raw)
		if containsAny(stored, []string{"b2xk", "bmV3", "b3Zy"}) || !strings.Contains(stored, RedactedPrefix) {
			t.Errorf("revision %s holds %s, want digests only", r.Name, stored)
		}
		if r.Annotations[AnnotationDataSecret] != r.Name {
			t.Errorf("revision %s: data Secret annotation %q, want its own name", r.Name, r.Annotations[AnnotationDataSecret])
		}
		s, err := client.Resource(secretsResource).Namespace("shop").Get(ctx, r.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the data Secret of %s: %v", r.Name, err)
		}
		if refs := s.GetOwnerReferences(); len(refs) != 1 || refs[0].Kind != "TemplateRevision" || refs[0].Name != r.Name {
			t.Errorf("data Secret %s owners %v, want revision %s", r.Name, refs, r.Name)
		}
	}
	for _, tc := range []struct {
		name string
		rev  *cellv1alpha1.TemplateRevision
		want string
	}{
		{"the new revision", rev, `"bmV3"`},
		{"the revision moved out of clear", &revs[0], `"b2xk"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			full, err := h.Load(ctx, tc.rev)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(full.Spec.Template.Raw), tc.want) {
				t.Errorf("loaded template %s, want %s", full.Spec.Template.Raw, tc.want)
			}
			obj := fedSecret("")
			if err := Restore(obj, full); err != nil {
				t.Fatal(err)
			}
			if TemplateHash(obj) != full.Spec.Hash {
				t.Errorf("the restored template's hash %s differs from the revision's %s", TemplateHash(obj), full.Spec.Hash)
			}
		})
	}
}
