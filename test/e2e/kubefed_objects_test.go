package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cellfed/cellfed/test/framework"
)

// TestKubeFedObjectsAdmission: the plane admits KubeFed's own objects as
// KubeFed's webhook does (validation with field paths, KubeFedConfig
// defaults), and refuses federated objects that could only fail at the
// members — through the real kubectl, storing nothing it refuses.
func TestKubeFedObjectsAdmission(t *testing.T) {
	t.Parallel()
	plane := framework.StartPlane(t, framework.PlaneOptions{})
	k := framework.Kubectl{Kubeconfig: plane.Kubeconfig}
	k.MustRun(t, framework.Tenancy, "apply", "-f", "-")

	refused := func(t *testing.T, manifest, getArgs string, msgs ...string) {
		t.Helper()
		// create, not apply: apply would copy a large object into an
		// annotation, which is refused before admission sees it.
		_, err := k.Run(context.Background(), manifest, "create", "-f", "-")
		if err == nil {
			t.Fatalf("accepted:\n%s", manifest)
		}
		for _, m := range msgs {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("the error does not say %q:\n%v", m, err)
			}
		}
		if out, err := k.Run(context.Background(), "", strings.Fields(getArgs)...); err == nil || !strings.Contains(err.Error(), "NotFound") {
			t.Errorf("a refused object was stored: %s %v", out, err)
		}
	}

	t.Run("the plane's KubeFedConfig is complete", func(t *testing.T) {
		cfg := getJSON(t, k, "-n", "kube-federation-system", "get", "kubefedconfigs", "kubefed")
		for _, path := range [][]string{{"spec", "scope"}, {"spec", "controllerDuration", "availableDelay"}, {"spec", "leaderElect", "resourceLock"},
			{"spec", "clusterHealthCheck", "period"}, {"spec", "syncController", "adoptResources"}, {"spec", "statusController", "maxConcurrentReconciles"}} {
			if field(cfg, path...) == nil {
				t.Errorf("%s is not set: %v", strings.Join(path, "."), cfg["spec"])
			}
		}
	})

	t.Run("a partial KubeFedConfig gets KubeFed's defaults", func(t *testing.T) {
		k.MustRun(t, "apiVersion: core.kubefed.io/v1beta1\nkind: KubeFedConfig\nmetadata: {name: partial, namespace: kube-federation-system}\nspec: {scope: Namespaced, leaderElect: {leaseDuration: 30s}}\n", "apply", "-f", "-")
		cfg := getJSON(t, k, "-n", "kube-federation-system", "get", "kubefedconfigs", "partial")
		for path, want := range map[string]any{
			"spec.scope": "Namespaced", "spec.leaderElect.leaseDuration": "30s", "spec.leaderElect.renewDeadline": "10s",
			"spec.controllerDuration.unavailableDelay": "1m0s", "spec.clusterHealthCheck.timeout": "3s", "spec.syncController.adoptResources": "Enabled",
		} {
			if got := field(cfg, strings.Split(path, ".")...); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s = %v, want %v", path, got, want)
			}
		}
		if gates := names(field(cfg, "spec", "featureGates"), "name"); strings.Join(gates, ",") != "PushReconciler,RawResourceStatusCollection,SchedulerPreferences" {
			t.Errorf("feature gates = %v", gates)
		}
		_, err := k.Run(context.Background(), "", "-n", "kube-federation-system", "patch", "kubefedconfigs", "partial", "--type=merge", "-p", `{"spec":{"scope":"Cluster"}}`)
		if err == nil || !strings.Contains(err.Error(), "immutable") {
			t.Errorf("changing the scope: %v, want immutable", err)
		}
	})

	t.Run("invalid KubeFed objects are refused with field paths", func(t *testing.T) {
		refused(t, `apiVersion: core.kubefed.io/v1beta1
kind: FederatedTypeConfig
metadata: {name: widgets, namespace: kube-federation-system}
spec:
  targetType: {group: example.com, version: v1, kind: Widget, pluralName: widgets, scope: Somewhere}
  federatedType: {group: types, version: v1beta1, kind: FederatedWidget, pluralName: federatedwidgets, scope: Namespaced}
  propagation: Maybe
`, "-n kube-federation-system get federatedtypeconfigs widgets",
			"metadata.name", "widgets.example.com", `spec.targetType.scope: Unsupported value: "Somewhere"`, "spec.federatedType.group", `spec.propagation: Unsupported value: "Maybe"`)
		refused(t, `apiVersion: core.kubefed.io/v1beta1
kind: KubeFedCluster
metadata: {name: broken, namespace: kube-federation-system}
spec:
  apiEndpoint: ftp://10.0.0.1:99999
  secretRef: {name: broken-token}
  disabledTLSValidations: ["*", SubjectName]
`, "-n kube-federation-system get kubefedclusters broken",
			"spec.apiEndpoint", "spec.disabledTLSValidations", "when * is specified")
		refused(t, `apiVersion: core.kubefed.io/v1beta1
kind: KubeFedConfig
metadata: {name: bad, namespace: kube-federation-system}
spec:
  scope: Cluster
  leaderElect: {leaseDuration: 5s, renewDeadline: 10s, retryPeriod: 2s, resourceLock: leases}
  featureGates: [{name: Teleport, configuration: Enabled}]
`, "-n kube-federation-system get kubefedconfigs bad",
			"leaseDuration must be greater than renewDeadline", `resourceLock: Unsupported value: "leases"`, `name: Unsupported value: "Teleport"`)
	})

	t.Run("federated objects that can only fail at a member are refused", func(t *testing.T) {
		refused(t, "apiVersion: types.kubefed.io/v1beta1\nkind: FederatedConfigMap\nmetadata: {name: empty, namespace: shop}\nspec:\n  placement: {clusters: []}\n",
			"-n shop get federatedconfigmaps.v1beta1.types.kubefed.io empty", "spec.template: Required value", "ConfigMap")
		refused(t, "apiVersion: types.kubefed.io/v1beta1\nkind: FederatedConfigMap\nmetadata: {name: tilde, namespace: shop}\nspec:\n  template: {data: {a: b}}\n  placement: {clusters: [{name: member1}]}\n  overrides: [{clusterName: member1, clusterOverrides: [{path: /data/~2, value: x}]}]\n",
			"-n shop get federatedconfigmaps.v1beta1.types.kubefed.io tilde", "spec.overrides[0].clusterOverrides[0].path", "invalid JSON-pointer escape")
		refused(t, "apiVersion: types.kubefed.io/v1beta1\nkind: FederatedConfigMap\nmetadata: {name: ann, namespace: shop}\nspec:\n  template: {data: {a: b}}\n  placement: {clusters: [{name: member1}]}\n  overrides: [{clusterName: member1, clusterOverrides: [{op: add, path: /metadata/annotations, value: {replicas: 3}}]}]\n",
			"-n shop get federatedconfigmaps.v1beta1.types.kubefed.io ann", `metadata.annotations["replicas"] must be a string`)
		big := strings.Repeat("x", 1100*1024)
		refused(t, "apiVersion: types.kubefed.io/v1beta1\nkind: FederatedConfigMap\nmetadata: {name: big, namespace: shop}\nspec:\n  template: {data: {a: "+big+"}}\n  placement: {clusters: [{name: member1}]}\n",
			"-n shop get federatedconfigmaps.v1beta1.types.kubefed.io big", "spec: Too long", "1.5 MiB")
	})
}
