package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cellfed/cellfed/test/framework"
)

// proxyDialTimeout is the plane's --api-proxy-dial-timeout here: a cut
// or silent link gives 503 within it.
const proxyDialTimeout = 5 * time.Second

const memberAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
`

// TestCellProxy: app teams reach their cells' namespaces on a direct and
// on a tunnelled member through the plane's API proxy, as themselves
// (impersonated by the proxy's own member identity), and nothing else.
// The member kube-apiservers run no kubelet: exec reaches the member's
// pods/exec handler (which answers that the pod has no node), which is
// what is proven of the streaming path here.
func TestCellProxy(t *testing.T) {
	t.Parallel()
	auditPolicy := framework.WriteTempFile(t, memberAuditPolicy)
	planeAudit := filepath.Join(t.TempDir(), "plane-audit.log")
	tunnelArgs, ports := framework.TunnelPlaneArgs(t, "0.0.0.0")
	plane := framework.StartPlane(t, framework.PlaneOptions{Args: append(tunnelArgs, "--audit-log-path="+planeAudit, "--audit-policy-file="+auditPolicy,
		"--api-proxy-dial-timeout="+proxyDialTimeout.String(), framework.AllowHandIssuedAgents, "--default-federated-types=")})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	auditLog := filepath.Join(t.TempDir(), "audit.log")
	direct := framework.StartMembers(t, 1, "--audit-log-path="+auditLog,
		"--audit-policy-file="+auditPolicy)[0]
	edge := startTunnelledMember(t, plane, ports, "edge-1")
	framework.JoinMember(t, plane, direct, "direct-1")
	framework.JoinMember(t, plane, edge.member, "edge-1")

	k := framework.Kubectl{Kubeconfig: plane.Kubeconfig}
	ctl := newCellfedctl(t, plane.Kubeconfig)
	planeKube := plane.Client(t)
	ctl.ok(t, "tenant", "create", "shop", "--tenant=acme", "--workspace=prod")
	ctl.ok(t, "tenant", "create", "billing", "--tenant=beta", "--workspace=prod")
	createCell(t, ctl, planeKube, "shop", "rz00a", "direct-1")
	createCell(t, ctl, planeKube, "shop", "rz10a", "edge-1")
	createCell(t, ctl, planeKube, "billing", "bz00a", "direct-1")
	ctl.ok(t, "tenant", "grant", "alice", "-n", "shop", "--role=app-team")
	ctl.ok(t, "tenant", "grant", "bob", "-n", "shop", "--role=viewer")
	ctl.ok(t, "tenant", "grant", "carol", "-n", "billing", "--role=app-team")
	// bot is an app team's own credential (a ServiceAccount token).
	k.MustRun(t, "", "create", "serviceaccount", "bot", "-n", "shop")
	ctl.ok(t, "tenant", "grant", "serviceaccount:shop:bot", "-n", "shop", "--role=app-team")
	token := strings.TrimSpace(k.MustRun(t, "", "create", "token", "bot", "-n", "shop"))

	// The members hold the workspaces' namespaces (as propagation makes
	// them) and a pod; their RBAC follows the plane's grants (member RBAC
	// is on by default).
	for _, m := range []*framework.Server{direct, edge.member} {
		mc := m.Client(t)
		for _, ns := range []string{"shop", "billing"} {
			if _, err := mc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		// No controller-manager in the member: the pod's ServiceAccount by hand.
		if _, err := mc.CoreV1().ServiceAccounts("shop").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}}
		created, err := mc.CoreV1().Pods("shop").Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// kubectl port-forward checks the phase before it opens a stream.
		created.Status.Phase = corev1.PodRunning
		if _, err := mc.CoreV1().Pods("shop").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	server := plane.RESTConfig(t).Host
	cellURL := func(ns, cell string) string {
		return server + "/apis/proxy.cellfed.io/v1alpha1/namespaces/" + ns + "/cells/" + cell + "/proxy"
	}
	// kubectl against a proxy path as the server, as user (the admin
	// impersonates on the plane; the plane's rules apply first).
	// Errors come back as the error's text (kubectl's stderr).
	asWith := func(env []string, user, url string, args ...string) (string, error) {
		kc := framework.Kubectl{Kubeconfig: plane.Kubeconfig, Env: env}
		out, err := kc.Run(ctx, "", append([]string{"--server=" + url, "--as=" + user}, args...)...)
		if err != nil {
			return err.Error(), err
		}
		return out, nil
	}
	as := func(user, url string, args ...string) (string, error) { return asWith(nil, user, url, args...) }
	mustFail := func(t *testing.T, want string, out string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("want failure containing %q, got %v:\n%s", want, err, out)
		}
	}

	for _, c := range []struct{ name, cell string }{{"direct", "rz00a"}, {"tunnelled", "rz10a"}} {
		t.Run("app team on a "+c.name+" member", func(t *testing.T) {
			url := cellURL("shop", c.cell)
			waitFor(t, "alice lists pods through "+c.cell, func(context.Context) (bool, error) {
				out, err := as("alice", url, "get", "pods", "-n", "shop", "-o", "name")
				return err == nil && out == "pod/web-1\n", nil
			})
			// exec reaches the member's pods/exec handler as alice, over
			// WebSocket (kubectl's default) and SPDY.
			for _, ws := range []string{"true", "false"} {
				out, err := asWith([]string{"KUBECTL_REMOTE_COMMAND_WEBSOCKETS=" + ws}, "alice", url, "exec", "web-1", "-n", "shop", "--", "echo", "hi")
				mustFail(t, "does not have a host assigned", out, err)
			}
			for _, ws := range []string{"true", "false"} {
				out, err := asWith([]string{"KUBECTL_PORT_FORWARD_WEBSOCKETS=" + ws}, "alice", url, "port-forward", "-n", "shop", "pod/web-1", ":80")
				mustFail(t, "does not have a host assigned", out, err)
			}

			// get -w: a watch through the proxy sees a ConfigMap created
			// in the member.
			cfg := rest.CopyConfig(plane.RESTConfig(t))
			cfg.Host = url
			cfg.Impersonate = rest.ImpersonationConfig{UserName: "alice"}
			member := direct.Client(t)
			if c.cell == "rz10a" {
				member = edge.member.Client(t)
			}
			watchThrough(ctx, t, kubernetesFor(t, cfg), member, "seen-"+c.cell)
			// kubectl get -w itself.
			kubectlGetW(ctx, t, plane.Kubeconfig, []string{"--server=" + url, "--as=alice", "get", "configmaps", "-n", "shop", "-w", "-o", "name"},
				member, "kubectl-w-"+c.cell)

			// logs, logs -f and attach reach the member's pod handlers
			// as alice: with no node, the member answers logs with an
			// empty stream, attach with "no host".
			for _, args := range [][]string{{"logs", "web-1", "-n", "shop"}, {"logs", "-f", "web-1", "-n", "shop"}} {
				if out, err := as("alice", url, args...); err != nil || out != "" {
					t.Errorf("alice %v: %v %q", args, err, out)
				}
			}
			for _, ws := range []string{"true", "false"} {
				out, err := asWith([]string{"KUBECTL_REMOTE_COMMAND_WEBSOCKETS=" + ws}, "alice", url, "attach", "web-1", "-n", "shop", "-c", "web")
				mustFail(t, "does not have a host assigned", out, err)
			}

			// The writing verbs.
			for _, args := range [][]string{
				{"create", "configmap", "alice-cm", "-n", "shop", "--from-literal=k=v"},
				{"label", "configmap", "alice-cm", "-n", "shop", "team=a"},
				{"annotate", "configmap", "alice-cm", "-n", "shop", "note=x"},
				{"patch", "configmap", "alice-cm", "-n", "shop", "--type=merge", "-p", `{"data":{"k":"patched"}}`},
				{"apply", "--server-side", "--field-manager=alice", "--force-conflicts", "-f", "-"},
				{"describe", "configmap", "alice-cm", "-n", "shop"},
				{"delete", "configmap", "alice-cm", "-n", "shop"},
			} {
				kc := framework.Kubectl{Kubeconfig: plane.Kubeconfig}
				stdin := ""
				if args[0] == "apply" {
					stdin = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: alice-cm, namespace: shop}\ndata: {k: applied}\n"
				}
				if out, err := kc.Run(ctx, stdin, append([]string{"--server=" + url, "--as=alice"}, args...)...); err != nil {
					t.Errorf("alice %v through %s: %v\n%s", args, c.cell, err, out)
				}
				if args[0] == "apply" {
					got, err := member.CoreV1().ConfigMaps("shop").Get(ctx, "alice-cm", metav1.GetOptions{})
					if err != nil || got.Data["k"] != "applied" || got.Labels["team"] != "a" || got.Annotations["note"] != "x" {
						t.Errorf("after create, label, annotate, patch and apply through %s, the member holds %v (%v)", c.cell, got, err)
					}
				}
			}
			if _, err := member.CoreV1().ConfigMaps("shop").Get(ctx, "alice-cm", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("alice's delete through %s did not reach the member: %v", c.cell, err)
			}
			if out, err := as("alice", url, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.extra.cellfed\\.io/tenant}"); err != nil || out != "alice [\"acme\"]" {
				t.Errorf("alice auth whoami through %s: %v %q", c.cell, err, out)
			}

			// bob views: reads, cannot exec.
			if out, err := as("bob", url, "get", "pods", "-n", "shop", "-o", "name"); err != nil || out != "pod/web-1\n" {
				t.Errorf("bob get pods: %v\n%s", err, out)
			}
			out, err := asWith([]string{"KUBECTL_REMOTE_COMMAND_WEBSOCKETS=true"}, "bob", url, "exec", "web-1", "-n", "shop", "--", "echo", "hi")
			// Refused by the plane: WebSocket's GET by the proxy (create on
			// cells/proxy needed), SPDY's POST by the plane's RBAC.
			mustFail(t, `"bob"`, out, err)
			mustFail(t, `create`, out, err)
			mustFail(t, `cells/proxy`, out, err)
			out, err = as("bob", url, "create", "configmap", "bobs", "-n", "shop")
			mustFail(t, `cannot create resource "cells/proxy" in API group "proxy.cellfed.io"`, out, err)
			// The member's own RBAC, bound by the plane from the grants,
			// says the same: alice may exec, bob may read and not exec.
			if out, err := as("alice", url, "auth", "can-i", "create", "pods", "--subresource=exec", "-n", "shop"); err != nil || out != "yes\n" {
				t.Errorf("alice may exec on the member: %v %q", err, out)
			}
			for _, a := range []struct {
				verb, resource, sub string
				want                bool
			}{{"get", "pods", "", true}, {"create", "pods", "exec", false}, {"get", "secrets", "", false}} {
				r, err := member.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
					User: "bob", Groups: []string{"system:authenticated"}, Extra: map[string]authorizationv1.ExtraValue{"cellfed.io/tenant": {"acme"}},
					ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "shop", Verb: a.verb, Resource: a.resource, Subresource: a.sub},
				}}, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if r.Status.Allowed != a.want {
					t.Errorf("on the %s member, may bob %s %s/%s: %v, want %v", c.name, a.verb, a.resource, a.sub, r.Status.Allowed, a.want)
				}
			}
		})
	}

	t.Run("kubeconfig", func(t *testing.T) {
		// The bot's own kubeconfig for the plane, then one per cell from
		// cellfedctl and from the kubectl plugin.
		cfg := plane.RESTConfig(t)
		ca := cfg.CAData
		if len(ca) == 0 {
			var err error
			if ca, err = os.ReadFile(cfg.CAFile); err != nil {
				t.Fatal(err)
			}
		}
		botConfig := framework.WriteTempFile(t, `apiVersion: v1
kind: Config
clusters: [{name: plane, cluster: {server: "`+server+`", certificate-authority-data: `+base64.StdEncoding.EncodeToString(ca)+`}}]
users: [{name: bot, user: {token: "`+token+`"}}]
contexts: [{name: plane, context: {cluster: plane, user: bot}}]
current-context: plane
`)
		cellConfig := framework.WriteTempFile(t, newCellfedctl(t, botConfig).ok(t, "kubeconfig", "--cell=rz10a", "-n", "shop"))
		if out := framework.KubectlBinary(t); out == "" {
			t.Fatal("no kubectl")
		}
		if out, err := (framework.Kubectl{Kubeconfig: cellConfig}).Run(ctx, "", "get", "pods", "-o", "name"); err != nil || out != "pod/web-1\n" {
			t.Errorf("kubectl get pods with cellfedctl kubeconfig --cell=rz10a: %v %s", err, out)
		}
		binDir := filepath.Dir(framework.Binary(t, "kubectl-cellfed"))
		cmd := exec.CommandContext(ctx, framework.KubectlBinary(t), "cellfed", "kubeconfig", "--cell=rz00a", "-n", "shop")
		cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+botConfig)
		plugin, err := cmd.Output()
		if err != nil {
			t.Fatalf("kubectl cellfed kubeconfig: %v", err)
		}
		pluginConfig := framework.WriteTempFile(t, string(plugin))
		if out, err := (framework.Kubectl{Kubeconfig: pluginConfig}).Run(ctx, "", "get", "pods", "-o", "name"); err != nil || out != "pod/web-1\n" {
			t.Errorf("kubectl get pods with kubectl cellfed kubeconfig --cell=rz00a: %v %s", err, out)
		}
		_, stderr, code := newCellfedctl(t, botConfig).run(t, "kubeconfig", "--cell=nope", "-n", "shop")
		if code == 0 || !strings.Contains(stderr, "cell nope not found in namespace shop") {
			t.Errorf("kubeconfig for a missing cell: %d %s", code, stderr)
		}
	})

	t.Run("cluster proxy", func(t *testing.T) {
		// A platform admin's kubeconfig for a whole member, from
		// cellfedctl. --as=alice is exactly alice: the plane's
		// impersonation applies first, and alice may not use the
		// cluster proxy.
		clusterConfig := framework.WriteTempFile(t, ctl.ok(t, "kubeconfig", "--cluster=edge-1"))
		kc := framework.Kubectl{Kubeconfig: clusterConfig}
		if out, err := kc.Run(ctx, "", "get", "namespace", "billing", "-o", "name"); err != nil || out != "namespace/billing\n" {
			t.Errorf("admin get namespace billing through the cluster proxy of edge-1: %v %q", err, out)
		}
		if out, err := kc.Run(ctx, "", "get", "pods", "-A", "-o", "name"); err != nil || out != "pod/web-1\n" {
			t.Errorf("admin get pods -A through the cluster proxy of edge-1: %v %q", err, out)
		}
		out, err := kc.Run(ctx, "", "--as=alice", "get", "pods", "-n", "shop")
		if err == nil || !strings.Contains(err.Error(), `User "alice" cannot get resource "clusters/proxy" in API group "proxy.cellfed.io" at the cluster scope`) {
			t.Errorf("admin --as=alice through the cluster proxy: want the plane's refusal of alice, got %v %q", err, out)
		}
		// Through alice's cell, --as=alice is alice on the member too:
		// her member RBAC reaches shop, and the member says so.
		cellConfig := framework.WriteTempFile(t, ctl.ok(t, "kubeconfig", "--cell=rz10a", "-n", "shop"))
		kc = framework.Kubectl{Kubeconfig: cellConfig}
		if out, err := kc.Run(ctx, "", "--as=alice", "auth", "can-i", "create", "pods", "--subresource=exec"); err != nil || out != "yes\n" {
			t.Errorf("admin --as=alice auth can-i create pods/exec through rz10a: %v %q", err, out)
		}
		if out, err := kc.Run(ctx, "", "--as=alice", "auth", "can-i", "create", "rolebindings.rbac.authorization.k8s.io"); out != "no\n" {
			t.Errorf("admin --as=alice auth can-i create rolebindings through rz10a: %v %q", err, out)
		}
		// An app team may not use it.
		out, err = as("alice", server+"/apis/proxy.cellfed.io/v1alpha1/clusters/edge-1/proxy", "get", "pods", "-n", "shop")
		mustFail(t, `cannot get resource "clusters/proxy" in API group "proxy.cellfed.io"`, out, err)
		out, err = as("alice", server, "get", "--raw", "/apis/proxy.cellfed.io/v1alpha1/clusters/edge-9/proxy/api")
		mustFail(t, `cannot get resource "clusters/proxy"`, out, err)
		if out, err := k.Run(ctx, "", "get", "--raw", "/apis/proxy.cellfed.io/v1alpha1/clusters/edge-9/proxy/api"); err == nil || !strings.Contains(err.Error(), "cluster edge-9 is not joined; list clusters with: kubectl get kubefedclusters -A") {
			t.Errorf("admin through the cluster proxy of an unknown cluster: %v %q", err, out)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		url := cellURL("shop", "rz00a")
		// kubectl --raw takes the path from the plane's root.
		rawPath := func(url string) string { return strings.TrimPrefix(url, server) }
		out, err := as("alice", server, "get", "--raw", rawPath(cellURL("billing", "bz00a"))+"/api/v1/namespaces/billing/pods")
		mustFail(t, `cannot get resource "cells/proxy" in API group "proxy.cellfed.io" in the namespace "billing"`, out, err)
		out, err = as("alice", url, "get", "configmaps", "-n", "billing")
		mustFail(t, "namespace billing is refused through cell shop/rz00a: it reaches only namespace shop on cluster direct-1; use a cell of the workspace billing", out, err)
		out, err = as("alice", url, "get", "nodes")
		mustFail(t, "list nodes across all namespaces or cluster-scoped is refused through cell shop/rz00a: it reaches only namespace shop on cluster direct-1; pass -n shop", out, err)
		out, err = as("alice", url, "get", "pods", "-A")
		mustFail(t, "list pods across all namespaces or cluster-scoped is refused", out, err)
		out, err = as("alice", server, "get", "--raw", rawPath(url)+"/metrics")
		mustFail(t, "GET /metrics is not served through cell shop/rz00a", out, err)
		// carol may use billing's cell but not shop's.
		out, err = as("carol", url, "get", "pods", "-n", "shop")
		mustFail(t, `cannot get resource "cells/proxy"`, out, err)
		// A forged impersonation header from an app team's own credential.
		code, body := rawGet(t, plane, url+"/api/v1/namespaces/shop/pods", token, map[string]string{"Impersonate-User": "system:admin", "Impersonate-Group": "system:masters"})
		if code != http.StatusForbidden || !strings.Contains(body, "cannot impersonate") {
			t.Errorf("forged impersonation: %d %s", code, body)
		}
		// The bot's own request works.
		code, body = rawGet(t, plane, url+"/api/v1/namespaces/shop/pods", token, nil)
		if code != http.StatusOK || !strings.Contains(body, `"web-1"`) {
			t.Errorf("bot through the proxy: %d %s", code, body)
		}
		// None of the refused requests reached the member.
		b, err := os.ReadFile(auditLog)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, `"impersonatedUser":{"username":"alice"`) &&
				(strings.Contains(line, `"namespace":"billing"`) || strings.Contains(line, `"resource":"nodes"`) || strings.Contains(line, `"requestURI":"/metrics"`) || strings.Contains(line, `"requestURI":"/api/v1/pods`)) {
				t.Errorf("a refused request reached the member: %s", line)
			}
			if strings.Contains(line, `"username":"system:admin"`) {
				t.Errorf("a forged impersonation reached the member: %s", line)
			}
		}
		if !strings.Contains(string(b), `"impersonatedUser":{"username":"alice","groups":["system:authenticated"],"extra":{"cellfed.io/tenant":["acme"]}}`) {
			t.Errorf("the member's audit log shows no request of alice (tenant acme) through the proxy")
		}
		// On the member, the proxy's own identity impersonated alice, and
		// that identity may do nothing but impersonate.
		proxySA := "system:serviceaccount:kube-federation-system:cellfed-proxy"
		if !strings.Contains(string(b), `"user":{"username":"`+proxySA+`"`) {
			t.Errorf("the member's audit log shows no request of %s", proxySA)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, `"impersonatedUser":{"username":"alice"`) && !strings.Contains(line, `"user":{"username":"`+proxySA+`"`) {
				t.Errorf("a request as alice on the member was not sent by %s: %s", proxySA, line)
				break
			}
		}
		for _, a := range []struct {
			attrs authorizationv1.ResourceAttributes
			want  bool
		}{
			{authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "users", Name: "alice"}, true},
			{authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "groups", Name: "system:masters"}, true},
			{authorizationv1.ResourceAttributes{Verb: "impersonate", Group: "authentication.k8s.io", Resource: "userextras", Subresource: "cellfed.io/tenant"}, true},
			{authorizationv1.ResourceAttributes{Verb: "impersonate", Group: "authentication.k8s.io", Resource: "userextras", Subresource: "scopes"}, false},
			{authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods", Namespace: "shop"}, false},
			{authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Namespace: "kube-federation-system"}, false},
			{authorizationv1.ResourceAttributes{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "rolebindings", Namespace: "shop"}, false},
		} {
			attrs := a.attrs
			r, err := direct.Client(t).AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: proxySA, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-federation-system", "system:authenticated"}, ResourceAttributes: &attrs,
			}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Status.Allowed != a.want {
				t.Errorf("may the proxy's member identity %s %s/%s %s: %v, want %v", attrs.Verb, attrs.Resource, attrs.Subresource, attrs.Name, r.Status.Allowed, a.want)
			}
		}
		// The streaming verbs reached the member's pod handlers as alice.
		for _, sub := range []string{"log", "exec", "attach", "portforward"} {
			found := false
			for _, line := range strings.Split(string(b), "\n") {
				if strings.Contains(line, `"subresource":"`+sub+`"`) && strings.Contains(line, `"impersonatedUser":{"username":"alice"`) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("the member's audit log shows no pods/%s request of alice through the proxy", sub)
			}
		}
	})

	t.Run("plane audit log", func(t *testing.T) {
		b, err := os.ReadFile(planeAudit)
		if err != nil {
			t.Fatal(err)
		}
		var allowed, refused bool
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, `"proxy.cellfed.io/cell":"shop/rz10a"`) && strings.Contains(line, `"proxy.cellfed.io/cluster":"edge-1"`) &&
				strings.Contains(line, `"proxy.cellfed.io/impersonated-user":"alice"`) && strings.Contains(line, `"proxy.cellfed.io/impersonated-tenant":"acme"`) &&
				strings.Contains(line, `"proxy.cellfed.io/member-request":"list pods -n shop"`) {
				allowed = true
			}
			if strings.Contains(line, `"proxy.cellfed.io/decision":"refuse"`) && strings.Contains(line, "namespace billing is refused through cell shop/rz00a") {
				refused = true
			}
		}
		if !allowed || !refused {
			t.Errorf("plane audit log: proxied request of alice through shop/rz10a found: %v; refusal found: %v", allowed, refused)
		}
	})

	t.Run("revoking a grant", func(t *testing.T) {
		url := cellURL("shop", "rz00a")
		for _, m := range []*framework.Server{direct, edge.member} {
			if _, err := m.Client(t).RbacV1().RoleBindings("shop").Get(ctx, "cellfed:viewer:user:bob", metav1.GetOptions{}); err != nil {
				t.Fatalf("member %s: bob's viewer binding: %v", m.Name, err)
			}
		}
		if out, err := as("bob", url, "get", "pods", "-n", "shop", "-o", "name"); err != nil {
			t.Fatalf("bob before the revoke: %v %s", err, out)
		}
		k.MustRun(t, "", "delete", "rolebinding", "cellfed:viewer:user:bob", "-n", "shop")
		// Once the plane's authorizer knows (its RBAC follows its own
		// store), the very next request through the proxy is refused: the
		// proxy caches no decision.
		waitFor(t, "the plane's RBAC to drop bob's grant", func(ctx context.Context) (bool, error) {
			r, err := planeKube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: "bob", Groups: []string{"system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "shop", Verb: "get", Group: "proxy.cellfed.io", Resource: "cells", Subresource: "proxy", Name: "rz00a"},
			}}, metav1.CreateOptions{})
			return err == nil && !r.Status.Allowed, err
		})
		out, err := as("bob", url, "get", "pods", "-n", "shop")
		mustFail(t, `cannot get resource "cells/proxy"`, out, err)
		// The member binding follows.
		for _, m := range []*framework.Server{direct, edge.member} {
			waitFor(t, "bob's binding removed from member "+m.Name, func(ctx context.Context) (bool, error) {
				_, err := m.Client(t).RbacV1().RoleBindings("shop").Get(ctx, "cellfed:viewer:user:bob", metav1.GetOptions{})
				return apierrors.IsNotFound(err), nil
			})
		}
	})

	t.Run("link cut", func(t *testing.T) {
		url := cellURL("shop", "rz10a")
		edge.agent.Kill()
		start := time.Now()
		var msg string
		eventually(t, "503 naming edge-1", func() (bool, string) {
			out, err := as("alice", url, "get", "pods", "-n", "shop", "--request-timeout=15s")
			msg = out
			return err != nil && strings.Contains(out, "(ServiceUnavailable): cluster edge-1 is unreachable through its tunnel"), out
		})
		t.Logf("link cut after %v: %s", time.Since(start), msg)
		if d := time.Since(start); d > 15*time.Second {
			t.Errorf("503 after %v", d)
		}
		if err := edge.agent.Restart(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "alice lists pods through rz10a again", func(context.Context) (bool, error) {
			out, err := as("alice", url, "get", "pods", "-n", "shop", "-o", "name")
			return err == nil && out == "pod/web-1\n", nil
		})
	})

	t.Run("silent drop", func(t *testing.T) {
		// No FIN, no RST: the member's veth goes down in its network
		// namespace (on loopback: the agent is stopped). The proxy's open
		// HTTP/2 connection through the tunnel would wait for TCP; its
		// health check answers within the dial timeout.
		pods := cellURL("shop", "rz10a") + "/api/v1/namespaces/shop/pods"
		if code, body := rawGet(t, plane, pods, token, nil); code != http.StatusOK {
			t.Fatalf("before the drop: %d %s", code, body)
		}
		silentDrop(t, edge, true)
		restored := false
		defer func() {
			if !restored {
				silentDrop(t, edge, false)
			}
		}()
		for i := range 2 { // the open connection, then a new dial
			start := time.Now()
			code, body := rawGet(t, plane, pods, token, nil)
			took := time.Since(start)
			t.Logf("silent drop, request %d: %d after %v: %s", i+1, code, took.Round(time.Millisecond), strings.TrimSpace(body))
			if code != http.StatusServiceUnavailable || !strings.Contains(body, "cluster edge-1 is unreachable through its tunnel") {
				t.Errorf("request %d during the drop: %d %s, want 503 naming edge-1", i+1, code, body)
			}
			if took > proxyDialTimeout+time.Second {
				t.Errorf("request %d during the drop answered after %v, more than the dial timeout %v", i+1, took, proxyDialTimeout)
			}
		}
		silentDrop(t, edge, false)
		restored = true
		waitFor(t, "the bot lists pods through rz10a after the drop", func(context.Context) (bool, error) {
			code, _ := rawGet(t, plane, pods, token, nil)
			return code == http.StatusOK, nil
		})
	})
}

// watchThrough watches ConfigMaps of shop through client (the proxy),
// creates one named name in member, and waits for the watch to report
// it. A member on kine may end a fresh watch at once with "Too large
// resource version" (kine counts revisions its watchers never see, so
// the member's watch cache waits for them): then it watches again, as
// every reflector does.
func watchThrough(ctx context.Context, t *testing.T, client, member kubernetes.Interface, name string) {
	t.Helper()
	var last string
	for attempt := range 5 {
		w, err := client.CoreV1().ConfigMaps("shop").Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, attempt), Namespace: "shop"}}
		if _, err := member.CoreV1().ConfigMaps("shop").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		seen, msg := waitWatch(w, cm.Name)
		w.Stop()
		if seen {
			return
		}
		last = msg
		t.Logf("watch through the proxy ended before %s was seen (%s); watching again", cm.Name, msg)
	}
	t.Fatalf("no watch through the proxy saw a new ConfigMap: %s", last)
}

// kubectlGetW runs kubectl args (a get -w printing names) until it
// prints configmap/<name>-<attempt>, after creating that ConfigMap in
// member; like watchThrough, it watches again when the member ends the
// watch at once.
func kubectlGetW(ctx context.Context, t *testing.T, kubeconfig string, args []string, member kubernetes.Interface, name string) {
	t.Helper()
	var last string
	for attempt := range 5 {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		cmd := exec.CommandContext(wctx, framework.KubectlBinary(t), append([]string{"--kubeconfig=" + kubeconfig}, args...)...)
		var out lockedBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			cancel()
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, attempt), Namespace: "shop"}}
		// The watch is open once kubectl printed the list.
		_ = framework.Poll(wctx, 50*time.Millisecond, 20*time.Second, func(context.Context) (bool, error) {
			return strings.Contains(out.String(), "configmap/"), nil
		})
		if _, err := member.CoreV1().ConfigMaps("shop").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			cancel()
			t.Fatal(err)
		}
		seen := framework.Poll(wctx, 50*time.Millisecond, 25*time.Second, func(context.Context) (bool, error) {
			return strings.Contains(out.String(), "configmap/"+cm.Name+"\n"), nil
		}) == nil
		cancel()
		err := <-exited
		if seen {
			return
		}
		last = fmt.Sprintf("%v: %s", err, out.String())
		t.Logf("kubectl get -w through the proxy ended before %s was printed (%s); watching again", cm.Name, last)
	}
	t.Fatalf("kubectl get -w through the proxy never printed a new ConfigMap: %s", last)
}

// waitWatch waits until w reports an object named name, or ends.
func waitWatch(w watch.Interface, name string) (bool, string) {
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, "closed"
			}
			if cm, isCM := ev.Object.(*corev1.ConfigMap); isCM && cm.Name == name {
				return true, ""
			}
			if st, isStatus := ev.Object.(*metav1.Status); ev.Type == watch.Error && isStatus {
				return false, st.Message
			}
		case <-timeout:
			return false, "nothing in 30s"
		}
	}
}

// rawGet sends GET url to the plane with a bearer token and headers.
func rawGet(t *testing.T, plane *framework.Server, url, token string, headers map[string]string) (int, string) {
	t.Helper()
	cfg := plane.RESTConfig(t)
	ca := cfg.CAData
	if len(ca) == 0 {
		var err error
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	c := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}
