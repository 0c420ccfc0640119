package admission

import (
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

// TestValidateCellDeletion: a Cell that objects place is not deleted
// silently: the refusal names up to ten of them, the count, and both ways
// out; a drained cell, or one nothing places, goes.
func TestValidateCellDeletion(t *testing.T) {
	many := make([]string, 12)
	for i := range many {
		many[i] = fmt.Sprintf("FederatedConfigMap/cm%02d", i)
	}
	cellObj := func(draining bool, objects *int64) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "core.cellfed.io/v1alpha1", "kind": "Cell", "spec": map[string]any{"cluster": "c1"}}}
		u.SetNamespace("shop")
		u.SetName("rz00a")
		if draining {
			u.SetLabels(map[string]string{cellv1alpha1.LabelDraining: "true"})
		}
		if objects != nil {
			_ = unstructured.SetNestedField(u.Object, *objects, "status", "objects")
		}
		return u
	}
	zero, two := int64(0), int64(2)
	for _, tc := range []struct {
		name     string
		placing  []string
		old      *unstructured.Unstructured
		wantErr  bool
		contains []string
		absent   []string
		// collection: admitted as a DeleteCollection item is, without
		// the name (or namespace) in the request.
		collection bool
	}{
		{name: "nothing places it", old: cellObj(false, &zero)},
		{
			name: "placed: the objects, the count and both ways out", placing: []string{"FederatedDeployment/web", "FederatedConfigMap/cfg"}, old: cellObj(false, &two), wantErr: true,
			contains: []string{"placed by 2 federated objects", "FederatedDeployment/web, FederatedConfigMap/cfg", "remove the cell from those objects' spec.placement", "cellfedctl cell delete rz00a -n shop --drain"},
		},
		{
			name: "twelve place it: ten named and the rest counted", placing: many, old: cellObj(false, nil), wantErr: true,
			contains: []string{"placed by 12 federated objects", "cm09", "and 2 more"}, absent: []string{"cm10", "cm11"},
		},
		{
			name: "draining, objects still on it", placing: []string{"FederatedDeployment/web"}, old: cellObj(true, &two), wantErr: true,
			contains: []string{"is draining but still holds 2", "Wait for the drain to finish"},
		},
		{
			name: "draining, not counted yet", placing: []string{"FederatedDeployment/web"}, old: cellObj(true, nil), wantErr: true,
			contains: []string{"has not been counted yet"},
		},
		{name: "drained", placing: []string{"FederatedDeployment/web"}, old: cellObj(true, &zero)},
		{name: "holds nothing but not draining: still refused", placing: []string{"FederatedDeployment/web"}, old: cellObj(false, &zero), wantErr: true, contains: []string{"--drain"}},
		{
			name: "one item of a DeleteCollection (no name in the request): the object's name counts", placing: []string{"FederatedDeployment/web"}, old: cellObj(false, &two), wantErr: true,
			collection: true, contains: []string{"cell rz00a is placed by 1 federated object ("},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAdmitter()
			a.Lookup.(*fakeLookup).placing = map[string][]string{"shop.rz00a": tc.placing}
			r := Request{Operation: Delete, Kind: cellKind.WithVersion("v1alpha1"), Namespace: "shop", Name: "rz00a", OldObject: tc.old}
			if tc.collection {
				r.Name = ""
			}
			err := a.Validate(r)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Validate = %v, want error %v", err, tc.wantErr)
			}
			if err == nil {
				return
			}
			if !apierrors.IsForbidden(err) {
				t.Errorf("error %v is not Forbidden", err)
			}
			for _, s := range tc.contains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			for _, s := range tc.absent {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q says %q", err, s)
				}
			}
		})
	}
}
