package cellfedctl

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/cellfed/cellfed/pkg/apis"
	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/registration"
	"github.com/cellfed/cellfed/pkg/tenancy"
)

func newRegistrationCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "registration",
		Aliases: []string{"registrations", "reg"},
		Short:   "List, approve, deny and revoke agents' cluster registrations; set a tenant's auto-approve policy",
		Long: `A cellfed-agent registers its member cluster with a bootstrap token
('token create'): a ClusterRegistration named after the cluster. Approving
it makes the plane sign the agent's tunnel certificate and create the
tunnelled KubeFedCluster; denying it removes what the agent sent; revoking
an approved one disconnects the agent and the cluster goes Offline.`,
		Example: examples(o.name,
			"registration list",
			"registration approve edge-1",
			"registration deny edge-2",
			"registration revoke edge-1",
			"registration rotate-proxy-credential edge-1",
			"registration auto-approve acme",
			"registration auto-approve acme --disable",
		),
		SuggestionsMinimumDistance: 2,
		Args:                       unknownCommand,
		RunE:                       helpOrUnknown,
	}
	cmd.AddCommand(newRegistrationListCommand(o), newRegistrationDecideCommand(o, "approve"),
		newRegistrationDecideCommand(o, "deny"), newRegistrationDecideCommand(o, "revoke"), newRotateProxyCredentialCommand(o), newAutoApproveCommand(o))
	return cmd
}

func newRegistrationListCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List cluster registrations: cluster, tenant, phase, age, certificate expiry",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			plane, err := o.planeClients()
			if err != nil {
				return err
			}
			list, err := plane.Dynamic.Resource(cellv1alpha1.ClusterRegistrationsResource).List(c.Context(), metav1.ListOptions{})
			if err != nil {
				return apiError(err, "listing ClusterRegistrations")
			}
			regs := make([]*cellv1alpha1.ClusterRegistration, 0, len(list.Items))
			for i := range list.Items {
				r, err := decodeRegistration(&list.Items[i])
				if err != nil {
					return err
				}
				regs = append(regs, r)
			}
			sort.Slice(regs, func(i, j int) bool { return regs[i].Name < regs[j].Name })
			printRegistrations(o.streams.Out, regs, time.Now())
			return nil
		},
	}
}

func printRegistrations(w interface{ Write([]byte) (int, error) }, regs []*cellv1alpha1.ClusterRegistration, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tTENANT\tWORKSPACE\tPHASE\tAGE\tCERT EXPIRES\tMESSAGE")
	for _, r := range regs {
		phase := r.Status.Phase
		if phase == "" {
			phase = registration.Phase(r.Status.Conditions)
		}
		expiry := "-"
		if r.Status.CertificateExpiry != nil {
			expiry = r.Status.CertificateExpiry.UTC().Format(time.RFC3339)
		}
		msg := ""
		if c := meta.FindStatusCondition(r.Status.Conditions, cellv1alpha1.RegistrationConditionReady); c != nil && c.Status != metav1.ConditionTrue {
			msg = c.Message
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, dash(r.Spec.Tenant), dash(r.Spec.Workspace), phase,
			duration.HumanDuration(now.Sub(r.CreationTimestamp.Time)), expiry, msg)
	}
	_ = tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func decodeRegistration(u *unstructured.Unstructured) (*cellv1alpha1.ClusterRegistration, error) {
	var r cellv1alpha1.ClusterRegistration
	if err := apis.Decode(u.Object, &r); err != nil {
		return nil, fmt.Errorf("ClusterRegistration %s is malformed: %v; inspect it with `kubectl get clusterregistration %s -o yaml`", u.GetName(), err, u.GetName())
	}
	return &r, nil
}

type decideOptions struct {
	*options
	verb    string
	reason  string
	timeout time.Duration
}

func newRegistrationDecideCommand(o *options, verb string) *cobra.Command {
	d := &decideOptions{options: o, verb: verb}
	short := map[string]string{
		"approve": "Approve a registration: sign the agent's certificate, create the tunnelled KubeFedCluster",
		"deny":    "Deny a pending registration: nothing the agent sent is kept",
		"revoke":  "Revoke an approved registration: disconnect the agent; the cluster goes Offline",
	}[verb]
	cmd := &cobra.Command{
		Use:   verb + " <cluster>",
		Short: short,
		Args:  exactArgs(1, "one registration (cluster) name"),
		RunE:  func(c *cobra.Command, args []string) error { return d.run(c.Context(), args[0]) },
	}
	cmd.Flags().StringVar(&d.reason, "reason", "", "why, recorded in the condition's message")
	cmd.Flags().DurationVar(&d.timeout, "wait", 30*time.Second, "how long to wait for the plane to act on the decision (0: do not wait)")
	return cmd
}

// decision is the condition a verb sets.
func decisionCondition(verb string) string {
	switch verb {
	case "approve":
		return cellv1alpha1.RegistrationConditionApproved
	case "deny":
		return cellv1alpha1.RegistrationConditionDenied
	}
	return cellv1alpha1.RegistrationConditionRevoked
}

// checkDecision says why verb cannot apply to a registration in phase, or
// returns done=true when it applied already.
func checkDecision(verb, name string, phase cellv1alpha1.RegistrationPhase, cmdName string) (done bool, err error) {
	switch {
	case phase == cellv1alpha1.RegistrationRevoked && verb == "revoke",
		phase == cellv1alpha1.RegistrationDenied && verb == "deny",
		(phase == cellv1alpha1.RegistrationApproved || phase == cellv1alpha1.RegistrationRegistered || phase == cellv1alpha1.RegistrationFailed) && verb == "approve":
		return true, nil
	case phase == cellv1alpha1.RegistrationRevoked || phase == cellv1alpha1.RegistrationDenied:
		return false, fmt.Errorf("registration %s is %s, which is final; the agent must register again with a new token (`%s token create`) after you delete it (`kubectl delete clusterregistration %s`)", name, phase, cmdName, name)
	case verb == "deny" && phase != cellv1alpha1.RegistrationPending:
		return false, fmt.Errorf("registration %s is %s already; use `%s registration revoke %s` to disconnect its agent", name, phase, cmdName, name)
	case verb == "revoke" && phase == cellv1alpha1.RegistrationPending:
		return false, fmt.Errorf("registration %s is still Pending; use `%s registration deny %s`", name, cmdName, name)
	}
	return false, nil
}

func (d *decideOptions) run(ctx context.Context, name string) error {
	if err := ClusterNameError(name); err != nil {
		return err
	}
	plane, err := d.planeClients()
	if err != nil {
		return err
	}
	api := plane.Dynamic.Resource(cellv1alpha1.ClusterRegistrationsResource)
	var phase cellv1alpha1.RegistrationPhase
	err = retryOnConflict(ctx, func() error {
		u, err := api.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("there is no registration %s; list them with `%s registration list`", name, d.name)
		}
		if err != nil {
			return apiError(err, "reading ClusterRegistration "+name)
		}
		reg, err := decodeRegistration(u)
		if err != nil {
			return err
		}
		phase = registration.Phase(reg.Status.Conditions)
		done, err := checkDecision(d.verb, name, phase, d.name)
		if err != nil || done {
			return err
		}
		msg := fmt.Sprintf("%sd with %s registration %s", d.verb, d.name, d.verb)
		if d.verb == "deny" {
			msg = fmt.Sprintf("denied with %s registration deny", d.name)
		}
		if d.reason != "" {
			msg += ": " + d.reason
		}
		meta.SetStatusCondition(&reg.Status.Conditions, metav1.Condition{Type: decisionCondition(d.verb), Status: metav1.ConditionTrue,
			Reason: "By" + capitalize(d.verb), Message: msg, ObservedGeneration: reg.Generation})
		// status.phase is the controller's: it says the plane acted.
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(reg)
		if err != nil {
			return err
		}
		_, err = api.UpdateStatus(ctx, &unstructured.Unstructured{Object: obj}, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		if apierrors.IsConflict(err) || apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
			return apiError(err, "recording the decision on ClusterRegistration "+name)
		}
		return err
	}
	out := d.streams.Out
	if d.timeout <= 0 {
		printf(out, "registration %s: %s recorded\n", name, d.verb)
		return nil
	}
	reg, err := d.waitOutcome(ctx, api, name)
	if err != nil {
		return err
	}
	switch registration.Phase(reg.Status.Conditions) {
	case cellv1alpha1.RegistrationRegistered:
		printf(out, "registration %s approved: KubeFedCluster %s, agent certificate valid until %s\n", name, reg.Status.KubeFedCluster, reg.Status.CertificateExpiry.UTC().Format(time.RFC3339))
	case cellv1alpha1.RegistrationDenied:
		printf(out, "registration %s denied: the member's token was deleted, no cluster was created\n", name)
	case cellv1alpha1.RegistrationRevoked:
		printf(out, "registration %s revoked: its agent is disconnected and refused, KubeFedCluster %s goes Offline\n", name, reg.Status.KubeFedCluster)
	default:
		c := meta.FindStatusCondition(reg.Status.Conditions, cellv1alpha1.RegistrationConditionReady)
		why := "the plane has not acted on it yet"
		if c != nil {
			why = c.Message
		}
		return withFix(fmt.Errorf("registration %s is %s: %s", name, registration.Phase(reg.Status.Conditions), why), "see `kubectl get clusterregistration "+name+" -o yaml`")
	}
	return nil
}

// waitOutcome polls until the plane acted on the decision: Registered or
// Failed after approve, the status written after deny and revoke.
func (d *decideOptions) waitOutcome(ctx context.Context, api interface {
	Get(context.Context, string, metav1.GetOptions, ...string) (*unstructured.Unstructured, error)
}, name string) (*cellv1alpha1.ClusterRegistration, error) {
	var last *cellv1alpha1.ClusterRegistration
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, d.timeout, true, func(ctx context.Context) (bool, error) {
		u, err := api.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		reg, err := decodeRegistration(u)
		if err != nil {
			return false, err
		}
		last = reg
		ready := meta.FindStatusCondition(reg.Status.Conditions, cellv1alpha1.RegistrationConditionReady)
		switch d.verb {
		case "approve":
			return ready != nil && ready.Reason != registration.ReasonSigning, nil
		case "deny":
			return reg.Status.Phase == cellv1alpha1.RegistrationDenied && len(reg.Status.Certificate) == 0, nil
		}
		return reg.Status.Phase == cellv1alpha1.RegistrationRevoked, nil
	})
	if err != nil && last == nil {
		return nil, apiError(err, "waiting for ClusterRegistration "+name)
	}
	return last, nil
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

func retryOnConflict(ctx context.Context, fn func() error) error {
	var err error
	for range 5 {
		if err = fn(); !apierrors.IsConflict(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return err
}

type autoApproveOptions struct {
	*options
	disable bool
}

func newAutoApproveCommand(o *options) *cobra.Command {
	a := &autoApproveOptions{options: o}
	cmd := &cobra.Command{
		Use:   "auto-approve <tenant> [--disable]",
		Short: "Approve a tenant's registrations without an administrator (opt-in policy)",
		Long: `Registrations made with a bootstrap token of <tenant> are approved by the
plane as soon as they arrive. The policy is the cluster-scoped
RegistrationPolicy named after the tenant (spec.approval: Automatic); only
plane administrators may change it. --disable sets it to Manual: pending
registrations then wait for 'registration approve' again.`,
		Args: exactArgs(1, "one tenant name"),
		RunE: func(c *cobra.Command, args []string) error { return a.run(c.Context(), args[0]) },
	}
	cmd.Flags().BoolVar(&a.disable, "disable", false, "stop auto-approving the tenant's registrations")
	return cmd
}

func (a *autoApproveOptions) run(ctx context.Context, tenant string) error {
	if err := tenancy.TenantNameError(tenant); err != nil {
		return err
	}
	if errs := validation.IsDNS1123Subdomain(tenant); len(errs) > 0 {
		return fmt.Errorf("tenant %q cannot have a RegistrationPolicy, which is named after the tenant: object names are lowercase DNS names (%s); approve its registrations with `%s registration approve`", tenant, strings.Join(errs, "; "), a.name)
	}
	plane, err := a.planeClients()
	if err != nil {
		return err
	}
	approval := cellv1alpha1.RegistrationApprovalAutomatic
	if a.disable {
		approval = cellv1alpha1.RegistrationApprovalManual
	}
	api := plane.Dynamic.Resource(cellv1alpha1.RegistrationPoliciesResource)
	err = retryOnConflict(ctx, func() error {
		u, err := api.Get(ctx, tenant, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if a.disable {
				return nil // no policy: registrations wait for an administrator
			}
			u = &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": cellv1alpha1.SchemeGroupVersion.String(), "kind": "RegistrationPolicy",
				"metadata": map[string]any{"name": tenant},
				"spec":     map[string]any{"approval": string(approval)},
			}}
			_, err = api.Create(ctx, u, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		if have, _, _ := unstructured.NestedString(u.Object, "spec", "approval"); have == string(approval) {
			return nil
		}
		if err := unstructured.SetNestedField(u.Object, string(approval), "spec", "approval"); err != nil {
			return err
		}
		_, err = api.Update(ctx, u, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return apiError(err, "writing the RegistrationPolicy "+tenant)
	}
	if a.disable {
		printf(a.streams.Out, "tenant %s: registrations wait for an administrator (RegistrationPolicy %s)\n", tenant, tenant)
	} else {
		printf(a.streams.Out, "tenant %s: registrations are approved automatically (RegistrationPolicy %s)\n", tenant, tenant)
	}
	return nil
}
