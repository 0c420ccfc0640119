package admission

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// propagatingLookup is the test Lookup that also answers which federated
// kinds propagate.
type propagatingLookup struct {
	Lookup
	enabled map[string]bool
}

func (p propagatingLookup) Propagating(kind string) (bool, error) {
	if kind == "FederatedBroken" {
		return false, errBroken
	}
	return p.enabled[kind], nil
}

func TestMutateSyncFinalizer(t *testing.T) {
	cases := []struct {
		name     string
		op       Operation
		sub      string
		obj, old string
		// plain: the Lookup does not answer Propagating.
		plain bool
		want  []string
		err   error
	}{
		{
			name: "created object of an enabled type gets it",
			obj:  v2(`placement: {topologies: [{name: rz00a}]}`),
			want: []string{SyncFinalizer},
		},
		{
			name: "v1beta1 object of an enabled type gets it, after its own",
			obj:  federated("v1beta1", "FederatedDeployment", "shop", "finalizers: [example.com/keep]\n", `placement: {clusters: []}`),
			want: []string{"example.com/keep", SyncFinalizer},
		},
		{
			name: "an object that has it keeps one",
			obj:  federated("v1beta2", "FederatedDeployment", "shop", "finalizers: [kubefed.io/sync-controller]\n", ""),
			want: []string{SyncFinalizer},
		},
		{
			name: "type not enabled: none, no controller would remove it",
			obj:  federated("v1beta2", "FederatedService", "shop", "", ""),
		},
		{
			name: "UPDATE of an object created before: the controller adds it",
			op:   Update,
			obj:  v2(""),
			old:  v2(""),
		},
		{
			name:  "a Lookup that cannot tell: none",
			obj:   v2(""),
			plain: true,
		},
		{
			name: "cluster-scoped federated object gets it",
			obj:  "apiVersion: types.kubefed.io/v1beta2\nkind: FederatedClusterRole\nmetadata: {name: reader}\nspec: {template: {}}\n",
			want: []string{SyncFinalizer},
		},
		{
			name: "cells are not federated objects",
			obj:  cellManifest("shop", "rz01a", "c1"),
		},
		{
			name: "an unreadable type config fails the create",
			obj:  federated("v1beta2", "FederatedBroken", "shop", "", ""),
			err:  errBroken,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newAdmitter()
			if !c.plain {
				a.Lookup = propagatingLookup{Lookup: a.Lookup, enabled: map[string]bool{
					"FederatedDeployment": true, "FederatedClusterRole": true, "FederatedService": false,
				}}
			}
			op := c.op
			if op == "" {
				op = Create
			}
			obj := object(t, c.obj)
			err := a.Mutate(request(op, c.sub, obj, object(t, c.old)))
			if c.err != nil {
				if err == nil || !strings.Contains(err.Error(), c.err.Error()) {
					t.Fatalf("err = %v, want %v", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Mutate: %v", err)
			}
			if got := obj.GetFinalizers(); !slices.Equal(got, c.want) {
				t.Errorf("finalizers = %v, want %v", got, c.want)
			}
		})
	}
}

func TestPropagates(t *testing.T) {
	ftc := func(propagation, state string, generation, observed int64) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"spec": map[string]any{"propagation": propagation, "federatedType": map[string]any{"kind": "FederatedConfigMap"}},
		}}
		u.SetGeneration(generation)
		if state != "" {
			u.Object["status"] = map[string]any{"propagationController": state, "observedGeneration": observed}
		}
		return u
	}
	cases := []struct {
		name string
		ftc  *unstructured.Unstructured
		want bool
	}{
		{"enabled and a controller runs it", ftc("Enabled", "Running", 2, 2), true},
		{"enabled, no controller ever reported", ftc("Enabled", "", 1, 0), false},
		{"enabled, the controller stopped it", ftc("Enabled", "NotRunning", 1, 1), false},
		{"disabled, the controller has not seen it yet", ftc("Disabled", "Running", 3, 2), false},
		{"enabled again, the controller has not seen it yet", ftc("Enabled", "Running", 4, 3), false},
		{"disabled and stopped", ftc("Disabled", "NotRunning", 3, 3), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := propagates(c.ftc); got != c.want {
				t.Errorf("propagates = %v, want %v", got, c.want)
			}
		})
	}
}
