package board

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

func revision(n int64, template, overrides string) *cellv1alpha1.TemplateRevision {
	r := &cellv1alpha1.TemplateRevision{}
	r.Name = "web-x"
	r.Spec.Revision = n
	r.Spec.Template = runtime.RawExtension{Raw: []byte(template)}
	if overrides != "" {
		r.Spec.Overrides = runtime.RawExtension{Raw: []byte(overrides)}
	}
	return r
}

func secretRevision(n int64, template, overrides string) *cellv1alpha1.TemplateRevision {
	r := revision(n, template, overrides)
	r.Spec.FederatedObject = cellv1alpha1.FederatedObjectReference{Kind: "FederatedSecret", Name: "db", UID: "6c1f"}
	return r
}

func TestRevisionDiff(t *testing.T) {
	for _, tc := range []struct {
		name          string
		older, newer  *cellv1alpha1.TemplateRevision
		want, wantNot []string
		wantErr       bool
	}{
		{
			name:  "an image change",
			older: revision(1, `{"spec":{"image":"app:1","replicas":2}}`, ""),
			newer: revision(2, `{"spec":{"image":"app:2","replicas":2}}`, ""),
			want:  []string{"--- revision 1", "+++ revision 2", "-    image: app:1", "+    image: app:2", "     replicas: 2"},
		},
		{
			name:  "an override added",
			older: revision(3, `{"a":1}`, ""),
			newer: revision(4, `{"a":1}`, `[{"topologyName":"rz00a"}]`),
			want:  []string{"+overrides:", "+- topologyName: rz00a"},
		},
		{
			// A FederatedSecret's values show as digests: which key
			// changed, never what it holds (old revisions, recorded in
			// clear, included).
			name:    "a secret value changed",
			older:   secretRevision(1, `{"data":{"password":"aHVudGVyMg==","user":"YWRtaW4="},"type":"Opaque"}`, `[{"clusterName":"c1","clusterOverrides":[{"path":"/data/password","value":"b3ZlcnJpZGRlbg=="}]}]`),
			newer:   secretRevision(2, `{"data":{"password":"czNjcjN0LTI=","user":"YWRtaW4="},"type":"Opaque"}`, ""),
			want:    []string{"-    password: (redacted sha256:", "+    password: (redacted sha256:", "     user: (redacted sha256:", "value: (redacted sha256:"},
			wantNot: []string{"aHVudGVyMg==", "czNjcjN0LTI=", "YWRtaW4=", "b3ZlcnJpZGRlbg==", "-    user", "+    user"},
		},
		{name: "equal: no diff", older: revision(1, `{"a":1}`, ""), newer: revision(2, `{"a":1}`, ""), wantNot: []string{"---"}},
		{name: "malformed", older: revision(1, `{`, ""), newer: revision(2, `{}`, ""), wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RevisionDiff(tc.older, tc.newer)
			if (err != nil) != tc.wantErr {
				t.Fatalf("RevisionDiff: %v, want error %v", err, tc.wantErr)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("diff lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(got, w) {
					t.Errorf("diff has %q:\n%s", w, got)
				}
			}
		})
	}
}
