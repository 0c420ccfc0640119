package framework

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/cellfed/cellfed/pkg/apis/kubefed"
)

// Upstream KubeFed v0.10.0's controller-manager (bin/kubefed-controller-manager,
// built by `make kubefed` from hack/kubefed) as a peer controller against
// the plane. What it needs there:
//
//   - --kubeconfig (the plane's admin kubeconfig will do) and
//     --kubefed-namespace (no default out of cluster).
//   - --metrics-addr and --healthz-addr: they default to :9090 and :8080 on
//     every interface, so parallel tests need free loopback ports.
//   - A complete KubeFedConfig "kubefed" in the KubeFed namespace. KubeFed
//     fills in defaults with its admission webhook, which the plane does not
//     run; the controller creates an empty one when there is none and then
//     exits on its own validation ("spec.scope: Required value ...").
//   - Leader election is always on; the lock (resourceLock configmaps, the
//     ConfigMap kubefed-controller-manager) is not released on exit, so a
//     second controller on the same plane waits up to leaseDuration.
//   - SchedulerPreferences off: the plane serves scheduling.kubefed.io, but
//     cellfed-controller schedules ReplicaSchedulingPreferences; tests turn
//     KubeFed's scheduler on where they run it alone.
//
// KubeFed treats every KubeFedCluster as its own cluster: an object present
// in a member but not placed on a KubeFedCluster that reaches that member is
// deleted through it. A member reachable through two KubeFedClusters (its
// physical cluster and a cell's per-cell cluster, or two cells) therefore
// has objects deleted and recreated; see TestUpstreamKubeFed.

// KubeFedNamespace holds KubeFedClusters, FederatedTypeConfigs and the
// KubeFedConfig.
const KubeFedNamespace = "kube-federation-system"

// KubeFedOptions configures StartKubeFed.
type KubeFedOptions struct {
	// FeatureGates override the KubeFedConfig's gates by name. Defaults:
	// PushReconciler on, SchedulerPreferences off (cellfed-controller
	// schedules RSPs), RawResourceStatusCollection off.
	FeatureGates map[string]bool
	// Args are extra controller-manager flags (e.g. "--v=4").
	Args []string
}

// KubeFedController is a running upstream KubeFed controller-manager.
type KubeFedController struct {
	*Process
	HealthzURL string
	MetricsURL string
}

// kubeFedConfig is a complete KubeFedConfig tuned for tests: clusters are
// probed every second and resources re-synced one second after a cluster
// turns ready (KubeFed's defaults are 10 s and 20 s).
func kubeFedConfig(gates map[string]bool) string {
	all := map[string]bool{"PushReconciler": true, "SchedulerPreferences": false, "RawResourceStatusCollection": false}
	maps.Copy(all, gates)
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(all)) {
		conf := "Disabled"
		if all[name] {
			conf = "Enabled"
		}
		fmt.Fprintf(&b, "  - {name: %s, configuration: %s}\n", name, conf)
	}
	return `apiVersion: core.kubefed.io/v1beta1
kind: KubeFedConfig
metadata: {name: kubefed, namespace: ` + KubeFedNamespace + `}
spec:
  scope: Cluster
  controllerDuration: {availableDelay: 1s, unavailableDelay: 1s, cacheSyncTimeout: 60s}
  leaderElect: {resourceLock: configmaps, leaseDuration: 15s, renewDeadline: 10s, retryPeriod: 2s}
  clusterHealthCheck: {period: 1s, timeout: 3s, failureThreshold: 3, successThreshold: 1}
  syncController: {maxConcurrentReconciles: 4, adoptResources: Enabled}
  statusController: {maxConcurrentReconciles: 1}
  featureGates:
` + b.String()
}

// ApplyKubeFedConfig writes the KubeFedConfig "kubefed" that KubeFed's
// installation (its Helm chart) creates: the controller-manager needs it,
// and `kubefedctl join` reads its scope ("Is a KubeFed control plane
// running in this namespace?" when it is missing). gates override the
// defaults of StartKubeFed's KubeFedOptions.FeatureGates.
func ApplyKubeFedConfig(t testing.TB, plane *Server, gates map[string]bool) {
	t.Helper()
	Kubectl{Kubeconfig: plane.Kubeconfig}.MustRun(t, kubeFedConfig(gates), "apply", "-f", "-")
}

// StartKubeFed writes the KubeFedConfig the controller needs, starts
// bin/kubefed-controller-manager against the plane with free loopback
// ports for health and metrics (log: kubefed-controller-manager.log in the
// plane's data dir) and waits until it leads. It is stopped when the test
// ends.
func StartKubeFed(t testing.TB, plane *Server, o KubeFedOptions) *KubeFedController {
	t.Helper()
	bin := KubeFedBinary(t)
	ApplyKubeFedConfig(t, plane, o.FeatureGates)

	healthz, metrics := FreePort(t), FreePort(t)
	args := append([]string{
		"--kubeconfig=" + plane.Kubeconfig,
		"--kubefed-namespace=" + KubeFedNamespace,
		"--healthz-addr=127.0.0.1:" + strconv.Itoa(healthz),
		"--metrics-addr=127.0.0.1:" + strconv.Itoa(metrics),
	}, o.Args...)
	p := StartProcess(t, "kubefed-controller-manager", filepath.Join(plane.DataDir, "kubefed-controller-manager.log"), bin, args...)
	c := &KubeFedController{
		Process:    p,
		HealthzURL: fmt.Sprintf("http://127.0.0.1:%d/healthz", healthz),
		MetricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", metrics),
	}
	// Leading is when it starts its controllers; the line is v0.10.0's.
	err := Poll(context.Background(), 100*time.Millisecond, 60*time.Second, func(ctx context.Context) (bool, error) {
		if err := exitedError(p); err != nil {
			return false, err
		}
		if !httpOK(ctx, c.HealthzURL) {
			return false, fmt.Errorf("%s does not answer OK", c.HealthzURL)
		}
		return strings.Contains(p.Log(), "promoted as leader"), nil
	})
	if err != nil {
		t.Fatalf("kubefed-controller-manager did not start leading: %v\nlast log lines:\n%s", err, p.Tail(20))
	}
	return c
}

// KubeFedBinary is the path of bin/kubefed-controller-manager (or
// $CELLFED_BIN_DIR/kubefed-controller-manager), failing the test with the
// command that builds it when it is missing.
func KubeFedBinary(t testing.TB) string {
	t.Helper()
	return kubeFedBinary(t, "kubefed-controller-manager")
}

// kubeFedBinary is bin/<name> of the binaries `make kubefed` builds.
func kubeFedBinary(t testing.TB, name string) string {
	t.Helper()
	dir := os.Getenv("CELLFED_BIN_DIR")
	if dir == "" {
		dir = filepath.Join(RepoRoot(t), "bin")
	}
	bin := filepath.Join(dir, name)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing: run `make kubefed` first (it builds upstream KubeFed from hack/kubefed): %v", bin, err)
	}
	return bin
}

func httpOK(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK
}

// KubeFedMember is a member cluster registered in the plane: what a
// KubeFedCluster for it (physical or per-cell) points at.
type KubeFedMember struct {
	// Name is the physical KubeFedCluster's name.
	Name        string
	APIEndpoint string
	CABundle    []byte
	// SecretName is the Secret in KubeFedNamespace whose key "token" is a
	// cluster-admin bearer token for the member.
	SecretName string
	// ProxyURL is the cluster's spec.proxyURL (a tunnelled member).
	ProxyURL string
}

// JoinMember gives KubeFed access to member: a ServiceAccount
// kube-system/kubefed bound to cluster-admin in the member and a 24 h token
// for it (TokenRequest API), stored in the plane as Secret
// <name>-token, and the physical KubeFedCluster <name>.
func JoinMember(t testing.TB, plane, member *Server, name string) KubeFedMember {
	t.Helper()
	ctx := context.Background()
	mc := member.Client(t)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "kubefed", Namespace: "kube-system"}}
	if _, err := mc.CoreV1().ServiceAccounts("kube-system").Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("member %s: creating ServiceAccount kube-system/kubefed: %v", member.Name, err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "kubefed"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "kubefed", Namespace: "kube-system"}},
	}
	if _, err := mc.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("member %s: creating ClusterRoleBinding kubefed: %v", member.Name, err)
	}
	tr, err := mc.CoreV1().ServiceAccounts("kube-system").CreateToken(ctx, "kubefed", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("member %s: requesting a token for kube-system/kubefed: %v", member.Name, err)
	}
	cfg := member.RESTConfig(t)
	ca := cfg.CAData
	if len(ca) == 0 {
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			t.Fatalf("member %s: reading its CA: %v", member.Name, err)
		}
	}
	endpoint := cfg.Host
	if member.Endpoint != "" {
		endpoint = member.Endpoint
	}
	m := KubeFedMember{Name: name, APIEndpoint: endpoint, CABundle: ca, SecretName: name + "-token", ProxyURL: member.ProxyURL}
	Kubectl{Kubeconfig: plane.Kubeconfig}.MustRun(t, `
apiVersion: v1
kind: Secret
metadata: {name: `+m.SecretName+`, namespace: `+KubeFedNamespace+`}
stringData: {token: "`+tr.Status.Token+`"}
`+m.clusterYAML(name, nil), "apply", "-f", "-")
	return m
}

// JoinCell creates the per-cell KubeFedCluster <namespace>.<cell> the way
// cellfed's cell controller does: labelled with the cell's identity (and
// labels), pointing at the same endpoint and Secret as its physical
// cluster m. It returns the cluster's name.
func JoinCell(t testing.TB, plane *Server, m KubeFedMember, namespace, cell string, labels map[string]string) string {
	t.Helper()
	name := namespace + "." + cell
	all := map[string]string{"cellfed.io/topology-type": "cell", "cellfed.io/namespace": namespace, "cellfed.io/cell": cell}
	maps.Copy(all, labels)
	Kubectl{Kubeconfig: plane.Kubeconfig}.MustRun(t, m.clusterYAML(name, all), "apply", "-f", "-")
	return name
}

func (m KubeFedMember) clusterYAML(name string, labels map[string]string) string {
	var l strings.Builder
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		fmt.Fprintf(&l, "%q: %q, ", k, labels[k])
	}
	return `---
apiVersion: core.kubefed.io/v1beta1
kind: KubeFedCluster
metadata:
  name: ` + name + `
  namespace: ` + KubeFedNamespace + `
  labels: {` + strings.TrimSuffix(l.String(), ", ") + `}
spec:
  apiEndpoint: "` + m.APIEndpoint + `"
  caBundle: ` + base64.StdEncoding.EncodeToString(m.CABundle) + `
  secretRef: {name: ` + m.SecretName + `}
` + m.proxyYAML()
}

func (m KubeFedMember) proxyYAML() string {
	if m.ProxyURL == "" {
		return ""
	}
	return "  proxyURL: \"" + m.ProxyURL + "\"\n"
}

// WaitKubeFedClustersReady waits until a KubeFed controller reports each
// named KubeFedCluster Ready.
func WaitKubeFedClustersReady(t testing.TB, plane *Server, names ...string) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(plane.RESTConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		err := Poll(context.Background(), 100*time.Millisecond, 60*time.Second, func(ctx context.Context) (bool, error) {
			c, err := dyn.Resource(kubefed.KubeFedClustersResource).Namespace(KubeFedNamespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(c.Object, "status", "conditions")
			for _, cond := range conds {
				if m, ok := cond.(map[string]any); ok && m["type"] == "Ready" {
					if m["status"] == "True" {
						return true, nil
					}
					return false, fmt.Errorf("condition Ready=%v: %v", m["status"], m["message"])
				}
			}
			return false, fmt.Errorf("no Ready condition yet")
		})
		if err != nil {
			t.Fatalf("KubeFedCluster %s not ready: %v", name, err)
		}
	}
}
