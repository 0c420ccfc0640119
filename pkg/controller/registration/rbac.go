package registration

import (
	"context"
	"fmt"
	"reflect"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/pki"
	"github.com/cellfed/cellfed/pkg/registration"
)

// ensureAccessRBAC lets the registration's bootstrap token read it and,
// unless it was denied or revoked, its agent read and renew it; nothing
// else.
func (c *Controller) ensureAccessRBAC(ctx context.Context, reg *cellv1alpha1.ClusterRegistration, phase cellv1alpha1.RegistrationPhase) error {
	name := registration.AccessRoleName(reg.Name)
	labels := map[string]string{registration.LabelRegistration: reg.Name}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, OwnerReferences: ownerRefs(reg)},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{cellv1alpha1.GroupName}, Resources: []string{"clusterregistrations"},
			ResourceNames: []string{reg.Name}, Verbs: []string{"get", "update", "patch"}}},
	}
	var subjects []rbacv1.Subject
	if id := reg.Labels[registration.LabelBootstrapTokenID]; id != "" {
		subjects = append(subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: registration.BootstrapUserPrefix + id})
	}
	if phase != cellv1alpha1.RegistrationDenied && phase != cellv1alpha1.RegistrationRevoked {
		subjects = append(subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: pki.AgentUser(reg.Name)})
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, OwnerReferences: ownerRefs(reg)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   subjects,
	}
	roles := c.kube.RbacV1().ClusterRoles()
	if have, err := roles.Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		if _, err := roles.Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ClusterRole %s: %w", name, err)
		}
	} else if err != nil {
		return fmt.Errorf("reading ClusterRole %s: %w", name, err)
	} else if !reflect.DeepEqual(have.Rules, role.Rules) {
		have = have.DeepCopy()
		have.Rules = role.Rules
		if _, err := roles.Update(ctx, have, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating ClusterRole %s: %w", name, err)
		}
	}
	bindings := c.kube.RbacV1().ClusterRoleBindings()
	if have, err := bindings.Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		if _, err := bindings.Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ClusterRoleBinding %s: %w", name, err)
		}
	} else if err != nil {
		return fmt.Errorf("reading ClusterRoleBinding %s: %w", name, err)
	} else if !reflect.DeepEqual(have.Subjects, binding.Subjects) {
		have = have.DeepCopy()
		have.Subjects = binding.Subjects
		if _, err := bindings.Update(ctx, have, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating ClusterRoleBinding %s: %w", name, err)
		}
	}
	return nil
}
