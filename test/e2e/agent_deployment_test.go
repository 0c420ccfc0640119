package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/cellfed/cellfed/manifests"
	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/pkg/registration"
	"github.com/cellfed/cellfed/test/framework"
)

// TestAgentDeploymentIdentity runs cellfed-agent as manifests/agent
// deploys it, with a token of the manifests' ServiceAccount (not an
// admin) for a real member kube-apiserver and its state in a Secret: it
// registers, is approved and the member answers through the plane's hub.
// Killed and started again in a new empty directory (a rescheduled pod),
// it uses the same certificate from the Secret and registers nothing; its
// renewal updates the Secret. An identity that lacks one of the
// manifests' rights fails, naming it.
func TestAgentDeploymentIdentity(t *testing.T) {
	t.Parallel()
	tunnelArgs, ports := framework.TunnelPlaneArgs(t, "127.0.0.1")
	member := framework.StartMemberNoWait(t, "edge-sa")
	// 40 s certificates: renewed 27 s after receipt, after the agent was
	// rescheduled.
	f := startRegistrationPlane(t, append(tunnelArgs, "--agent-cert-validity=40s")...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := member.WaitReady(ctx); err != nil {
		t.Fatalf("member edge-sa: %v", err)
	}
	k := framework.Kubectl{Kubeconfig: member.Kubeconfig}

	// manifests/agent without its Deployment (there is no kubelet): the
	// agent's namespace, ServiceAccount and RBAC, and the plane's access.
	docs, err := manifests.AgentDocuments()
	if err != nil {
		t.Fatal(err)
	}
	var objs []string
	for _, d := range docs {
		if !bytes.Contains(d, []byte("kind: Deployment")) {
			objs = append(objs, string(d))
		}
	}
	k.MustRun(t, strings.Join(objs, "\n---\n"), "apply", "-f", "-")
	// Two identities lacking one right each, for the refusals below.
	k.MustRun(t, limitedIdentities, "apply", "-f", "-")

	agentBin := framework.Binary(t, "cellfed-agent")
	agentArgs := func(cluster, kubeconfig, tokenFile, stateSecret string) []string {
		return []string{
			"--cluster=" + cluster,
			"--hub-address=" + net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.AgentPort)),
			"--hub-server-name=localhost", // the plane's serving certificate names localhost
			"--kubeconfig=" + kubeconfig,
			"--plane-kubeconfig=" + f.agentKubeconfig,
			"--bootstrap-token-file=" + tokenFile,
			"--state-secret=" + stateSecret,
			"--member-namespace=kube-federation-system",
			"--member-service-account=cellfed-plane",
			// The plane must reach the member through the tunnel only.
			"--member-endpoint=https://localhost:1",
			"--v=2",
		}
	}
	// startAgent runs the agent in a new empty working directory, as a
	// new pod: it has no state but the Secret.
	startAgent := func(name string, args []string) (*framework.Process, string) {
		dir := t.TempDir()
		sh := append([]string{"-c", `cd "$0" && exec "$@"`, dir, agentBin}, args...)
		return framework.StartProcess(t, name, filepath.Join(t.TempDir(), "agent.log"), "/bin/sh", sh...), dir
	}

	token := f.token(t, "--tenant=acme", "--workspace=prod", "--ttl=10m")
	tokenFile := framework.WriteTempFile(t, token)
	saKubeconfig := serviceAccountKubeconfig(t, member, k, "cellfed-agent", "cellfed-agent")
	args := agentArgs("edge-sa", saKubeconfig, tokenFile, "cellfed-agent/cellfed-agent-state")
	agent, workDir := startAgent("agent edge-sa", args)

	start := time.Now()
	f.waitPhase(t, "edge-sa", cellv1alpha1.RegistrationPending)
	t.Logf("agent with the ServiceAccount token registered %v after start", time.Since(start).Round(time.Millisecond))
	f.ctl.ok(t, "registration", "approve", "edge-sa")
	var first *cellv1alpha1.ClusterRegistration
	waitFor(t, "the agent to acknowledge its certificate", func(context.Context) (bool, error) {
		first = f.registration(t, "edge-sa")
		return first.Annotations[registration.AnnotationAgentCertificate] != "", nil
	})
	serial := first.Annotations[registration.AnnotationAgentCertificate]
	state, err := member.Client(t).CoreV1().Secrets("cellfed-agent").Get(ctx, "cellfed-agent-state", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the agent's state Secret: %v\nagent log:\n%s", err, agent.Tail(20))
	}
	if !bytes.Equal(state.Data["tls.crt"], first.Status.Certificate) || len(state.Data["tls.key"]) == 0 || len(state.Data["pending.key"]) != 0 {
		t.Errorf("state Secret keys %v: tls.crt is the registration's certificate: %v", keys(state.Data), bytes.Equal(state.Data["tls.crt"], first.Status.Certificate))
	}
	if entries, err := os.ReadDir(workDir); err != nil || len(entries) != 0 {
		t.Errorf("the agent wrote to its working directory: %v %v", entries, err)
	}

	// The member answers through the plane's hub.
	via := throughHub(t, f, member, "edge-sa")
	if err := via.WaitReady(ctx); err != nil {
		t.Fatalf("member not ready through the tunnel: %v\nagent log:\n%s", err, agent.Tail(30))
	}

	// Rescheduled: killed, then started anew with nothing but the Secret.
	agent.Kill()
	restart := time.Now()
	agent, workDir = startAgent("agent edge-sa (rescheduled)", args)
	waitFor(t, "the rescheduled agent to load its certificate", func(context.Context) (bool, error) {
		return strings.Contains(agent.Log(), `"Using the stored agent certificate"`), nil
	})
	if log := agent.Log(); !strings.Contains(log, "serial=\""+serial+"\"") || !strings.Contains(log, "state=\"--state-secret cellfed-agent/cellfed-agent-state\"") {
		t.Errorf("the rescheduled agent does not use certificate %s from the Secret:\n%s", serial, agent.Tail(10))
	}
	again := f.registration(t, "edge-sa")
	if again.UID != first.UID || !bytes.Equal(again.Spec.CSR, first.Spec.CSR) || !bytes.Equal(again.Status.Certificate, first.Status.Certificate) ||
		again.Annotations[registration.AnnotationAgentCertificate] != serial {
		t.Errorf("the rescheduled agent changed its registration: uid %s→%s, same CSR %v, same certificate %v, serial %s→%s", first.UID, again.UID,
			bytes.Equal(again.Spec.CSR, first.Spec.CSR), bytes.Equal(again.Status.Certificate, first.Status.Certificate), serial, again.Annotations[registration.AnnotationAgentCertificate])
	}
	eventually(t, "the member to answer through the rescheduled agent", func() (bool, string) {
		_, err := via.Client(t).CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	t.Logf("member reachable again %v after the agent was rescheduled", time.Since(restart).Round(time.Millisecond))
	if strings.Contains(agent.Log(), "Registered with the plane") {
		t.Errorf("the rescheduled agent registered again")
	}
	if entries, err := os.ReadDir(workDir); err != nil || len(entries) != 0 {
		t.Errorf("the rescheduled agent wrote to its working directory: %v %v", entries, err)
	}

	// Renewal updates the Secret: the new pair replaces the old, the
	// pending key goes, and the member stays reachable.
	eventually(t, "the renewed certificate in the state Secret", func() (bool, string) {
		r := f.registration(t, "edge-sa")
		sec, err := member.Client(t).CoreV1().Secrets("cellfed-agent").Get(ctx, "cellfed-agent-state", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ack := r.Annotations[registration.AnnotationAgentCertificate]
		if ack == serial || !bytes.Equal(sec.Data["tls.crt"], r.Status.Certificate) || len(sec.Data["pending.key"]) != 0 {
			return false, "acknowledged serial " + ack + ", Secret keys " + strings.Join(keys(sec.Data), ",") + "\n" + agent.Tail(5)
		}
		return true, ""
	})
	t.Logf("certificate renewed into the Secret %v after the agent was rescheduled", time.Since(restart).Round(time.Millisecond))
	// The agent logs the renewal after it has stored it: wait for the line.
	eventually(t, "the agent to log its renewal", func() (bool, string) {
		return strings.Contains(agent.Log(), "Renewed the agent certificate"), agent.Tail(10)
	})
	eventually(t, "the member to answer through the renewed agent", func() (bool, string) {
		_, err := via.Client(t).CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})

	// Identities lacking one right: the agent stops, naming it, and
	// registers nothing.
	for _, c := range []struct {
		sa, cluster string
		want        []string
	}{
		{"no-state-get", "edge-no-get", []string{`cannot get resource "secrets"`, "cellfed-agent/no-state-get-state", "needs get, create and update on it"}},
		{"no-token", "edge-no-token", []string{`cannot create resource "serviceaccounts/token"`, "needs create on serviceaccounts/token cellfed-plane in namespace kube-federation-system"}},
	} {
		tok := framework.WriteTempFile(t, f.token(t, "--tenant=acme", "--workspace=prod", "--ttl=10m"))
		kc := serviceAccountKubeconfig(t, member, k, "cellfed-agent", c.sa)
		code, line := framework.RunToExit(t, agentBin, agentArgs(c.cluster, kc, tok, "cellfed-agent/"+c.sa+"-state")...)
		if code == 0 {
			t.Errorf("%s: the agent exited 0", c.sa)
		}
		for _, w := range c.want {
			if !strings.Contains(line, w) {
				t.Errorf("%s: the agent's error %q does not say %q", c.sa, line, w)
			}
		}
		if _, err := f.dyn.Resource(cellv1alpha1.ClusterRegistrationsResource).Get(ctx, c.cluster, metav1.GetOptions{}); err == nil {
			t.Errorf("%s: a registration %s was made", c.sa, c.cluster)
		}
	}
}

// limitedIdentities are two ServiceAccounts with the rights of
// manifests/agent but one: no-state-get may not read its state Secret,
// no-token may not mint the plane's token.
const limitedIdentities = `
apiVersion: v1
kind: ServiceAccount
metadata: {name: no-state-get, namespace: cellfed-agent}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: no-token, namespace: cellfed-agent}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: limited-state, namespace: cellfed-agent}
rules:
- {apiGroups: [""], resources: [secrets], resourceNames: [no-state-get-state], verbs: [update]}
- {apiGroups: [""], resources: [secrets], resourceNames: [no-token-state], verbs: [get, update]}
- {apiGroups: [""], resources: [secrets], verbs: [create]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: limited-state, namespace: cellfed-agent}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: limited-state}
subjects:
- {kind: ServiceAccount, name: no-state-get, namespace: cellfed-agent}
- {kind: ServiceAccount, name: no-token, namespace: cellfed-agent}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: no-token}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cellfed-agent}
subjects:
- {kind: ServiceAccount, name: no-token, namespace: cellfed-agent}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: no-token, namespace: kube-federation-system}
rules:
- {apiGroups: [""], resources: [serviceaccounts], resourceNames: [cellfed-plane], verbs: [get, delete]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: no-token, namespace: kube-federation-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: no-token}
subjects:
- {kind: ServiceAccount, name: no-token, namespace: cellfed-agent}
`

// serviceAccountKubeconfig writes a kubeconfig for member with only a
// token of ServiceAccount namespace/name (TokenRequest, `kubectl create
// token`).
func serviceAccountKubeconfig(t *testing.T, member *framework.Server, k framework.Kubectl, namespace, name string) string {
	t.Helper()
	token := strings.TrimSpace(k.MustRun(t, "", "-n", namespace, "create", "token", name, "--duration=1h"))
	admin := member.RESTConfig(t)
	ca := admin.CAData
	if len(ca) == 0 {
		b, err := os.ReadFile(admin.CAFile)
		if err != nil {
			t.Fatal(err)
		}
		ca = b
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["member"] = &clientcmdapi.Cluster{Server: admin.Host, CertificateAuthorityData: ca, TLSServerName: admin.ServerName}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["member"] = &clientcmdapi.Context{Cluster: "member", AuthInfo: name}
	cfg.CurrentContext = "member"
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// throughHub is member reached through the plane's CONNECT frontend, as
// its KubeFedCluster says.
func throughHub(t *testing.T, f *regFixture, member *framework.Server, cluster string) *framework.Server {
	t.Helper()
	kc, err := f.dyn.Resource(kubefed.KubeFedClustersResource).Namespace(framework.KubeFedNamespace).Get(context.Background(), cluster, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	proxyURL, _, _ := unstructured.NestedString(kc.Object, "spec", "proxyURL")
	ca, _, _ := unstructured.NestedString(kc.Object, "spec", "caBundle")
	caBundle, err := base64.StdEncoding.DecodeString(ca)
	if err != nil || proxyURL == "" {
		t.Fatalf("KubeFedCluster %s: proxyURL %q, caBundle: %v", cluster, proxyURL, err)
	}
	via := *member
	via.ProxyURL, via.ProxyCA = proxyURL, caBundle
	return &via
}

func keys(m map[string][]byte) []string { return slices.Sorted(maps.Keys(m)) }
