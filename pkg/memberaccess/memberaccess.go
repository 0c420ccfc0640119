// Package memberaccess gives the plane access to a member cluster: a
// ServiceAccount with every right federation needs, and tokens for it
// from the TokenRequest API (members need no token controller). Both
// `cellfedctl join` (pushed by an administrator) and cellfed-agent
// (self-registration from inside the member) use it. It imports client-go
// only.
package memberaccess

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Rules is what the plane may do in a member: everything, as KubeFed's
// `kubefedctl join` grants (the controller propagates any federated type,
// CRDs included, and reads /healthz and /version).
var Rules = []rbacv1.PolicyRule{
	{APIGroups: []string{rbacv1.APIGroupAll}, Resources: []string{rbacv1.ResourceAll}, Verbs: []string{rbacv1.VerbAll}},
	{NonResourceURLs: []string{rbacv1.NonResourceAll}, Verbs: []string{"get"}},
}

// Grant names the plane's ServiceAccount in a member; the ClusterRole and
// ClusterRoleBinding carry the ServiceAccount's name.
type Grant struct {
	Namespace, ServiceAccount string
	// Labels go on the ServiceAccount, ClusterRole and ClusterRoleBinding.
	Labels map[string]string
	// Where names the member in messages, e.g. " in member cluster x".
	Where string
	// Rules are the ClusterRole's rules; nil means Rules (everything).
	Rules []rbacv1.PolicyRule
}

// Undo records how to revert a write (the caller runs them on failure).
type Undo func(what string, fn func(context.Context) error)

// Wrap turns an API error into the caller's error, saying what was done.
type Wrap func(err error, doing string) error

// ServiceAccountUser is the user name of a ServiceAccount.
func ServiceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// Ensure creates or updates the namespace, ServiceAccount, ClusterRole
// and ClusterRoleBinding of g, and returns how many objects it created
// and updated.
func Ensure(ctx context.Context, member kubernetes.Interface, g Grant, undo Undo, wrap Wrap) (created, updated int, err error) {
	ns, sa, labels, where := g.Namespace, g.ServiceAccount, g.Labels, g.Where
	rules := g.Rules
	if rules == nil {
		rules = Rules
	}

	got, err := member.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err := member.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		switch {
		case err == nil:
			undo("namespace "+ns+where, func(ctx context.Context) error {
				return member.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
			})
			created++
		case !apierrors.IsAlreadyExists(err):
			return 0, 0, wrap(err, "creating namespace "+ns+where)
		}
	case err != nil:
		return 0, 0, wrap(err, "reading namespace "+ns+where)
	case got.DeletionTimestamp != nil:
		return 0, 0, fmt.Errorf("namespace %s%s is being deleted; wait until it is gone and join again, or pass another --member-namespace", ns, where)
	}

	if _, err := member.CoreV1().ServiceAccounts(ns).Get(ctx, sa, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		obj := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns, Labels: labels}}
		switch _, err := member.CoreV1().ServiceAccounts(ns).Create(ctx, obj, metav1.CreateOptions{}); {
		case apierrors.IsAlreadyExists(err):
			// The read was stale (a member answers reads from its cache):
			// it exists and is not ours to undo.
		case err != nil:
			return 0, 0, wrap(err, fmt.Sprintf("creating ServiceAccount %s/%s%s", ns, sa, where))
		default:
			undo(fmt.Sprintf("ServiceAccount %s/%s%s", ns, sa, where), func(ctx context.Context) error {
				return member.CoreV1().ServiceAccounts(ns).Delete(ctx, sa, metav1.DeleteOptions{})
			})
			created++
		}
	} else if err != nil {
		return 0, 0, wrap(err, fmt.Sprintf("reading ServiceAccount %s/%s%s", ns, sa, where))
	}

	roles := member.RbacV1().ClusterRoles()
	role, err := roles.Get(ctx, sa, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		obj := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: sa, Labels: labels}, Rules: rules}
		if _, err := roles.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return 0, 0, wrap(err, "creating ClusterRole "+sa+where)
		}
		undo("ClusterRole "+sa+where, func(ctx context.Context) error { return roles.Delete(ctx, sa, metav1.DeleteOptions{}) })
		created++
	case err != nil:
		return 0, 0, wrap(err, "reading ClusterRole "+sa+where)
	case !reflect.DeepEqual(role.Rules, rules):
		role.Rules = rules
		if _, err := roles.Update(ctx, role, metav1.UpdateOptions{}); err != nil {
			return 0, 0, wrap(err, "updating ClusterRole "+sa+where)
		}
		updated++
	}

	bindings := member.RbacV1().ClusterRoleBindings()
	wantBinding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: sa, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: sa},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}},
	}
	binding, err := bindings.Get(ctx, sa, metav1.GetOptions{})
	switch {
	case err == nil && (binding.RoleRef != wantBinding.RoleRef):
		// roleRef cannot change: replace the binding.
		if err := bindings.Delete(ctx, sa, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return 0, 0, wrap(err, "replacing ClusterRoleBinding "+sa+where)
		}
		if _, err := bindings.Create(ctx, wantBinding, metav1.CreateOptions{}); err != nil {
			return 0, 0, wrap(err, "replacing ClusterRoleBinding "+sa+where)
		}
		updated++
	case err == nil && !reflect.DeepEqual(binding.Subjects, wantBinding.Subjects):
		binding.Subjects = wantBinding.Subjects
		if _, err := bindings.Update(ctx, binding, metav1.UpdateOptions{}); err != nil {
			return 0, 0, wrap(err, "updating ClusterRoleBinding "+sa+where)
		}
		updated++
	case apierrors.IsNotFound(err):
		if _, err := bindings.Create(ctx, wantBinding, metav1.CreateOptions{}); err != nil {
			return 0, 0, wrap(err, "creating ClusterRoleBinding "+sa+where)
		}
		undo("ClusterRoleBinding "+sa+where, func(ctx context.Context) error { return bindings.Delete(ctx, sa, metav1.DeleteOptions{}) })
		created++
	case err != nil:
		return 0, 0, wrap(err, "reading ClusterRoleBinding "+sa+where)
	}
	return created, updated, nil
}

// MintToken requests a token for the ServiceAccount valid for ttl (the
// member may grant less) and returns it with its expiry.
func MintToken(ctx context.Context, member kubernetes.Interface, namespace, sa string, ttl time.Duration) (string, time.Time, error) {
	secs := int64(ttl / time.Second)
	tr, err := member.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
	if err != nil {
		return "", time.Time{}, err
	}
	return tr.Status.Token, tr.Status.ExpirationTimestamp.Time, nil
}

// WaitAuthorized waits until cfg (a member's address, CA and a new token)
// authenticates as username and may do everything: the member's
// authenticator and RBAC caches see new objects a moment later.
func WaitAuthorized(ctx context.Context, cfg *rest.Config, username string, timeout time.Duration) error {
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client for the member with its new token: %w", err)
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		r, err := c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		switch {
		case err != nil:
			last = oneLine(err.Error())
			return false, nil
		case r.Status.UserInfo.Username != username:
			last = fmt.Sprintf("it authenticates as %q", r.Status.UserInfo.Username)
			return false, nil
		}
		sar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "*", Group: "*", Resource: "*"},
		}}
		a, err := c.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		switch {
		case err != nil:
			last = oneLine(err.Error())
			return false, nil
		case !a.Status.Allowed:
			last = "RBAC does not grant it every verb on every resource yet"
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the new token of %s does not work against %s after %v (%s); check that the member's authenticator accepts service account tokens and that it authorizes with RBAC", username, cfg.Host, timeout, last)
	}
	return nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
