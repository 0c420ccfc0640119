package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/test/framework"
)

// deadKubeconfig copies kubeconfig with its server moved to a loopback
// port nothing listens on.
func deadKubeconfig(t *testing.T, kubeconfig string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://127.0.0.1:" + strconv.Itoa(framework.FreePort(t))
	}
	p := filepath.Join(t.TempDir(), "dead.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// memberState names the member's objects join writes, with their
// resource versions.
func memberState(t *testing.T, c kubernetes.Interface) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	sas, err := c.CoreV1().ServiceAccounts("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range sas.Items {
		if strings.HasPrefix(o.Name, "cellfed-") {
			fmt.Fprintf(&b, "sa %s/%s %s\n", o.Namespace, o.Name, o.ResourceVersion)
		}
	}
	roles, err := c.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range roles.Items {
		if strings.HasPrefix(o.Name, "cellfed-") {
			fmt.Fprintf(&b, "clusterrole %s %s\n", o.Name, o.ResourceVersion)
		}
	}
	bindings, err := c.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range bindings.Items {
		if strings.HasPrefix(o.Name, "cellfed-") {
			fmt.Fprintf(&b, "clusterrolebinding %s %s\n", o.Name, o.ResourceVersion)
		}
	}
	nss, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range nss.Items {
		fmt.Fprintf(&b, "ns %s\n", o.Name)
	}
	return b.String()
}

// planeState names the plane's KubeFedClusters and Secrets of the
// federation namespace, with their resource versions.
func planeState(t *testing.T, dyn dynamic.Interface, kube kubernetes.Interface) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	kfcs, err := dyn.Resource(kubefed.KubeFedClustersResource).Namespace(framework.KubeFedNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range kfcs.Items {
		fmt.Fprintf(&b, "kubefedcluster %s %s\n", o.GetName(), o.GetResourceVersion())
	}
	secrets, err := kube.CoreV1().Secrets(framework.KubeFedNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range secrets.Items {
		fmt.Fprintf(&b, "secret %s %s\n", o.Name, o.ResourceVersion)
	}
	return b.String()
}

// noToken fails when a command printed the token.
func noToken(t *testing.T, token string, outputs ...string) {
	t.Helper()
	for _, o := range outputs {
		if token != "" && strings.Contains(o, token) {
			t.Fatalf("cellfedctl printed the token")
		}
	}
}

// TestJoinStatusUnjoin drives bin/cellfedctl join, status and unjoin
// against a real plane and a real member kube-apiserver, and checks the
// stored credentials by using them.
func TestJoinStatusUnjoin(t *testing.T) {
	t.Parallel()
	plane, members := framework.StartPlaneWithMembers(t, framework.PlaneOptions{Args: []string{"--default-federated-types="}}, 1) // federates nothing
	member := members[0]
	ctl := newCellfedctl(t, plane.Kubeconfig)
	planeKube := plane.Client(t)
	planeDyn, err := dynamic.NewForConfig(plane.RESTConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	memberKube := member.Client(t)
	endpoint := "https://127.0.0.1:" + strconv.Itoa(member.Port)
	memberFlag := "--kubeconfig-member=" + member.Kubeconfig
	deadMember := deadKubeconfig(t, member.Kubeconfig)
	ctx := context.Background()
	var joined joinedCluster

	t.Run("join", func(t *testing.T) {
		out, errOut, code := ctl.run(t, "join", "m1", memberFlag)
		if code != 0 {
			t.Fatalf("join: exit %d: %s", code, errOut)
		}
		for _, want := range []string{
			"member: ServiceAccount kube-federation-system/cellfed-m1, ClusterRole and ClusterRoleBinding cellfed-m1 (every verb on every resource) (created)",
			"token: minted, expires ",
			"plane: Secret kube-federation-system/m1-token (created), KubeFedCluster kube-federation-system/m1 (created)",
			"joined m1 at " + endpoint,
		} {
			if !strings.Contains(out, want) {
				t.Errorf("join printed\n%s\nwant a line containing %q", out, want)
			}
		}
		if errOut != "" {
			t.Errorf("join wrote to stderr: %q", errOut)
		}
		joined = readJoined(t, planeDyn, planeKube, "m1")
		noToken(t, joined.token, out, errOut)
		ca, err := os.ReadFile(filepath.Join(member.DataDir, "pki", "ca.crt"))
		if err != nil {
			t.Fatal(err)
		}
		if joined.endpoint != endpoint || joined.secret != "m1-token" || string(joined.caBundle) != string(ca) || joined.token == "" {
			t.Fatalf("KubeFedCluster m1: endpoint %q, secret %q, CA bundle is the member's CA: %v, token set: %v",
				joined.endpoint, joined.secret, string(joined.caBundle) == string(ca), joined.token != "")
		}
		// The expiry printed is the one the member granted: about a year.
		line := out[strings.Index(out, "token: minted, expires ")+len("token: minted, expires "):]
		expiry, err := time.Parse(time.RFC3339, strings.Fields(line)[0])
		if err != nil || expiry.Before(time.Now().Add(8759*time.Hour)) || expiry.After(time.Now().Add(8761*time.Hour)) {
			t.Errorf("token expiry %q (%v), want about 8760h from now", strings.Fields(line)[0], err)
		}
		joined.checkWorks(t, "from-plane")
		if _, err := memberKube.CoreV1().ServiceAccounts(framework.KubeFedNamespace).Get(ctx, "cellfed-m1", metav1.GetOptions{}); err != nil {
			t.Errorf("member ServiceAccount: %v", err)
		}
	})
	if t.Failed() {
		t.FailNow()
	}

	t.Run("join again changes nothing", func(t *testing.T) {
		planeBefore, memberBefore := planeState(t, planeDyn, planeKube), memberState(t, memberKube)
		out := ctl.ok(t, "join", "m1", memberFlag)
		for _, want := range []string{"(every verb on every resource) (unchanged)", "token: kept, expires ", "m1-token (unchanged), KubeFedCluster kube-federation-system/m1 (unchanged)"} {
			if !strings.Contains(out, want) {
				t.Errorf("second join printed\n%s\nwant it to contain %q", out, want)
			}
		}
		if after := planeState(t, planeDyn, planeKube); after != planeBefore {
			t.Errorf("second join changed the plane:\n%s\nthen\n%s", planeBefore, after)
		}
		if after := memberState(t, memberKube); after != memberBefore {
			t.Errorf("second join changed the member:\n%s\nthen\n%s", memberBefore, after)
		}
	})

	t.Run("join --tenant dedicates the cluster", func(t *testing.T) {
		ctl.fails(t, `--tenant: "bad tenant" is not a tenant name`, "join", "m1", memberFlag, "--tenant=bad tenant")
		out := ctl.ok(t, "join", "m1", memberFlag, "--tenant=acme")
		if !strings.Contains(out, "KubeFedCluster kube-federation-system/m1 (updated)") {
			t.Errorf("join --tenant printed\n%s", out)
		}
		u, err := planeDyn.Resource(kubefed.KubeFedClustersResource).
			Namespace("kube-federation-system").Get(context.Background(), "m1", metav1.GetOptions{})
		if err != nil || u.GetLabels()["cellfed.io/tenant"] != "acme" {
			t.Fatalf("KubeFedCluster m1 after join --tenant=acme: labels %v, err %v", u.GetLabels(), err)
		}
		if out := ctl.ok(t, "join", "m1", memberFlag, "--tenant=acme"); !strings.Contains(out, "KubeFedCluster kube-federation-system/m1 (unchanged)") {
			t.Errorf("join --tenant again printed\n%s", out)
		}
		// Shared again for the subtests below.
		labels := u.GetLabels()
		delete(labels, "cellfed.io/tenant")
		u.SetLabels(labels)
		if _, err := planeDyn.Resource(kubefed.KubeFedClustersResource).
			Namespace("kube-federation-system").Update(context.Background(), u, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("removing the tenant label: %v", err)
		}
	})

	t.Run("rotate the token", func(t *testing.T) {
		out, errOut, _ := ctl.run(t, "join", "m1", memberFlag, "--rotate-token")
		if !strings.Contains(out, "token: minted") || !strings.Contains(out, "Secret kube-federation-system/m1-token (updated), KubeFedCluster kube-federation-system/m1 (unchanged)") {
			t.Errorf("join --rotate-token printed\n%s%s", out, errOut)
		}
		rotated := readJoined(t, planeDyn, planeKube, "m1")
		noToken(t, rotated.token, out, errOut)
		if rotated.token == joined.token {
			t.Errorf("join --rotate-token kept the token")
		}
		rotated.checkWorks(t, "after-rotation")
		joined = rotated
	})

	t.Run("bad input writes nothing", func(t *testing.T) {
		planeBefore, memberBefore := planeState(t, planeDyn, planeKube), memberState(t, memberKube)
		ctl.fails(t, `"shop.rz00a" is not a physical cluster name: names with a dot are reserved for per-cell clusters`, "join", "shop.rz00a", memberFlag)
		ctl.fails(t, "is not a valid cluster name", "join", "M2", memberFlag)
		ctl.fails(t, "does not answer", "join", "m2", "--kubeconfig-member="+deadMember)
		ctl.fails(t, "--kubeconfig-member is required", "join", "m2")
		ctl.fails(t, "KubeFedCluster kube-federation-system/m1 exists with endpoint "+endpoint+", not https://localhost:"+strconv.Itoa(member.Port)+"; pass --overwrite",
			"join", "m1", memberFlag, "--api-endpoint=https://localhost:"+strconv.Itoa(member.Port))
		// An unreachable plane: the member is not touched either.
		ctl.fails(t, "is the plane running?", "--kubeconfig="+deadKubeconfig(t, plane.Kubeconfig), "join", "m2", memberFlag)
		if after := planeState(t, planeDyn, planeKube); after != planeBefore {
			t.Errorf("failed joins changed the plane:\n%s\nthen\n%s", planeBefore, after)
		}
		if after := memberState(t, memberKube); after != memberBefore {
			t.Errorf("failed joins changed the member:\n%s\nthen\n%s", memberBefore, after)
		}
	})

	t.Run("overwrite", func(t *testing.T) {
		other := "https://localhost:" + strconv.Itoa(member.Port)
		out := ctl.ok(t, "join", "m1", memberFlag, "--api-endpoint="+other, "--overwrite")
		if !strings.Contains(out, "KubeFedCluster kube-federation-system/m1 (updated)") || !strings.Contains(out, "token: kept") {
			t.Errorf("join --overwrite printed\n%s", out)
		}
		if got := readJoined(t, planeDyn, planeKube, "m1").endpoint; got != other {
			t.Errorf("endpoint after --overwrite = %q, want %q", got, other)
		}
		ctl.fails(t, "pass --overwrite", "join", "m1", memberFlag)
		ctl.ok(t, "join", "m1", memberFlag, "--overwrite")
		if got := readJoined(t, planeDyn, planeKube, "m1").endpoint; got != endpoint {
			t.Errorf("endpoint after the second --overwrite = %q, want %q", got, endpoint)
		}
	})

	t.Run("status", func(t *testing.T) {
		out := ctl.ok(t, "status")
		checkStatusRow(t, out, "NAME", []string{"m1", endpoint, "Unknown", "<unknown>", "0"})

		// What the cluster controller will write.
		kfcs := planeDyn.Resource(kubefed.KubeFedClustersResource).Namespace(framework.KubeFedNamespace)
		u, err := kfcs.Get(ctx, "m1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC().Format(time.RFC3339)
		u.Object["status"] = map[string]any{
			"kubernetesVersion": "v1.36.4",
			"conditions":        []any{map[string]any{"type": "Ready", "status": "True", "reason": "ClusterReady", "lastProbeTime": now, "lastTransitionTime": now}},
		}
		if _, err := kfcs.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("writing KubeFedCluster m1's status: %v", err)
		}
		createCell(t, ctl, planeKube, "acme", "rz00a", "m1")
		cells := planeDyn.Resource(cellv1alpha1.CellsResource).Namespace("acme")
		cell, err := cells.Get(ctx, "rz00a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cell.Object["status"] = map[string]any{
			"kubeFedCluster": "acme.rz00a",
			"conditions":     []any{map[string]any{"type": "Ready", "status": "True", "reason": "ClusterReady", "message": "m1 is ready", "lastTransitionTime": now}},
		}
		if _, err := cells.UpdateStatus(ctx, cell, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("writing cell acme/rz00a's status: %v", err)
		}

		out = ctl.ok(t, "status")
		checkStatusRow(t, out, "NAME", []string{"m1", endpoint, "True", "v1.36.4", "1"})
		checkStatusRow(t, out, "NAMESPACE", []string{"acme", "rz00a", "m1", "True", "acme.rz00a"})

		var st struct {
			Clusters []struct {
				Name, Ready, KubernetesVersion string
				Cells                          int
			}
			Cells []struct{ Namespace, Name, Cluster, Ready, PerCellCluster string }
		}
		if err := json.Unmarshal([]byte(ctl.ok(t, "status", "-o", "json")), &st); err != nil {
			t.Fatalf("status -o json: %v", err)
		}
		if len(st.Clusters) != 1 || st.Clusters[0].Name != "m1" || st.Clusters[0].Ready != "True" || st.Clusters[0].KubernetesVersion != "v1.36.4" || st.Clusters[0].Cells != 1 ||
			len(st.Cells) != 1 || st.Cells[0].Name != "rz00a" || st.Cells[0].Ready != "True" || st.Cells[0].PerCellCluster != "acme.rz00a" {
			t.Errorf("status -o json = %+v", st)
		}
		if y := ctl.ok(t, "status", "-o", "yaml"); !strings.Contains(y, "clusters:\n- cells: 1\n") {
			t.Errorf("status -o yaml =\n%s", y)
		}
	})

	t.Run("unjoin refuses while cells are placed on the cluster", func(t *testing.T) {
		planeBefore, memberBefore := planeState(t, planeDyn, planeKube), memberState(t, memberKube)
		ctl.fails(t, "cluster m1 hosts 1 cell (acme/rz00a); delete them first (e.g. `cellfedctl cell delete rz00a -n acme`), or pass --force", "unjoin", "m1", memberFlag)
		ctl.fails(t, "is a per-cell cluster", "unjoin", "acme.rz00a")
		if after := planeState(t, planeDyn, planeKube); after != planeBefore {
			t.Errorf("refused unjoin changed the plane:\n%s\nthen\n%s", planeBefore, after)
		}
		if after := memberState(t, memberKube); after != memberBefore {
			t.Errorf("refused unjoin changed the member:\n%s\nthen\n%s", memberBefore, after)
		}
	})

	t.Run("unjoin", func(t *testing.T) {
		ctl.ok(t, "cell", "delete", "rz00a", "-n", "acme")
		err := framework.Poll(ctx, 100*time.Millisecond, 30*time.Second, func(ctx context.Context) (bool, error) {
			l, err := planeDyn.Resource(cellv1alpha1.CellsResource).List(ctx, metav1.ListOptions{})
			return err == nil && len(l.Items) == 0, err
		})
		if err != nil {
			t.Fatalf("cell acme/rz00a still listed: %v", err)
		}
		out, errOut, code := ctl.run(t, "unjoin", "m1", memberFlag)
		want := "unjoined m1: deleted KubeFedCluster kube-federation-system/m1, Secret kube-federation-system/m1-token; in the member deleted ClusterRoleBinding cellfed-m1, ClusterRole cellfed-m1, ServiceAccount kube-federation-system/cellfed-m1"
		if code != 0 || strings.TrimSpace(out) != want || errOut != "" {
			t.Fatalf("unjoin: exit %d, stdout %q, stderr %q; want %q", code, out, errOut, want)
		}
		if state := planeState(t, planeDyn, planeKube); strings.Contains(state, "m1") {
			t.Errorf("the plane still has:\n%s", state)
		}
		if state := memberState(t, memberKube); strings.Contains(state, "cellfed-m1") || !strings.Contains(state, "ns "+framework.KubeFedNamespace+"\n") {
			t.Errorf("the member after unjoin (cellfed-m1 gone, namespace %s kept):\n%s", framework.KubeFedNamespace, state)
		}
		// The ServiceAccount is gone, and its token with it.
		c := joined.asPlane(t)
		err = framework.Poll(ctx, 100*time.Millisecond, 30*time.Second, func(ctx context.Context) (bool, error) {
			_, err := c.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
			if apierrors.IsUnauthorized(err) {
				return true, nil
			}
			return false, fmt.Errorf("listing with the old token: %v", err)
		})
		if err != nil {
			t.Errorf("the token still works after unjoin: %v", err)
		}
		ctl.fails(t, "cluster m1 is not joined", "unjoin", "m1", memberFlag)
	})

	t.Run("unjoin with the member down", func(t *testing.T) {
		ctl.ok(t, "join", "m1", memberFlag)
		planeBefore := planeState(t, planeDyn, planeKube)
		ctl.fails(t, "does not answer, so its ServiceAccount and RBAC cannot be deleted", "unjoin", "m1", "--kubeconfig-member="+deadMember)
		if after := planeState(t, planeDyn, planeKube); after != planeBefore {
			t.Errorf("refused unjoin changed the plane:\n%s\nthen\n%s", planeBefore, after)
		}
		out, errOut, code := ctl.run(t, "unjoin", "m1", "--kubeconfig-member="+deadMember, "--force")
		if code != 0 || !strings.HasPrefix(out, "unjoined m1: deleted KubeFedCluster") || !strings.Contains(errOut, "warning: member cluster "+deadMember+" did not answer") {
			t.Errorf("unjoin --force: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		if !strings.Contains(memberState(t, memberKube), "sa "+framework.KubeFedNamespace+"/cellfed-m1") {
			t.Errorf("the member's ServiceAccount went, though the member was not reachable")
		}
		// Again with the member: finishes the job.
		if out := ctl.ok(t, "unjoin", "m1", memberFlag); !strings.HasPrefix(out, "unjoined m1: in the member deleted ClusterRoleBinding cellfed-m1") {
			t.Errorf("completing unjoin printed %q", out)
		}
		if state := memberState(t, memberKube); strings.Contains(state, "cellfed-m1") {
			t.Errorf("the member still has:\n%s", state)
		}

		// Without --kubeconfig-member: the plane only, and a warning.
		ctl.ok(t, "join", "m1", memberFlag)
		out, errOut, code = ctl.run(t, "unjoin", "m1")
		if code != 0 || !strings.Contains(errOut, "warning: the member was not given (--kubeconfig-member)") {
			t.Errorf("unjoin without the member: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		ctl.ok(t, "unjoin", "m1", memberFlag)
		if state := memberState(t, memberKube) + planeState(t, planeDyn, planeKube); strings.Contains(state, "m1") {
			t.Errorf("left after unjoin:\n%s", state)
		}
	})
}

// checkStatusRow finds the table whose header starts with first and
// checks that it has exactly one row, row.
func checkStatusRow(t *testing.T, out, first string, row []string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if f := strings.Fields(l); len(f) > 0 && f[0] == first {
			if i+1 >= len(lines) || strings.Join(strings.Fields(lines[i+1]), " ") != strings.Join(row, " ") {
				t.Errorf("status table %s:\n%s\nwant the row %q", first, out, row)
			}
			if i+2 < len(lines) && strings.TrimSpace(lines[i+2]) != "" {
				t.Errorf("status table %s has more than one row:\n%s", first, out)
			}
			return
		}
	}
	t.Errorf("status printed no table with header %s:\n%s", first, out)
}
