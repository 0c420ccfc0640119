package cellfedctl

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	fedv1beta1 "sigs.k8s.io/kubefed/pkg/apis/core/v1beta1"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
)

func TestClusterNameError(t *testing.T) {
	tests := []struct{ name, wantErr string }{
		{name: "member1"},
		{name: "m-1"},
		{name: "shop.rz00a", wantErr: `names with a dot are reserved for per-cell clusters (<namespace>.<cell>); choose a DNS label such as "shop-rz00a"`},
		{name: "a.b.c", wantErr: "is not a valid cluster name"},
		{name: "Member1", wantErr: "is not a valid cluster name"},
		{name: "", wantErr: "is not a valid cluster name"},
		{name: strings.Repeat("a", 64), wantErr: "at most 63 characters"},
	}
	for _, tc := range tests {
		checkErr(t, "ClusterNameError("+tc.name+")", ClusterNameError(tc.name), tc.wantErr)
	}
}

func TestJoinCheckArgs(t *testing.T) {
	valid := func() *joinOptions {
		return &joinOptions{member: memberFlags{kubeconfig: "m.kubeconfig", namespace: "kube-federation-system"},
			fedNamespace: "kube-federation-system", tokenTTL: 8760 * time.Hour}
	}
	tests := []struct {
		what    string
		name    string
		change  func(*joinOptions)
		wantErr string
	}{
		{what: "defaults", name: "m1"},
		{what: "endpoint", name: "m1", change: func(j *joinOptions) { j.apiEndpoint = "https://10.0.0.1:6443" }},
		{what: "dotted name", name: "a.b", wantErr: "reserved for per-cell clusters"},
		{what: "no member", name: "m1", change: func(j *joinOptions) { j.member.kubeconfig = "" }, wantErr: "--kubeconfig-member is required"},
		{what: "relative endpoint", name: "m1", change: func(j *joinOptions) { j.apiEndpoint = "10.0.0.1:6443" }, wantErr: "is not an absolute URL"},
		{what: "ftp endpoint", name: "m1", change: func(j *joinOptions) { j.apiEndpoint = "ftp://h" }, wantErr: "is not an absolute URL"},
		{what: "bad namespace", name: "m1", change: func(j *joinOptions) { j.member.namespace = "Fed" }, wantErr: `--member-namespace="Fed" is not a namespace name`},
		{what: "bad federation namespace", name: "m1", change: func(j *joinOptions) { j.fedNamespace = "" }, wantErr: "--federation-namespace"},
		{what: "short ttl", name: "m1", change: func(j *joinOptions) { j.tokenTTL = 5 * time.Minute }, wantErr: "--token-ttl=5m0s is too short"},
		{what: "10m ttl", name: "m1", change: func(j *joinOptions) { j.tokenTTL = 10 * time.Minute }},
	}
	for _, tc := range tests {
		j := valid()
		if tc.change != nil {
			tc.change(j)
		}
		checkErr(t, tc.what, j.checkArgs(tc.name), tc.wantErr)
	}
}

func jwt(payload string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(payload)) + ".c2ln"
}

func TestParseToken(t *testing.T) {
	tests := []struct {
		token  string
		want   tokenClaims
		wantOK bool
	}{
		{token: jwt(`{"sub":"system:serviceaccount:ns:sa","exp":1700000000,"iat":1600000000}`), want: tokenClaims{"system:serviceaccount:ns:sa", 1700000000, 1600000000}, wantOK: true},
		{token: jwt(`{"sub":"s","exp":1700000000}`), want: tokenClaims{Subject: "s", Expiry: 1700000000}, wantOK: true},
		{token: jwt(`{"sub":"x"}`)},
		{token: jwt(`not json`)},
		{token: "not-a-jwt"},
		{token: ""},
		{token: "a.!!!.c"},
	}
	for _, tc := range tests {
		got, ok := parseToken(tc.token)
		if ok != tc.wantOK || got != tc.want {
			t.Errorf("parseToken(%q) = %+v, %v; want %+v, %v", tc.token, got, ok, tc.want, tc.wantOK)
		}
	}
}

func TestKeepToken(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	ttl := 100 * time.Hour
	tests := []struct {
		what           string
		issued, expiry time.Duration // from now
		want           bool
	}{
		{"new", -time.Hour, 99 * time.Hour, true},
		{"just over half left", -49 * time.Hour, 51 * time.Hour, true},
		{"half left", -50 * time.Hour, 50 * time.Hour, false},
		{"nearly expired", -99 * time.Hour, time.Hour, false},
		{"expired", -101 * time.Hour, -time.Hour, false},
		{"capped by the member at 2h, new", -10 * time.Minute, 110 * time.Minute, true},
		{"capped by the member at 2h, half gone", -time.Hour, time.Hour, false},
		{"no iat: --token-ttl decides", 0, 51 * time.Hour, true},
		{"no iat, half left", 0, 50 * time.Hour, false},
	}
	for _, tc := range tests {
		var issued time.Time
		if tc.issued != 0 {
			issued = now.Add(tc.issued)
		}
		if got := KeepToken(issued, now.Add(tc.expiry), now, ttl); got != tc.want {
			t.Errorf("%s: KeepToken = %v, want %v", tc.what, got, tc.want)
		}
	}
}

func TestChangeWord(t *testing.T) {
	tests := []struct {
		created, updated int
		want             string
	}{
		{0, 0, "(unchanged)"},
		{3, 0, "(created)"},
		{0, 1, "(updated)"},
		{1, 1, "(updated)"},
	}
	for _, tc := range tests {
		if got := changeWord(tc.created, tc.updated); got != tc.want {
			t.Errorf("changeWord(%d, %d) = %q, want %q", tc.created, tc.updated, got, tc.want)
		}
	}
}

func TestMemberLoad(t *testing.T) {
	dir := t.TempDir()
	caPEM := "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, []byte(caPEM), 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(name, cluster string) string {
		p := filepath.Join(dir, name)
		cfg := "apiVersion: v1\nkind: Config\nclusters:\n- name: m\n  cluster:\n" + cluster +
			"contexts:\n- name: m\n  context: {cluster: m, user: u}\n- name: other\n  context: {cluster: m, user: u}\ncurrent-context: m\nusers:\n- name: u\n  user: {token: t}\n"
		if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		what       string
		flags      memberFlags
		wantServer string
		wantCA     string
		wantErr    string
	}{
		{what: "CA file", flags: memberFlags{kubeconfig: write("file", "    server: https://127.0.0.1:1234\n    certificate-authority: "+caFile+"\n")},
			wantServer: "https://127.0.0.1:1234", wantCA: caPEM},
		{what: "CA data", flags: memberFlags{kubeconfig: write("data", "    server: https://m.example:6443\n    certificate-authority-data: "+base64.StdEncoding.EncodeToString([]byte(caPEM))+"\n")},
			wantServer: "https://m.example:6443", wantCA: caPEM},
		{what: "system roots", flags: memberFlags{kubeconfig: write("roots", "    server: https://m.example\n"), context: "other"},
			wantServer: "https://m.example"},
		{what: "insecure", flags: memberFlags{kubeconfig: write("insecure", "    server: https://m.example\n    insecure-skip-tls-verify: true\n")},
			wantErr: "skips TLS verification"},
		{what: "missing CA file", flags: memberFlags{kubeconfig: write("noca", "    server: https://m.example\n    certificate-authority: "+filepath.Join(dir, "nope")+"\n")},
			wantErr: "--kubeconfig-member"},
		{what: "missing kubeconfig", flags: memberFlags{kubeconfig: filepath.Join(dir, "absent")}, wantErr: "loading the kubeconfig of member cluster"},
		{what: "unknown context", flags: memberFlags{kubeconfig: write("ctx", "    server: https://m.example\n"), context: "nope"}, wantErr: "(context nope)"},
	}
	for _, tc := range tests {
		mc, err := tc.flags.load()
		checkErr(t, tc.what, err, tc.wantErr)
		if err != nil {
			if tc.wantErr != "" && (strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "; ")) {
				t.Errorf("%s: error %q is not one line `<what>; <how to fix>`", tc.what, err)
			}
			continue
		}
		if mc.server != tc.wantServer || string(mc.caBundle) != tc.wantCA {
			t.Errorf("%s: server %q, CA %q; want %q, %q", tc.what, mc.server, mc.caBundle, tc.wantServer, tc.wantCA)
		}
	}
}

func TestEnsureMemberObjects(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	j := &joinOptions{member: memberFlags{kubeconfig: "m", namespace: "kube-federation-system"}}
	check := func(want string) {
		t.Helper()
		var undos undoList
		sa, change, err := j.ensureMemberObjects(ctx, client, "m1", &undos)
		if err != nil {
			t.Fatal(err)
		}
		if sa != "cellfed-m1" || change != want {
			t.Errorf("ensureMemberObjects = %q %q, want cellfed-m1 %q", sa, change, want)
		}
	}
	check("(created)")
	check("(unchanged)")
	role, err := client.RbacV1().ClusterRoles().Get(ctx, "cellfed-m1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if role.Labels[LabelJoinedCluster] != "m1" || len(role.Rules) != 2 || role.Rules[0].Verbs[0] != "*" {
		t.Errorf("ClusterRole = %+v", role)
	}
	role.Rules = []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}}
	if _, err := client.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	check("(updated)")
	binding, err := client.RbacV1().ClusterRoleBindings().Get(ctx, "cellfed-m1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := binding.Subjects; len(s) != 1 || s[0].Kind != "ServiceAccount" || s[0].Namespace != "kube-federation-system" || s[0].Name != "cellfed-m1" {
		t.Errorf("ClusterRoleBinding subjects = %+v", s)
	}

	// A failed run undoes what it created, and only that.
	fresh := fake.NewClientset()
	var undos undoList
	if _, _, err := j.ensureMemberObjects(ctx, fresh, "m2", &undos); err != nil {
		t.Fatal(err)
	}
	if len(undos) != 4 {
		t.Fatalf("%d undo steps, want 4 (namespace, ServiceAccount, ClusterRole, ClusterRoleBinding)", len(undos))
	}
	cause := errors.New("boom; fix it")
	if err := undos.run(cause); err != cause {
		t.Errorf("undo returned %v, want the cause unchanged", err)
	}
	if l, _ := fresh.CoreV1().ServiceAccounts("kube-federation-system").List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
		t.Errorf("ServiceAccounts left after undo: %v", l.Items)
	}
	if l, _ := fresh.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
		t.Errorf("ClusterRoles left after undo: %v", l.Items)
	}
}

func TestWriteCluster(t *testing.T) {
	ctx := context.Background()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{kubefed.KubeFedClustersResource: "KubeFedClusterList"})
	clusters := client.Resource(kubefed.KubeFedClustersResource).Namespace("kube-federation-system")
	want := &fedv1beta1.KubeFedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "m1", Namespace: "kube-federation-system", Annotations: map[string]string{AnnotationMemberNamespace: "kube-federation-system"}},
		Spec:       fedv1beta1.KubeFedClusterSpec{APIEndpoint: "https://127.0.0.1:1", CABundle: []byte("CA"), SecretRef: fedv1beta1.LocalSecretReference{Name: "m1-token"}},
	}
	get := func() *unstructured.Unstructured {
		t.Helper()
		u, err := clusters.Get(ctx, "m1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	var undos undoList
	for i, wantChange := range []string{"(created)", "(unchanged)"} {
		var existing *unstructured.Unstructured
		if i > 0 {
			existing = get()
		}
		change, err := writeCluster(ctx, clusters, existing, want, &undos)
		if err != nil || change != wantChange {
			t.Fatalf("writeCluster #%d = %q, %v; want %q", i+1, change, err, wantChange)
		}
	}
	c, err := decodeCluster(get())
	if err != nil {
		t.Fatal(err)
	}
	if c.Spec.APIEndpoint != "https://127.0.0.1:1" || string(c.Spec.CABundle) != "CA" || c.Spec.SecretRef.Name != "m1-token" || c.Annotations[AnnotationMemberNamespace] == "" {
		t.Errorf("stored cluster = %+v", c)
	}
	moved := want.DeepCopy()
	moved.Spec.APIEndpoint = "https://127.0.0.1:2"
	if change, err := writeCluster(ctx, clusters, get(), moved, &undos); err != nil || change != "(updated)" {
		t.Fatalf("writeCluster with a new endpoint = %q, %v", change, err)
	}
	if ep, _, _ := unstructured.NestedString(get().Object, "spec", "apiEndpoint"); ep != "https://127.0.0.1:2" {
		t.Errorf("endpoint after update = %q", ep)
	}
	if len(undos) != 1 {
		t.Errorf("%d undo steps, want 1 (the creation)", len(undos))
	}
}

func TestCellsOn(t *testing.T) {
	cell := func(ns, name, cluster string) cellv1alpha1.Cell {
		return cellv1alpha1.Cell{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: cellv1alpha1.CellSpec{Cluster: cluster}}
	}
	cells := []cellv1alpha1.Cell{cell("shop", "b", "m1"), cell("acme", "a", "m1"), cell("shop", "c", "m2")}
	if got := strings.Join(CellsOn(cells, "m1"), " "); got != "acme/a shop/b" {
		t.Errorf("CellsOn(m1) = %q", got)
	}
	if got := CellsOn(cells, "m3"); len(got) != 0 {
		t.Errorf("CellsOn(m3) = %q", got)
	}

	tests := []struct {
		cells []string
		want  string
	}{
		{[]string{"acme/rz00a"}, "cluster m1 hosts 1 cell (acme/rz00a); delete them first (e.g. `cellfedctl cell delete rz00a -n acme`), or pass --force"},
		{[]string{"a/1", "a/2", "a/3", "a/4", "a/5", "a/6", "a/7"}, "hosts 7 cells (a/1, a/2, a/3, a/4, a/5 and 2 more)"},
	}
	for _, tc := range tests {
		checkErr(t, "CellsError", CellsError("cellfedctl", "m1", tc.cells), tc.want)
	}
}

// Bad arguments fail before any cluster is contacted: the kubeconfigs
// named here do not exist.
func TestJoinUnjoinArgs(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"join", "shop.rz00a", "--kubeconfig-member=/nonexistent"}, "names with a dot are reserved for per-cell clusters"},
		{[]string{"join", "m1"}, "--kubeconfig-member is required"},
		{[]string{"join", "m1", "--kubeconfig-member=/nonexistent", "--token-ttl=1m"}, "--token-ttl=1m0s is too short"},
		{[]string{"join", "m1", "--kubeconfig-member=/nonexistent"}, "loading the kubeconfig of member cluster /nonexistent"},
		{[]string{"join"}, "takes one cluster name"},
		{[]string{"unjoin", "shop.rz00a"}, "is a per-cell cluster"},
		{[]string{"unjoin", "M1"}, "is not a valid cluster name"},
		{[]string{"unjoin", "m1", "--member-context=x"}, "--member-context needs --kubeconfig-member"},
		{[]string{"status", "-o", "wide"}, `-o "wide" is not an output format`},
		{[]string{"status", "extra"}, "is not <kind>/<name>"},
		{[]string{"status", "a/b", "c/d"}, "takes no arguments, or one federated object"},
		{[]string{"status", "deployment/web", "-o", "yaml"}, "-o yaml applies to the clusters and cells"},
	}
	for _, tc := range tests {
		var out, errOut bytes.Buffer
		code := Run("cellfedctl", append([]string{"--kubeconfig=/nonexistent/kubeconfig"}, tc.args...), genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
		line := strings.TrimSuffix(errOut.String(), "\n")
		if code != 1 || out.Len() != 0 || !strings.HasPrefix(line, "error: ") || strings.Contains(line, "\n") || !strings.Contains(line, "; ") || !strings.Contains(line, tc.wantErr) {
			t.Errorf("cellfedctl %s: exit %d, stdout %q, stderr %q; want exit 1 and one line containing %q", strings.Join(tc.args, " "), code, out.String(), errOut.String(), tc.wantErr)
		}
	}
}
