// Package writefreeze stops every write to one API resource, its
// subresources included, on every replica of the plane, and lifts that
// again. It is the freeze of an online split (cellfed-apiserver split):
// a ValidatingAdmissionPolicy and its binding, which every replica's
// admission enforces once its informer has them, and which live in the
// plane's own database, so a replica restarted meanwhile keeps the freeze.
package writefreeze

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// LabelKey marks the policy and binding of a freeze.
const LabelKey = "writefreeze.cellfed.io/resource"

// Name is the policy's and the binding's name for a resource.
func Name(gr schema.GroupResource) string {
	if gr.Group == "" {
		return "cellfed-freeze." + gr.Resource
	}
	return "cellfed-freeze." + gr.Resource + "." + gr.Group
}

// Message is what a refused write answers.
func Message(gr schema.GroupResource) string {
	return fmt.Sprintf("writes to %s are frozen while it moves to its own database (cellfed-apiserver split); retry in a moment", gr.String())
}

// Policy is the freeze of gr: every create, update and delete of the
// resource and of each of its subresources is denied.
func Policy(gr schema.GroupResource) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	name := Name(gr)
	labels := map[string]string{LabelKey: labelValue(gr)}
	fail := admissionregistrationv1.Fail
	forbidden := metav1.StatusReasonForbidden
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
						Rule: admissionregistrationv1.Rule{
							APIGroups:   []string{gr.Group},
							APIVersions: []string{"*"},
							Resources:   []string{gr.Resource, gr.Resource + "/*"},
						},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "false",
				Message:    Message(gr),
				Reason:     &forbidden,
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	return policy, binding
}

// labelValue fits group/resource into a label value.
func labelValue(gr schema.GroupResource) string {
	v := gr.Resource
	if gr.Group != "" {
		v += "." + gr.Group
	}
	if len(v) > 63 {
		v = v[:63]
	}
	return strings.Trim(v, ".-_")
}

// Freeze creates (or keeps) the freeze of gr.
func Freeze(ctx context.Context, c kubernetes.Interface, gr schema.GroupResource) error {
	policy, binding := Policy(gr)
	api := c.AdmissionregistrationV1()
	if _, err := api.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("freezing writes to %s: creating ValidatingAdmissionPolicy %s: %w", gr, policy.Name, err)
	}
	if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("freezing writes to %s: creating ValidatingAdmissionPolicyBinding %s: %w", gr, binding.Name, err)
	}
	return nil
}

// Thaw deletes the freeze of gr; a missing one is not an error.
func Thaw(ctx context.Context, c kubernetes.Interface, gr schema.GroupResource) error {
	name := Name(gr)
	api := c.AdmissionregistrationV1()
	if err := api.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("lifting the freeze of %s: deleting ValidatingAdmissionPolicyBinding %s: %w", gr, name, err)
	}
	if err := api.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("lifting the freeze of %s: deleting ValidatingAdmissionPolicy %s: %w", gr, name, err)
	}
	return nil
}

// Refused reports whether err is the freeze's refusal.
func Refused(err error, gr schema.GroupResource) bool {
	return err != nil && apierrors.IsForbidden(err) && strings.Contains(err.Error(), Message(gr))
}

// WaitEnforced calls probe (one write of the resource that is not
// persisted: a server-side dry run) until the freeze has refused it `times` times
// in a row (each call may reach another replica behind a load balancer),
// or timeout.
func WaitEnforced(ctx context.Context, gr schema.GroupResource, probe func(context.Context) error, times int, timeout time.Duration) error {
	streak := 0
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		err := probe(ctx)
		if Refused(err, gr) {
			streak++
			return streak >= times, nil
		}
		streak, last = 0, err
		return false, nil
	})
	if err != nil {
		if last == nil {
			last = errors.New("the dry-run write succeeded")
		}
		return fmt.Errorf("the freeze of %s is not enforced after %s (last probe: %v)", gr, timeout, last)
	}
	return nil
}

// WaitLifted calls probe until it has not been refused by the freeze
// `times` times in a row, or timeout: every replica's admission has
// dropped the deleted policy.
func WaitLifted(ctx context.Context, gr schema.GroupResource, probe func(context.Context) error, times int, timeout time.Duration) error {
	streak := 0
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if Refused(probe(ctx), gr) {
			streak = 0
			return false, nil
		}
		streak++
		return streak >= times, nil
	})
	if err != nil {
		return fmt.Errorf("writes to %s are still refused %s after the freeze was deleted", gr, timeout)
	}
	return nil
}
