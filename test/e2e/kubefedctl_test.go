package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/test/framework"
)

// The tests here run upstream KubeFed v0.10.0's kubefedctl (`make
// kubefed`, unmodified) against the plane as a KubeFed user would: one
// kubeconfig with the contexts "plane" (the host cluster) and "member1",
// "member2" (real kube-apiservers running Kubernetes' service-account
// token controller, which `kubefedctl join` relies on), and the
// KubeFedConfig KubeFed's installation creates.

// kfctlHost are the flags naming the plane as KubeFed's host cluster.
var kfctlHost = []string{"--host-cluster-context=plane", "--kubefed-namespace=" + framework.KubeFedNamespace}

func kfctlArgs(args ...string) []string { return append(args, kfctlHost...) }

// kfctlFederation is a plane with two members, a merged kubeconfig and
// kubefedctl.
type kfctlFederation struct {
	plane   *framework.Server
	members map[string]*framework.Server // by context name: member1, member2
	clients map[string]kubernetes.Interface
	kf      framework.Kubefedctl
	k       framework.Kubectl
	kube    kubernetes.Interface
	dyn     dynamic.Interface
}

func startKfctlFederation(t *testing.T) *kfctlFederation {
	t.Helper()
	framework.NewKubefedctl(t, "") // fail before starting servers if it is not built
	plane := framework.StartPlane(t, framework.PlaneOptions{NoWait: true})
	ms := framework.StartMembers(t, 2, "--token-controller")
	if err := plane.WaitReady(context.Background()); err != nil {
		t.Fatalf("cellfed-apiserver did not become ready: %v", err)
	}
	f := &kfctlFederation{
		plane:   plane,
		members: map[string]*framework.Server{"member1": ms[0], "member2": ms[1]},
		clients: map[string]kubernetes.Interface{"member1": ms[0].Client(t), "member2": ms[1].Client(t)},
		k:       framework.Kubectl{Kubeconfig: plane.Kubeconfig},
		kube:    plane.Client(t),
	}
	var err error
	if f.dyn, err = dynamic.NewForConfig(plane.RESTConfig(t)); err != nil {
		t.Fatal(err)
	}
	f.kf = framework.NewKubefedctl(t, framework.WriteKubeconfig(t, "plane",
		map[string]*framework.Server{"plane": plane, "member1": ms[0], "member2": ms[1]}))
	return f
}

// join runs `kubefedctl join <name>` and checks what KubeFed's join
// defines: in the member a ServiceAccount <name>-plane in the KubeFed
// namespace with a token Secret, and a ClusterRole and ClusterRoleBinding
// kubefed-controller-manager:<name>-plane granting everything; in the
// plane a Secret holding that token and the KubeFedCluster <name> with
// the member's endpoint and CA. The stored credentials are used to prove
// they work.
func (f *kfctlFederation) join(t *testing.T, name string) {
	t.Helper()
	f.kf.MustRun(t, kfctlArgs("join", name, "--cluster-context="+name, "--v=2")...)
	member, mc := f.members[name], f.clients[name]
	ctx := context.Background()
	joined := readJoined(t, f.dyn, f.kube, name)
	ca, err := os.ReadFile(filepath.Join(member.DataDir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("https://127.0.0.1:%d", member.Port); joined.endpoint != want || !bytes.Equal(joined.caBundle, ca) || joined.token == "" {
		t.Errorf("KubeFedCluster %s: apiEndpoint %q (want %q), caBundle is the member's CA: %v, token set: %v",
			name, joined.endpoint, want, bytes.Equal(joined.caBundle, ca), joined.token != "")
	}
	if !strings.HasPrefix(joined.secret, name+"-") {
		t.Errorf("KubeFedCluster %s: secretRef %q, want the name kubefedctl generates (%s-xxxxx)", name, joined.secret, name)
	}

	sa := name + "-plane"
	if _, err := mc.CoreV1().ServiceAccounts(framework.KubeFedNamespace).Get(ctx, sa, metav1.GetOptions{}); err != nil {
		t.Errorf("member %s: ServiceAccount %s/%s: %v", name, framework.KubeFedNamespace, sa, err)
	}
	secret, err := mc.CoreV1().Secrets(framework.KubeFedNamespace).Get(ctx, sa, metav1.GetOptions{})
	switch {
	case err != nil:
		t.Errorf("member %s: token Secret %s/%s: %v", name, framework.KubeFedNamespace, sa, err)
	case secret.Type != corev1.SecretTypeServiceAccountToken || string(secret.Data["token"]) != joined.token:
		t.Errorf("member %s: Secret %s/%s has type %s and holds the token stored in the plane: %v", name, framework.KubeFedNamespace, sa, secret.Type, string(secret.Data["token"]) == joined.token)
	}
	role := "kubefed-controller-manager:" + sa
	cr, err := mc.RbacV1().ClusterRoles().Get(ctx, role, metav1.GetOptions{})
	wantRules := []rbacv1.PolicyRule{
		{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
		{Verbs: []string{"get"}, NonResourceURLs: []string{"*"}},
	}
	if err != nil || fmt.Sprint(cr.Rules) != fmt.Sprint(wantRules) {
		t.Errorf("member %s: ClusterRole %s: %v, rules %v (want %v)", name, role, err, cr.Rules, wantRules)
	}
	crb, err := mc.RbacV1().ClusterRoleBindings().Get(ctx, role, metav1.GetOptions{})
	wantSubjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: framework.KubeFedNamespace}}
	if err != nil || crb.RoleRef.Name != role || fmt.Sprint(crb.Subjects) != fmt.Sprint(wantSubjects) {
		t.Errorf("member %s: ClusterRoleBinding %s: %v, %+v", name, role, err, crb)
	}
	joined.checkWorks(t, "from-plane")
}

// createWorkload creates, in the plane, the objects a user federates.
func (f *kfctlFederation) createWorkload(t *testing.T) {
	t.Helper()
	f.k.MustRun(t, `
apiVersion: v1
kind: Namespace
metadata: {name: web}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: foo, namespace: web, labels: {app: web}, annotations: {note: not-propagated}}
data: {color: blue}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: shop}
data: {size: "3"}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: shop}
stringData: {password: s3cret}
`, "apply", "-f", "-")
}

// federate runs a `kubefedctl federate` that must create objects. The
// plane's admission rejected the placement federate writes,
// `clusterSelector: {matchLabels: {}}` (KubeFed: every cluster), before
// it learnt to read selectors naming no cellfed.io/ label as "every
// physical cluster"; such a failure is reported as that.
func (f *kfctlFederation) federate(t *testing.T, args ...string) framework.KubefedctlResult {
	t.Helper()
	r := f.kf.Run(t, kfctlArgs(append([]string{"federate"}, args...)...)...)
	if r.ExitCode != 0 {
		if strings.Contains(r.Stderr, "spec.placement.clusterSelector") {
			t.Fatalf("BLOCKED BY ADMISSION: the plane rejects the placement kubefedctl federate writes (clusterSelector {matchLabels: {}}, every cluster in KubeFed): %s", r)
		}
		t.Fatal(r.String())
	}
	return r
}

// get reads a namespaced object.
func (f *kfctlFederation) get(t *testing.T, gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	o, err := f.dyn.Resource(gvr).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading %s %s/%s: %v", gvr.GroupResource(), ns, name, err)
	}
	return o
}

// checkEveryPhysicalCluster checks the placement kubefedctl federate
// writes, as the plane returns it: in v1beta1 a cluster selector that
// selects every physical cluster (whatever labels it has) and, as cellfed
// defines "every cluster", no per-cell cluster; in v1beta2 the
// cluster-typed placement with an empty selector.
func (f *kfctlFederation) checkEveryPhysicalCluster(t *testing.T, plural, ns, name string) {
	t.Helper()
	v1 := f.get(t, fedResource(plural, "v1beta1"), ns, name)
	raw, found, _ := unstructured.NestedMap(v1.Object, "spec", "placement", "clusterSelector")
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &ls); !found || err != nil {
		t.Fatalf("%s %s/%s (v1beta1): no clusterSelector in %v (%v)", plural, ns, name, v1.Object["spec"], err)
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		t.Fatal(err)
	}
	cell := labels.Set{"cellfed.io/topology-type": "cell", "cellfed.io/namespace": ns, "cellfed.io/cell": "rz00a"}
	if !sel.Matches(labels.Set{}) || !sel.Matches(labels.Set{"region": "eu"}) || sel.Matches(cell) {
		t.Errorf("%s %s/%s (v1beta1): clusterSelector %q should select every physical cluster and no per-cell cluster", plural, ns, name, sel)
	}
	v2 := f.get(t, fedResource(plural, "v1beta2"), ns, name)
	typ, _, _ := unstructured.NestedString(v2.Object, "spec", "placement", "topologyType")
	raw2, _, _ := unstructured.NestedMap(v2.Object, "spec", "placement", "topologySelector")
	var ls2 metav1.LabelSelector
	_ = runtime.DefaultUnstructuredConverter.FromUnstructured(raw2, &ls2)
	sel2, err := metav1.LabelSelectorAsSelector(&ls2)
	_, hasList, _ := unstructured.NestedSlice(v2.Object, "spec", "placement", "topologies")
	if typ != "cluster" || raw2 == nil || err != nil || !sel2.Empty() || hasList {
		t.Errorf("%s %s/%s (v1beta2): placement %v, want topologyType cluster with an empty topologySelector", plural, ns, name, v2.Object["spec"].(map[string]any)["placement"])
	}
}

// checkTemplate checks an object's template in both versions.
func (f *kfctlFederation) checkTemplate(t *testing.T, plural, ns, name string, want map[string]any) {
	t.Helper()
	for _, v := range []string{"v1beta1", "v1beta2"} {
		o := f.get(t, fedResource(plural, v), ns, name)
		got, _, _ := unstructured.NestedMap(o.Object, "spec", "template")
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s %s/%s (%s): template %v, want %v", plural, ns, name, v, got, want)
		}
	}
}

// waitMembers waits until both members hold ns/name of resource gvr,
// labelled kubefed.io/managed=true, with check passing.
func (f *kfctlFederation) waitMembers(t *testing.T, gvr schema.GroupVersionResource, ns, name string, check func(*unstructured.Unstructured) error) {
	t.Helper()
	for member, server := range f.members {
		dyn, err := dynamic.NewForConfig(server.RESTConfig(t))
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, fmt.Sprintf("%s %s/%s in %s", gvr.Resource, ns, name, member), func(ctx context.Context) (bool, error) {
			o, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if o.GetLabels()["kubefed.io/managed"] != "true" {
				return false, fmt.Errorf("labels %v", o.GetLabels())
			}
			if check != nil {
				if err := check(o); err != nil {
					return false, err
				}
			}
			return true, nil
		})
	}
}

// waitPropagated waits until the controller reports a federated object
// (read as v1beta1) propagated to exactly the clusters want: condition
// Propagation True for the current generation.
func (f *kfctlFederation) waitPropagated(t *testing.T, plural, ns, name string, want ...string) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s %s/%s propagated to %v", plural, ns, name, want), func() (bool, string) {
		o, err := f.dyn.Resource(fedResource(plural, "v1beta1")).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		status, _, _ := unstructured.NestedMap(o.Object, "status")
		clusters, _, _ := unstructured.NestedSlice(o.Object, "status", "clusters")
		got := names(clusters, "name")
		slices.Sort(got)
		observed, _, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration")
		conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
		propagated := false
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Propagation" && m["status"] == "True" {
				propagated = true
			}
		}
		return propagated && observed == o.GetGeneration() && slices.Equal(got, want), fmt.Sprintf("status %v", status)
	})
}

// waitGone waits until a plane object is deleted.
func (f *kfctlFederation) waitGone(t *testing.T, gvr schema.GroupVersionResource, ns, name string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%s %s to be gone", gvr.Resource, name), func(ctx context.Context) (bool, error) {
		_, err := f.dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}

func dataIs(key, value string) func(*unstructured.Unstructured) error {
	return func(o *unstructured.Unstructured) error {
		if got, _, _ := unstructured.NestedString(o.Object, "data", key); got != value {
			return fmt.Errorf("data.%s = %q, want %q", key, got, value)
		}
		return nil
	}
}

// kfctlInput is a local file for `kubefedctl federate -f`: objects the
// plane does not have (a ConfigMap and a Deployment).
const kfctlInput = `apiVersion: v1
kind: ConfigMap
metadata:
  name: fromfile
  namespace: web
  labels: {app: web}
  annotations: {note: not-in-the-template}
data: {origin: file}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec: {containers: [{name: api, image: "nginx:1.27"}]}
`

// decodeYAMLDocs decodes a multi-document YAML stream.
func decodeYAMLDocs(t *testing.T, s string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(s), 4096)
	for {
		var m map[string]any
		if err := d.Decode(&m); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatalf("decoding %q: %v", s, err)
		}
		if m != nil {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
}

// TestKubefedctl drives kubefedctl join, federate (an object of the plane,
// a namespace with --contents, a local file with -f), enable, disable and
// unjoin against the plane with cellfed-controller propagating.
func TestKubefedctl(t *testing.T) {
	t.Parallel()
	f := startKfctlFederation(t)
	framework.ApplyKubeFedConfig(t, f.plane, nil)
	framework.StartController(t, f.plane)
	ctx := context.Background()

	t.Run("join registers both members", func(t *testing.T) {
		for _, name := range []string{"member1", "member2"} {
			f.join(t, name)
		}
		framework.WaitKubeFedClustersReady(t, f.plane, "member1", "member2")
		// KubeFed's --error-on-existing (default true) refuses a second join.
		r := f.kf.Run(t, kfctlArgs("join", "member1", "--cluster-context=member1")...)
		if r.ExitCode == 0 || !strings.Contains(r.ErrorLine(), "member1-plane already exists in joining cluster") {
			t.Errorf("a second join: %s, want the refusal for the existing service account", r)
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	f.createWorkload(t)

	t.Run("federate -o yaml prints the federated object and creates nothing", func(t *testing.T) {
		r := f.kf.MustRun(t, kfctlArgs("federate", "configmap", "foo", "-n", "web", "-o", "yaml")...)
		docs := decodeYAMLDocs(t, r.Stdout)
		if len(docs) != 1 || docs[0].GetAPIVersion() != "types.kubefed.io/v1beta1" || docs[0].GetKind() != "FederatedConfigMap" ||
			docs[0].GetNamespace() != "web" || docs[0].GetName() != "foo" {
			t.Fatalf("federate -o yaml printed %q, want one v1beta1 FederatedConfigMap web/foo", r.Stdout)
		}
		sel, _, _ := unstructured.NestedMap(docs[0].Object, "spec", "placement")
		tmpl, _, _ := unstructured.NestedMap(docs[0].Object, "spec", "template")
		if fmt.Sprint(sel) != "map[clusterSelector:map[matchLabels:map[]]]" || fmt.Sprint(tmpl) != "map[data:map[color:blue] metadata:map[labels:map[app:web]]]" {
			t.Errorf("placement %v, template %v", sel, tmpl)
		}
		_, err := f.dyn.Resource(fedCMV1).Namespace("web").Get(ctx, "foo", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("federate -o yaml created web/foo (err %v)", err)
		}
	})

	federated := false
	t.Run("federate a config map and its namespace", func(t *testing.T) {
		f.federate(t, "configmap", "foo", "-n", "web")
		f.federate(t, "namespace", "web")
		for _, o := range []struct{ plural, name string }{{"federatedconfigmaps", "foo"}, {"federatednamespaces", "web"}} {
			f.checkEveryPhysicalCluster(t, o.plural, "web", o.name)
		}
		// Annotations stay out of the template (KubeFed warns), labels go in.
		f.checkTemplate(t, "federatedconfigmaps", "web", "foo", map[string]any{"data": map[string]any{"color": "blue"}, "metadata": map[string]any{"labels": map[string]any{"app": "web"}}})
		federated = true
	})

	t.Run("federate namespace --contents", func(t *testing.T) {
		// What the plane's controllers put in every namespace is content too.
		waitFor(t, "the plane's service account and root CA in namespace shop", func(ctx context.Context) (bool, error) {
			if _, err := f.kube.CoreV1().ServiceAccounts("shop").Get(ctx, "default", metav1.GetOptions{}); err != nil {
				return false, err
			}
			_, err := f.kube.CoreV1().ConfigMaps("shop").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
			return err == nil, err
		})
		f.federate(t, "namespace", "shop", "--contents")
		got := strings.Fields(f.k.MustRun(t, "", "-n", "shop", "get", "-o", "name",
			"federatednamespaces.v1beta1.types.kubefed.io,federatedconfigmaps.v1beta1.types.kubefed.io,federatedsecrets.v1beta1.types.kubefed.io,federatedserviceaccounts.v1beta1.types.kubefed.io"))
		want := []string{
			"federatednamespace.types.kubefed.io/shop",
			"federatedconfigmap.types.kubefed.io/kube-root-ca.crt", "federatedconfigmap.types.kubefed.io/settings",
			"federatedsecret.types.kubefed.io/creds",
			"federatedserviceaccount.types.kubefed.io/default",
		}
		if !slices.Equal(got, want) {
			t.Errorf("federated objects in shop: %v, want %v", got, want)
		}
		f.checkEveryPhysicalCluster(t, "federatedsecrets", "shop", "creds")
		s := f.get(t, fedSecretV2, "shop", "creds")
		if pw, _, _ := unstructured.NestedString(s.Object, "spec", "template", "data", "password"); pw != "czNjcmV0" {
			t.Errorf("FederatedSecret shop/creds (v1beta2): template data.password %q, want s3cret base64-encoded", pw)
		}
	})

	t.Run("federate -f a local file, then kubectl apply", func(t *testing.T) {
		in := framework.WriteTempFile(t, kfctlInput)
		r := f.kf.MustRun(t, kfctlArgs("federate", "-f", in)...)
		docs := decodeYAMLDocs(t, r.Stdout)
		var kinds []string
		for _, d := range docs {
			kinds = append(kinds, d.GetAPIVersion()+" "+d.GetKind()+" "+d.GetNamespace()+"/"+d.GetName())
		}
		if want := []string{"types.kubefed.io/v1beta1 FederatedConfigMap web/fromfile", "types.kubefed.io/v1beta1 FederatedDeployment web/api"}; !slices.Equal(kinds, want) {
			t.Fatalf("federate -f printed %v, want %v:\n%s", kinds, want, r.Stdout)
		}
		if !strings.Contains(r.Stderr, `Annotations defined for ConfigMap "web/fromfile" will not appear in the template`) {
			t.Errorf("no warning about the dropped annotation: %s", r.Stderr)
		}
		// -f only prints: nothing is created.
		if _, err := f.dyn.Resource(fedDeployV1).Namespace("web").Get(ctx, "api", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("federate -f created web/api (err %v)", err)
		}
		if _, err := f.k.Run(ctx, r.Stdout, "apply", "-f", "-"); err != nil {
			if strings.Contains(err.Error(), "spec.placement.clusterSelector") {
				t.Fatalf("BLOCKED BY ADMISSION: the plane rejects the placement kubefedctl federate writes (clusterSelector {matchLabels: {}}): %v", err)
			}
			t.Fatal(err)
		}
		f.checkEveryPhysicalCluster(t, "federateddeployments", "web", "api")
		d := f.get(t, fedDeployV2, "web", "api")
		if img, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "template", "spec", "containers"); fmt.Sprint(img) != "[map[image:nginx:1.27 name:api]]" {
			t.Errorf("FederatedDeployment web/api (v1beta2): containers %v", img)
		}
		f.checkTemplate(t, "federatedconfigmaps", "web", "fromfile", map[string]any{"data": map[string]any{"origin": "file"}, "metadata": map[string]any{"labels": map[string]any{"app": "web"}}})
	})

	t.Run("cellfed-controller propagates what kubefedctl federated to both members", func(t *testing.T) {
		if !federated {
			t.Fatal("nothing to propagate: kubefedctl federate failed above")
		}
		f.waitMembers(t, configmaps, "web", "foo", func(o *unstructured.Unstructured) error {
			if o.GetLabels()["app"] != "web" {
				return fmt.Errorf("labels %v", o.GetLabels())
			}
			return dataIs("color", "blue")(o)
		})
		f.waitMembers(t, configmaps, "web", "fromfile", dataIs("origin", "file"))
		f.waitMembers(t, deployments, "web", "api", nil)
		f.waitMembers(t, configmaps, "shop", "settings", dataIs("size", "3"))
		f.waitMembers(t, secrets, "shop", "creds", dataIs("password", "czNjcmV0"))
		f.waitPropagated(t, "federatedconfigmaps", "web", "foo", "member1", "member2")
	})

	t.Run("enable a CRD type", func(t *testing.T) {
		// kubefedctl reads the target type from the host cluster; members
		// need it too to receive objects.
		f.k.MustRun(t, ctlMemberCRD, "apply", "-f", "-")
		for _, m := range f.members {
			framework.Kubectl{Kubeconfig: m.Kubeconfig}.MustRun(t, ctlMemberCRD, "apply", "-f", "-")
		}
		f.k.WaitEstablished(t, "widgets.example.com")
		r := f.kf.MustRun(t, kfctlArgs("enable", "widgets.example.com")...)
		for _, want := range []string{
			"customresourcedefinition.apiextensions.k8s.io/federatedwidgets.types.kubefed.io created",
			"federatedtypeconfig.core.kubefed.io/widgets.example.com created in namespace " + framework.KubeFedNamespace,
		} {
			if !strings.Contains(r.Stdout, want) {
				t.Errorf("enable printed %q, want a line %q", r.Stdout, want)
			}
		}
		ftc := f.get(t, kubefed.FederatedTypeConfigsResource, framework.KubeFedNamespace, "widgets.example.com")
		spec, _, _ := unstructured.NestedMap(ftc.Object, "spec")
		if want := "map[federatedType:map[group:types.kubefed.io kind:FederatedWidget pluralName:federatedwidgets scope:Namespaced version:v1beta1] propagation:Enabled targetType:map[group:example.com kind:Widget pluralName:widgets scope:Namespaced version:v1]]"; fmt.Sprint(spec) != want {
			t.Errorf("FederatedTypeConfig widgets.example.com: spec %v, want %s", spec, want)
		}
		f.k.MustRun(t, `
apiVersion: v1
kind: Namespace
metadata: {name: gadgets}
---
apiVersion: types.kubefed.io/v1beta1
kind: FederatedNamespace
metadata: {name: gadgets, namespace: gadgets}
spec: {placement: {clusters: [{name: member1}, {name: member2}]}}
---
apiVersion: types.kubefed.io/v1beta1
kind: FederatedWidget
metadata: {name: w1, namespace: gadgets}
spec:
  template: {spec: {size: 3, color: red}}
  placement: {clusters: [{name: member1}, {name: member2}]}
`, "apply", "-f", "-")
		f.waitMembers(t, widgets, "gadgets", "w1", func(o *unstructured.Unstructured) error {
			if size, _, _ := unstructured.NestedInt64(o.Object, "spec", "size"); size != 3 {
				return fmt.Errorf("spec %v", o.Object["spec"])
			}
			return nil
		})
	})

	t.Run("a type kubefedctl enabled is served in v1beta1 and v1beta2 like every federated type", func(t *testing.T) {
		crd, err := f.dyn.Resource(crds).Get(ctx, "federatedwidgets.types.kubefed.io", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		if got := names(versions, "name"); !slices.Equal(got, []string{"v1beta1", "v1beta2"}) {
			t.Fatalf("CRD federatedwidgets.types.kubefed.io serves %v; want v1beta1 and v1beta2 (converted by the plane) as for the types the plane enables", got)
		}
		w := f.get(t, fedWidgetV2, "gadgets", "w1")
		if got, _, _ := unstructured.NestedSlice(w.Object, "spec", "placement", "topologies"); fmt.Sprint(got) != "[map[name:member1] map[name:member2]]" {
			t.Errorf("FederatedWidget gadgets/w1 (v1beta2): topologies %v", got)
		}
	})

	t.Run("enable a built-in type and a type the plane enabled already", func(t *testing.T) {
		r := f.kf.MustRun(t, kfctlArgs("enable", "roles.rbac.authorization.k8s.io")...)
		if !strings.Contains(r.Stdout, "federatedtypeconfig.core.kubefed.io/roles.rbac.authorization.k8s.io created in namespace "+framework.KubeFedNamespace) {
			t.Errorf("enable roles printed %q", r.Stdout)
		}
		// KubeFed's enable of an enabled type updates it and succeeds.
		r = f.kf.Run(t, kfctlArgs("enable", "configmaps")...)
		if r.ExitCode != 0 || !strings.Contains(r.Stdout, "federatedtypeconfig.core.kubefed.io/configmaps updated in namespace "+framework.KubeFedNamespace) {
			t.Errorf("enable configmaps (enabled by the plane): %s; stdout %q", r, r.Stdout)
		}
		// Whatever enable did, the plane's configmaps type keeps both versions.
		crd, err := f.dyn.Resource(crds).Get(ctx, "federatedconfigmaps.types.kubefed.io", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		if got := names(versions, "name"); !slices.Equal(got, []string{"v1beta1", "v1beta2"}) {
			t.Errorf("after enable configmaps the CRD federatedconfigmaps.types.kubefed.io serves %v, want v1beta1 and v1beta2", got)
		}
	})

	// KubeFed's disable sets propagation Disabled, waits (10 s) until the
	// controller reports status.propagationController NotRunning, then
	// deletes the FederatedTypeConfig (and with --delete-crd the CRD, only
	// while no federated object of the type exists).
	disableHint := "; kubefedctl disable waits for the controller to write FederatedTypeConfig status.propagationController=NotRunning, as KubeFed's controller-manager does"
	t.Run("disable", func(t *testing.T) {
		r := f.kf.Run(t, kfctlArgs("disable", "roles.rbac.authorization.k8s.io")...)
		if r.ExitCode != 0 {
			t.Fatalf("%s%s", r, disableHint)
		}
		for _, want := range []string{
			`Disabled propagation for FederatedTypeConfig "kube-federation-system/roles.rbac.authorization.k8s.io"`,
			`federatedtypeconfig "kube-federation-system/roles.rbac.authorization.k8s.io" deleted`,
		} {
			if !strings.Contains(r.Stdout, want) {
				t.Errorf("disable printed %q, want a line %q", r.Stdout, want)
			}
		}
		f.waitGone(t, kubefed.FederatedTypeConfigsResource, framework.KubeFedNamespace, "roles.rbac.authorization.k8s.io")
		if _, err := f.dyn.Resource(crds).Get(ctx, "federatedroles.types.kubefed.io", metav1.GetOptions{}); err != nil {
			t.Errorf("disable without --delete-crd deleted the CRD: %v", err)
		}
	})

	t.Run("disable --delete-crd", func(t *testing.T) {
		r := f.kf.Run(t, kfctlArgs("disable", "widgets.example.com", "--delete-crd")...)
		if r.ExitCode == 0 || !strings.Contains(r.ErrorLine(), `Cannot delete CRD "federatedwidgets.types.kubefed.io" while resource instances exist`) {
			t.Errorf("disable --delete-crd with a FederatedWidget left: %s, want the refusal", r)
		}
		if p, _, _ := unstructured.NestedString(f.get(t, kubefed.FederatedTypeConfigsResource, framework.KubeFedNamespace, "widgets.example.com").Object, "spec", "propagation"); p != "Enabled" {
			t.Errorf("the refused disable changed propagation to %q", p)
		}
		f.k.MustRun(t, "", "-n", "gadgets", "delete", "federatedwidgets.v1beta1.types.kubefed.io", "w1", "--wait=false")
		f.waitGone(t, fedWidgetV1, "gadgets", "w1")
		r = f.kf.Run(t, kfctlArgs("disable", "widgets.example.com", "--delete-crd")...)
		if r.ExitCode != 0 {
			t.Fatalf("%s%s", r, disableHint)
		}
		if !strings.Contains(r.Stdout, `customresourcedefinition "federatedwidgets.types.kubefed.io" deleted`) {
			t.Errorf("disable --delete-crd printed %q", r.Stdout)
		}
		f.waitGone(t, kubefed.FederatedTypeConfigsResource, framework.KubeFedNamespace, "widgets.example.com")
		f.waitGone(t, crds, "", "federatedwidgets.types.kubefed.io")
	})

	t.Run("unjoin", func(t *testing.T) {
		joined := readJoined(t, f.dyn, f.kube, "member2")
		asPlane := joined.asPlane(t)
		f.kf.MustRun(t, kfctlArgs("unjoin", "member2", "--cluster-context=member2", "--v=2")...)
		if _, err := f.dyn.Resource(kubefed.KubeFedClustersResource).Namespace(framework.KubeFedNamespace).Get(ctx, "member2", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("KubeFedCluster member2 after unjoin: %v", err)
		}
		if _, err := f.kube.CoreV1().Secrets(framework.KubeFedNamespace).Get(ctx, joined.secret, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("Secret %s after unjoin: %v", joined.secret, err)
		}
		mc := f.clients["member2"]
		if _, err := mc.CoreV1().ServiceAccounts(framework.KubeFedNamespace).Get(ctx, "member2-plane", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("member2: ServiceAccount member2-plane after unjoin: %v", err)
		}
		for _, name := range []string{"kubefed-controller-manager:member2-plane"} {
			if _, err := mc.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("member2: ClusterRole %s after unjoin: %v", name, err)
			}
			if _, err := mc.RbacV1().ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("member2: ClusterRoleBinding %s after unjoin: %v", name, err)
			}
		}
		// The member has no namespace controller: deleted is Terminating.
		if ns, err := mc.CoreV1().Namespaces().Get(ctx, framework.KubeFedNamespace, metav1.GetOptions{}); err == nil && ns.DeletionTimestamp == nil {
			t.Errorf("member2: namespace %s is not being deleted after unjoin", framework.KubeFedNamespace)
		}
		waitFor(t, "the token member2 had given the plane to be rejected", func(ctx context.Context) (bool, error) {
			_, err := asPlane.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
			return apierrors.IsUnauthorized(err), err
		})
		// member1 is untouched.
		if _, err := f.dyn.Resource(kubefed.KubeFedClustersResource).Namespace(framework.KubeFedNamespace).Get(ctx, "member1", metav1.GetOptions{}); err != nil {
			t.Errorf("KubeFedCluster member1 after unjoining member2: %v", err)
		}
	})
}

// TestKubefedctlWithUpstreamKubeFed joins members with kubefedctl for
// upstream KubeFed's own controller-manager, federates with kubefedctl and
// disables a type as KubeFed defines it.
func TestKubefedctlWithUpstreamKubeFed(t *testing.T) {
	t.Parallel()
	framework.KubeFedBinary(t)
	f := startKfctlFederation(t)
	framework.StartKubeFed(t, f.plane, framework.KubeFedOptions{})
	for _, name := range []string{"member1", "member2"} {
		f.kf.MustRun(t, kfctlArgs("join", name, "--cluster-context="+name)...)
	}
	framework.WaitKubeFedClustersReady(t, f.plane, "member1", "member2")
	f.createWorkload(t)

	t.Run("a config map federated with kubefedctl reaches both members", func(t *testing.T) {
		// KubeFed retries a create that failed for want of the namespace
		// only after 10 s: federate the namespace first.
		f.federate(t, "namespace", "web")
		f.waitMembers(t, namespaces, "", "web", nil)
		f.federate(t, "configmap", "foo", "-n", "web")
		f.waitMembers(t, configmaps, "web", "foo", dataIs("color", "blue"))
		f.waitPropagated(t, "federatedconfigmaps", "web", "foo", "member1", "member2")
		f.checkEveryPhysicalCluster(t, "federatedconfigmaps", "web", "foo")
	})

	t.Run("enable and disable", func(t *testing.T) {
		f.kf.MustRun(t, kfctlArgs("enable", "roles.rbac.authorization.k8s.io")...)
		waitFor(t, "KubeFed to run the FederatedRole sync controller", func(ctx context.Context) (bool, error) {
			ftc := f.get(t, kubefed.FederatedTypeConfigsResource, framework.KubeFedNamespace, "roles.rbac.authorization.k8s.io")
			s, _, _ := unstructured.NestedString(ftc.Object, "status", "propagationController")
			return s == "Running", fmt.Errorf("status.propagationController %q", s)
		})
		r := f.kf.MustRun(t, kfctlArgs("disable", "roles.rbac.authorization.k8s.io")...)
		if !strings.Contains(r.Stdout, `Propagation controller for FederatedTypeConfig "kube-federation-system/roles.rbac.authorization.k8s.io" is stopped`) {
			t.Errorf("disable printed %q", r.Stdout)
		}
		f.waitGone(t, kubefed.FederatedTypeConfigsResource, framework.KubeFedNamespace, "roles.rbac.authorization.k8s.io")
		// Without a FederatedTypeConfig, --delete-crd still removes the CRD.
		r = f.kf.MustRun(t, kfctlArgs("disable", "roles.rbac.authorization.k8s.io", "--delete-crd")...)
		if !strings.Contains(r.Stdout, `customresourcedefinition "federatedroles.types.kubefed.io" deleted`) {
			t.Errorf("disable --delete-crd printed %q", r.Stdout)
		}
		f.waitGone(t, crds, "", "federatedroles.types.kubefed.io")
	})
}
