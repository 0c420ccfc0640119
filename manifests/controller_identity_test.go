package manifests_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"

	"github.com/cellfed/cellfed/pkg/apiserver"
	"github.com/cellfed/cellfed/pkg/federatedtypes"
	"github.com/cellfed/cellfed/pkg/pki"
	"github.com/cellfed/cellfed/pkg/roles"
	"github.com/cellfed/cellfed/test/framework"
)

// TestControllerRunsAsSystemMasters: cellfed-controller reaches the plane
// as a member of system:masters (docs/limitations.md), both with the
// kubeconfig `make run` gives it and with the one the production
// manifests mount, made as docs/operations.md says; and no narrower role
// ships for it, neither in manifests/deploy nor among the plane's own
// roles. The groups are the ones the plane's client-certificate
// authenticator takes from each kubeconfig's certificate.
func TestControllerRunsAsSystemMasters(t *testing.T) {
	t.Parallel()
	deploy := mustBuild(t, repoPath(t, "manifests", "deploy"))
	var users []user.Info
	for _, tc := range []struct {
		name string
		// kubeconfig makes the controller's kubeconfig and returns its path.
		kubeconfig func(t *testing.T) string
	}{
		{"make run: the plane's admin kubeconfig", makeRunKubeconfig},
		{"manifests/deploy: the kubeconfig of docs/operations.md", func(t *testing.T) string { return deployKubeconfig(t, sortObjects(t, deploy).controller) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := planeUser(t, tc.kubeconfig(t))
			if !slices.Contains(u.GetGroups(), "system:masters") {
				t.Errorf("the plane takes cellfed-controller for user %q in groups %q, not system:masters: update docs/limitations.md", u.GetName(), u.GetGroups())
			}
			users = append(users, u)
		})
	}

	t.Run("no narrower role", func(t *testing.T) {
		for _, o := range deploy {
			switch o := o.(type) {
			case *rbacv1.Role, *rbacv1.ClusterRole, *rbacv1.RoleBinding, *rbacv1.ClusterRoleBinding:
				m, _ := metaOf(o)
				t.Errorf("manifests/deploy ships %T %s: if it is cellfed-controller's, update docs/limitations.md", o, m.GetName())
			}
		}
		for _, r := range roles.ClusterRoles() {
			if strings.Contains(r.Name, "controller") {
				t.Errorf("the plane ships ClusterRole %s: if it is cellfed-controller's, update docs/limitations.md", r.Name)
			}
		}
		// Whom the plane's own bindings bind: none is the controller.
		var subjects []rbacv1.Subject
		subjects = append(subjects, roles.BootstrapperBinding().Subjects...)
		subjects = append(subjects, roles.TypeReaderBinding(federatedtypes.DefaultNamespace).Subjects...)
		for _, s := range subjects {
			for _, u := range users {
				if s.Kind == rbacv1.UserKind && s.Name == u.GetName() ||
					s.Kind == rbacv1.GroupKind && s.Name != user.AllAuthenticated && slices.Contains(u.GetGroups(), s.Name) {
					t.Errorf("the plane binds %s %s, which cellfed-controller (user %s) is: update docs/limitations.md", s.Kind, s.Name, u.GetName())
				}
			}
		}
	})
}

// makeRunKubeconfig runs hack/run.sh's run_main, recording the processes
// it starts instead of running them, checks that cellfed-controller gets
// the admin kubeconfig of cellfed-apiserver's data dir, and writes that
// kubeconfig as cellfed-apiserver does on its first start.
func makeRunKubeconfig(t *testing.T) string {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"cellfed-apiserver", "cellfed-controller", "kubectl"} {
		if err := os.WriteFile(filepath.Join(bin, b), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const script = `source "$1"
KUBECTL=$BIN/kubectl
start_proc() { local name=$1 IFS=$'\t'; shift 2; printf '%s\t%s\n' "$name" "$*"; }
wait_apiserver() { :; }
wait_controller() { :; }
watch_procs() { exit 0; }
run_main`
	cmd := exec.Command("bash", "-c", script, "bash", repoPath(t, "hack", "run.sh"))
	cmd.Env = append(os.Environ(), "BIN="+bin, "DATA_DIR="+filepath.Join(dir, "data"), "CONTROLLER_ARGS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/run.sh run_main: %v\n%s", err, stderr.String())
	}
	started := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		started[f[0]] = f[1:]
	}
	o := apiserver.NewOptions()
	o.DataDir = flagValue(t, started["cellfed-apiserver"], "--data-dir")
	kc := flagValue(t, started["cellfed-controller"], "--kubeconfig")
	if kc != o.AdminKubeconfigPath() {
		t.Fatalf("make run starts cellfed-controller with --kubeconfig=%s, not the plane's admin kubeconfig %s", kc, o.AdminKubeconfigPath())
	}
	// What cellfed-apiserver writes into its data dir on its first start.
	if err := pki.Ensure(o.PKIFiles(), pki.Options{AdminUser: o.AdminUser}); err != nil {
		t.Fatal(err)
	}
	if err := pki.WriteAdminKubeconfig(kc, o.PKIFiles(), "https://127.0.0.1:6443", "cellfed"); err != nil {
		t.Fatal(err)
	}
	return kc
}

// deployKubeconfig checks that the controller Deployment reads its
// kubeconfig from the Secret cellfed-controller-kubeconfig, which
// docs/operations.md makes from controller.kubeconfig, and makes that
// kubeconfig with the commands operations.md gives, from the PKI of
// `cellfed-apiserver init --dir ./cellfed-keys`.
func deployKubeconfig(t *testing.T, controller *appsv1.Deployment) string {
	c := controller.Spec.Template.Spec.Containers[0]
	kc := flagValue(t, c.Args, "--kubeconfig")
	var secret string
	for _, m := range c.VolumeMounts {
		if m.MountPath != filepath.Dir(kc) {
			continue
		}
		for _, v := range controller.Spec.Template.Spec.Volumes {
			if v.Name == m.Name && v.Secret != nil {
				secret = v.Secret.SecretName
			}
		}
	}
	if secret != "cellfed-controller-kubeconfig" || filepath.Base(kc) != "kubeconfig" {
		t.Fatalf("cellfed-controller reads --kubeconfig=%s, not the key kubeconfig of the Secret cellfed-controller-kubeconfig (mounted from Secret %q)", kc, secret)
	}
	b, err := os.ReadFile(repoPath(t, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	if !strings.Contains(doc, "create secret generic cellfed-controller-kubeconfig --from-file=kubeconfig=controller.kubeconfig") {
		t.Fatal("docs/operations.md no longer makes the Secret cellfed-controller-kubeconfig from controller.kubeconfig")
	}
	block := shBlockAfter(t, doc, "**The controller's kubeconfig**")
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatalf("openssl, which docs/operations.md makes the controller's certificate with, is not installed: %v", err)
	}

	dir := t.TempDir()
	if err := apiserver.InitSharedFiles(filepath.Join(dir, "cellfed-keys"), apiserver.NewOptions().AdminUser); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", block)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(framework.KubectlBinary(t))+string(os.PathListSeparator)+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the commands of docs/operations.md for the controller's kubeconfig: %v\n%s\n%s", err, block, out)
	}
	return filepath.Join(dir, "controller.kubeconfig")
}

// shBlockAfter is the first ```sh block of doc after marker, unindented.
func shBlockAfter(t *testing.T, doc, marker string) string {
	t.Helper()
	i := strings.Index(doc, marker)
	if i < 0 {
		t.Fatalf("docs/operations.md lacks %q", marker)
	}
	var block []string
	in := false
	for _, line := range strings.Split(doc[i:], "\n") {
		switch trimmed := strings.TrimSpace(line); {
		case !in && trimmed == "```sh":
			in = true
		case in && trimmed == "```":
			return strings.Join(block, "\n")
		case in:
			block = append(block, strings.TrimPrefix(line, "  "))
		}
	}
	t.Fatalf("docs/operations.md has no sh block after %q", marker)
	return ""
}

// flagValue is the value of --name=value in args.
func flagValue(t *testing.T, args []string, name string) string {
	t.Helper()
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	t.Fatalf("no %s= in %q", name, args)
	return ""
}

// planeUser is whom the plane's client-certificate authenticator
// (Kubernetes' x509 authenticator, with the plane's CA as client CA)
// takes the current user of a kubeconfig for.
func planeUser(t *testing.T, path string) user.Info {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil || cfg.AuthInfos[ctx.AuthInfo] == nil || cfg.Clusters[ctx.Cluster] == nil {
		t.Fatalf("%s: no user and cluster in its current context %q", path, cfg.CurrentContext)
	}
	read := func(data []byte, file string) []byte {
		if len(data) > 0 {
			return data
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return b
	}
	auth, cluster := cfg.AuthInfos[ctx.AuthInfo], cfg.Clusters[ctx.Cluster]
	chain, err := certutil.ParseCertsPEM(read(auth.ClientCertificateData, auth.ClientCertificate))
	if err != nil {
		t.Fatalf("%s: client certificate: %v", path, err)
	}
	roots, err := certutil.NewPoolFromBytes(read(cluster.CertificateAuthorityData, cluster.CertificateAuthority))
	if err != nil {
		t.Fatalf("%s: CA: %v", path, err)
	}
	a := x509request.New(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, x509request.CommonNameUserConversion)
	resp, ok, err := a.AuthenticateRequest(&http.Request{TLS: &tls.ConnectionState{PeerCertificates: chain}})
	if err != nil || !ok {
		t.Fatalf("%s: the plane does not authenticate its client certificate (%v)", path, err)
	}
	return resp.User
}
