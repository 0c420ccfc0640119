package apiserver

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/cellfed/cellfed/pkg/roles"
)

// TestPlaneRolesReconcile: roles are created, an edited one is put back
// (rules, labels, aggregation rule) with other labels kept, and a
// RoleBinding bound to another role is replaced.
func TestPlaneRolesReconcile(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	p := planeRoles{namespace: "kube-federation-system"}
	if err := p.reconcile(ctx, client); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		for _, want := range roles.ClusterRoles() {
			got, err := client.RbacV1().ClusterRoles().Get(ctx, want.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("%s: %v", when, err)
			}
			if !equality.Semantic.DeepEqual(got.Rules, want.Rules) || got.AggregationRule != nil {
				t.Errorf("%s: ClusterRole %s rules %v, aggregation %v; want %v", when, want.Name, got.Rules, got.AggregationRule, want.Rules)
			}
			for k, v := range want.Labels {
				if got.Labels[k] != v {
					t.Errorf("%s: ClusterRole %s label %s=%q, want %q", when, want.Name, k, got.Labels[k], v)
				}
			}
		}
		rb, err := client.RbacV1().RoleBindings(p.namespace).Get(ctx, roles.TypeReader, metav1.GetOptions{})
		want := roles.TypeReaderBinding(p.namespace)
		if err != nil || rb.RoleRef != want.RoleRef || !equality.Semantic.DeepEqual(rb.Subjects, want.Subjects) {
			t.Errorf("%s: RoleBinding %v %+v", when, err, rb)
		}
	}
	check("created")

	cr, _ := client.RbacV1().ClusterRoles().Get(ctx, roles.AppTeam, metav1.GetOptions{})
	cr.Rules = append(cr.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}})
	cr.Labels = map[string]string{"team": "mine"}
	cr.AggregationRule = &rbacv1.AggregationRule{}
	if _, err := client.RbacV1().ClusterRoles().Update(ctx, cr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.RbacV1().ClusterRoles().Delete(ctx, roles.Viewer, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rb, _ := client.RbacV1().RoleBindings(p.namespace).Get(ctx, roles.TypeReader, metav1.GetOptions{})
	rb.RoleRef.Name = "cluster-admin"
	if _, err := client.RbacV1().RoleBindings(p.namespace).Update(ctx, rb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := p.reconcile(ctx, client); err != nil {
		t.Fatal(err)
	}
	check("put back")
	if got, _ := client.RbacV1().ClusterRoles().Get(ctx, roles.AppTeam, metav1.GetOptions{}); got.Labels["team"] != "mine" {
		t.Errorf("put back dropped another label: %v", got.Labels)
	}
}
