package e2e

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/pki"
	"github.com/cellfed/cellfed/pkg/registration"
	"github.com/cellfed/cellfed/test/framework"
)

// agentOptions are the in-process agent's options for member m.
func (f *regFixture) agentOptions(t *testing.T, m *framework.Server, cluster, token string) *registration.AgentOptions {
	t.Helper()
	o := registration.NewAgentOptions()
	o.ClusterName = cluster
	o.PlaneKubeconfig = f.agentKubeconfig
	o.BootstrapToken = token
	o.StateDir = filepath.Join(t.TempDir(), "agent-state")
	o.Member = m.RESTConfig(t)
	o.PollInterval = 100 * time.Millisecond
	o.RetryInterval = time.Second
	return o
}

// bootstrapAsync runs registration.Bootstrap in the background.
func bootstrapAsync(ctx context.Context, o *registration.AgentOptions) <-chan bootstrapResult {
	ch := make(chan bootstrapResult, 1)
	go func() {
		id, err := registration.Bootstrap(ctx, o)
		ch <- bootstrapResult{id, err}
	}()
	return ch
}

type bootstrapResult struct {
	id  *registration.Identity
	err error
}

func wantBootstrapError(t *testing.T, ch <-chan bootstrapResult, want string) {
	t.Helper()
	select {
	case r := <-ch:
		if r.err == nil {
			t.Fatalf("bootstrap succeeded, want an error containing %q", want)
		}
		if !strings.Contains(r.err.Error(), want) {
			t.Fatalf("bootstrap error %q, want it to contain %q", r.err, want)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("bootstrap did not return within 60s; want an error containing %q", want)
	}
}

// agentClient reaches the plane as the agent identity in stateDir.
func agentClient(t *testing.T, f *regFixture, stateDir string) dynamic.ResourceInterface {
	t.Helper()
	kc, err := clientcmd.BuildConfigFromFlags("", f.agentKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: kc.Host, TLSClientConfig: rest.TLSClientConfig{CAData: kc.CAData,
		CertFile: filepath.Join(stateDir, "agent.crt"), KeyFile: filepath.Join(stateDir, "agent.key")}}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dyn.Resource(cellv1alpha1.ClusterRegistrationsResource)
}

// TestRegistrationAPI drives the registration flow against a real plane
// and real member kube-apiservers with the agent's registration code:
// bootstrap-token registration, approval, state kept across restarts,
// single-use and expired tokens, deny, an agent touching another
// cluster's registration, revocation, and renewal of a short certificate.
func TestRegistrationAPI(t *testing.T) {
	t.Parallel()
	f := startRegistrationPlane(t, "--agent-cert-validity=60s", "--default-federated-types=") // registers, federates nothing
	members := framework.StartMembers(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// Register edge-1 and approve it.
	tok1 := f.token(t, "--tenant=acme", "--workspace=prod", "--ttl=10m")
	o1 := f.agentOptions(t, members[0], "edge-1", tok1)
	res1 := bootstrapAsync(ctx, o1)
	reg := f.waitPhase(t, "edge-1", cellv1alpha1.RegistrationPending)
	if reg.Spec.Tenant != "acme" || reg.Spec.Workspace != "prod" {
		t.Errorf("tenancy %q/%q, want acme/prod from the token", reg.Spec.Tenant, reg.Spec.Workspace)
	}
	if reg.Labels[registration.LabelBootstrapTokenID] != strings.Split(tok1, ".")[0] {
		t.Errorf("labels %v, want the token id", reg.Labels)
	}
	// The member token is moved into a Secret at once.
	if err := framework.Poll(ctx, 100*time.Millisecond, 20*time.Second, func(ctx context.Context) (bool, error) {
		return f.registration(t, "edge-1").Spec.ServiceAccountToken == "", nil
	}); err != nil {
		t.Fatalf("the member token stayed in the registration: %v", err)
	}
	secret, err := f.plane.Client(t).CoreV1().Secrets(framework.KubeFedNamespace).Get(ctx, "edge-1-token", metav1.GetOptions{})
	if err != nil || len(secret.Data["token"]) == 0 {
		t.Fatalf("credentials Secret: %v", err)
	}
	// The member's token is in no row of the database in clear: not in
	// the Secret, nor in any revision of the registration that carried it
	// (ClusterRegistrations are encrypted at rest).
	db := framework.OpenRawDatabase(t, f.plane.DataDir, "")
	memberToken := secret.Data["token"]
	for _, r := range framework.RawRows(t, db, "") {
		if bytes.Contains(r.Value, memberToken) || bytes.Contains(r.Value, []byte(base64.StdEncoding.EncodeToString(memberToken))) {
			t.Errorf("row %d (%s) of the database holds the member's service-account token in clear", r.ID, r.Name)
		}
	}

	// The same token cannot register a second cluster, even while the
	// first is pending.
	o1b := f.agentOptions(t, members[1], "edge-1b", tok1)
	wantBootstrapError(t, bootstrapAsync(ctx, o1b), "bootstrap token "+strings.Split(tok1, ".")[0]+" was already used to register cluster edge-1")

	list := f.ctl.ok(t, "registration", "list")
	if !strings.Contains(list, "edge-1") || !strings.Contains(list, "Pending") || !strings.Contains(list, "acme") {
		t.Errorf("registration list:\n%s\nwant edge-1 Pending for acme", list)
	}
	// Approval: without a tunnel hub in this plane it cannot finish, but
	// the certificate is signed (Ready says why no cluster was made).
	// The failure is recorded in the Ready condition, and approve says it.
	f.ctl.fails(t, "registration edge-1 is Failed: this plane runs no tunnel hub", "registration", "approve", "edge-1", "--wait=10s")
	if list := f.ctl.ok(t, "registration", "list"); !strings.Contains(list, "Failed") || !strings.Contains(list, "this plane runs no tunnel hub") {
		t.Errorf("registration list after a failed approval:\n%s", list)
	}
	var r1 bootstrapResult
	select {
	case r1 = <-res1:
	case <-ctx.Done():
		t.Fatal("bootstrap of edge-1 did not return after approval")
	}
	if r1.err != nil {
		t.Fatalf("bootstrap of edge-1: %v", r1.err)
	}
	if cn := r1.id.Leaf().Subject.CommonName; cn != "cellfed:agent:edge-1" {
		t.Errorf("agent certificate CN %q", cn)
	}
	for _, name := range []string{"agent.key", "agent.crt"} {
		st, err := os.Stat(filepath.Join(o1.StateDir, name))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v mode %v, want 0600", name, err, st.Mode())
		}
	}
	// A restart does not register again: the stored pair is used, with no
	// token at all.
	o1r := *o1
	o1r.BootstrapToken = ""
	again, err := registration.Bootstrap(ctx, &o1r)
	if err != nil || again.Leaf().SerialNumber.Cmp(r1.id.Leaf().SerialNumber) != 0 {
		t.Fatalf("restart: %v (serial %v, want %v)", err, again.Leaf().SerialNumber, r1.id.Leaf().SerialNumber)
	}

	// The acknowledged token is deleted, and then refused with a message
	// the agent translates.
	if err := framework.Poll(ctx, 100*time.Millisecond, 20*time.Second, func(ctx context.Context) (bool, error) {
		_, err := f.plane.Client(t).CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-"+strings.Split(tok1, ".")[0], metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("the bootstrap token of an approved registration was not deleted: %v", err)
	}
	// The authenticator may still have the token cached for a few
	// seconds; then admission refuses it. Both say which token and what
	// to do.
	wantBootstrapError(t, bootstrapAsync(ctx, f.agentOptions(t, members[1], "edge-1c", tok1)), "bootstrap token "+strings.Split(tok1, ".")[0])
	wantBootstrapError(t, bootstrapAsync(ctx, f.agentOptions(t, members[1], "edge-1c", tok1)), "create a new one with `cellfedctl token create")

	// An expired token: the authenticator refuses it.
	expired := registration.Token{ID: "exp123", Secret: "0123456789abcdef"}
	if _, err := f.plane.Client(t).CoreV1().Secrets("kube-system").Create(ctx,
		registration.TokenSecret(expired, "acme", "", time.Now().Add(-time.Minute)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantBootstrapError(t, bootstrapAsync(ctx, f.agentOptions(t, members[1], "edge-x", expired.String())), "the plane refused bootstrap token exp123 (401 Unauthorized)")

	// A token for a tenant that does not exist (a typo) is refused.
	f.ctl.fails(t, "there is no tenant acmee (no namespace labelled cellfed.io/tenant=acmee)", "token", "create", "--tenant=acmee")

	// Deny: nothing the agent sent is kept.
	tok2 := f.token(t, "--tenant=acme")
	res2 := bootstrapAsync(ctx, f.agentOptions(t, members[1], "edge-2", tok2))
	f.waitPhase(t, "edge-2", cellv1alpha1.RegistrationPending)
	f.ctl.ok(t, "registration", "deny", "edge-2", "--reason=unknown site")
	wantBootstrapError(t, res2, "denied the registration of cluster edge-2 (denied with cellfedctl registration deny: unknown site)")
	if err := framework.Poll(ctx, 100*time.Millisecond, 20*time.Second, func(ctx context.Context) (bool, error) {
		_, err := f.plane.Client(t).CoreV1().Secrets(framework.KubeFedNamespace).Get(ctx, "edge-2-token", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Errorf("Secret edge-2-token is still there after deny: %v", err)
	}
	f.ctl.fails(t, "is Denied, which is final", "registration", "approve", "edge-2")
	// The agent removed the plane's access from its cluster too.
	if _, err := members[1].Client(t).CoreV1().ServiceAccounts("kube-federation-system").Get(ctx, "cellfed-edge-2", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ServiceAccount cellfed-edge-2 in the member after deny: %v, want NotFound", err)
	}
	if _, err := members[1].Client(t).RbacV1().ClusterRoleBindings().Get(ctx, "cellfed-edge-2", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRoleBinding cellfed-edge-2 in the member after deny: %v, want NotFound", err)
	}

	// The auto-approve policy is not open to whoever may write ConfigMaps
	// in the federation namespace: such a user can neither write the
	// ConfigMap that held it before (admission says what replaced it) nor
	// the RegistrationPolicy (RBAC).
	k := framework.Kubectl{Kubeconfig: f.plane.Kubeconfig}
	k.MustRun(t, "", "-n", framework.KubeFedNamespace, "create", "role", "cm-editor", "--verb=*", "--resource=configmaps")
	k.MustRun(t, "", "-n", framework.KubeFedNamespace, "create", "rolebinding", "cm-editor", "--role=cm-editor", "--user=mallory")
	if _, err := k.Run(ctx, "", "--as=mallory", "-n", framework.KubeFedNamespace, "create", "configmap", registration.PolicyConfigMap, "--from-literal=acme=auto-approve"); err == nil ||
		!strings.Contains(err.Error(), "the auto-approve policy is no longer a ConfigMap") {
		t.Errorf("a ConfigMap editor writing the old policy ConfigMap: %v, want it refused", err)
	}
	if _, err := k.Run(ctx, "apiVersion: core.cellfed.io/v1alpha1\nkind: RegistrationPolicy\nmetadata: {name: acme}\nspec: {approval: Automatic}\n", "--as=mallory", "create", "-f", "-"); err == nil ||
		!strings.Contains(err.Error(), "forbidden") {
		t.Errorf("a ConfigMap editor creating a RegistrationPolicy: %v, want forbidden", err)
	}
	if _, err := k.Run(ctx, "apiVersion: core.cellfed.io/v1alpha1\nkind: RegistrationPolicy\nmetadata: {name: acme}\nspec: {approval: Always}\n", "create", "-f", "-"); err == nil ||
		!strings.Contains(err.Error(), `Unsupported value: "Always"`) {
		t.Errorf("a RegistrationPolicy with approval Always: %v, want it refused", err)
	}

	// Auto-approve: acme's registrations are approved as they arrive; the
	// policy can be turned off again.
	out := f.ctl.ok(t, "registration", "auto-approve", "acme")
	if !strings.Contains(out, "tenant acme: registrations are approved automatically") {
		t.Errorf("auto-approve printed %q", out)
	}
	tok3 := f.token(t, "--tenant=acme")
	o3 := f.agentOptions(t, members[1], "edge-3", tok3)
	r3 := <-bootstrapAsync(ctx, o3)
	if r3.err != nil {
		t.Fatalf("auto-approved bootstrap of edge-3: %v", r3.err)
	}
	reg3 := f.registration(t, "edge-3")
	if c := apimeta.FindStatusCondition(reg3.Status.Conditions, cellv1alpha1.RegistrationConditionApproved); c == nil || c.Reason != registration.ReasonAutoApproved {
		t.Errorf("edge-3 Approved condition %+v, want reason %s", c, registration.ReasonAutoApproved)
	}
	f.ctl.ok(t, "registration", "auto-approve", "acme", "--disable")
	tok4 := f.token(t, "--tenant=acme")
	res4 := bootstrapAsync(ctx, f.agentOptions(t, members[1], "edge-4", tok4))
	f.waitPhase(t, "edge-4", cellv1alpha1.RegistrationPending)
	f.ctl.ok(t, "registration", "deny", "edge-4")
	wantBootstrapError(t, res4, "denied the registration of cluster edge-4")

	// A registration named like a joined cluster (another tenant's, say)
	// is refused at creation; one whose name a cluster took after it was
	// created is approved in vain: nothing is signed for it.
	joinByHand := func(name string) {
		k.MustRun(t, fmt.Sprintf("apiVersion: core.kubefed.io/v1beta1\nkind: KubeFedCluster\nmetadata: {name: %s, namespace: %s}\nspec: {apiEndpoint: \"https://127.0.0.1:1\", secretRef: {name: %s-token}}\n", name, framework.KubeFedNamespace, name), "apply", "-f", "-")
	}
	joinByHand("member-2")
	tok5 := f.token(t, "--tenant=acme")
	wantBootstrapError(t, bootstrapAsync(ctx, f.agentOptions(t, members[1], "member-2", tok5)), "a cluster named member-2 is already joined (KubeFedCluster kube-federation-system/member-2)")
	tok6 := f.token(t, "--tenant=acme")
	bootstrapAsync(ctx, f.agentOptions(t, members[1], "edge-6", tok6))
	f.waitPhase(t, "edge-6", cellv1alpha1.RegistrationPending)
	joinByHand("edge-6")
	f.ctl.fails(t, "registration edge-6 is Failed: KubeFedCluster kube-federation-system/edge-6 exists and was not created by this registration", "registration", "approve", "edge-6")
	reg6 := f.waitPhase(t, "edge-6", cellv1alpha1.RegistrationFailed)
	if c := apimeta.FindStatusCondition(reg6.Status.Conditions, cellv1alpha1.RegistrationConditionReady); c == nil || c.Reason != registration.ReasonClusterExists {
		t.Errorf("edge-6 Ready condition %+v, want reason %s", c, registration.ReasonClusterExists)
	}
	if len(reg6.Status.Certificate) != 0 {
		t.Errorf("a certificate was signed for edge-6, whose name a joined cluster holds")
	}

	// edge-1's agent may not touch edge-2's registration, nor approve
	// anything.
	as1 := agentClient(t, f, o1.StateDir)
	u2, err := f.dyn.Resource(cellv1alpha1.ClusterRegistrationsResource).Get(ctx, "edge-2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := as1.Update(ctx, u2, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("edge-1's agent updating edge-2's registration: %v, want Forbidden", err)
	}
	u1, err := as1.Get(ctx, "edge-1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("edge-1's agent reading its own registration: %v", err)
	}
	if _, err := as1.UpdateStatus(ctx, u1, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("edge-1's agent writing its status: %v, want Forbidden", err)
	}
	if _, err := as1.List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("edge-1's agent listing registrations: %v, want Forbidden", err)
	}

	// Renewal: 60 s certificates are renewed at two thirds, in place (long
	// enough that edge-1's agent above and the revoked one below hold a
	// valid one on a slow machine: an expired one is Unauthorized, not
	// Forbidden).
	renewCtx, stopRenew := context.WithCancel(ctx)
	renewDone := make(chan error, 1)
	go func() { renewDone <- registration.Renew(renewCtx, o1, r1.id) }()
	first := r1.id.Leaf()
	if err := framework.Poll(ctx, 200*time.Millisecond, 75*time.Second, func(context.Context) (bool, error) {
		return r1.id.Leaf().SerialNumber.Cmp(first.SerialNumber) != 0, nil
	}); err != nil {
		t.Fatalf("the agent certificate was not renewed (first expires %s): %v", first.NotAfter, err)
	}
	renewed := r1.id.Leaf()
	if !renewed.NotAfter.After(first.NotAfter) {
		t.Errorf("renewed certificate expires %s, not after the first (%s)", renewed.NotAfter, first.NotAfter)
	}
	onDisk, err := os.ReadFile(filepath.Join(o1.StateDir, "agent.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if block, _ := pem.Decode(onDisk); block == nil {
		t.Fatal("agent.crt is not PEM after renewal")
	} else if c, err := x509.ParseCertificate(block.Bytes); err != nil || c.SerialNumber.Cmp(renewed.SerialNumber) != 0 {
		t.Errorf("agent.crt on disk is not the renewed certificate: %v", err)
	}

	// Revocation: the agent may no longer renew.
	f.ctl.ok(t, "registration", "revoke", "edge-1")
	f.waitPhase(t, "edge-1", cellv1alpha1.RegistrationRevoked)
	stopRenew()
	t.Logf("renewal loop ended after the revocation: %v", <-renewDone)
	u1, err = f.dyn.Resource(cellv1alpha1.ClusterRegistrationsResource).Get(ctx, "edge-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, csr, _ := pki.NewAgentKeyAndCSR("edge-1")
	if err := unstructured.SetNestedField(u1.Object, string(csr), "spec", "csr"); err != nil {
		t.Fatal(err)
	}
	if _, err := agentClient(t, f, o1.StateDir).Update(ctx, u1, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("a revoked agent renewing: %v, want Forbidden", err)
	}
}
