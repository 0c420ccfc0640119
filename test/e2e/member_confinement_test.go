package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cellfed/cellfed/pkg/cellproxy"
	"github.com/cellfed/cellfed/test/framework"
)

// TestMemberConfinement: an app team on a member, through a cell's
// proxy, can do what Kubernetes' edit allows in its namespace and no
// more (issue #40, item 4); the member namespace enforces the platform's
// Pod Security level, which tenants cannot change; a kubeconfig made
// with --as acts as that user (item 8); a user's watches through the
// proxy are bounded (item 12).
func TestMemberConfinement(t *testing.T) {
	t.Parallel()
	f := startFederation(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	member := f.memberKube[0]
	f.ctl.ok(t, "tenant", "grant", "alice", "-n", "shop", "--role=app-team")
	f.ctl.ok(t, "tenant", "grant", "vera", "-n", "shop", "--role=app-team")

	// The member's own edit role, as its kube-apiserver bootstraps it,
	// is what app teams get: edit aggregates the roles labelled
	// aggregate-to-edit (view among them, itself aggregated).
	t.Run("app team role is the member's edit", func(t *testing.T) {
		for role, want := range map[string][]rbacv1.PolicyRule{"edit": cellproxy.EditRules(), "view": cellproxy.ViewRules()} {
			got := cellproxy.Grants(aggregatedRules(ctx, t, member, role, 0))
			if w := cellproxy.Grants(want); !slices.Equal(got, w) {
				t.Errorf("the member's %s grants differ from cellfed's (drift of Kubernetes' bootstrap roles):\nonly the member's: %v\nonly cellfed's: %v",
					role, minus(got, w), minus(w, got))
			}
		}
	})

	// Tenants cannot choose Pod Security: not in a FederatedNamespace,
	// not on the plane namespace; a platform admin can, with a level.
	fedNS := func(ns, labels string) string {
		return fmt.Sprintf("apiVersion: types.kubefed.io/v1beta2\nkind: FederatedNamespace\nmetadata: {name: %s, namespace: %s}\nspec:\n  placement: {topologies: [{name: rz00a}]}\n  template: {metadata: {labels: {%s}}}\n", ns, ns, labels)
	}
	if out, err := f.kubectl.Run(ctx, fedNS("shop", "team: a, pod-security.kubernetes.io/enforce: privileged"), "--as=alice", "apply", "-f", "-"); err == nil ||
		!strings.Contains(err.Error(), "spec.template.metadata.labels[pod-security.kubernetes.io/enforce]") || !strings.Contains(err.Error(), "is the platform's") {
		t.Errorf("alice's FederatedNamespace with enforce: privileged: %v\n%s", err, out)
	}
	if _, err := f.kubectl.Run(ctx, "", "--as=alice", "label", "namespace", "shop", "cellfed.io/pod-security=privileged"); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("alice labelled her plane namespace's Pod Security level: %v", err)
	}
	if _, err := f.kubectl.Run(ctx, "", "label", "namespace", "shop2", "cellfed.io/pod-security=none"); err == nil ||
		!strings.Contains(err.Error(), `"none" is not a Pod Security level`) {
		t.Errorf("labelling shop2 with level none: %v", err)
	}
	f.kubectl.MustRun(t, "", "label", "namespace", "shop2", "cellfed.io/pod-security=restricted")
	f.kubectl.MustRun(t, fedNS("shop", "team: a"), "--as=alice", "apply", "-f", "-")
	f.kubectl.MustRun(t, fedNS("shop2", "team: b"), "apply", "-f", "-")
	for ns, level := range map[string]string{"shop": "baseline", "shop2": "restricted"} {
		eventually(t, "member namespace "+ns+" enforces "+level, func() (bool, string) {
			got, err := member.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return got.Labels["pod-security.kubernetes.io/enforce"] == level && got.Labels["team"] != "", fmt.Sprint(got.Labels)
		})
	}

	// A platform admin's new level reaches the member namespace.
	f.kubectl.MustRun(t, "", "label", "--overwrite", "namespace", "shop2", "cellfed.io/pod-security=baseline")
	eventually(t, "member namespace shop2 enforces baseline after the platform's relabel", func() (bool, string) {
		got, err := member.CoreV1().Namespaces().Get(ctx, "shop2", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return got.Labels["pod-security.kubernetes.io/enforce"] == "baseline", fmt.Sprint(got.Labels)
	})

	// What the platform owns in the member namespace, and a pod.
	for _, obj := range []func() error{
		func() error {
			_, err := member.CoreV1().ServiceAccounts("shop").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := member.CoreV1().ResourceQuotas("shop").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "platform"},
				Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"pods": resource.MustParse("50")}}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := member.CoreV1().LimitRanges("shop").Create(ctx, &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "platform"},
				Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{"memory": resource.MustParse("1Gi")}}}}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := member.CoreV1().Pods("shop").Create(ctx, plainPod("web"), metav1.CreateOptions{})
			return err
		},
	} {
		if err := obj(); err != nil {
			t.Fatal(err)
		}
	}

	cfg := rest.CopyConfig(f.plane.RESTConfig(t))
	cfg.Host += "/apis/proxy.cellfed.io/v1alpha1/namespaces/shop/cells/rz00a/proxy"
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "alice"}
	alice := kubernetesFor(t, cfg)
	waitFor(t, "alice's member RBAC", func(ctx context.Context) (bool, error) {
		_, err := alice.CoreV1().Pods("shop").Get(ctx, "web", metav1.GetOptions{})
		return err == nil, nil
	})

	t.Run("what edit leaves out is forbidden", func(t *testing.T) {
		pod, err := member.CoreV1().Pods("shop").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}
		for _, tc := range []struct {
			name string
			do   func() error
		}{
			{"create pods/binding", func() error { return alice.CoreV1().Pods("shop").Bind(ctx, binding, metav1.CreateOptions{}) }},
			{"create bindings", func() error {
				return alice.CoreV1().RESTClient().Post().Namespace("shop").Resource("bindings").Body(binding).Do(ctx).Error()
			}},
			{"update pods/ephemeralcontainers", func() error {
				p := pod.DeepCopy()
				p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
				_, err := alice.CoreV1().Pods("shop").UpdateEphemeralContainers(ctx, "web", p, metav1.UpdateOptions{})
				return err
			}},
			{"update pods/status", func() error {
				p := pod.DeepCopy()
				p.Status.Phase = corev1.PodRunning
				_, err := alice.CoreV1().Pods("shop").UpdateStatus(ctx, p, metav1.UpdateOptions{})
				return err
			}},
			{"create endpoints", func() error {
				_, err := alice.CoreV1().Endpoints("shop").Create(ctx, &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes-default"}}, metav1.CreateOptions{}) //nolint:staticcheck // the deprecated API is what is refused
				return err
			}},
			{"create endpointslices", func() error {
				_, err := alice.DiscoveryV1().EndpointSlices("shop").Create(ctx, &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "hijack"},
					AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}}}, metav1.CreateOptions{})
				return err
			}},
			{"delete the ResourceQuota", func() error {
				return alice.CoreV1().ResourceQuotas("shop").Delete(ctx, "platform", metav1.DeleteOptions{})
			}},
			{"delete the LimitRange", func() error {
				return alice.CoreV1().LimitRanges("shop").Delete(ctx, "platform", metav1.DeleteOptions{})
			}},
		} {
			err := tc.do()
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "alice" cannot`) {
				t.Errorf("alice: %s through the proxy: %v, want the member's RBAC to forbid it", tc.name, err)
			}
		}
		// What edit gives still works: a pod, a ConfigMap.
		if _, err := alice.CoreV1().Pods("shop").Create(ctx, plainPod("alice-web"), metav1.CreateOptions{}); err != nil {
			t.Errorf("alice creating a plain pod: %v", err)
		}
		if _, err := alice.CoreV1().ConfigMaps("shop").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "alice"}}, metav1.CreateOptions{}); err != nil {
			t.Errorf("alice creating a ConfigMap: %v", err)
		}
	})

	t.Run("Pod Security baseline refuses host access", func(t *testing.T) {
		for name, mutate := range map[string]func(*corev1.Pod){
			"host-pid":     func(p *corev1.Pod) { p.Spec.HostPID = true },
			"host-network": func(p *corev1.Pod) { p.Spec.HostNetwork = true },
			"host-path": func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
			},
			"sys-admin": func(p *corev1.Pod) {
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}
			},
			// privileged: true is refused before Pod Security by the
			// member's own --allow-privileged=false.
		} {
			p := plainPod(name)
			p.Spec.NodeName = "node-1"
			mutate(p)
			_, err := alice.CoreV1().Pods("shop").Create(ctx, p, metav1.CreateOptions{})
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `violates PodSecurity "baseline:latest"`) {
				t.Errorf("alice creating pod %s: %v, want Pod Security baseline to refuse it", name, err)
			}
		}
	})

	t.Run("kubeconfig --as acts as that user", func(t *testing.T) {
		out := f.ctl.ok(t, "kubeconfig", "--cell=rz00a", "-n", "shop", "--as=vera")
		kc := filepath.Join(t.TempDir(), "vera.kubeconfig")
		if err := os.WriteFile(kc, []byte(out), 0o600); err != nil {
			t.Fatal(err)
		}
		who, err := framework.Kubectl{Kubeconfig: kc}.Run(ctx, "", "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
		if err != nil || who != "vera" {
			t.Errorf("kubectl auth whoami with cellfedctl kubeconfig --as=vera: %q (%v), want vera", who, err)
		}
	})

	t.Run("a user's watches are bounded", func(t *testing.T) {
		var watches []watch.Interface
		defer func() {
			for _, w := range watches {
				w.Stop()
			}
		}()
		for i := range cellproxy.DefaultMaxWatchesPerUser {
			w, err := alice.CoreV1().ConfigMaps("shop").Watch(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatalf("watch %d: %v", i+1, err)
			}
			watches = append(watches, w)
		}
		// Raw, as client-go would wait out Retry-After and retry.
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		watchURL := cfg.Host + "/api/v1/namespaces/shop/configmaps?watch=true"
		code, retry, body := rawWatch(ctx, t, hc, watchURL)
		if code != http.StatusTooManyRequests || retry != "10" || !strings.Contains(body, `already holds 100 watches open through the API proxy`) {
			t.Fatalf("watch 101: %d Retry-After %q %s, want 429 with Retry-After 10", code, retry, body)
		}
		// Another user is not held back, and a closed watch frees a slot.
		other := rest.CopyConfig(cfg)
		other.Impersonate.UserName = "vera"
		veraWatch, err := kubernetesFor(t, other).CoreV1().ConfigMaps("shop").Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Errorf("vera's first watch: %v", err)
		} else {
			veraWatch.Stop()
		}
		watches[0].Stop()
		waitFor(t, "a slot after a watch closed", func(ctx context.Context) (bool, error) {
			code, _, _ := rawWatch(ctx, t, hc, watchURL+"&timeoutSeconds=1")
			return code == http.StatusOK, nil
		})
	})
}

// rawWatch opens a watch and reads its status, Retry-After and (for a
// refusal) body.
func rawWatch(ctx context.Context, t *testing.T, hc *http.Client, url string) (int, string, string) {
	t.Helper()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, "", ""
	}
	buf := make([]byte, 4096)
	n, _ := resp.Body.Read(buf)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(buf[:n])
}

func plainPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}}
}

// aggregatedRules are a member ClusterRole's rules as Kubernetes'
// aggregation would make them (kube-controller-manager does that; a
// member here runs only kube-apiserver, whose bootstrap roles leave the
// aggregated ones empty).
func aggregatedRules(ctx context.Context, t *testing.T, member kubernetes.Interface, name string, depth int) []rbacv1.PolicyRule {
	t.Helper()
	role, err := member.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if role.AggregationRule == nil || depth > 3 {
		return role.Rules
	}
	var rules []rbacv1.PolicyRule
	for _, sel := range role.AggregationRule.ClusterRoleSelectors {
		s, err := metav1.LabelSelectorAsSelector(&sel)
		if err != nil {
			t.Fatal(err)
		}
		list, err := member.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{LabelSelector: s.String()})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range list.Items {
			if r.Name != name && r.Labels["cellfed.io/member-rbac"] == "" && !strings.HasPrefix(r.Name, "cellfed:") {
				rules = append(rules, aggregatedRules(ctx, t, member, r.Name, depth+1)...)
			}
		}
	}
	return rules
}

func minus(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}
