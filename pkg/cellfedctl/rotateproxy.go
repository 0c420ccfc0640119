package cellfedctl

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
)

type rotateProxyOptions struct {
	*options
	timeout time.Duration
}

func newRotateProxyCredentialCommand(o *options) *cobra.Command {
	r := &rotateProxyOptions{options: o}
	cmd := &cobra.Command{
		Use:   "rotate-proxy-credential <cluster>",
		Short: "Revoke one tunnelled cluster's proxy credential: the hubs refuse it at once, the plane writes a new one",
		Long: `Raises the registration's spec.proxyCredentialGeneration. Every tunnel
hub then refuses the cluster's previous CONNECT credential (the password
in its KubeFedCluster's spec.proxyURL), and the plane rewrites that
proxyURL with the credential of the new generation; KubeFed and
cellfed-controller pick it up from the KubeFedCluster. No other cluster's
credential changes.`,
		Args: exactArgs(1, "one registration (cluster) name"),
		RunE: func(c *cobra.Command, args []string) error { return r.run(c.Context(), args[0]) },
	}
	cmd.Flags().DurationVar(&r.timeout, "wait", 30*time.Second, "how long to wait for the plane to rewrite the KubeFedCluster's proxyURL (0: do not wait)")
	return cmd
}

func (r *rotateProxyOptions) run(ctx context.Context, name string) error {
	if err := ClusterNameError(name); err != nil {
		return err
	}
	plane, err := r.planeClients()
	if err != nil {
		return err
	}
	api := plane.Dynamic.Resource(cellv1alpha1.ClusterRegistrationsResource)
	var reg *cellv1alpha1.ClusterRegistration
	var oldURL string
	err = retryOnConflict(ctx, func() error {
		u, err := api.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("there is no registration %s; list them with `%s registration list` (a cluster joined by hand has no per-cluster credential: its proxyURL changes only with the hub's CONNECT secret)", name, r.name)
		}
		if err != nil {
			return apiError(err, "reading ClusterRegistration "+name)
		}
		if reg, err = decodeRegistration(u); err != nil {
			return err
		}
		oldURL = r.proxyURL(ctx, plane, reg)
		gen := reg.Spec.ProxyCredentialGeneration + 1
		if err := unstructured.SetNestedField(u.Object, gen, "spec", "proxyCredentialGeneration"); err != nil {
			return err
		}
		_, err = api.Update(ctx, u, metav1.UpdateOptions{})
		reg.Spec.ProxyCredentialGeneration = gen
		return err
	})
	if err != nil {
		if apierrors.IsConflict(err) || apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
			return apiError(err, "rotating the proxy credential of ClusterRegistration "+name)
		}
		return err
	}
	out := r.streams.Out
	gen := reg.Spec.ProxyCredentialGeneration
	if r.timeout <= 0 || reg.Status.KubeFedCluster == "" {
		printf(out, "registration %s: proxy credential generation %d; the hubs refuse the previous credential\n", name, gen)
		return nil
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, r.timeout, true, func(ctx context.Context) (bool, error) {
		now := r.proxyURL(ctx, plane, reg)
		return now != "" && now != oldURL, nil
	})
	if err != nil {
		return withFix(fmt.Errorf("registration %s: proxy credential generation %d, but KubeFedCluster %s still has the previous proxyURL after %v", name, gen, reg.Status.KubeFedCluster, r.timeout),
			"see the registration's Ready condition: `kubectl get clusterregistration "+name+" -o yaml`")
	}
	printf(out, "registration %s: proxy credential generation %d; the hubs refuse the previous credential, KubeFedCluster %s has the new proxyURL\n", name, gen, reg.Status.KubeFedCluster)
	return nil
}

// proxyURL is the spec.proxyURL of reg's KubeFedCluster, "" when it cannot
// be read.
func (r *rotateProxyOptions) proxyURL(ctx context.Context, plane *planeClients, reg *cellv1alpha1.ClusterRegistration) string {
	ns, name, ok := strings.Cut(reg.Status.KubeFedCluster, "/")
	if !ok {
		return ""
	}
	u, err := plane.Dynamic.Resource(kubefed.KubeFedClustersResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	s, _, _ := unstructured.NestedString(u.Object, "spec", "proxyURL")
	return s
}
