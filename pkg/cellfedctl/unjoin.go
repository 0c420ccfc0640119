package cellfedctl

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/pkg/federatedtypes"
)

type unjoinOptions struct {
	*options
	member       memberFlags
	fedNamespace string
	force        bool
	memberNSSet  bool // --member-namespace was given
}

func newUnjoinCommand(o *options) *cobra.Command {
	u := &unjoinOptions{options: o}
	cmd := &cobra.Command{
		Use:   "unjoin <name> [--kubeconfig-member=<kubeconfig>]",
		Short: "Remove a member cluster from the plane (and its ServiceAccount and RBAC from the member)",
		Long: `Remove the physical cluster <name> from the plane: delete its
KubeFedCluster and the Secret holding its token in --federation-namespace.

With --kubeconfig-member it also deletes, in the member, the
ClusterRoleBinding, ClusterRole and ServiceAccount cellfed-<name> that join
created (which makes the token useless); the namespace stays. It checks
first that the member answers, and stops without changing anything when it
does not, unless --force: the cluster is then removed from the plane only.
Without --kubeconfig-member only the plane is changed, and a warning names
what remains in the member.

Unjoin refuses while Cells are placed on the cluster: it lists them; delete
them first, or pass --force (the cells stay and report ClusterFound=False).
It refuses while Cells are moving to the cluster: undo those moves first,
or pass --force (the moves stop and report MoveBlocked=True).

Running it again completes an unjoin that stopped half way.`,
		Example: examples(o.name,
			"unjoin member1 --kubeconfig-member=member1.kubeconfig",
			"unjoin member1",
			"unjoin member1 --kubeconfig-member=member1.kubeconfig --force",
		),
		Args: exactArgs(1, "one cluster name"),
		RunE: func(c *cobra.Command, args []string) error {
			u.memberNSSet = c.Flags().Changed("member-namespace")
			return u.run(c.Context(), args[0])
		},
	}
	u.member.addFlags(cmd, " (to delete what join created there)")
	cmd.Flags().Lookup("member-namespace").Usage = "namespace of the plane's ServiceAccount in the member (default: as recorded on the KubeFedCluster by join, else kube-federation-system)"
	cmd.Flags().StringVar(&u.fedNamespace, "federation-namespace", federatedtypes.DefaultNamespace, "namespace of the KubeFedClusters in the plane")
	cmd.Flags().BoolVar(&u.force, "force", false, "unjoin even though cells are placed on the cluster, or the member does not answer")
	return cmd
}

// CellsOn returns namespace/name of the cells placed on cluster, sorted.
func CellsOn(cells []cellv1alpha1.Cell, cluster string) []string {
	var on []string
	for _, c := range cells {
		if c.Spec.Cluster == cluster {
			on = append(on, c.Namespace+"/"+c.Name)
		}
	}
	sort.Strings(on)
	return on
}

// CellsMovingTo returns namespace/name of the cells moving to cluster
// (spec.move.to; an undo too, which brings copies back from it), sorted.
func CellsMovingTo(cells []cellv1alpha1.Cell, cluster string) []string {
	var to []string
	for _, c := range cells {
		if c.Spec.Move != nil && c.Spec.Move.To == cluster {
			to = append(to, c.Namespace+"/"+c.Name)
		}
	}
	sort.Strings(to)
	return to
}

// MovingError is the refusal to unjoin a cluster cells are moving to:
// the moves could neither end nor bring their copies back.
func MovingError(ctl, cluster string, cells []string) error {
	ns, name, _ := strings.Cut(cells[0], "/")
	return fmt.Errorf("cells are moving to cluster %s (%s); undo those moves first (e.g. `%s cell move %s -n %s --undo`, then wait for it to end), or pass --force to unjoin anyway (the moves stop, blocked: their cells report MoveBlocked=True, TargetNotFound, and copies already made stay on the member)",
		cluster, strings.Join(cells, ", "), ctl, name, ns)
}

// CellsError is the refusal to unjoin a cluster that hosts cells.
func CellsError(ctl, cluster string, cells []string) error {
	const shown = 5
	list := strings.Join(cells[:min(len(cells), shown)], ", ")
	if len(cells) > shown {
		list += fmt.Sprintf(" and %d more", len(cells)-shown)
	}
	what := "cell"
	if len(cells) > 1 {
		what = "cells"
	}
	ns, name, _ := strings.Cut(cells[0], "/")
	return fmt.Errorf("cluster %s hosts %d %s (%s); delete them first (e.g. `%s cell delete %s -n %s`), or pass --force to unjoin anyway (the cells stay and report ClusterFound=False)",
		cluster, len(cells), what, list, ctl, name, ns)
}

func (u *unjoinOptions) run(ctx context.Context, name string) error {
	if _, _, ok := cellv1alpha1.ParseCellClusterName(name); ok {
		return fmt.Errorf("%q is a per-cell cluster, which the plane manages; delete its cell instead, or name a physical cluster", name)
	}
	if err := ClusterNameError(name); err != nil {
		return err
	}
	if u.member.context != "" && u.member.kubeconfig == "" {
		return fmt.Errorf("--member-context needs --kubeconfig-member; pass --kubeconfig-member=<kubeconfig of the member cluster>")
	}
	plane, err := u.planeClients()
	if err != nil {
		return err
	}
	ref := u.fedNamespace + "/" + name
	clusters := plane.Dynamic.Resource(kubefed.KubeFedClustersResource).Namespace(u.fedNamespace)
	kfc, err := clusters.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		kfc = nil
	} else if err != nil {
		return apiError(err, "reading KubeFedCluster "+ref)
	}

	// What join wrote: the Secret the cluster names (else the default
	// name), the member's objects where join recorded them.
	secretName := TokenSecretName(name)
	memberNS, sa := u.member.namespace, MemberObjectName(name)
	if kfc != nil {
		if s, _, _ := unstructured.NestedString(kfc.Object, "spec", "secretRef", "name"); s != "" {
			secretName = s
		}
		a := kfc.GetAnnotations()
		if ns := a[AnnotationMemberNamespace]; ns != "" && !u.memberNSSet {
			memberNS = ns
		}
		if s := a[AnnotationMemberServiceAccount]; s != "" {
			sa = s
		}
	}
	secrets := plane.kube.CoreV1().Secrets(u.fedNamespace)
	_, err = secrets.Get(ctx, secretName, metav1.GetOptions{})
	secretExists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return apiError(err, "reading Secret "+u.fedNamespace+"/"+secretName)
	}

	// Cells placed on it.
	list, err := plane.Dynamic.Resource(cellv1alpha1.CellsResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return apiError(err, "listing cells")
	}
	cells, err := decodeCells(list.Items)
	if err != nil {
		return err
	}
	on := CellsOn(cells, name)
	if len(on) > 0 && !u.force {
		return CellsError(u.name, name, on)
	}
	moving := CellsMovingTo(cells, name)
	if len(moving) > 0 && !u.force {
		return MovingError(u.name, name, moving)
	}

	// The member answers?
	var member kubernetes.Interface
	memberDown := ""
	if u.member.kubeconfig != "" {
		mc, err := u.member.load()
		if err != nil {
			return err
		}
		if member, err = kubernetes.NewForConfig(mc.admin); err != nil {
			return withFix(fmt.Errorf("client for %s: %w", u.member.describe(), err), "check the server and credentials of that kubeconfig")
		}
		if _, err := member.Discovery().ServerVersion(); err != nil {
			if !u.force {
				return withFix(fmt.Errorf("%s does not answer, so its ServiceAccount and RBAC cannot be deleted: %w", u.member.describe(), err),
					"start it, fix --kubeconfig-member/--member-context, or pass --force to unjoin from the plane only")
			}
			memberDown, member = oneLine(err.Error()), nil
		}
	}

	var done []string
	memberLeft := fmt.Sprintf("ClusterRoleBinding %s, ClusterRole %s and ServiceAccount %s/%s", sa, sa, memberNS, sa)
	if member != nil {
		// Deleting the ServiceAccount makes its tokens useless.
		steps := []struct {
			what string
			del  func() error
		}{
			{"ClusterRoleBinding " + sa, func() error { return member.RbacV1().ClusterRoleBindings().Delete(ctx, sa, metav1.DeleteOptions{}) }},
			{"ClusterRole " + sa, func() error { return member.RbacV1().ClusterRoles().Delete(ctx, sa, metav1.DeleteOptions{}) }},
			{"ServiceAccount " + memberNS + "/" + sa, func() error {
				return member.CoreV1().ServiceAccounts(memberNS).Delete(ctx, sa, metav1.DeleteOptions{})
			}},
		}
		var deleted []string
		for _, s := range steps {
			err := s.del()
			switch {
			case err == nil:
				deleted = append(deleted, s.what)
			case !apierrors.IsNotFound(err):
				return memberError(err, fmt.Sprintf("deleting %s in %s", s.what, u.member.describe()))
			}
		}
		if len(deleted) > 0 {
			done = append(done, "in the member deleted "+strings.Join(deleted, ", "))
		}
	}
	if kfc == nil && !secretExists && len(done) == 0 {
		inMember := ""
		if member != nil {
			inMember = ", and no ServiceAccount or RBAC of it in the member"
		}
		return fmt.Errorf("cluster %s is not joined: no KubeFedCluster %s or Secret %s/%s%s; list the joined clusters with `%s status`",
			name, ref, u.fedNamespace, secretName, inMember, u.name)
	}
	var planeDone []string
	if kfc != nil {
		if err := clusters.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return apiError(err, "deleting KubeFedCluster "+ref)
		}
		planeDone = append(planeDone, "KubeFedCluster "+ref)
	}
	if secretExists {
		if err := secrets.Delete(ctx, secretName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return apiError(err, "deleting Secret "+u.fedNamespace+"/"+secretName)
		}
		planeDone = append(planeDone, "Secret "+u.fedNamespace+"/"+secretName)
	}
	if len(planeDone) > 0 {
		done = append([]string{"deleted " + strings.Join(planeDone, ", ")}, done...)
	}
	printf(u.streams.Out, "unjoined %s: %s\n", name, strings.Join(done, "; "))

	switch {
	case memberDown != "":
		fmt.Fprintf(u.streams.ErrOut, "warning: %s did not answer (%s): its %s remain, and the token stays valid until it expires; delete them when it is back with `%s unjoin %s --kubeconfig-member=%s`\n",
			u.member.describe(), memberDown, memberLeft, u.name, name, u.member.kubeconfig)
	case member == nil:
		fmt.Fprintf(u.streams.ErrOut, "warning: the member was not given (--kubeconfig-member): its %s remain, and the token stays valid until it expires; delete them with `%s unjoin %s --kubeconfig-member=<member kubeconfig>`\n",
			memberLeft, u.name, name)
	}
	if len(on) > 0 {
		fmt.Fprintf(u.streams.ErrOut, "warning: %d cell(s) still name cluster %s (%s); they report ClusterFound=False until deleted\n", len(on), name, strings.Join(on, ", "))
	}
	if len(moving) > 0 {
		fmt.Fprintf(u.streams.ErrOut, "warning: %d cell(s) were moving to cluster %s (%s); their moves are blocked (MoveBlocked=True) until undone or the cluster is joined again\n", len(moving), name, strings.Join(moving, ", "))
	}
	return nil
}
