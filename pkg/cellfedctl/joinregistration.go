package cellfedctl

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/cellfed/cellfed/pkg/apis"
	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/registration"
)

// registrationOf reads the ClusterRegistration named name, nil when there
// is none.
func registrationOf(ctx context.Context, plane dynamic.Interface, name string) (*cellv1alpha1.ClusterRegistration, error) {
	u, err := plane.Resource(cellv1alpha1.ClusterRegistrationsResource).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, apiError(err, "reading ClusterRegistration "+name)
	}
	var reg cellv1alpha1.ClusterRegistration
	if err := apis.Decode(u.Object, &reg); err != nil {
		return nil, fmt.Errorf("ClusterRegistration %s is malformed: %w", name, err)
	}
	return &reg, nil
}

// RegisteredNameError is the refusal to join a cluster under the name of
// an agent's registration (reg, nil for none): join would overwrite the
// registration's token Secret and KubeFedCluster, and with them another
// (maybe another tenant's) cluster. ctl is the command's name. It is a
// pure function.
func RegisteredNameError(ctl, fedNamespace string, reg *cellv1alpha1.ClusterRegistration) error {
	if reg == nil {
		return nil
	}
	name := reg.Name
	phase := registration.Phase(reg.Status.Conditions)
	if phase == "" || phase == cellv1alpha1.RegistrationPending {
		return fmt.Errorf("cluster name %s is taken by a pending registration (ClusterRegistration %s, tenant %q): joining would overwrite its token Secret %s/%s; approve or deny it first (`%s registration approve %s` or `%s registration deny %s`), or join this cluster under another name",
			name, name, reg.Spec.Tenant, fedNamespace, registration.CredentialsSecretName(name), ctl, name, ctl, name)
	}
	return fmt.Errorf("cluster name %s is taken by an agent's registration (ClusterRegistration %s, %s, tenant %q): joining would overwrite its KubeFedCluster and token Secret %s/%s; join this cluster under another name, or delete that registration first (`kubectl delete clusterregistration %s`)",
		name, name, phase, reg.Spec.Tenant, fedNamespace, registration.CredentialsSecretName(name), name)
}
