package cellfedctl

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

// TestRegisteredNameError: join refuses a name an agent's registration
// holds (issue #40: join over a pending registration overwrote its token
// Secret).
func TestRegisteredNameError(t *testing.T) {
	reg := func(conds ...string) *cellv1alpha1.ClusterRegistration {
		r := &cellv1alpha1.ClusterRegistration{ObjectMeta: metav1.ObjectMeta{Name: "edge-1"}, Spec: cellv1alpha1.ClusterRegistrationSpec{Tenant: "globex"}}
		for _, c := range conds {
			r.Status.Conditions = append(r.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue, Reason: "Test"})
		}
		return r
	}
	for _, tc := range []struct {
		name string
		reg  *cellv1alpha1.ClusterRegistration
		want string
	}{
		{"no registration", nil, ""},
		{"pending", reg(), "cluster name edge-1 is taken by a pending registration (ClusterRegistration edge-1, tenant \"globex\"): joining would overwrite its token Secret kube-federation-system/edge-1-token; approve or deny it first (`cellfedctl registration approve edge-1` or `cellfedctl registration deny edge-1`)"},
		{"registered", reg(cellv1alpha1.RegistrationConditionApproved, cellv1alpha1.RegistrationConditionReady), "is taken by an agent's registration (ClusterRegistration edge-1, Registered, tenant \"globex\")"},
		{"revoked", reg(cellv1alpha1.RegistrationConditionRevoked), "Revoked, tenant \"globex\"): joining would overwrite its KubeFedCluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErr(t, "RegisteredNameError", RegisteredNameError("cellfedctl", "kube-federation-system", tc.reg), tc.want)
		})
	}
}
