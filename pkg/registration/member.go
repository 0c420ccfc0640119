package registration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/memberaccess"
)

// memberAccessName names the plane's ServiceAccount, ClusterRole and
// ClusterRoleBinding in the member.
func (o *AgentOptions) memberAccessName() string {
	if o.MemberServiceAccount != "" {
		return o.MemberServiceAccount
	}
	return "cellfed-" + o.ClusterName
}

// memberSpec prepares the member: the plane's ServiceAccount and RBAC,
// a token for it, and what the registration reports.
func (o *AgentOptions) memberSpec(ctx context.Context, csrPEM []byte) (*cellv1alpha1.ClusterRegistrationSpec, error) {
	if o.Member == nil {
		return nil, fmt.Errorf("%w: no access to the member cluster: pass --kubeconfig (or run in-cluster)", errMemberConfig)
	}
	if o.Member.Insecure {
		return nil, fmt.Errorf("%w: the member kubeconfig skips TLS verification, so there is no CA to give the plane; set its certificate-authority", errMemberConfig)
	}
	ca := o.Member.CAData
	if len(ca) == 0 && o.Member.CAFile != "" {
		var err error
		if ca, err = os.ReadFile(o.Member.CAFile); err != nil {
			return nil, fmt.Errorf("%w: reading the member's CA %s: %v", errMemberConfig, o.Member.CAFile, err)
		}
	}
	if len(ca) == 0 {
		return nil, fmt.Errorf("%w: the member kubeconfig names no CA for its API server; set its certificate-authority (the plane pins it)", errMemberConfig)
	}
	endpoint := o.MemberEndpoint
	if endpoint == "" {
		endpoint = o.Member.Host
	}
	member, err := kubernetes.NewForConfig(o.Member)
	if err != nil {
		return nil, fmt.Errorf("client for the member: %w", err)
	}
	g := memberaccess.Grant{
		Namespace:      o.MemberNamespace,
		ServiceAccount: o.memberAccessName(),
		Labels:         map[string]string{"cellfed.io/registered-cluster": o.ClusterName, "app.kubernetes.io/managed-by": "cellfed-agent"},
		Where:          " in the member cluster",
	}
	wrap := func(err error, doing string) error {
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			return fmt.Errorf("%s: %w; the agent's identity in the member lacks that right: grant it as manifests/agent/rbac.yaml does (with the plane's ServiceAccount, ClusterRole and binding made beforehand), or run the agent as an admin (it then creates them)", doing, err)
		}
		return fmt.Errorf("%s: %w", doing, err)
	}
	if _, _, err := memberaccess.Ensure(ctx, member, g, func(string, func(context.Context) error) {}, wrap); err != nil {
		return nil, err
	}
	token, err := o.memberToken(ctx, member, g.ServiceAccount, ca)
	if err != nil {
		return nil, err
	}
	return &cellv1alpha1.ClusterRegistrationSpec{
		APIEndpoint:          endpoint,
		CABundle:             ca,
		TLSServerName:        o.Member.ServerName,
		ServiceAccountToken:  token,
		MemberServiceAccount: g.Namespace + "/" + g.ServiceAccount,
		CSR:                  csrPEM,
	}, nil
}

// memberToken mints a token for the plane's ServiceAccount and waits
// until the member accepts it with every right.
func (o *AgentOptions) memberToken(ctx context.Context, member kubernetes.Interface, sa string, ca []byte) (string, error) {
	token, expiry, err := memberaccess.MintToken(ctx, member, o.MemberNamespace, sa, o.MemberTokenTTL)
	if err != nil {
		if apierrors.IsForbidden(err) {
			return "", fmt.Errorf("requesting a token for ServiceAccount %s/%s in the member: %w; the agent's identity needs create on serviceaccounts/token %s in namespace %s (manifests/agent/rbac.yaml grants it)", o.MemberNamespace, sa, err, sa, o.MemberNamespace)
		}
		return "", fmt.Errorf("requesting a token for ServiceAccount %s/%s in the member: %w", o.MemberNamespace, sa, err)
	}
	cfg := &rest.Config{Host: o.Member.Host, TLSClientConfig: rest.TLSClientConfig{CAData: ca, ServerName: o.Member.ServerName}, BearerToken: token, Timeout: 10 * time.Second}
	if err := memberaccess.WaitAuthorized(ctx, cfg, memberaccess.ServiceAccountUser(o.MemberNamespace, sa), 30*time.Second); err != nil {
		return "", err
	}
	klog.InfoS("Minted the plane's member token", "serviceAccount", o.MemberNamespace+"/"+sa, "expires", expiry.UTC().Format(time.RFC3339))
	return token, nil
}

// errMemberConfig marks member access the agent cannot fix by retrying.
var errMemberConfig = errors.New("member configuration")

// removeMemberAccess deletes the plane's ServiceAccount, ClusterRole and
// ClusterRoleBinding the agent created in its cluster (after a denial);
// the namespace stays.
func (o *AgentOptions) removeMemberAccess(ctx context.Context) error {
	member, err := kubernetes.NewForConfig(o.Member)
	if err != nil {
		return err
	}
	name := o.memberAccessName()
	var errs []error
	for what, del := range map[string]func() error{
		"ClusterRoleBinding " + name: func() error { return member.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{}) },
		"ClusterRole " + name:        func() error { return member.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{}) },
		"ServiceAccount " + o.MemberNamespace + "/" + name: func() error {
			return member.CoreV1().ServiceAccounts(o.MemberNamespace).Delete(ctx, name, metav1.DeleteOptions{})
		},
	} {
		if err := del(); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("could not delete %s in the member (delete it by hand): %w", what, err))
		}
	}
	if len(errs) == 0 {
		klog.InfoS("Removed the plane's access to this cluster after the registration was refused", "serviceAccount", o.MemberNamespace+"/"+name)
	}
	return errors.Join(errs...)
}
