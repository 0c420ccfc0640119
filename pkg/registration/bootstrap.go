package registration

import (
	"context"
	"errors"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

// Bootstrap returns the agent's identity: the one kept in the state dir
// when it is valid for this cluster, else a new one from a registration
// made with the bootstrap token, once the plane approved it. It blocks
// while the registration is pending (ctx bounds the wait).
func Bootstrap(ctx context.Context, o *AgentOptions) (*Identity, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := o.openState(); err != nil {
		return nil, err
	}
	id, err := o.loadIdentity(ctx)
	if err != nil {
		return nil, err
	}
	if id != nil {
		klog.InfoS("Using the stored agent certificate", "cluster", o.ClusterName, "state", o.state.String(),
			"serial", id.Leaf().SerialNumber.Text(16), "notAfter", id.Leaf().NotAfter.UTC().Format(time.RFC3339))
		return id, nil
	}
	if o.BootstrapToken == "" {
		return nil, fmt.Errorf("there is no valid agent certificate in %s and no bootstrap token to register with (--bootstrap-token, or a --bootstrap-token-file that exists); create a token with `cellfedctl token create --tenant=<tenant>` on the plane", o.state)
	}
	token, _ := ParseToken(o.BootstrapToken)
	base, err := o.planeBase()
	if err != nil {
		return nil, err
	}
	bootCfg := rest.CopyConfig(base)
	bootCfg.BearerToken = token.String()
	plane, err := dynamic.NewForConfig(bootCfg)
	if err != nil {
		return nil, fmt.Errorf("client for the plane: %w", err)
	}
	// The token first: a refused token changes nothing in the member.
	if err := checkToken(ctx, bootCfg); err != nil {
		return nil, o.bootstrapError(err, token, "authenticating to the plane")
	}
	keyPEM, csrPEM, err := o.pendingKey(ctx)
	if err != nil {
		return nil, err
	}
	// The local API server may not answer yet (the agent starts with it):
	// transient errors are retried, permission errors are not.
	var spec *cellv1alpha1.ClusterRegistrationSpec
	err = wait.PollUntilContextCancel(ctx, o.RetryInterval, true, func(ctx context.Context) (bool, error) {
		s, err := o.memberSpec(ctx, csrPEM)
		switch {
		case err == nil:
			spec = s
			return true, nil
		case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err), errors.Is(err, errMemberConfig):
			return false, err
		}
		klog.ErrorS(err, "Preparing the plane's access to this cluster; retrying", "cluster", o.ClusterName, "after", o.RetryInterval)
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	regs := plane.Resource(cellv1alpha1.ClusterRegistrationsResource)
	reg := &cellv1alpha1.ClusterRegistration{
		TypeMeta:   metav1.TypeMeta{APIVersion: cellv1alpha1.SchemeGroupVersion.String(), Kind: "ClusterRegistration"},
		ObjectMeta: metav1.ObjectMeta{Name: o.ClusterName},
		Spec:       *spec,
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(reg)
	if err != nil {
		return nil, fmt.Errorf("encoding the registration: %w", err)
	}
	_, err = regs.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	switch {
	case err == nil:
		klog.InfoS("Registered with the plane; waiting for approval", "cluster", o.ClusterName, "tokenID", token.ID, "plane", base.Host)
	case apierrors.IsAlreadyExists(err):
		// A restart while pending: the registration is ours if our token
		// made it (the bootstrap token may read only its own).
		got, gerr := regs.Get(ctx, o.ClusterName, metav1.GetOptions{})
		if gerr != nil || got.GetLabels()[LabelBootstrapTokenID] != token.ID {
			return nil, fmt.Errorf("the plane already has a registration for cluster %s that this token did not make; choose another --cluster, or ask the plane's administrator to delete ClusterRegistration %s", o.ClusterName, o.ClusterName)
		}
		klog.InfoS("Registration exists already (made by this token); waiting for approval", "cluster", o.ClusterName, "tokenID", token.ID)
	default:
		return nil, o.bootstrapError(err, token, "registering cluster "+o.ClusterName)
	}

	certPEM, err := o.waitCertificate(ctx, regs, csrPEM, func(err error) error { return o.bootstrapError(err, token, "waiting for approval") })
	if errors.Is(err, errDenied) {
		// Nothing is left behind in the member either.
		if cerr := o.removeMemberAccess(context.WithoutCancel(ctx)); cerr != nil {
			return nil, fmt.Errorf("%w; also: %v", err, cerr)
		}
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	id = &Identity{}
	if err := o.keep(ctx, id, certPEM, keyPEM); err != nil {
		return nil, err
	}
	if err := o.acknowledge(ctx, base, id); err != nil {
		// The plane keeps the bootstrap token until it expires; nothing
		// else depends on the acknowledgement.
		klog.ErrorS(err, "Could not acknowledge the certificate to the plane", "cluster", o.ClusterName)
	}
	klog.InfoS("Registration approved; agent certificate stored", "cluster", o.ClusterName, "serial", id.Leaf().SerialNumber.Text(16),
		"notAfter", id.Leaf().NotAfter.UTC().Format(time.RFC3339), "state", o.state.String())
	return id, nil
}

// bootstrapError translates what the plane answers a bootstrap token.
// The API only says 401 for an unknown or expired token.
func (o *AgentOptions) bootstrapError(err error, token Token, doing string) error {
	switch {
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%s: the plane refused bootstrap token %s (401 Unauthorized): it is unknown, has expired, or was deleted after its registration was approved or denied; create a new one with `cellfedctl token create --tenant=<tenant>` and pass it with --bootstrap-token", doing, token.ID)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s: %w", doing, err) // admission says what and how to fix
	}
	return fmt.Errorf("%s at %s: %w; check --plane-kubeconfig and that the plane is reachable", doing, o.PlaneKubeconfig, err)
}

// checkToken asks the plane who the bootstrap token is (every
// authenticated user may).
func checkToken(ctx context.Context, cfg *rest.Config) error {
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	return err
}

// keep stores the new pair, then switches id to it; when another agent
// of this cluster stored a newer pair meanwhile, id switches to that one.
func (o *AgentOptions) keep(ctx context.Context, id *Identity, certPEM, keyPEM []byte) error {
	// The pair must be usable before it replaces the stored one.
	if err := (&Identity{}).set(certPEM, keyPEM, time.Now()); err != nil {
		return err
	}
	kept, err := o.store(ctx, certPEM, keyPEM, time.Now())
	if err != nil {
		return err
	}
	if string(kept.Cert) != string(certPEM) {
		klog.InfoS("Another agent of this cluster stored a newer certificate; using it", "cluster", o.ClusterName, "state", o.state.String())
	}
	if kept.Since.IsZero() {
		kept.Since = time.Now()
	}
	return id.set(kept.Cert, kept.Key, kept.Since)
}
