package admission

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Division inputs beyond the bounds are refused with the field and the
// range (issue #40: one tenant's division of 2147483647 replicas by
// weights [2147483647, 1] stalled every tenant's propagation), and a
// divided template's replicas must be a count the division can hand out.
func TestValidateDivisionBounds(t *testing.T) {
	placed := "placement:\n  topologies: [{name: rz00a}, {name: rz00b}]\n"
	withReplicas := func(n string) string {
		return strings.Replace(deploymentTemplate, "replicas: 1", "replicas: "+n, 1)
	}
	runValidate(t, []validateCase{
		{name: "weights and limits at the bounds",
			obj: v2(withReplicas("1000000") + placed + "replicaDivision: {mode: Divide, maxSurge: 1000000, topologies: [{name: rz00a, weight: 1000000, minReplicas: 1000000, maxReplicas: 1000000}]}\n")},
		{name: "a weight above the bound",
			obj:  v2(deploymentTemplate + placed + "replicaDivision: {mode: Divide, topologies: [{name: rz00a, weight: 2147483647}, {name: rz00b, weight: 1}]}\n"),
			want: invalid, msgs: []string{"spec.replicaDivision.topologies[0].weight: Invalid value: 2147483647", "must be from 0 to 1000000"}},
		{name: "minimum, maximum and surge above the bound",
			obj:  v2(deploymentTemplate + placed + "replicaDivision: {mode: Divide, maxSurge: 1000001, topologies: [{name: rz00a, minReplicas: 1000001, maxReplicas: 2000000}]}\n"),
			want: invalid, msgs: []string{"spec.replicaDivision.maxSurge", "spec.replicaDivision.topologies[0].minReplicas", "spec.replicaDivision.topologies[0].maxReplicas", "must be from 0 to 1000000"}},
		{name: "divided replicas of MaxInt32",
			obj:  v2(withReplicas("2147483647") + placed + "replicaDivision: {mode: Divide}\n"),
			want: invalid, msgs: []string{"spec.template.spec.replicas: Invalid value: 2147483647", "must be at most 1000000 when spec.replicaDivision.mode is Divide"}},
		{name: "negative divided replicas",
			obj:  v2(withReplicas("-5") + placed + "replicaDivision: {mode: Divide}\n"),
			want: invalid, msgs: []string{"spec.template.spec.replicas: Invalid value: -5: must be >= 0 when spec.replicaDivision.mode is Divide"}},
		{name: "divided replicas that are not a number",
			obj:  v2(withReplicas("ten") + placed + "replicaDivision: {mode: Divide}\n"),
			want: invalid, msgs: []string{"spec.template.spec.replicas", "must be an integer when spec.replicaDivision.mode is Divide"}},
		{name: "negative replicas, not divided, are the member's to refuse",
			obj: v2(withReplicas("-5") + placed + "replicaDivision: {mode: Duplicate}\n")},
		{name: "no replicas: the default 1",
			obj: v2("template:\n  spec: {}\n" + placed + "replicaDivision: {mode: Divide}\n")},
		{name: "negative divided replicas through the v1beta1 stash",
			obj: federated("v1beta1", "FederatedDeployment", "shop",
				`annotations:
  conversion.cellfed.io/v1beta2-spec: '{"placement":{"topologyType":"cell","topologies":[{"name":"rz00a"}]},"replicaDivision":{"mode":"Divide"}}'
`,
				withReplicas("-5")+"placement: {clusters: [{name: shop.rz00a}]}\n"),
			want: invalid, msgs: []string{"spec.template.spec.replicas: Invalid value: -5", "must be >= 0 when the replicaDivision.mode of metadata.annotations[conversion.cellfed.io/v1beta2-spec] is Divide"}},
		{name: "1,001 division topologies",
			obj:  v2(deploymentTemplate + "placement:\n  topologySelector: {}\n" + "replicaDivision:\n  mode: Divide\n" + indent(namesYAML("topologies", "rz", 1001), 2)),
			want: invalid, msgs: []string{"spec.replicaDivision.topologies", "Too many: 1001"}},
	})
}

// divisionLookup is the fake Lookup with the replicas paths and template
// schemas of the plane's FederatedTypeConfigs and CRDs.
type divisionLookup struct {
	*fakeLookup
	paths   map[string]string
	schemas map[schema.GroupResource]*apiextensionsv1.JSONSchemaProps
}

func (d divisionLookup) ReplicasPath(kind string) (string, error) { return d.paths[kind], nil }
func (d divisionLookup) TemplateSchema(gr schema.GroupResource) (*apiextensionsv1.JSONSchemaProps, error) {
	return d.schemas[gr], nil
}

func TestValidateDividedReplicasAtTheTypesPath(t *testing.T) {
	a := newAdmitter()
	a.Lookup = divisionLookup{fakeLookup: a.Lookup.(*fakeLookup), paths: map[string]string{"FederatedDeployment": "/spec/workers/count"}}
	obj := object(t, v2("template:\n  spec:\n    replicas: 3\n    workers: {count: -2}\nplacement:\n  topologies: [{name: rz00a}]\nreplicaDivision: {mode: Divide}\n"))
	err := a.Validate(request(Create, "", obj, nil))
	checkOutcome(t, err, invalid, []string{"spec.template.spec.workers.count: Invalid value: -2", "must be >= 0"})
}

// The CRD's schema refuses numbers outside int32 before Validate, with
// "<nil>: Invalid value: \"\"": Mutate, which runs first, refuses them
// with the field.
func TestMutateRefusesOutOfRangeDivision(t *testing.T) {
	placed := "placement:\n  topologies: [{name: rz00a}]\n"
	cases := []struct {
		name, spec string
		msgs       []string
	}{
		{"a weight past int32", "replicaDivision: {mode: Divide, topologies: [{name: rz00a, weight: 3000000000}]}\n",
			[]string{"spec.replicaDivision.topologies[0].weight: Invalid value: 3000000000", "must be from 0 to 1000000"}},
		{"a surge past int32", "replicaDivision: {mode: Divide, maxSurge: 99999999999}\n",
			[]string{"spec.replicaDivision.maxSurge: Invalid value: 99999999999", "must be from 1 to 1000000"}},
		{"a minimum below int32", "replicaDivision: {mode: Divide, topologies: [{name: rz00a, minReplicas: -3000000000}]}\n",
			[]string{"spec.replicaDivision.topologies[0].minReplicas: Invalid value: -3000000000"}},
		{"a failover delay past int32", "replicaDivision: {mode: Divide, failover: true, failoverAfterSeconds: 2147483648}\n",
			[]string{"spec.replicaDivision.failoverAfterSeconds: Invalid value: 2147483648", "must be from 0 to 2147483647"}},
		{"a weight past int32 in the v1beta1 stash", "",
			[]string{"metadata.annotations[conversion.cellfed.io/v1beta2-spec].replicaDivision.topologies[0].weight: Invalid value: 3000000000", "must be from 0 to 1000000"}},
	}
	stash := federated("v1beta1", "FederatedDeployment", "shop",
		`annotations:
  conversion.cellfed.io/v1beta2-spec: '{"placement":{"topologyType":"cell","topologies":[{"name":"rz00a"}]},"replicaDivision":{"mode":"Divide","topologies":[{"name":"rz00a","weight":3000000000}]}}'
`, deploymentTemplate+"placement: {clusters: [{name: shop.rz00a}]}\n")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			manifest := v2(deploymentTemplate + placed + c.spec)
			if c.spec == "" {
				manifest = stash
			}
			err := newAdmitter().Mutate(request(Create, "", object(t, manifest), nil))
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want Invalid, got %v", err)
			}
			for _, m := range c.msgs {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("message lacks %q:\n%s", m, err.Error())
				}
			}
			if strings.Contains(err.Error(), "<nil>") {
				t.Errorf("message names no field:\n%s", err.Error())
			}
		})
	}
	if err := newAdmitter().Mutate(request(Create, "", object(t, v2(deploymentTemplate+placed+"replicaDivision: {mode: Divide, topologies: [{name: rz00a, weight: 5}]}\n")), nil)); err != nil {
		t.Errorf("a weight in range: %v", err)
	}
}

// A FederatedTypeConfig's replicasPath must be normalised and name an
// integer field of the target (issue #40: /spec/template/spec/containers/0/name
// and /spec/../metadata were accepted, then broke division for the type).
func TestValidateReplicasPathSchema(t *testing.T) {
	workers := `targetType: {group: example.com, version: v1, kind: Worker, pluralName: workers, scope: Namespaced}
federatedType: {group: types.kubefed.io, version: v1beta1, kind: FederatedWorker, pluralName: federatedworkers, scope: Namespaced}
propagation: Enabled
`
	integer := apiextensionsv1.JSONSchemaProps{Type: "integer"}
	open := true
	workerSchema := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"workers": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"count": integer, "name": {Type: "string"}}},
			"extra":   {Type: "object", XPreserveUnknownFields: &open},
		}},
	}}
	cases := []struct {
		name, spec string
		want       outcome
		msgs       []string
	}{
		{"a built-in type's replicas", goodTypeConfig + "replicasPath: /spec/replicas\n", allowed, nil},
		{"a built-in type's string field", goodTypeConfig + "replicasPath: /spec/template/spec/containers/0/name\n", invalid,
			[]string{`spec.replicasPath: Invalid value: "/spec/template/spec/containers/0/name"`, "/spec/template/spec/containers/0/name is a string, not an integer", "apps/v1 Deployment", "e.g. /spec/replicas"}},
		{"a built-in type's object", goodTypeConfig + "replicasPath: /spec/template\n", invalid,
			[]string{"/spec/template is an object, not an integer"}},
		{"a field a built-in type does not have", goodTypeConfig + "replicasPath: /spec/workers/count\n", invalid,
			[]string{`/spec has no field "workers"`}},
		{"a path with ..", goodTypeConfig + "replicasPath: /spec/../metadata\n", invalid,
			[]string{"spec.replicasPath", "not normalised", `".."`}},
		{"a path with .", goodTypeConfig + "replicasPath: /spec/./replicas\n", invalid,
			[]string{"spec.replicasPath", "not normalised", `"."`}},
		{"a path with //", goodTypeConfig + "replicasPath: /spec//replicas\n", invalid,
			[]string{"spec.replicasPath", "empty or escaped segment"}},
		{"a path ending in /", goodTypeConfig + "replicasPath: /spec/replicas/\n", invalid,
			[]string{"spec.replicasPath", "trailing"}},
		{"a CRD's integer field", workers + "replicasPath: /spec/workers/count\n", allowed, nil},
		{"a CRD's string field", workers + "replicasPath: /spec/workers/name\n", invalid,
			[]string{"/spec/workers/name is a string, not an integer", "example.com/v1 Worker"}},
		{"a CRD's open part", workers + "replicasPath: /spec/extra/count\n", allowed, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newAdmitter()
			a.Lookup = divisionLookup{fakeLookup: a.Lookup.(*fakeLookup), schemas: map[schema.GroupResource]*apiextensionsv1.JSONSchemaProps{
				{Group: "types.kubefed.io", Resource: "federatedworkers"}: workerSchema,
			}}
			name := "deployments.apps"
			if strings.Contains(c.spec, "Worker") {
				name = "workers.example.com"
			}
			err := a.Validate(request(Create, "", object(t, typeConfig(name, c.spec)), nil))
			checkOutcome(t, err, c.want, c.msgs)
		})
	}
}
