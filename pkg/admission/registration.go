package admission

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/pkg/pki"
	"github.com/cellfed/cellfed/pkg/registration"
	"github.com/cellfed/cellfed/pkg/tenancy"
)

// RegistrationPluginName is the in-process plugin that guards
// ClusterRegistrations: who may write what, tenancy from the bootstrap
// token, single-use tokens, and field validation.
const RegistrationPluginName = "CellfedClusterRegistration"

// RegisterRegistration adds the plugin to plugins.
// shared gives the federation namespace, where a registration's
// KubeFedCluster would be created.
func RegisterRegistration(plugins *admission.Plugins, shared *Shared) {
	plugins.Register(RegistrationPluginName, func(io.Reader) (admission.Interface, error) {
		return &registrationPlugin{Handler: admission.NewHandler(admission.Create, admission.Update), shared: shared}, nil
	})
}

type registrationPlugin struct {
	*admission.Handler
	shared  *Shared
	kube    kubernetes.Interface
	dynamic dynamic.Interface
}

var (
	_ admission.MutationInterface            = &registrationPlugin{}
	_ admission.ValidationInterface          = &registrationPlugin{}
	_ initializer.WantsExternalKubeClientSet = &registrationPlugin{}
	_ initializer.WantsDynamicClient         = &registrationPlugin{}
	_ admission.InitializationValidator      = &registrationPlugin{}
	_ registrationTokens                     = pluginTokens{}
)

func (p *registrationPlugin) SetExternalKubeClientSet(c kubernetes.Interface) { p.kube = c }
func (p *registrationPlugin) SetDynamicClient(c dynamic.Interface)            { p.dynamic = c }

func (p *registrationPlugin) ValidateInitialization() error {
	if p.kube == nil || p.dynamic == nil {
		return fmt.Errorf("%s: missing clients", RegistrationPluginName)
	}
	return nil
}

// registrationTokens reads bootstrap tokens and their use.
type registrationTokens interface {
	// Token returns the token's Secret, nil when it does not exist.
	Token(ctx context.Context, id string) (*corev1.Secret, error)
	// UsedBy returns the name and creation time of a registration that
	// used the token, or "".
	UsedBy(ctx context.Context, id string) (string, time.Time, error)
}

type pluginTokens struct {
	kube    kubernetes.Interface
	dynamic dynamic.Interface
}

func (t pluginTokens) Token(ctx context.Context, id string) (*corev1.Secret, error) {
	s, err := t.kube.CoreV1().Secrets(registration.BootstrapTokenNamespace).Get(ctx, registration.TokenSecretName(id), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return s, err
}

func (t pluginTokens) UsedBy(ctx context.Context, id string) (string, time.Time, error) {
	list, err := t.dynamic.Resource(cellv1alpha1.ClusterRegistrationsResource).List(ctx, metav1.ListOptions{LabelSelector: registration.LabelBootstrapTokenID + "=" + id})
	if err != nil {
		return "", time.Time{}, err
	}
	if len(list.Items) > 0 {
		return list.Items[0].GetName(), list.Items[0].GetCreationTimestamp().Time, nil
	}
	return "", time.Time{}, nil
}

// claim marks token id used by the registration name, atomically: the
// update carries the Secret's resourceVersion, so of two registrations
// created at the same instant with one token exactly one claims it and
// the other is refused. A claim by the same name again (a retried
// create) is allowed.
func (t pluginTokens) claim(ctx context.Context, id, name string) error {
	secrets := t.kube.CoreV1().Secrets(registration.BootstrapTokenNamespace)
	for range 5 {
		s, err := secrets.Get(ctx, registration.TokenSecretName(id), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return regForbidden(name, fmt.Sprintf("bootstrap token %s no longer exists; create a new one with `cellfedctl token create`", id))
		}
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("reading bootstrap token %s: %w", id, err))
		}
		switch by := s.Annotations[registration.AnnotationTokenUsedBy]; by {
		case name:
			return nil
		case "":
		default:
			return regForbidden(name, fmt.Sprintf("bootstrap token %s was already used to register cluster %s at %s; a token registers one cluster only: create a new one with `cellfedctl token create`", id, by, s.Annotations[registration.AnnotationTokenUsedAt]))
		}
		s = s.DeepCopy()
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[registration.AnnotationTokenUsedBy] = name
		s.Annotations[registration.AnnotationTokenUsedAt] = time.Now().UTC().Format(time.RFC3339)
		_, err = secrets.Update(ctx, s, metav1.UpdateOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsConflict(err) {
			return apierrors.NewInternalError(fmt.Errorf("marking bootstrap token %s used: %w", id, err))
		}
		// Someone else wrote the Secret first: read again and see who.
	}
	return apierrors.NewConflict(cellv1alpha1.ClusterRegistrationsResource.GroupResource(), name, fmt.Errorf("bootstrap token %s is being claimed concurrently; retry", id))
}

func isRegistration(a admission.Attributes) bool {
	return a.GetResource().GroupResource() == cellv1alpha1.ClusterRegistrationsResource.GroupResource()
}

// Admit sets a bootstrap-created registration's tenancy and token label
// from the token, after checking the token may be used.
func (p *registrationPlugin) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if !isRegistration(a) || a.GetOperation() != admission.Create || a.GetSubresource() != "" {
		return nil
	}
	id, ok := registration.TokenIDOfUser(userName(a))
	if !ok {
		return nil
	}
	u, ok := a.GetObject().(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	reg, err := decodeRegistration(u)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	tenant, workspace, err := bootstrapTenancy(ctx, pluginTokens{p.kube, p.dynamic}, id, reg)
	if err != nil {
		return err
	}
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[registration.LabelBootstrapTokenID] = id
	u.SetLabels(labels)
	if err := unstructured.SetNestedField(u.Object, tenant, "spec", "tenant"); err != nil {
		return apierrors.NewInternalError(err)
	}
	if workspace != "" {
		if err := unstructured.SetNestedField(u.Object, workspace, "spec", "workspace"); err != nil {
			return apierrors.NewInternalError(err)
		}
	}
	return nil
}

// bootstrapTenancy checks that token id may register reg and returns the
// tenancy it grants.
func bootstrapTenancy(ctx context.Context, tokens registrationTokens, id string, reg *cellv1alpha1.ClusterRegistration) (string, string, error) {
	secret, err := tokens.Token(ctx, id)
	if err != nil {
		return "", "", apierrors.NewInternalError(fmt.Errorf("reading bootstrap token %s: %w", id, err))
	}
	if secret == nil {
		return "", "", regForbidden(reg.Name, fmt.Sprintf("bootstrap token %s no longer exists; create a new one with `cellfedctl token create`", id))
	}
	if by := secret.Annotations[registration.AnnotationTokenUsedBy]; by != "" && by != reg.Name {
		return "", "", regForbidden(reg.Name, fmt.Sprintf("bootstrap token %s was already used to register cluster %s at %s; a token registers one cluster only: create a new one with `cellfedctl token create`", id, by, secret.Annotations[registration.AnnotationTokenUsedAt]))
	}
	by, at, err := tokens.UsedBy(ctx, id)
	if err != nil {
		return "", "", apierrors.NewInternalError(fmt.Errorf("looking up registrations of bootstrap token %s: %w", id, err))
	}
	if by != "" && by != reg.Name {
		return "", "", regForbidden(reg.Name, fmt.Sprintf("bootstrap token %s was already used to register cluster %s at %s; a token registers one cluster only: create a new one with `cellfedctl token create`", id, by, at.UTC().Format(time.RFC3339)))
	}
	tenant, workspace := registration.TokenTenancy(secret)
	if tenant == "" {
		return "", "", regForbidden(reg.Name, fmt.Sprintf("bootstrap token %s names no tenant (label %s on its Secret); create tokens with `cellfedctl token create --tenant=<tenant>`", id, cellv1alpha1.LabelTenant))
	}
	if reg.Spec.Tenant != "" && reg.Spec.Tenant != tenant {
		return "", "", regForbidden(reg.Name, fmt.Sprintf("bootstrap token %s is for tenant %q, but the registration asks for tenant %q; the tenancy comes from the token: leave spec.tenant empty", id, tenant, reg.Spec.Tenant))
	}
	if reg.Spec.Workspace != "" && reg.Spec.Workspace != workspace {
		return "", "", regForbidden(reg.Name, fmt.Sprintf("bootstrap token %s is for workspace %q, but the registration asks for workspace %q; the tenancy comes from the token: leave spec.workspace empty", id, workspace, reg.Spec.Workspace))
	}
	return tenant, workspace, nil
}

func (p *registrationPlugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if handled, err := validatePolicyWrite(a, p.shared.FederationNamespace); handled {
		return err
	}
	if !isRegistration(a) {
		return nil
	}
	var newReg, oldReg *cellv1alpha1.ClusterRegistration
	if u, ok := a.GetObject().(*unstructured.Unstructured); ok {
		r, err := decodeRegistration(u)
		if err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		newReg = r
	}
	if u, ok := a.GetOldObject().(*unstructured.Unstructured); ok {
		r, err := decodeRegistration(u)
		if err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		oldReg = r
	}
	if newReg == nil {
		return nil
	}
	if a.GetOperation() == admission.Create && a.GetSubresource() == "" {
		if err := p.nameFree(ctx, newReg.Name); err != nil {
			return err
		}
	}
	var groups []string
	if u := a.GetUserInfo(); u != nil {
		groups = u.GetGroups()
	}
	if err := ValidateRegistration(RegistrationRequest{
		Operation:      Operation(a.GetOperation()),
		SubResource:    a.GetSubresource(),
		User:           userName(a),
		Groups:         groups,
		Object:         newReg,
		OldObject:      oldReg,
		PlaneAddresses: p.shared.PlaneAddresses,
	}); err != nil {
		return err
	}
	// Last, once nothing else refuses the registration: its bootstrap
	// token is claimed for it, atomically.
	if id, ok := registration.TokenIDOfUser(userName(a)); ok && a.GetOperation() == admission.Create && a.GetSubresource() == "" {
		return pluginTokens{p.kube, p.dynamic}.claim(ctx, id, newReg.Name)
	}
	return nil
}

// nameFree refuses a registration named like a cluster that is already
// joined: approving it would sign an agent identity for another
// (possibly another tenant's) cluster.
func (p *registrationPlugin) nameFree(ctx context.Context, name string) error {
	ns := p.shared.FederationNamespace
	_, err := p.dynamic.Resource(kubefed.KubeFedClustersResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return apierrors.NewInternalError(fmt.Errorf("looking up KubeFedCluster %s/%s: %w", ns, name, err))
	}
	return regForbidden(name, fmt.Sprintf("a cluster named %s is already joined (KubeFedCluster %s/%s); register this cluster under another name (cellfed-agent --cluster), or unjoin the existing one first", name, ns, name))
}

func userName(a admission.Attributes) string {
	if u := a.GetUserInfo(); u != nil {
		return u.GetName()
	}
	return ""
}

func decodeRegistration(u *unstructured.Unstructured) (*cellv1alpha1.ClusterRegistration, error) {
	var r cellv1alpha1.ClusterRegistration
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
		return nil, fmt.Errorf("decoding ClusterRegistration %s: %v", u.GetName(), err)
	}
	return &r, nil
}

// RegistrationRequest is one write of a ClusterRegistration.
type RegistrationRequest struct {
	Operation   Operation
	SubResource string
	User        string
	Groups      []string
	Object      *cellv1alpha1.ClusterRegistration
	OldObject   *cellv1alpha1.ClusterRegistration // updates
	// PlaneAddresses are the plane's own serving addresses (host:port):
	// a new or changed spec.apiEndpoint may not be one of them.
	PlaneAddresses []string
}

// ValidateRegistration: bootstrap users may only create (with the tenancy
// Admit set from their token); an agent may only change spec.csr and
// spec.serviceAccountToken of its own cluster's registration; every spec
// is validated.
func ValidateRegistration(r RegistrationRequest) error {
	reg := r.Object
	if _, ok := registration.TokenIDOfUser(r.User); ok || slices.Contains(r.Groups, registration.BootstrapGroup) {
		if r.Operation != Create || r.SubResource != "" {
			return regForbidden(reg.Name, "a bootstrap token may only create a registration; once it is approved the agent renews it with its own certificate")
		}
	}
	if cluster, ok := strings.CutPrefix(r.User, pki.AgentUserPrefix); ok && slices.Contains(r.Groups, pki.AgentGroup) {
		if err := validateAgentWrite(r, cluster); err != nil {
			return err
		}
	}
	if r.SubResource != "" {
		return nil
	}
	errs := validateRegistrationSpec(reg)
	if r.OldObject == nil || r.OldObject.Spec.APIEndpoint != reg.Spec.APIEndpoint {
		if why := PlaneEndpointReason(reg.Spec.APIEndpoint, r.PlaneAddresses); why != "" {
			errs = append(errs, field.Invalid(field.NewPath("spec", "apiEndpoint"), reg.Spec.APIEndpoint, why))
		}
	}
	if r.OldObject != nil {
		old := r.OldObject
		if old.Labels[registration.LabelBootstrapTokenID] != reg.Labels[registration.LabelBootstrapTokenID] {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "labels").Key(registration.LabelBootstrapTokenID), "records the bootstrap token that created the registration and cannot change"))
		}
		if reg.Spec.ProxyCredentialGeneration < old.Spec.ProxyCredentialGeneration {
			errs = append(errs, field.Invalid(field.NewPath("spec", "proxyCredentialGeneration"), reg.Spec.ProxyCredentialGeneration,
				fmt.Sprintf("may only increase (it is %d): a lower generation would bring back a revoked proxy credential", old.Spec.ProxyCredentialGeneration)))
		}
		if old.Spec.Tenant != reg.Spec.Tenant || old.Spec.Workspace != reg.Spec.Workspace {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "tenant"), "the tenancy of a registration cannot change; delete it and register again with a token for the other tenant"))
		}
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(cellv1alpha1.SchemeGroupVersion.WithKind("ClusterRegistration").GroupKind(), reg.Name, errs)
	}
	return nil
}

// validateAgentWrite: an agent may only update its own registration's
// spec.csr and spec.serviceAccountToken, and not once it was revoked.
func validateAgentWrite(r RegistrationRequest, cluster string) error {
	reg := r.Object
	if r.Operation != Update || r.SubResource != "" {
		return regForbidden(reg.Name, fmt.Sprintf("the agent of cluster %s may only update its own registration (to renew its certificate)", cluster))
	}
	if reg.Name != cluster {
		return regForbidden(reg.Name, fmt.Sprintf("the agent of cluster %s may not change the registration of cluster %s", cluster, reg.Name))
	}
	old := r.OldObject
	if old == nil {
		return regForbidden(reg.Name, "an agent may only update an existing registration")
	}
	if registration.Phase(old.Status.Conditions) == cellv1alpha1.RegistrationRevoked {
		return regForbidden(reg.Name, fmt.Sprintf("the registration of cluster %s was revoked; its agent must register again with a new bootstrap token once an administrator deleted the revoked registration", cluster))
	}
	a, b := old.Spec.DeepCopy(), reg.Spec.DeepCopy()
	a.CSR, b.CSR = nil, nil
	a.ServiceAccountToken, b.ServiceAccountToken = "", ""
	if !reflect.DeepEqual(a, b) || !reflect.DeepEqual(old.Labels, reg.Labels) || !reflect.DeepEqual(withoutAck(old.Annotations), withoutAck(reg.Annotations)) {
		return regForbidden(reg.Name, fmt.Sprintf("the agent of cluster %s may only change spec.csr, spec.serviceAccountToken and the annotation %s of its registration", cluster, registration.AnnotationAgentCertificate))
	}
	return nil
}

func validateRegistrationSpec(reg *cellv1alpha1.ClusterRegistration) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if !cellv1alpha1.IsDNSLabel(reg.Name) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), reg.Name, "the registration's name is the cluster's name: a DNS label (lowercase letters, digits and '-', at most 63 characters, no dots: names with a dot are reserved for per-cell clusters)"))
	}
	if u, err := url.Parse(reg.Spec.APIEndpoint); err != nil || u.Scheme != "https" || u.Host == "" || !strings.HasPrefix(reg.Spec.APIEndpoint, "https://") {
		errs = append(errs, field.Invalid(spec.Child("apiEndpoint"), reg.Spec.APIEndpoint, "must be the member API server's https URL as the agent reaches it, e.g. https://127.0.0.1:6443"))
	}
	if len(reg.Spec.CABundle) == 0 {
		errs = append(errs, field.Required(spec.Child("caBundle"), "the PEM CA bundle of the member's API server: the plane pins it (no TLS verification is ever skipped)"))
	} else if !x509.NewCertPool().AppendCertsFromPEM(reg.Spec.CABundle) {
		errs = append(errs, field.Invalid(spec.Child("caBundle"), "<PEM>", "holds no PEM certificate"))
	}
	if err := csrError(reg.Spec.CSR); err != nil {
		errs = append(errs, field.Invalid(spec.Child("csr"), "<PEM>", err.Error()))
	}
	if reg.Spec.Tenant != "" {
		if err := tenancy.TenantNameError(reg.Spec.Tenant); err != nil {
			errs = append(errs, field.Invalid(spec.Child("tenant"), reg.Spec.Tenant, err.Error()))
		}
	}
	if err := tenancy.WorkspaceNameError(reg.Spec.Workspace); err != nil {
		errs = append(errs, field.Invalid(spec.Child("workspace"), reg.Spec.Workspace, err.Error()))
	}
	if reg.Spec.Workspace != "" && reg.Spec.Tenant == "" {
		errs = append(errs, field.Required(spec.Child("tenant"), "a workspace belongs to a tenant"))
	}
	if reg.Spec.ProxyCredentialGeneration < 0 {
		errs = append(errs, field.Invalid(spec.Child("proxyCredentialGeneration"), reg.Spec.ProxyCredentialGeneration, "must not be negative"))
	}
	if sa := reg.Spec.MemberServiceAccount; sa != "" {
		ns, name, ok := strings.Cut(sa, "/")
		if !ok || !cellv1alpha1.IsDNSLabel(ns) || name == "" {
			errs = append(errs, field.Invalid(spec.Child("memberServiceAccount"), sa, "must be <namespace>/<name>"))
		}
	}
	return errs
}

// csrError says why csrPEM is not a usable certificate request.
func csrError(csrPEM []byte) error {
	if len(csrPEM) == 0 {
		return fmt.Errorf("required: a PEM certificate request for the agent's tunnel identity")
	}
	csr, err := pki.ParseCSRPEM(csrPEM)
	if err != nil {
		// Not the parser's ASN.1 internals: what is wrong, and what is
		// expected.
		return fmt.Errorf("not a PEM-encoded certificate request: spec.csr holds one PEM %q block with a PKCS #10 request signed by the agent's key (cellfed-agent makes it)", pki.BlockCertificateRequest)
	}
	if err := pki.CheckCSR(csr); err != nil {
		return fmt.Errorf("the certificate request %w", err)
	}
	return nil
}

func regForbidden(name, msg string) error {
	return apierrors.NewForbidden(cellv1alpha1.ClusterRegistrationsResource.GroupResource(), name, fmt.Errorf("%s", msg))
}

// withoutAck is annotations without the agent's acknowledgement, nil when
// nothing else is left.
func withoutAck(annotations map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range annotations {
		if k != registration.AnnotationAgentCertificate {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
