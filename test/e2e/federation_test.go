package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cellfed/cellfed/test/framework"
)

// startFederationPlane starts a plane with framework.Tenancy applied and
// types (e.g. "deployments.apps") enabled for federation; no types means
// the plane's defaults.
func startFederationPlane(t *testing.T, types ...string) (*framework.Server, framework.Kubectl) {
	t.Helper()
	var o framework.PlaneOptions
	if len(types) > 0 {
		o.Args = []string{"--default-federated-types=" + strings.Join(types, ",")}
	}
	plane := framework.StartPlane(t, o)
	k := framework.Kubectl{Kubeconfig: plane.Kubeconfig}
	k.MustRun(t, framework.Tenancy, "apply", "-f", "-")
	return plane, k
}

// TestFederatedObjectsInBothVersions applies multi-topology objects with
// kubectl and reads them in KubeFed's community shape and back; writes
// through the community version keep what only v1beta2 can express.
func TestFederatedObjectsInBothVersions(t *testing.T) {
	t.Parallel()
	plane, k := startFederationPlane(t)

	k.MustRun(t, webDeployment+`
  placementMask:
    topologies: [{name: rz00a}]
  overrides:
  - topologyName: rz10a
    clusterOverrides: [{path: /spec/replicas, value: 5}]
`, "apply", "-f", "-")

	t.Run("cells read as per-cell clusters", func(t *testing.T) {
		v1 := getJSON(t, k, "-n", "shop", "get", fdV1beta1, "web")
		if got, want := names(field(v1, "spec", "placement", "clusters"), "name"), []string{"shop.rz00a", "shop.rz10a"}; !reflect.DeepEqual(got, want) {
			t.Errorf("v1beta1 placement.clusters = %v, want %v", got, want)
		}
		if got := names(field(v1, "spec", "overrides"), "clusterName"); !reflect.DeepEqual(got, []string{"shop.rz10a"}) {
			t.Errorf("v1beta1 overrides clusterName = %v, want [shop.rz10a]", got)
		}
		if field(v1, "spec", "placementMask") != nil || field(v1, "spec", "placement", "topologies") != nil {
			t.Errorf("v1beta1 object carries v1beta2 fields: %v", field(v1, "spec"))
		}
		if v := field(v1, "spec", "overrides"); !strings.Contains(mustJSON(t, v), `"value":5`) {
			t.Errorf("override value lost: %s", mustJSON(t, v))
		}
		if field(v1, "metadata", "labels", "cellfed.io/tenant") != "acme" {
			t.Errorf("tenant label not initialised: %v", field(v1, "metadata", "labels"))
		}
	})

	t.Run("a write through v1beta1 keeps the placement mask", func(t *testing.T) {
		// KubeFed's controller writes the community shape (finalizers,
		// labels): what v1beta1 cannot express must survive it.
		k.MustRun(t, "", "-n", "shop", "label", fdV1beta1, "web", "release=r1")
		v2 := getJSON(t, k, "-n", "shop", "get", fdV1beta2, "web")
		if got := names(field(v2, "spec", "placementMask", "topologies"), "name"); !reflect.DeepEqual(got, []string{"rz00a"}) {
			t.Errorf("placementMask after a v1beta1 write = %v, want [rz00a]", got)
		}
		if got := names(field(v2, "spec", "placement", "topologies"), "name"); !reflect.DeepEqual(got, []string{"rz00a", "rz10a"}) {
			t.Errorf("placement after a v1beta1 write = %v", got)
		}
		if field(v2, "metadata", "labels", "release") != "r1" {
			t.Errorf("label written through v1beta1 missing: %v", field(v2, "metadata", "labels"))
		}
	})

	t.Run("a mask change through the v1beta1 stash bumps the generation", func(t *testing.T) {
		// The controller and rollouts act on metadata.generation: a mask
		// moved through the stash must count as a spec change exactly as
		// one written in v1beta2 does.
		generation := func() int64 {
			g, _ := field(getJSON(t, k, "-n", "shop", "get", fdV1beta2, "web"), "metadata", "generation").(float64)
			return int64(g)
		}
		g0 := generation()
		k.MustRun(t, "", "-n", "shop", "patch", fdV1beta2, "web", "--type=merge", "-p", `{"spec":{"placementMask":{"topologies":[{"name":"rz10a"}]}}}`)
		if g := generation(); g != g0+1 {
			t.Fatalf("generation after a v1beta2 mask change = %d, want %d", g, g0+1)
		}
		v1 := getJSON(t, k, "-n", "shop", "get", fdV1beta1, "web")
		stash, _ := field(v1, "metadata", "annotations", "conversion.cellfed.io/v1beta2-spec").(string)
		if !strings.Contains(stash, `"rz10a"`) {
			t.Fatalf("v1beta1 stash does not carry the mask: %q", stash)
		}
		var spec map[string]any
		if err := json.Unmarshal([]byte(stash), &spec); err != nil {
			t.Fatal(err)
		}
		spec["placementMask"] = map[string]any{"topologies": []any{map[string]any{"name": "rz00a"}}}
		patch := mustJSON(t, map[string]any{"metadata": map[string]any{"annotations": map[string]any{"conversion.cellfed.io/v1beta2-spec": mustJSON(t, spec)}}})
		k.MustRun(t, "", "-n", "shop", "patch", fdV1beta1, "web", "--type=merge", "-p", patch)
		v2 := getJSON(t, k, "-n", "shop", "get", fdV1beta2, "web")
		if got := names(field(v2, "spec", "placementMask", "topologies"), "name"); !reflect.DeepEqual(got, []string{"rz00a"}) {
			t.Fatalf("placementMask after a v1beta1 stash change = %v, want [rz00a]", got)
		}
		if g, _ := field(v2, "metadata", "generation").(float64); int64(g) != g0+2 {
			t.Fatalf("generation after a mask change through the v1beta1 stash = %d, want %d (as for a v1beta2 mask change)", int64(g), g0+2)
		}
		// A write through v1beta1 that leaves the mask alone changes no
		// generation.
		k.MustRun(t, "", "-n", "shop", "annotate", fdV1beta1, "web", "note=x")
		if g := generation(); g != g0+2 {
			t.Errorf("generation after a v1beta1 annotation = %d, want %d", g, g0+2)
		}
	})

	t.Run("a placement change through v1beta1 reads back as cells", func(t *testing.T) {
		k.MustRun(t, "", "-n", "shop", "patch", fdV1beta1, "web", "--type=merge", "-p", `{"spec":{"placement":{"clusters":[{"name":"shop.rz01a"}]}}}`)
		v2 := getJSON(t, k, "-n", "shop", "get", fdV1beta2, "web")
		if got := names(field(v2, "spec", "placement", "topologies"), "name"); !reflect.DeepEqual(got, []string{"rz01a"}) {
			t.Errorf("v1beta2 topologies = %v, want [rz01a]", got)
		}
		if got := field(v2, "spec", "placement", "topologyType"); got != "cell" {
			t.Errorf("topologyType = %v, want cell", got)
		}
		// The stale mask (it named the old placement) is not resurrected.
		if m := field(v2, "spec", "placementMask"); m != nil {
			t.Errorf("stale placementMask resurrected: %v", m)
		}
	})

	t.Run("status written in v1beta1 reads by topology", func(t *testing.T) {
		k.MustRun(t, "", "-n", "shop", "patch", fdV1beta1, "web", "--subresource=status", "--type=merge", "-p",
			`{"status":{"observedGeneration":1,"conditions":[{"type":"Propagation","status":"True"}],"clusters":[{"name":"shop.rz01a"},{"name":"member2","status":"ClusterNotReady"}]}}`)
		v2 := getJSON(t, k, "-n", "shop", "get", fdV1beta2, "web")
		// KubeFed's OK is no status; v1beta2 spells it out.
		if got := names(field(v2, "status", "topologies"), "status"); !reflect.DeepEqual(got, []string{"OK", "ClusterNotReady"}) {
			t.Errorf("status.topologies statuses = %v, want [OK ClusterNotReady]", got)
		}
		if got := names(field(v2, "status", "topologies"), "name"); !reflect.DeepEqual(got, []string{"rz01a", "member2"}) {
			t.Errorf("status.topologies names = %v, want [rz01a member2]", got)
		}
		if got := names(field(v2, "status", "topologies"), "cluster"); !reflect.DeepEqual(got, []string{"shop.rz01a", "member2"}) {
			t.Errorf("status.topologies clusters = %v", got)
		}
		// The table shows the topology type and the Propagation condition
		// (no raw topology lists in columns).
		table := k.MustRun(t, "", "-n", "shop", "get", "federateddeployments")
		if lines := strings.Split(strings.TrimSpace(table), "\n"); len(lines) != 2 ||
			!strings.Contains(lines[0], "TOPOLOGY") || !strings.Contains(lines[0], "PROPAGATION") ||
			!strings.Contains(lines[1], "cell") || !strings.Contains(lines[1], "True") {
			t.Errorf("kubectl get federateddeployments does not show the topology type and propagation:\n%s", table)
		}
	})

	t.Run("community objects written in v1beta1", func(t *testing.T) {
		k.MustRun(t, `
apiVersion: types.kubefed.io/v1beta1
kind: FederatedConfigMap
metadata: {name: settings, namespace: shop}
spec:
  template: {data: {color: blue}}
  placement: {clusters: [{name: shop.rz00a}, {name: shop.rz10a}]}
  overrides: [{clusterName: shop.rz00a, clusterOverrides: [{path: /data/color, value: red}]}]
`, "apply", "-f", "-")
		v2 := getJSON(t, k, "-n", "shop", "get", "federatedconfigmaps.v1beta2.types.kubefed.io", "settings")
		if got := names(field(v2, "spec", "placement", "topologies"), "name"); !reflect.DeepEqual(got, []string{"rz00a", "rz10a"}) {
			t.Errorf("v1beta2 topologies = %v", got)
		}
		if got := names(field(v2, "spec", "overrides"), "topologyName"); !reflect.DeepEqual(got, []string{"rz00a"}) {
			t.Errorf("v1beta2 overrides = %v", got)
		}
		// And physical clusters stay clusters.
		k.MustRun(t, `
apiVersion: types.kubefed.io/v1beta1
kind: FederatedConfigMap
metadata: {name: everywhere, namespace: plain}
spec:
  template: {data: {a: b}}
  placement: {clusters: [{name: member1}, {name: member2}]}
`, "apply", "-f", "-")
		v2 = getJSON(t, k, "-n", "plain", "get", "federatedconfigmaps.v1beta2.types.kubefed.io", "everywhere")
		if field(v2, "spec", "placement", "topologyType") != "cluster" || !reflect.DeepEqual(names(field(v2, "spec", "placement", "topologies"), "name"), []string{"member1", "member2"}) {
			t.Errorf("physical clusters read as %v", field(v2, "spec", "placement"))
		}
	})

	t.Run("no controller runs: created objects get no finalizer and delete at once", func(t *testing.T) {
		// Admission sets KubeFed's sync finalizer only while a controller
		// reports the type Running in its FederatedTypeConfig: here none
		// runs, so nothing would ever remove it.
		if got := field(getJSON(t, k, "-n", "shop", "get", fdV1beta1, "web"), "metadata", "finalizers"); got != nil {
			t.Errorf("finalizers of a FederatedDeployment created without a controller = %v, want none", got)
		}
		k.MustRun(t, "apiVersion: types.kubefed.io/v1beta2\nkind: FederatedConfigMap\nmetadata: {name: gone, namespace: shop}\nspec: {placement: {topologies: [{name: rz00a}]}, template: {data: {a: b}}}\n", "create", "-f", "-")
		k.MustRun(t, "", "-n", "shop", "delete", "federatedconfigmaps.v1beta2.types.kubefed.io", "gone", "--wait=true", "--timeout=30s")
	})

	t.Run("after a restart both versions still read", func(t *testing.T) {
		plane.Stop(30 * time.Second)
		plane.RestartAndWait(t)
		v1 := getJSON(t, k, "-n", "shop", "get", fdV1beta1, "web")
		if got := names(field(v1, "spec", "placement", "clusters"), "name"); !reflect.DeepEqual(got, []string{"shop.rz01a"}) {
			t.Errorf("after restart v1beta1 clusters = %v", got)
		}
		// The default types were enabled once; a restart does not re-enable
		// a type the operator disabled.
		k.MustRun(t, "", "-n", "kube-federation-system", "delete", "federatedtypeconfigs", "jobs.batch")
		plane.Stop(30 * time.Second)
		plane.RestartAndWait(t)
		if _, err := k.Run(context.Background(), "", "-n", "kube-federation-system", "get", "federatedtypeconfigs", "jobs.batch"); err == nil || !strings.Contains(err.Error(), "NotFound") {
			t.Errorf("a disabled default type came back after a restart: %v", err)
		}
	})
}

// TestSelectorStaysInItsTenant converts a cell selector and evaluates the
// result against the per-cell KubeFedClusters of every tenant: only the
// namespace's own matching cells are selected.
func TestSelectorStaysInItsTenant(t *testing.T) {
	t.Parallel()
	_, k := startFederationPlane(t, "services")
	k.MustRun(t, `
apiVersion: types.kubefed.io/v1beta2
kind: FederatedService
metadata: {name: api, namespace: shop}
spec:
  template: {spec: {ports: [{port: 80}]}}
  placement:
    topologySelector: {matchLabels: {zone: z2}}
`, "apply", "-f", "-")
	v1 := getJSON(t, k, "-n", "shop", "get", "federatedservices.v1beta1.types.kubefed.io", "api")
	raw, err := json.Marshal(field(v1, "spec", "placement", "clusterSelector"))
	if err != nil {
		t.Fatal(err)
	}
	var sel metav1.LabelSelector
	if err := json.Unmarshal(raw, &sel); err != nil {
		t.Fatal(err)
	}
	selector, err := metav1.LabelSelectorAsSelector(&sel)
	if err != nil {
		t.Fatalf("converted selector %s is invalid: %v", raw, err)
	}
	// shop2/rz00a also has zone=z2, and the physical clusters are
	// KubeFedClusters too: neither may match.
	out := k.MustRun(t, "", "-n", "kube-federation-system", "get", "kubefedclusters", "-l", selector.String(), "-o", "jsonpath={.items[*].metadata.name}")
	got := strings.Fields(out)
	sort.Strings(got)
	if want := []string{"shop.rz01a", "shop.rz10a"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("selector %q selects %v, want %v", selector.String(), got, want)
	}
	// Back in v1beta2 the pins are gone: the user sees their selector.
	v2 := getJSON(t, k, "-n", "shop", "get", "federatedservices.v1beta2.types.kubefed.io", "api")
	if got := mustJSON(t, field(v2, "spec", "placement", "topologySelector")); got != `{"matchLabels":{"zone":"z2"}}` {
		t.Errorf("v1beta2 topologySelector = %s", got)
	}
}

// TestAdmissionRejectsBadInput applies each bad object with kubectl: the
// error names what is wrong, and nothing is stored.
func TestAdmissionRejectsBadInput(t *testing.T) {
	t.Parallel()
	_, k := startFederationPlane(t, "deployments.apps")
	fd := func(name, ns, spec string) string {
		if !strings.Contains(spec, "template:") {
			spec += "  template: {}\n" // so only the rule under test fails
		}
		return "apiVersion: types.kubefed.io/v1beta2\nkind: FederatedDeployment\nmetadata: {name: " + name + ", namespace: " + ns + "}\nspec:\n" + spec
	}
	tests := []struct {
		name     string
		object   string
		resource string // what must not exist afterwards: "<resource> -n <ns> <name>"
		want     []string
	}{
		{"two cells of one cluster", fd("dup-cluster", "shop", "  placement: {topologies: [{name: rz00a}, {name: rz01a}]}\n"),
			fdV1beta2 + " -n shop dup-cluster", []string{`cells "rz00a" and "rz01a" are both on cluster "member1"`, "spec.placement"}},
		{"two cells of one cluster by selector", fd("dup-selector", "shop", "  placement: {topologySelector: {matchExpressions: [{key: zone, operator: Exists}]}}\n"),
			fdV1beta2 + " -n shop dup-selector", []string{`are both on cluster "member1"`}},
		{"missing cell", fd("missing", "shop", "  placement: {topologies: [{name: rz99z}]}\n"),
			fdV1beta2 + " -n shop missing", []string{`cell "rz99z" does not exist in namespace shop`, "spec.placement.topologies[0].name", "cellfedctl cell create"}},
		{"invalid topology name", fd("badname", "shop", "  placement: {topologies: [{name: Bad_Name}]}\n"),
			fdV1beta2 + " -n shop badname", []string{"spec.placement.topologies[0].name", "DNS label"}},
		{"duplicate topology", fd("twice", "shop", "  placement: {topologies: [{name: rz00a}, {name: rz00a}]}\n"),
			fdV1beta2 + " -n shop twice", []string{"Duplicate value", "spec.placement.topologies[1].name"}},
		{"duplicate override", fd("twice-ov", "shop", "  placement: {topologies: [{name: rz00a}]}\n  overrides: [{topologyName: rz00a, clusterOverrides: [{path: /spec/replicas, value: 1}]}, {topologyName: rz00a}]\n"),
			fdV1beta2 + " -n shop twice-ov", []string{"Duplicate value", "spec.overrides[1].topologyName"}},
		{"forbidden override path", fd("rename", "shop", "  placement: {topologies: [{name: rz00a}]}\n  overrides: [{topologyName: rz00a, clusterOverrides: [{path: /metadata/name, value: x}]}]\n"),
			fdV1beta2 + " -n shop rename", []string{"spec.overrides[0].clusterOverrides[0].path", "/metadata/name identifies the object"}},
		{"template kind mismatch", fd("wrongkind", "shop", "  template: {kind: Service}\n  placement: {topologies: [{name: rz00a}]}\n"),
			fdV1beta2 + " -n shop wrongkind", []string{"spec.template.kind", `set kind "Deployment"`}},
		{"another tenant's cell through v1beta1", "apiVersion: types.kubefed.io/v1beta1\nkind: FederatedDeployment\nmetadata: {name: steal, namespace: shop}\nspec:\n  placement: {clusters: [{name: shop2.rz00a}]}\n",
			fdV1beta1 + " -n shop steal", []string{"forbidden", `cell "rz00a" of namespace "shop2"`}},
		{"tenant label of another tenant", "apiVersion: types.kubefed.io/v1beta2\nkind: FederatedDeployment\nmetadata: {name: spoof, namespace: shop, labels: {cellfed.io/tenant: beta}}\nspec:\n  placement: {topologies: [{name: rz00a}]}\n",
			fdV1beta2 + " -n shop spoof", []string{`belong to cellfed.io/tenant "acme", not "beta"`}},
		{"cell outside a tenant workspace", "apiVersion: core.cellfed.io/v1alpha1\nkind: Cell\nmetadata: {name: c1, namespace: plain}\nspec: {cluster: member1}\n",
			"cells.core.cellfed.io -n plain c1", []string{"cells live in tenant workspaces", "kubectl label", "cellfed.io/tenant"}},
		{"cell on a missing cluster", "apiVersion: core.cellfed.io/v1alpha1\nkind: Cell\nmetadata: {name: c2, namespace: shop}\nspec: {cluster: member9}\n",
			"cells.core.cellfed.io -n shop c2", []string{"spec.cluster", `KubeFedCluster "member9" does not exist`, "register the cluster first"}},
		{"cluster endpoint of another scheme", "apiVersion: core.kubefed.io/v1beta1\nkind: KubeFedCluster\nmetadata: {name: member3, namespace: kube-federation-system}\nspec: {apiEndpoint: \"ftp://10.0.0.1:6443\", secretRef: {name: member-token}}\n",
			"kubefedclusters.core.kubefed.io -n kube-federation-system member3", []string{"spec.apiEndpoint", `Unsupported value: "ftp"`, `"https"`}},
		{"cluster without secret", "apiVersion: core.kubefed.io/v1beta1\nkind: KubeFedCluster\nmetadata: {name: member4, namespace: kube-federation-system}\nspec: {apiEndpoint: \"https://10.0.0.1:6443\", secretRef: {name: \"\"}}\n",
			"kubefedclusters.core.kubefed.io -n kube-federation-system member4", []string{"spec.secretRef.name", "Required value"}},
		{"physical cluster posing as a cell", "apiVersion: core.kubefed.io/v1beta1\nkind: KubeFedCluster\nmetadata: {name: member5, namespace: kube-federation-system, labels: {cellfed.io/topology-type: cell}}\nspec: {apiEndpoint: \"https://10.0.0.1:6443\", secretRef: {name: member-token}}\n",
			"kubefedclusters.core.kubefed.io -n kube-federation-system member5", []string{"metadata.labels[cellfed.io/topology-type]", "reserved for per-cell clusters"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := k.Run(context.Background(), tt.object, "apply", "-f", "-")
			if err == nil {
				t.Fatalf("kubectl apply accepted:\n%s", tt.object)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
			if _, err := k.Run(context.Background(), "", append([]string{"get"}, strings.Fields(tt.resource)...)...); err == nil || !strings.Contains(err.Error(), "NotFound") {
				t.Errorf("rejected object was stored (get %s: %v)", tt.resource, err)
			}
		})
	}
}

// TestConversionWebhookNeedsCredentials: the built-in webhook is served on
// the plane's port behind its authentication and RBAC; an anonymous caller
// (system:anonymous) is refused with 403, as README says.
func TestConversionWebhookNeedsCredentials(t *testing.T) {
	t.Parallel()
	plane := framework.StartPlane(t, framework.PlaneOptions{Args: []string{"--default-federated-types="}})
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // #nosec: checks only the status code
	resp, err := client.Post("https://127.0.0.1:"+strconv.Itoa(plane.Port)+"/cellfed/convert", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("anonymous POST to the conversion webhook: %s, want 403 Forbidden", resp.Status)
	}
}
