package cellfedctl

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/pkg/federatedtypes"
)

type disableOptions struct {
	*options
	deleteCRD, force bool
	fedNamespace     string
}

func newDisableCommand(o *options) *cobra.Command {
	d := &disableOptions{options: o}
	cmd := &cobra.Command{
		Use:   "disable <type>",
		Short: "Disable federation of a type: delete its FederatedTypeConfig (and with --delete-crd its federated CRD)",
		Long: `Disable federation of a type: delete its FederatedTypeConfig, which stops
propagation. The federated CRD and its objects stay unless --delete-crd is
given; the CRD is then only deleted when no federated object of the type
exists, unless --force is given too (which deletes them all).`,
		Example: examples(o.name,
			"disable deployments.apps",
			"disable widgets.example.com --delete-crd",
			"disable widgets.example.com --delete-crd --force",
		),
		Args: exactArgs(1, "one type (e.g. deployments.apps)"),
		RunE: func(c *cobra.Command, args []string) error { return d.run(c.Context(), args[0]) },
	}
	cmd.Flags().BoolVar(&d.deleteCRD, "delete-crd", false, "also delete the federated CRD (refused while federated objects of the type exist, unless --force)")
	cmd.Flags().BoolVar(&d.force, "force", false, "with --delete-crd: delete the CRD even though federated objects exist (they are deleted with it)")
	cmd.Flags().StringVar(&d.fedNamespace, "federation-namespace", federatedtypes.DefaultNamespace, "namespace of the FederatedTypeConfigs")
	return cmd
}

func (d *disableOptions) run(ctx context.Context, arg string) error {
	name, err := typeName(arg)
	if err != nil {
		return err
	}
	if d.force && !d.deleteCRD {
		return fmt.Errorf("--force only applies to --delete-crd; add --delete-crd to delete the federated CRD and its objects, or drop --force")
	}
	c, err := d.planeClients()
	if err != nil {
		return err
	}
	ftcRef := d.fedNamespace + "/" + name
	listHint := fmt.Sprintf("list the enabled types with `kubectl get federatedtypeconfigs -n %s`", d.fedNamespace)

	// What exists now decides what Disable will do, and what to report.
	ftc, err := c.Dynamic.Resource(kubefed.FederatedTypeConfigsResource).Namespace(d.fedNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return apiError(err, "reading FederatedTypeConfig "+ftcRef)
	}
	ftcExists := err == nil
	var crdName string
	builtin := false
	if ftcExists {
		plural, _, _ := unstructured.NestedString(ftc.Object, "spec", "federatedType", "pluralName")
		group, _, _ := unstructured.NestedString(ftc.Object, "spec", "federatedType", "group")
		crdName = plural + "." + group
	} else if t, err := federatedtypes.LookupBuiltin(name); err == nil {
		crdName, builtin = t.CRDName(), true
	} else {
		// The naming rule for a CRD type, whose kind is unknown here.
		plural, _, _ := strings.Cut(name, ".")
		crdName = federatedtypes.Target{Plural: plural}.CRDName()
	}
	_, err = c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crdName, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return apiError(err, "reading CRD "+crdName)
	}
	crdExists := err == nil
	if !ftcExists {
		switch {
		case !d.deleteCRD && crdExists:
			return fmt.Errorf("type %q is not enabled (no FederatedTypeConfig %s), but its federated CRD %s remains; pass --delete-crd to delete it", name, ftcRef, crdName)
		case !crdExists:
			return fmt.Errorf("type %q is not enabled: no FederatedTypeConfig %s and no federated CRD %s; %s", name, ftcRef, crdName, listHint)
		case !builtin:
			// Disable only finds the CRD of a built-in type without its
			// FederatedTypeConfig.
			return fmt.Errorf("type %q is not enabled (no FederatedTypeConfig %s), but its federated CRD %s remains; delete it with `kubectl delete crd %s` (this deletes its objects)", name, ftcRef, crdName, crdName)
		}
	}

	if err := federatedtypes.Disable(ctx, c.Clients, name, d.fedNamespace, d.deleteCRD, d.force); err != nil {
		return apiError(err, "disabling "+name)
	}
	var done []string
	if ftcExists {
		done = append(done, "deleted FederatedTypeConfig "+ftcRef)
	}
	switch {
	case d.deleteCRD && crdExists:
		err := waitGone(ctx, "crd/"+crdName, func(ctx context.Context) error {
			_, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crdName, metav1.GetOptions{})
			return err
		})
		if err != nil {
			return err
		}
		done = append(done, "deleted CRD "+crdName)
	case crdExists:
		done = append(done, "kept CRD "+crdName+" and its objects (--delete-crd deletes them)")
	}
	printf(d.streams.Out, "disabled %s: %s\n", name, strings.Join(done, ", "))
	return nil
}
