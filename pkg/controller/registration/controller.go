// Package registration is the plane's registration controller: it moves a
// registration's member token into a Secret at once, gives the
// registration's bootstrap token and agent read (and the agent renew)
// access to it alone, applies the tenant's auto-approve policy, and on
// approval signs the agent's certificate, creates the tunnelled
// KubeFedCluster and deletes the bootstrap token. It re-signs renewed
// certificate requests of approved registrations, disconnects revoked
// agents, and records every failure in the Ready condition.
//
// It runs in cellfed-apiserver (a post-start hook), which holds the agent
// CA in its data dir.
package registration

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	fedv1beta1 "sigs.k8s.io/kubefed/pkg/apis/core/v1beta1"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/pkg/pki"
	"github.com/cellfed/cellfed/pkg/registration"
)

// Tunnel is what the controller needs of the tunnel hub.
type Tunnel interface {
	// Disconnect closes every connection of cluster's agent and returns
	// how many there were.
	Disconnect(cluster string) int
}

// Access says how the plane reaches a tunnelled cluster: the
// KubeFedCluster's apiEndpoint and proxyURL (the hub's CONNECT frontend),
// and the TLS validations it must disable, if any.
type Access func(reg *cellv1alpha1.ClusterRegistration) (apiEndpoint, proxyURL string, err error)

// Options configure the controller. NewOptions holds the defaults.
type Options struct {
	// FederationNamespace holds KubeFedClusters and their Secrets.
	FederationNamespace string
	// CertValidity is how long agent certificates are valid.
	CertValidity time.Duration
	// Workers reconcile registrations in parallel.
	Workers int
	// Resync re-checks every registration this often.
	Resync time.Duration
}

// NewOptions returns the defaults: 30-day certificates, 2 workers.
func NewOptions() Options {
	return Options{FederationNamespace: registration.DefaultMemberNamespace, CertValidity: 30 * 24 * time.Hour, Workers: 2, Resync: 10 * time.Minute}
}

// Validate checks the options.
func (o Options) Validate() error {
	var errs []error
	if o.CertValidity < 10*time.Second {
		errs = append(errs, fmt.Errorf("--agent-cert-validity=%v is too short; agent certificates must be valid for at least 10s (agents renew them at two thirds of their lifetime)", o.CertValidity))
	}
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("registration workers must be at least 1, got %d", o.Workers))
	}
	return errors.Join(errs...)
}

// Controller reconciles ClusterRegistrations.
type Controller struct {
	opts    Options
	kube    kubernetes.Interface
	dynamic dynamic.Interface
	pki     pki.Files
	tunnel  Tunnel
	access  Access
	now     func() time.Time

	regs     cache.GenericLister
	regsSync cache.InformerSynced
	policy   func() (*corev1.ConfigMap, error)
	polSync  cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	factory  dynamicinformer.DynamicSharedInformerFactory
	kfactory informers.SharedInformerFactory
}

// New builds the controller. tunnel may be nil (no hub in this process).
func New(opts Options, kube kubernetes.Interface, dyn dynamic.Interface, files pki.Files, tunnel Tunnel, access Access) (*Controller, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	c := &Controller{
		opts: opts, kube: kube, dynamic: dyn, pki: files, tunnel: tunnel, access: access, now: time.Now,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "cellfed-registrations"}),
	}
	c.factory = dynamicinformer.NewDynamicSharedInformerFactory(dyn, opts.Resync)
	inf := c.factory.ForResource(cellv1alpha1.ClusterRegistrationsResource)
	c.regs, c.regsSync = inf.Lister(), inf.Informer().HasSynced
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	// Every replica of the plane disconnects revoked agents from its own
	// hub, whether or not it runs the workers (an agent may be connected
	// to any replica).
	disconnect := func(obj any) {
		if c.tunnel == nil {
			return
		}
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		var reg cellv1alpha1.ClusterRegistration
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &reg); err != nil {
			return
		}
		if reg.DeletionTimestamp != nil || registration.Phase(reg.Status.Conditions) == cellv1alpha1.RegistrationRevoked ||
			registration.Phase(reg.Status.Conditions) == cellv1alpha1.RegistrationDenied {
			c.tunnel.Disconnect(reg.Name)
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { enqueue(o); disconnect(o) }, UpdateFunc: func(_, o any) { enqueue(o); disconnect(o) },
		DeleteFunc: func(o any) { enqueue(o); c.disconnectDeleted(o) },
	}); err != nil {
		return nil, fmt.Errorf("watching registrations: %w", err)
	}
	c.kfactory = informers.NewSharedInformerFactoryWithOptions(kube, opts.Resync, informers.WithNamespace(opts.FederationNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + registration.PolicyConfigMap }))
	cms := c.kfactory.Core().V1().ConfigMaps()
	c.polSync = cms.Informer().HasSynced
	c.policy = func() (*corev1.ConfigMap, error) {
		return cms.Lister().ConfigMaps(opts.FederationNamespace).Get(registration.PolicyConfigMap)
	}
	requeueAll := func(any) {
		objs, err := c.regs.List(labelsEverything())
		if err != nil {
			return
		}
		for _, o := range objs {
			enqueue(o)
		}
	}
	if _, err := cms.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: requeueAll, UpdateFunc: func(_, o any) { requeueAll(o) }, DeleteFunc: requeueAll,
	}); err != nil {
		return nil, fmt.Errorf("watching the registration policy: %w", err)
	}
	return c, nil
}

// disconnectDeleted drops the agent of a deleted registration from this
// process's hub.
func (c *Controller) disconnectDeleted(obj any) {
	if c.tunnel == nil {
		return
	}
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.tunnel.Disconnect(key)
	}
}

// Run starts the informers and workers and blocks until ctx is done.
func (c *Controller) Run(ctx context.Context) {
	c.StartInformers(ctx)
	c.RunWorkers(ctx)
}

// StartInformers starts the caches Admit reads and the handler that
// disconnects revoked agents; every replica of the plane runs them. They
// stop when ctx is done.
func (c *Controller) StartInformers(ctx context.Context) {
	c.factory.Start(ctx.Done())
	c.kfactory.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
		c.factory.Shutdown()
		c.kfactory.Shutdown()
	}()
}

// RunWorkers reconciles registrations (signing, KubeFedClusters, status)
// until ctx is done; only one replica of the plane runs them at a time.
// StartInformers must have been called.
func (c *Controller) RunWorkers(ctx context.Context) {
	defer utilruntime.HandleCrash()
	if !cache.WaitForCacheSync(ctx.Done(), c.regsSync, c.polSync) {
		return
	}
	// Registrations that changed while another replica led are
	// reconciled again.
	if objs, err := c.regs.List(labelsEverything()); err == nil {
		for _, o := range objs {
			if key, err := cache.MetaNamespaceKeyFunc(o); err == nil {
				c.queue.Add(key)
			}
		}
	}
	klog.InfoS("Registration controller started", "workers", c.opts.Workers, "certValidity", c.opts.CertValidity)
	for range c.opts.Workers {
		go wait.UntilWithContext(ctx, c.worker, time.Second)
	}
	<-ctx.Done()
}

// Admit is the tunnel hub's admission of an agent whose certificate
// names cluster: an agent certificate is honoured only while the
// cluster's registration is approved. A revoked, denied or deleted
// registration refuses the agent even though its certificate has not
// expired.
func (c *Controller) Admit(_ context.Context, cluster string, _ *x509.Certificate) error {
	if !c.regsSync() {
		return fmt.Errorf("the plane is still loading registrations; retry in a moment")
	}
	reg, err := c.get(cluster)
	if err != nil {
		return fmt.Errorf("reading the registration of cluster %s: %w", cluster, err)
	}
	if reg == nil {
		// A certificate the holder of the agent CA key issued by hand
		// (no registration). A registration that issued certificates
		// cannot disappear before they expire (its finalizer).
		return nil
	}
	if reg.DeletionTimestamp != nil {
		return fmt.Errorf("the registration of cluster %s is being deleted; its agent certificates are refused until they expire", cluster)
	}
	switch phase := registration.Phase(reg.Status.Conditions); phase {
	case cellv1alpha1.RegistrationApproved, cellv1alpha1.RegistrationRegistered, cellv1alpha1.RegistrationFailed:
		return nil
	default:
		return fmt.Errorf("the registration of cluster %s is %s; an administrator must approve it (a revoked one must be deleted and the agent must register again)", cluster, phase)
	}
}

func (c *Controller) worker(ctx context.Context) {
	for c.next(ctx) {
	}
}

func (c *Controller) next(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if ctx.Err() != nil {
		// This replica stopped leading: the next leader takes the key.
		c.queue.Add(key)
		return false
	}
	if err := c.Reconcile(ctx, key); err != nil {
		klog.ErrorS(err, "Reconciling cluster registration; retrying", "registration", key)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

func (c *Controller) get(name string) (*cellv1alpha1.ClusterRegistration, error) {
	obj, err := c.regs.Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("unexpected %T in the registration cache", obj)
	}
	var reg cellv1alpha1.ClusterRegistration
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &reg); err != nil {
		return nil, fmt.Errorf("decoding ClusterRegistration %s: %w", name, err)
	}
	return &reg, nil
}

// Reconcile brings one registration's objects and status in line.
func (c *Controller) Reconcile(ctx context.Context, name string) error {
	reg, err := c.get(name)
	if err != nil || reg == nil {
		return err
	}
	if reg.DeletionTimestamp != nil {
		return c.finalize(ctx, reg)
	}
	if reg.Spec.ServiceAccountToken != "" {
		return c.moveToken(ctx, reg)
	}
	if err := c.markTokenUsed(ctx, reg); err != nil {
		return err
	}
	status := reg.Status.DeepCopy()
	if registration.Phase(status.Conditions) == cellv1alpha1.RegistrationPending && c.autoApprove(reg.Spec.Tenant) {
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: cellv1alpha1.RegistrationConditionApproved, Status: metav1.ConditionTrue,
			Reason: registration.ReasonAutoApproved, Message: fmt.Sprintf("tenant %s auto-approves registrations (ConfigMap %s/%s)", reg.Spec.Tenant, c.opts.FederationNamespace, registration.PolicyConfigMap),
			ObservedGeneration: reg.Generation})
		klog.InfoS("Auto-approved cluster registration", "registration", name, "tenant", reg.Spec.Tenant)
	}
	phase := registration.Phase(status.Conditions)
	if err := c.ensureAccessRBAC(ctx, reg, phase); err != nil {
		return err
	}
	switch phase {
	case cellv1alpha1.RegistrationDenied:
		// Nothing of the registration is left but the record: the member's
		// token goes, no cluster was created.
		if err := c.deleteOwned(ctx, reg); err != nil {
			return err
		}
		status.Certificate, status.CertificateExpiry, status.KubeFedCluster = nil, nil, ""
	case cellv1alpha1.RegistrationRevoked:
		if c.tunnel != nil {
			c.tunnel.Disconnect(name)
		}
	case cellv1alpha1.RegistrationApproved, cellv1alpha1.RegistrationRegistered, cellv1alpha1.RegistrationFailed:
		reason, msg, err := c.register(ctx, reg, status)
		if err != nil {
			return err
		}
		ready := metav1.ConditionFalse
		if reason == registration.ReasonRegistered {
			ready = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: cellv1alpha1.RegistrationConditionReady, Status: ready, Reason: reason, Message: msg, ObservedGeneration: reg.Generation})
	}
	status.Phase = registration.Phase(status.Conditions)
	if len(status.Certificate) > 0 {
		if err := c.ensureFinalizer(ctx, reg); err != nil {
			return err
		}
	}
	return c.writeStatus(ctx, reg, status)
}

// FinalizerCertificates keeps a registration that issued agent
// certificates until the last of them expires: the hub refuses the
// cluster's agents while the registration is being deleted, and a new
// registration of the same name cannot bring old certificates back.
const FinalizerCertificates = "cellfed.io/agent-certificates"

func (c *Controller) ensureFinalizer(ctx context.Context, reg *cellv1alpha1.ClusterRegistration) error {
	for _, f := range reg.Finalizers {
		if f == FinalizerCertificates {
			return nil
		}
	}
	patch := fmt.Sprintf(`{"metadata":{"finalizers":%s}}`, mustJSON(append(append([]string(nil), reg.Finalizers...), FinalizerCertificates)))
	if _, err := c.dynamic.Resource(cellv1alpha1.ClusterRegistrationsResource).Patch(ctx, reg.Name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("adding finalizer to ClusterRegistration %s: %w", reg.Name, err)
	}
	return nil
}

// finalize a registration being deleted: disconnect its agent, delete the
// KubeFedCluster and credentials, and release the finalizer once its last
// certificate expired (requeued until then).
func (c *Controller) finalize(ctx context.Context, reg *cellv1alpha1.ClusterRegistration) error {
	if c.tunnel != nil {
		c.tunnel.Disconnect(reg.Name)
	}
	if err := c.deleteOwned(ctx, reg); err != nil {
		return err
	}
	has := false
	var rest []string
	for _, f := range reg.Finalizers {
		if f == FinalizerCertificates {
			has = true
			continue
		}
		rest = append(rest, f)
	}
	if !has {
		return nil
	}
	if exp := reg.Status.CertificateExpiry; exp != nil {
		if wait := exp.Sub(c.now()); wait > 0 {
			klog.V(2).InfoS("Keeping a deleted registration until its agent certificates expire", "registration", reg.Name, "expiry", exp.UTC().Format(time.RFC3339))
			c.queue.AddAfter(reg.Name, wait+time.Second)
			return nil
		}
	}
	if rest == nil {
		rest = []string{}
	}
	patch := fmt.Sprintf(`{"metadata":{"finalizers":%s,"resourceVersion":%q}}`, mustJSON(rest), reg.ResourceVersion)
	if _, err := c.dynamic.Resource(cellv1alpha1.ClusterRegistrationsResource).Patch(ctx, reg.Name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("releasing the finalizer of ClusterRegistration %s: %w", reg.Name, err)
	}
	return nil
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// moveToken stores the member's token in the credentials Secret and
// clears it from the registration, which more users can read.
func (c *Controller) moveToken(ctx context.Context, reg *cellv1alpha1.ClusterRegistration) error {
	secrets := c.kube.CoreV1().Secrets(c.opts.FederationNamespace)
	name := registration.CredentialsSecretName(reg.Name)
	want := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.opts.FederationNamespace,
			Labels: map[string]string{registration.LabelRegistration: reg.Name}, OwnerReferences: ownerRefs(reg)},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"token": []byte(reg.Spec.ServiceAccountToken)},
	}
	have, err := secrets.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := secrets.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating Secret %s/%s: %w", c.opts.FederationNamespace, name, err)
		}
	case err != nil:
		return fmt.Errorf("reading Secret %s/%s: %w", c.opts.FederationNamespace, name, err)
	case have.Labels[registration.LabelRegistration] != reg.Name:
		// Someone else's Secret (a cluster joined with `cellfedctl join`):
		// the token stays out of it; the Ready condition will say why.
		return c.failMove(ctx, reg, fmt.Sprintf("Secret %s/%s exists and does not belong to this registration (a cluster joined with `cellfedctl join`?); unjoin that cluster or register under another name", c.opts.FederationNamespace, name))
	case !bytes.Equal(have.Data["token"], want.Data["token"]):
		have = have.DeepCopy()
		have.Data = want.Data
		if _, err := secrets.Update(ctx, have, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating Secret %s/%s: %w", c.opts.FederationNamespace, name, err)
		}
	}
	return c.clearToken(ctx, reg)
}

// failMove drops the token from the registration without storing it.
func (c *Controller) failMove(ctx context.Context, reg *cellv1alpha1.ClusterRegistration, msg string) error {
	status := reg.Status.DeepCopy()
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: cellv1alpha1.RegistrationConditionReady, Status: metav1.ConditionFalse,
		Reason: registration.ReasonClusterExists, Message: msg, ObservedGeneration: reg.Generation})
	status.Phase = registration.Phase(status.Conditions)
	if err := c.writeStatus(ctx, reg, status); err != nil {
		return err
	}
	return c.clearToken(ctx, reg)
}

func (c *Controller) clearToken(ctx context.Context, reg *cellv1alpha1.ClusterRegistration) error {
	patch := []byte(fmt.Sprintf(`[{"op":"test","path":"/metadata/resourceVersion","value":%q},{"op":"remove","path":"/spec/serviceAccountToken"}]`, reg.ResourceVersion))
	_, err := c.dynamic.Resource(cellv1alpha1.ClusterRegistrationsResource).Patch(ctx, reg.Name, "application/json-patch+json", patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("clearing the member token from ClusterRegistration %s: %w", reg.Name, err)
	}
	klog.InfoS("Moved the member token of a cluster registration into its Secret", "registration", reg.Name,
		"secret", c.opts.FederationNamespace+"/"+registration.CredentialsSecretName(reg.Name))
	return nil
}

// markTokenUsed annotates the bootstrap token's Secret with the
// registration that used it (admission refuses a second use).
func (c *Controller) markTokenUsed(ctx context.Context, reg *cellv1alpha1.ClusterRegistration) error {
	id := reg.Labels[registration.LabelBootstrapTokenID]
	if id == "" {
		return nil
	}
	secrets := c.kube.CoreV1().Secrets(registration.BootstrapTokenNamespace)
	s, err := secrets.Get(ctx, registration.TokenSecretName(id), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading bootstrap token %s: %w", id, err)
	}
	if s.Annotations[registration.AnnotationTokenUsedBy] != "" {
		return nil
	}
	s = s.DeepCopy()
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[registration.AnnotationTokenUsedBy] = reg.Name
	s.Annotations[registration.AnnotationTokenUsedAt] = reg.CreationTimestamp.UTC().Format(time.RFC3339)
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("marking bootstrap token %s used: %w", id, err)
	}
	return nil
}

func (c *Controller) autoApprove(tenant string) bool {
	if tenant == "" {
		return false
	}
	cm, err := c.policy()
	if err != nil {
		return false
	}
	return cm.Data[tenant] == registration.PolicyAutoApprove
}

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

// register does what an approval asks: the certificate, the
// KubeFedCluster, the bootstrap token's deletion. It returns the Ready
// reason and message; err is for retries.
func (c *Controller) register(ctx context.Context, reg *cellv1alpha1.ClusterRegistration, status *cellv1alpha1.ClusterRegistrationStatus) (string, string, error) {
	if need, err := needsCertificate(reg.Spec.CSR, status.Certificate); err != nil {
		return registration.ReasonInvalid, err.Error(), nil
	} else if need {
		certPEM, err := pki.SignAgentCSR(c.pki, reg.Spec.CSR, reg.Name, c.opts.CertValidity)
		if err != nil {
			return registration.ReasonError, fmt.Sprintf("signing the agent certificate: %v", err), nil
		}
		cert, err := parseCert(certPEM)
		if err != nil {
			return "", "", err
		}
		status.Certificate = certPEM
		status.CertificateExpiry = &metav1.Time{Time: cert.NotAfter}
		klog.InfoS("Signed agent certificate", "registration", reg.Name, "notAfter", cert.NotAfter.UTC().Format(time.RFC3339))
	}

	// The bootstrap token goes once the agent showed, authenticated with
	// its certificate, that it has it (until then the token is the only
	// way the agent can read the certificate; it cannot register anything
	// else: admission refuses a used token).
	if id := reg.Labels[registration.LabelBootstrapTokenID]; id != "" && reg.Annotations[registration.AnnotationAgentCertificate] != "" {
		err := c.kube.CoreV1().Secrets(registration.BootstrapTokenNamespace).Delete(ctx, registration.TokenSecretName(id), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return "", "", fmt.Errorf("deleting bootstrap token %s: %w", id, err)
		}
		if err == nil {
			klog.InfoS("Deleted the bootstrap token of an approved registration", "registration", reg.Name, "tokenID", id)
		}
	}

	secretName := registration.CredentialsSecretName(reg.Name)
	secret, err := c.kube.CoreV1().Secrets(c.opts.FederationNamespace).Get(ctx, secretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && secret.Labels[registration.LabelRegistration] != reg.Name) {
		return registration.ReasonSigning, fmt.Sprintf("waiting for the agent to hand over a member service-account token (Secret %s/%s)", c.opts.FederationNamespace, secretName), nil
	}
	if err != nil {
		return "", "", fmt.Errorf("reading Secret %s/%s: %w", c.opts.FederationNamespace, secretName, err)
	}

	if c.access == nil {
		return registration.ReasonError, "this plane runs no tunnel hub, so a tunnelled cluster cannot be reached; start cellfed-apiserver with the tunnel hub enabled", nil
	}
	endpoint, proxyURL, err := c.access(reg)
	if err != nil {
		return registration.ReasonError, err.Error(), nil
	}
	ref, reason, msg, err := c.ensureCluster(ctx, reg, endpoint, proxyURL, secretName)
	if err != nil || reason != "" {
		return reason, msg, err
	}
	status.KubeFedCluster = ref

	return registration.ReasonRegistered, fmt.Sprintf("KubeFedCluster %s reaches the cluster through the tunnel hub", ref), nil
}

// ensureCluster creates or updates the tunnelled KubeFedCluster. A
// KubeFedCluster of the same name that this registration does not own is
// left alone and reported.
func (c *Controller) ensureCluster(ctx context.Context, reg *cellv1alpha1.ClusterRegistration, endpoint, proxyURL, secretName string) (string, string, string, error) {
	ns := c.opts.FederationNamespace
	ref := ns + "/" + reg.Name
	clusters := c.dynamic.Resource(kubefed.KubeFedClustersResource).Namespace(ns)
	labels := map[string]string{registration.LabelRegistration: reg.Name, registration.LabelTunnelled: "true"}
	if reg.Spec.Tenant != "" {
		labels[cellv1alpha1.LabelTenant] = reg.Spec.Tenant
	}
	annotations := map[string]string{}
	if reg.Spec.Workspace != "" {
		annotations[cellv1alpha1.LabelWorkspace] = reg.Spec.Workspace
	}
	spec := map[string]any{"apiEndpoint": endpoint, "proxyURL": proxyURL, "secretRef": map[string]any{"name": secretName}}
	if len(reg.Spec.CABundle) > 0 {
		spec["caBundle"] = encodeBase64(reg.Spec.CABundle)
	}
	have, err := clusters.Get(ctx, reg.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": fedv1beta1.SchemeGroupVersion.String(), "kind": "KubeFedCluster",
			"metadata": map[string]any{"name": reg.Name, "namespace": ns}, "spec": spec,
		}}
		obj.SetLabels(labels)
		if len(annotations) > 0 {
			obj.SetAnnotations(annotations)
		}
		obj.SetOwnerReferences(ownerRefs(reg))
		if _, err := clusters.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
				return "", registration.ReasonError, fmt.Sprintf("the plane refused KubeFedCluster %s: %v", ref, err), nil
			}
			return "", "", "", fmt.Errorf("creating KubeFedCluster %s: %w", ref, err)
		}
		klog.InfoS("Created tunnelled KubeFedCluster", "cluster", ref, "tenant", reg.Spec.Tenant)
		return ref, "", "", nil
	}
	if err != nil {
		return "", "", "", fmt.Errorf("reading KubeFedCluster %s: %w", ref, err)
	}
	if have.GetLabels()[registration.LabelRegistration] != reg.Name {
		return "", registration.ReasonClusterExists, fmt.Sprintf("KubeFedCluster %s exists and was not created by this registration (a cluster joined with `cellfedctl join`?); unjoin it, or delete this registration and register under another name", ref), nil
	}
	obj := have.DeepCopy()
	oldSpec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	merged := map[string]any{}
	for k, v := range oldSpec {
		merged[k] = v
	}
	for k, v := range spec {
		merged[k] = v
	}
	l := obj.GetLabels()
	changed := !reflect.DeepEqual(oldSpec, merged)
	for k, v := range labels {
		if l[k] != v {
			l[k], changed = v, true
		}
	}
	if !changed {
		return ref, "", "", nil
	}
	obj.SetLabels(l)
	obj.Object["spec"] = merged
	if _, err := clusters.Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
		return "", "", "", fmt.Errorf("updating KubeFedCluster %s: %w", ref, err)
	}
	return ref, "", "", nil
}

// deleteOwned removes the credentials Secret and KubeFedCluster of a
// denied registration.
func (c *Controller) deleteOwned(ctx context.Context, reg *cellv1alpha1.ClusterRegistration) error {
	ns := c.opts.FederationNamespace
	secrets := c.kube.CoreV1().Secrets(ns)
	if s, err := secrets.Get(ctx, registration.CredentialsSecretName(reg.Name), metav1.GetOptions{}); err == nil && s.Labels[registration.LabelRegistration] == reg.Name {
		if err := secrets.Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.UID}}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting Secret %s/%s: %w", ns, s.Name, err)
		}
	} else if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading Secret %s/%s: %w", ns, registration.CredentialsSecretName(reg.Name), err)
	}
	clusters := c.dynamic.Resource(kubefed.KubeFedClustersResource).Namespace(ns)
	if kc, err := clusters.Get(ctx, reg.Name, metav1.GetOptions{}); err == nil && kc.GetLabels()[registration.LabelRegistration] == reg.Name {
		uid := kc.GetUID()
		if err := clusters.Delete(ctx, reg.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting KubeFedCluster %s/%s: %w", ns, reg.Name, err)
		}
	} else if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading KubeFedCluster %s/%s: %w", ns, reg.Name, err)
	}
	return nil
}

func (c *Controller) writeStatus(ctx context.Context, reg *cellv1alpha1.ClusterRegistration, status *cellv1alpha1.ClusterRegistrationStatus) error {
	if reflect.DeepEqual(&reg.Status, status) {
		return nil
	}
	out := reg.DeepCopy()
	out.Status = *status
	out.APIVersion, out.Kind = cellv1alpha1.SchemeGroupVersion.String(), "ClusterRegistration"
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(out)
	if err != nil {
		return fmt.Errorf("encoding ClusterRegistration %s: %w", reg.Name, err)
	}
	if _, err := c.dynamic.Resource(cellv1alpha1.ClusterRegistrationsResource).UpdateStatus(ctx, &unstructured.Unstructured{Object: obj}, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil // a newer version is queued
		}
		return fmt.Errorf("writing the status of ClusterRegistration %s: %w", reg.Name, err)
	}
	return nil
}

// needsCertificate: no certificate yet, or the request's key is not the
// certificate's (the agent asked for a renewal).
func needsCertificate(csrPEM, certPEM []byte) (bool, error) {
	block, _ := pem.Decode(csrPEM)
	if block == nil {
		return false, errors.New("spec.csr is not PEM; the agent must send a new certificate request")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return false, fmt.Errorf("spec.csr: %v; the agent must send a new certificate request", err)
	}
	if len(certPEM) == 0 {
		return true, nil
	}
	cert, err := parseCert(certPEM)
	if err != nil {
		return true, nil
	}
	a, err1 := x509.MarshalPKIXPublicKey(csr.PublicKey)
	b, err2 := x509.MarshalPKIXPublicKey(cert.PublicKey)
	return err1 != nil || err2 != nil || !bytes.Equal(a, b), nil
}

func parseCert(certPEM []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

func ownerRefs(reg *cellv1alpha1.ClusterRegistration) []metav1.OwnerReference {
	return []metav1.OwnerReference{{
		APIVersion: cellv1alpha1.SchemeGroupVersion.String(), Kind: "ClusterRegistration",
		Name: reg.Name, UID: reg.UID,
	}}
}

func labelsEverything() labels.Selector { return labels.Everything() }

func encodeBase64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
