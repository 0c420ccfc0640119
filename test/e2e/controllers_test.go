package e2e

import (
	"context"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cellfed/cellfed/test/framework"
)

// TestCoreControllers checks the in-process controllers of a standalone
// plane: namespace deletion, garbage collection, service accounts and
// their tokens, the root CA config map, cluster-role aggregation.
func TestCoreControllers(t *testing.T) {
	t.Parallel()
	plane := framework.StartPlane(t, framework.PlaneOptions{})
	c := plane.Client(t)
	ctx := context.Background()
	k := framework.Kubectl{Kubeconfig: plane.Kubeconfig}

	t.Run("namespace deletion removes the namespace and its contents", func(t *testing.T) {
		k.MustRun(t, "", "create", "namespace", "doomed")
		k.MustRun(t, "", "-n", "doomed", "create", "configmap", "c1", "--from-literal=a=b")
		k.MustRun(t, "", "-n", "doomed", "create", "secret", "generic", "s1", "--from-literal=a=b")
		k.MustRun(t, "", "delete", "namespace", "doomed", "--wait=true", "--timeout=90s")
		if _, err := c.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("namespace still there after deletion: %v", err)
		}
		// Recreating it must start empty.
		k.MustRun(t, "", "create", "namespace", "doomed")
		if cms, err := c.CoreV1().ConfigMaps("doomed").Get(ctx, "c1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("config map c1 survived its namespace: %v %v", cms, err)
		}
	})

	t.Run("garbage collection removes dependents of a deleted owner", func(t *testing.T) {
		owner, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		dependent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
		}}}}
		if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, dependent, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := c.CoreV1().ConfigMaps("default").Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, func(ctx context.Context) error {
			_, err := c.CoreV1().ConfigMaps("default").Get(ctx, "dependent", metav1.GetOptions{})
			return err
		})
	})

	t.Run("service accounts, tokens and the root CA appear in new namespaces", func(t *testing.T) {
		k.MustRun(t, "", "create", "namespace", "team-a")
		waitFound(t, func(ctx context.Context) error {
			_, err := c.CoreV1().ServiceAccounts("team-a").Get(ctx, "default", metav1.GetOptions{})
			return err
		})
		waitFound(t, func(ctx context.Context) error {
			_, err := c.CoreV1().ConfigMaps("team-a").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
			return err
		})
		token := k.MustRun(t, "", "-n", "team-a", "create", "token", "default")
		cfg := rest.AnonymousClientConfig(plane.RESTConfig(t))
		cfg.BearerToken = token
		review, err := kubernetes.NewForConfigOrDie(cfg).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("authenticating with a service-account token: %v", err)
		}
		if got := review.Status.UserInfo.Username; got != "system:serviceaccount:team-a:default" {
			t.Errorf("token authenticates as %q", got)
		}
	})

	t.Run("cluster roles are aggregated", func(t *testing.T) {
		agg := &rbacv1.ClusterRole{
			ObjectMeta:      metav1.ObjectMeta{Name: "cellfed-aggregate"},
			AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"cellfed.io/aggregate-to": "test"}}}},
		}
		if _, err := c.RbacV1().ClusterRoles().Create(ctx, agg, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		part := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "cellfed-part", Labels: map[string]string{"cellfed.io/aggregate-to": "test"}},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}},
		}
		if _, err := c.RbacV1().ClusterRoles().Create(ctx, part, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the aggregated role to get the rule", func(ctx context.Context) (bool, error) {
			got, err := c.RbacV1().ClusterRoles().Get(ctx, agg.Name, metav1.GetOptions{})
			return err == nil && len(got.Rules) == 1 && got.Rules[0].Resources[0] == "configmaps", err
		})
	})
}

// waitGone waits until get reports NotFound.
func waitGone(t *testing.T, get func(context.Context) error) {
	t.Helper()
	waitFor(t, "object to go away", func(ctx context.Context) (bool, error) { return apierrors.IsNotFound(get(ctx)), nil })
}

// waitFound waits until get succeeds.
func waitFound(t *testing.T, get func(context.Context) error) {
	t.Helper()
	waitFor(t, "object to appear", func(ctx context.Context) (bool, error) { err := get(ctx); return err == nil, err })
}
