package admission

import (
	"strings"
	"testing"

	"github.com/cellfed/cellfed/pkg/pki"
)

func TestDroppedFieldErrors(t *testing.T) {
	const divided = "replicaDivision: {mode: Divide}\n"
	v1Stash := func(stash string) string {
		return federated("v1beta1", "FederatedDeployment", "shop",
			"annotations:\n  conversion.cellfed.io/v1beta2-spec: '"+stash+"'\n", "")
	}
	admin := func(manager string) func(*Request) {
		return func(r *Request) { r.FieldManager, r.Groups = manager, []string{pki.AdminGroup, "system:authenticated"} }
	}
	for _, c := range []struct {
		name     string
		patch    bool // the request is a patch, not a PUT
		sub      string
		op       Operation
		old, obj string
		who      func(*Request)
		want     string // the refused field; "": allowed
	}{
		{name: "a PUT that leaves the field out", old: v2(divided), obj: v2(""), want: "spec.replicaDivision"},
		{name: "a PUT that keeps it", old: v2(divided), obj: v2(divided)},
		{name: "a PUT that changes it", old: v2(divided), obj: v2("replicaDivision: {mode: Divide, maxSurge: 2}\n")},
		{name: "a PUT that sets it to null", old: v2(divided), obj: v2("replicaDivision: null\n"), want: "spec.replicaDivision"},
		{name: "a patch that removes it", patch: true, old: v2(divided), obj: v2("")},
		{name: "a PUT of an object that never had it", old: v2(""), obj: v2("")},
		{name: "a status write", sub: "status", old: v2(divided), obj: v2("")},
		{name: "a create", op: Create, obj: v2("")},
		{name: "cellfed's policy controller", old: v2(divided), obj: v2(""), who: admin("cellfed-policy")},
		{name: "a cellfed- field manager that is not the plane's", old: v2(divided), obj: v2(""),
			who: func(r *Request) { r.FieldManager, r.Groups = "cellfed-policy", []string{"system:authenticated"} }, want: "spec.replicaDivision"},
		{name: "an admin's kubectl replace", old: v2(divided), obj: v2(""), who: admin("kubectl-replace"), want: "spec.replicaDivision"},
		{name: "a v1beta1 PUT whose stash leaves it out", old: v1Stash(`{"replicaDivision":{"mode":"Divide"}}`), obj: v1Stash(`{"placement":{}}`),
			want: "metadata.annotations[conversion.cellfed.io/v1beta2-spec].replicaDivision"},
		{name: "a v1beta1 PUT without the stash", old: v1Stash(`{"replicaDivision":{"mode":"Divide"}}`), obj: v1(""),
			want: "metadata.annotations[conversion.cellfed.io/v1beta2-spec].replicaDivision"},
		{name: "a v1beta1 PUT that keeps the stash", old: v1Stash(`{"replicaDivision":{"mode":"Divide"}}`), obj: v1Stash(`{"replicaDivision":{"mode":"Divide"}}`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			op := c.op
			if op == "" {
				op = Update
			}
			var old = object(t, c.old)
			r := request(op, c.sub, object(t, c.obj), old)
			r.Replace = !c.patch
			if c.who != nil {
				c.who(&r)
			}
			errs := droppedFieldErrors(r)
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
				for _, m := range []string{"leaves it out: a client built before cellfed v0.1.0 does not know the field",
					`kubectl patch federateddeployments.v1beta2.types.kubefed.io/web -n shop --type=json -p '[{"op":"remove","path":"/spec/replicaDivision"}]'`} {
					if !strings.Contains(e.Detail, m) {
						t.Errorf("%s: message lacks %q: %s", e.Field, m, e.Detail)
					}
				}
			}
			if strings.Join(got, ",") != c.want {
				t.Errorf("refused %v, want %q (%v)", got, c.want, errs)
			}
		})
	}
}

// The rule runs in Validate, as Invalid, before the other rules.
func TestValidateDroppedField(t *testing.T) {
	runValidate(t, []validateCase{
		{
			name:    "a PUT that leaves replicaDivision out",
			op:      Update,
			replace: true,
			old:     v2(deploymentTemplate + "replicaDivision: {mode: Divide}\n"),
			obj:     v2(deploymentTemplate),
			want:    invalid,
			msgs:    []string{"spec.replicaDivision: Required value", "kubectl patch federateddeployments.v1beta2.types.kubefed.io/web"},
		},
		{
			name: "a patch that removes it",
			op:   Update,
			old:  v2(deploymentTemplate + "replicaDivision: {mode: Divide}\n"),
			obj:  v2(deploymentTemplate),
		},
	})
}
