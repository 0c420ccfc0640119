package apiserver

import (
	"context"
	"fmt"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/cellfed/cellfed/pkg/roles"
)

// rolesResync is how often the plane's roles are checked without an
// event (a missed watch event, or a change the informer filtered out).
const rolesResync = 5 * time.Minute

// planeRoles creates the plane's ClusterRoles (pkg/roles) and the
// FederatedTypeConfig reader binding on start, before /readyz says ok,
// then watches them and puts back any that is edited or deleted. Every
// replica of the plane does so; they write the same objects, so they do
// not fight.
type planeRoles struct {
	namespace string // the federation namespace
}

func (p planeRoles) start(hookCtx genericapiserver.PostStartHookContext) error {
	ctx := hookCtx.Context
	cfg := rest.CopyConfig(hookCtx.LoopbackClientConfig)
	cfg.UserAgent = "cellfed-roles"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("roles client: %w", err)
	}
	err = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		if err := p.reconcile(ctx, client); err != nil {
			klog.ErrorS(err, "Installing the plane's roles; retrying")
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return nil // the server is stopping
	}
	klog.InfoS("Plane roles installed", "clusterRoles", len(roles.ClusterRoles()))
	go p.run(ctx, client)
	return nil
}

// run reconciles on every change to a ClusterRole or to a RoleBinding of
// the federation namespace, and every rolesResync.
func (p planeRoles) run(ctx context.Context, client kubernetes.Interface) {
	trigger := make(chan struct{}, 1)
	poke := func(any) {
		select {
		case trigger <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{AddFunc: poke, UpdateFunc: func(_, o any) { poke(o) }, DeleteFunc: poke}
	clusterRoles := informers.NewSharedInformerFactory(client, 0)
	bindings := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(p.namespace))
	if _, err := clusterRoles.Rbac().V1().ClusterRoles().Informer().AddEventHandler(handler); err != nil {
		klog.ErrorS(err, "Watching ClusterRoles for the plane's roles")
	}
	if _, err := bindings.Rbac().V1().RoleBindings().Informer().AddEventHandler(handler); err != nil {
		klog.ErrorS(err, "Watching RoleBindings for the plane's roles")
	}
	clusterRoles.Start(ctx.Done())
	bindings.Start(ctx.Done())
	defer clusterRoles.Shutdown()
	defer bindings.Shutdown()
	ticker := time.NewTicker(rolesResync)
	defer ticker.Stop()
	backoff := rolesBackoff()
	for {
		select {
		case <-ctx.Done():
			return
		case <-trigger:
		case <-ticker.C:
		}
		err := p.reconcile(ctx, client)
		if err == nil {
			backoff = rolesBackoff()
			continue
		}
		delay := backoff.Step()
		klog.ErrorS(err, "Reconciling the plane's roles; retrying", "after", delay)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		poke(nil)
	}
}

// rolesBackoff spaces retries after failed reconciles: 1 s doubling up
// to a minute.
func rolesBackoff() wait.Backoff {
	return wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 100, Cap: time.Minute}
}

// reconcile creates or puts back every role and the reader binding.
func (p planeRoles) reconcile(ctx context.Context, client kubernetes.Interface) error {
	for _, want := range roles.ClusterRoles() {
		if err := reconcileClusterRole(ctx, client, want); err != nil {
			return err
		}
	}
	if err := reconcileClusterRoleBinding(ctx, client, roles.BootstrapperBinding()); err != nil {
		return err
	}
	return reconcileRoleBinding(ctx, client, roles.TypeReaderBinding(p.namespace))
}

// reconcileClusterRoleBinding makes the ClusterRoleBinding's role and
// subjects want's.
func reconcileClusterRoleBinding(ctx context.Context, client kubernetes.Interface, want *rbacv1.ClusterRoleBinding) error {
	api := client.RbacV1().ClusterRoleBindings()
	have, err := api.Get(ctx, want.Name, metav1.GetOptions{})
	if err == nil && have.RoleRef != want.RoleRef {
		if err := api.Delete(ctx, want.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &have.UID}}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("replacing ClusterRoleBinding %s: %w", want.Name, err)
		}
		err = apierrors.NewNotFound(rbacv1.Resource("clusterrolebindings"), want.Name)
	}
	if apierrors.IsNotFound(err) {
		if _, err := api.Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ClusterRoleBinding %s: %w", want.Name, err)
		}
		klog.InfoS("Created plane ClusterRoleBinding", "name", want.Name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading ClusterRoleBinding %s: %w", want.Name, err)
	}
	labels, labelsOK := withLabels(have.Labels, want.Labels)
	if labelsOK && equality.Semantic.DeepEqual(have.Subjects, want.Subjects) {
		return nil
	}
	have = have.DeepCopy()
	have.Labels, have.Subjects = labels, want.Subjects
	if _, err := api.Update(ctx, have, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("putting back ClusterRoleBinding %s: %w", want.Name, err)
	}
	klog.InfoS("Put back plane ClusterRoleBinding changed by someone else", "name", want.Name)
	return nil
}

// reconcileClusterRole makes the ClusterRole's rules exactly want's, its
// labels include want's (others are kept), and it has no aggregation rule.
func reconcileClusterRole(ctx context.Context, client kubernetes.Interface, want *rbacv1.ClusterRole) error {
	api := client.RbacV1().ClusterRoles()
	have, err := api.Get(ctx, want.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if _, err := api.Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ClusterRole %s: %w", want.Name, err)
		}
		klog.InfoS("Created plane ClusterRole", "name", want.Name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading ClusterRole %s: %w", want.Name, err)
	}
	labels, labelsOK := withLabels(have.Labels, want.Labels)
	if labelsOK && have.AggregationRule == nil && equality.Semantic.DeepEqual(have.Rules, want.Rules) {
		return nil
	}
	have = have.DeepCopy()
	have.Labels, have.AggregationRule, have.Rules = labels, nil, want.Rules
	if _, err := api.Update(ctx, have, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("putting back ClusterRole %s: %w", want.Name, err)
	}
	klog.InfoS("Put back plane ClusterRole changed by someone else", "name", want.Name)
	return nil
}

// reconcileRoleBinding makes the RoleBinding's role and subjects want's.
func reconcileRoleBinding(ctx context.Context, client kubernetes.Interface, want *rbacv1.RoleBinding) error {
	api := client.RbacV1().RoleBindings(want.Namespace)
	have, err := api.Get(ctx, want.Name, metav1.GetOptions{})
	if err == nil && have.RoleRef != want.RoleRef {
		// roleRef cannot change: replace the binding.
		if err := api.Delete(ctx, want.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &have.UID}}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("replacing RoleBinding %s/%s: %w", want.Namespace, want.Name, err)
		}
		err = apierrors.NewNotFound(rbacv1.Resource("rolebindings"), want.Name)
	}
	if apierrors.IsNotFound(err) {
		if _, err := api.Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating RoleBinding %s/%s: %w", want.Namespace, want.Name, err)
		}
		klog.InfoS("Created plane RoleBinding", "namespace", want.Namespace, "name", want.Name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading RoleBinding %s/%s: %w", want.Namespace, want.Name, err)
	}
	labels, labelsOK := withLabels(have.Labels, want.Labels)
	if labelsOK && equality.Semantic.DeepEqual(have.Subjects, want.Subjects) {
		return nil
	}
	have = have.DeepCopy()
	have.Labels, have.Subjects = labels, want.Subjects
	if _, err := api.Update(ctx, have, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("putting back RoleBinding %s/%s: %w", want.Namespace, want.Name, err)
	}
	klog.InfoS("Put back plane RoleBinding changed by someone else", "namespace", want.Namespace, "name", want.Name)
	return nil
}

// withLabels returns have with want's labels set, and whether have had
// them all already.
func withLabels(have, want map[string]string) (map[string]string, bool) {
	out := make(map[string]string, len(have)+len(want))
	for k, v := range have {
		out[k] = v
	}
	ok := true
	for k, v := range want {
		if out[k] != v {
			ok = false
			out[k] = v
		}
	}
	return out, ok
}
