package admission

import (
	"strings"
	"testing"

	policyv1alpha1 "github.com/cellfed/cellfed/pkg/apis/policy/v1alpha1"
	"github.com/cellfed/cellfed/pkg/pki"
)

// policyMade is the metadata of a federated object PropagationPolicy
// shop/web made from Deployment shop/web.
const policyMade = `annotations:
  policy.cellfed.io/policy: PropagationPolicy/shop/web
labels:
  policy.cellfed.io/propagationpolicy: web
ownerReferences:
- {apiVersion: apps/v1, kind: Deployment, name: web, uid: u1, controller: true}
`

const policySpec = `template:
  metadata:
    labels: {app: web}
  spec:
    replicas: 1
placement:
  topologies: [{name: rz00a}, {name: rz00b}]
`

func TestPolicyOwnedErrors(t *testing.T) {
	made := federated("v1beta2", "FederatedDeployment", "shop", policyMade, policySpec)
	wrapper := federated("v1beta2", "FederatedDeployment", "shop", "", policySpec)
	edit := func(meta, from, to string) string {
		return federated("v1beta2", "FederatedDeployment", "shop", meta, strings.Replace(policySpec, from, to, 1))
	}
	controller := func(r *Request) {
		r.FieldManager, r.Groups = policyv1alpha1.FieldManager, []string{pki.AdminGroup, "system:authenticated"}
	}
	for _, c := range []struct {
		name     string
		sub      string
		op       Operation
		old, obj string
		who      func(*Request)
		want     []string // the refused fields; none: allowed
	}{
		{name: "hand edit of the template", old: made, obj: edit(policyMade, "replicas: 1", "replicas: 3"), want: []string{"spec.template"}},
		{name: "hand edit of the placement", old: made, obj: edit(policyMade, "{name: rz00b}", "{name: rz00c}"), want: []string{"spec.placement"}},
		{name: "hand edit of the placement and the template", old: made, obj: edit(policyMade, "replicas: 1\nplacement:\n  topologies: [{name: rz00a}, {name: rz00b}]", "replicas: 2\nplacement:\n  topologies: [{name: rz00a}]"),
			want: []string{"spec.template", "spec.placement"}},
		{name: "overrides added by hand", old: made, obj: made + "  overrides:\n  - {clusterName: rz00a, clusterOverrides: [{path: /spec/replicas, value: 2}]}\n", want: []string{"spec.overrides"}},
		{name: "replicaDivision added by hand", old: made, obj: made + "  replicaDivision: {total: 4}\n", want: []string{"spec.replicaDivision"}},
		{name: "retainReplicas set by hand", old: made, obj: made + "  retainReplicas: true\n", want: []string{"spec.retainReplicas"}},
		{name: "a rollout's mask", old: made, obj: made + "  placementMask:\n    topologies: [{name: rz00a}]\n"},
		{name: "a rollout's labels and annotations", old: made, obj: federated("v1beta2", "FederatedDeployment", "shop",
			strings.Replace(policyMade, "labels:\n", "labels:\n  rollout.cellfed.io/active: \"true\"\n", 1), policySpec)},
		{name: "the policy controller's write", old: made, obj: edit(policyMade, "replicas: 1", "replicas: 3"), who: controller},
		{name: "the policy's field manager from an app team", old: made, obj: edit(policyMade, "replicas: 1", "replicas: 3"),
			who: func(r *Request) {
				r.FieldManager, r.Groups = policyv1alpha1.FieldManager, []string{"system:authenticated"}
			}, want: []string{"spec.template"}},
		{name: "an admin's hand edit", old: made, obj: edit(policyMade, "replicas: 1", "replicas: 3"),
			who: func(r *Request) { r.FieldManager, r.Groups = "kubectl-edit", []string{pki.AdminGroup} }, want: []string{"spec.template"}},
		{name: "a status write", sub: "status", old: made, obj: edit(policyMade, "replicas: 1", "replicas: 3")},
		{name: "a wrapper no policy made", old: wrapper, obj: strings.Replace(wrapper, "replicas: 1", "replicas: 3", 1)},
		{name: "creating an object naming a policy", op: Create, obj: made},
	} {
		t.Run(c.name, func(t *testing.T) {
			op := c.op
			if op == "" {
				op = Update
			}
			r := request(op, c.sub, object(t, c.obj), object(t, c.old))
			if c.who != nil {
				c.who(&r)
			}
			errs := policyOwnedErrors(r)
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
				for _, m := range []string{"FederatedDeployment shop/web is made by PropagationPolicy shop/web from Deployment shop/web",
					"edit PropagationPolicy shop/web or Deployment shop/web instead"} {
					if !strings.Contains(e.Detail, m) {
						t.Errorf("%s: message lacks %q: %s", e.Field, m, e.Detail)
					}
				}
			}
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("refused %v, want %v (%v)", got, c.want, errs)
			}
		})
	}
}

// The rule runs in Validate, as Forbidden, before the other rules.
func TestValidatePolicyOwned(t *testing.T) {
	made := federated("v1beta2", "FederatedDeployment", "shop", policyMade, policySpec)
	runValidate(t, []validateCase{
		{
			name: "hand edit of a policy's placement",
			op:   Update,
			old:  made,
			obj:  federated("v1beta2", "FederatedDeployment", "shop", policyMade, strings.Replace(policySpec, "{name: rz00b}", "{name: nowhere}", 1)),
			want: forbidden,
			msgs: []string{"spec.placement", "edit PropagationPolicy shop/web or Deployment shop/web instead"},
		},
		{
			name: "a rollout's mask on a policy's object",
			op:   Update,
			old:  made,
			obj:  made + "  placementMask:\n    topologies: [{name: rz00a}]\n",
		},
	})
}
