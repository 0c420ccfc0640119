package federatedtypes

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestNeedsMigration(t *testing.T) {
	versions := func(storage string) []apiextensionsv1.CustomResourceDefinitionVersion {
		return []apiextensionsv1.CustomResourceDefinitionVersion{
			{Name: "v1beta1", Served: true, Storage: storage == "v1beta1"},
			{Name: "v1beta2", Served: true, Storage: storage == "v1beta2"},
		}
	}
	for _, tc := range []struct {
		name    string
		storage string
		stored  []string
		want    bool
	}{
		{"only the storage version stored", "v1beta2", []string{"v1beta2"}, false},
		{"an older version stored too", "v1beta2", []string{"v1beta1", "v1beta2"}, true},
		{"only an older version stored", "v1beta2", []string{"v1beta1"}, true},
		{"nothing stored yet", "v1beta2", nil, false},
		{"no storage version (not a valid CRD)", "", []string{"v1beta1"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crd := &apiextensionsv1.CustomResourceDefinition{
				Spec:   apiextensionsv1.CustomResourceDefinitionSpec{Versions: versions(tc.storage)},
				Status: apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: tc.stored},
			}
			if got := NeedsMigration(crd); got != tc.want {
				t.Errorf("NeedsMigration(storage %q, stored %v) = %v, want %v", tc.storage, tc.stored, got, tc.want)
			}
		})
	}
}
