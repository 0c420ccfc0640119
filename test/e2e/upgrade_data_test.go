package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	policyv1alpha1 "github.com/cellfed/cellfed/pkg/apis/policy/v1alpha1"
	"github.com/cellfed/cellfed/pkg/doctor"
	"github.com/cellfed/cellfed/pkg/federatedtypes"
	"github.com/cellfed/cellfed/pkg/pki"
	"github.com/cellfed/cellfed/pkg/registration"
	"github.com/cellfed/cellfed/test/framework"
)

// TestUpgradeKeepsOldData is the second form of the upgrade test (issue
// 42 §3): a plane created by the previous release (the commit
// hack/upgrade/previous names, `make previous`) on SQLite, with its
// cellfed-controller and two real members joined as cells, holds data in
// every type the old release serves — a federated object of each type it
// enables by default, Cells, a tenant workspace with a grant, a rollout
// left in progress (a placement mask and its template history), a plain
// Secret and a FederatedSecret (encrypted at rest), a bootstrap token and
// a ClusterRegistration. The old plane and controller are stopped and
// this release's are started on the same data directory and port.
//
// Asserted: every object is still there with the same UID and the same
// spec (data for Secrets, which decrypt), no member object is deleted or
// re-created, and this release's features work on the old data:
// spec.replicaDivision added to a FederatedDeployment the old release
// created divides its replicas on the members, a PropagationPolicy places
// a plain Deployment whose status the plane aggregates (kubectl rollout
// status against the plane), the rollout the old release started is
// finished by this release's cellfedctl from the old history, `cellfedctl
// doctor` names only the expected finding (the pending registration), and
// every CRD the plane owns carries this release's schema stamp.
func TestUpgradeKeepsOldData(t *testing.T) {
	t.Parallel()
	began := time.Now()
	oldBin := previousRelease(t)
	newBin := filepath.Dir(framework.Binary(t, "cellfed-apiserver"))
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	newRelease := release(t)

	// --- The previous release: one plane on SQLite with its default
	// types, two members, its controller.
	plane := &upgradedPlane{name: "plane", dataDir: t.TempDir(), port: framework.FreePort(t)}
	var members []*framework.Server
	done := make(chan struct{})
	go func() {
		defer close(done)
		members = framework.StartMembers(t, 2)
	}()
	plane.start(t, oldBin, "old")
	<-done
	if members == nil {
		t.Fatal("the members did not start")
	}
	if err := plane.s.WaitReady(ctx); err != nil {
		t.Fatalf("the previous release's plane: %v\n%s", err, plane.s.Tail(30))
	}
	oldVersion := strings.TrimSpace(versionOf(t, plane.s))
	k := framework.Kubectl{Kubeconfig: plane.s.Kubeconfig}
	dyn := dynamic.NewForConfigOrDie(plane.s.RESTConfig(t))
	oldCtl := cellfedctl{bin: filepath.Join(oldBin, "cellfedctl"), kubeconfig: plane.s.Kubeconfig}
	newCtl := cellfedctl{bin: filepath.Join(newBin, "cellfedctl"), kubeconfig: plane.s.Kubeconfig}
	for i, m := range members {
		oldCtl.ok(t, "join", fmt.Sprintf("member-%d", i), "--kubeconfig-member="+m.Kubeconfig)
	}
	oldCtl.ok(t, "tenant", "create", "shop", "--tenant=acme", "--workspace=prod")
	oldCtl.ok(t, "tenant", "grant", "alice", "-n", "shop", "--role=app-team")
	oldCtl.ok(t, "tenant", "grant", "group:auditors", "-n", "shop", "--role=viewer")
	oldCtl.ok(t, "cell", "create", "rz00a", "-n", "shop", "--cluster=member-0", "--label=zone=z0")
	oldCtl.ok(t, "cell", "create", "rz10a", "-n", "shop", "--cluster=member-1", "--label=zone=z1")
	agentKubeconfig := filepath.Join(t.TempDir(), "plane-agent.kubeconfig")
	token := strings.TrimSpace(oldCtl.ok(t, "token", "create", "--quiet", "--tenant=acme", "--ttl=2h", "--agent-kubeconfig="+agentKubeconfig))
	tok, err := registration.ParseToken(token)
	if err != nil {
		t.Fatalf("token create printed %q: %v", token, err)
	}
	ctrl := startUpgradedController(t, oldBin, plane.s.Kubeconfig)
	f := &federation{plane: plane.s, kubectl: k, dyn: dyn, members: members, ctl: oldCtl}
	for _, m := range members {
		f.memberKube = append(f.memberKube, m.Client(t))
	}

	// Every type the previous release enables by default gets an object.
	enabled := enabledTypes(ctx, t, dyn)
	t.Logf("previous release %s enables %v", oldVersion, enabled)
	cells := []string{"rz00a", "rz10a"}
	both := map[string]string{"rz00a": "OK", "rz10a": "OK"}
	var objs []oldObject
	for _, typ := range enabled {
		o, ok := oldFixtures[typ]
		if !ok {
			t.Errorf("the previous release enables %s by default and the test has no object of it: add one to oldFixtures", typ)
			continue
		}
		objs = append(objs, o)
		k.MustRun(t, o.yaml(cells), "apply", "-f", "-")
	}
	// A FederatedDeployment the previous release created without
	// spec.replicaDivision, to divide after the upgrade.
	k.MustRun(t, strings.Replace(deployment("shop", "div", "app:1", cells, ""), "replicas: 2", "replicas: 6", 1), "apply", "-f", "-")
	// A plain Secret, encrypted at rest by the old plane's KMS key.
	k.MustRun(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: plain, namespace: shop}\nstringData: {password: s3cr3t-plain}\n", "apply", "-f", "-")
	// A ClusterRegistration as an agent would leave it, pending approval.
	caPEM, err := os.ReadFile(filepath.Join(members[0].DataDir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	_, csrPEM, err := pki.NewAgentKeyAndCSR("edge-old")
	if err != nil {
		t.Fatal(err)
	}
	k.MustRun(t, `apiVersion: core.cellfed.io/v1alpha1
kind: ClusterRegistration
metadata: {name: edge-old}
spec:
  apiEndpoint: https://127.0.0.1:9
  caBundle: `+base64.StdEncoding.EncodeToString(caPEM)+`
  csr: `+base64.StdEncoding.EncodeToString(csrPEM)+`
  tenant: acme
`, "apply", "-f", "-")

	for _, o := range objs {
		f.waitSettled(t, o.gvr, "shop", o.name, both)
	}
	f.waitSettled(t, fedDeployV2, "shop", "div", both)
	for i := range members {
		f.memberReady(t, i, "web")
	}
	// A rollout the previous release starts and leaves in progress: rz00a
	// runs app:2, rz10a is held back by the placement mask.
	oldCtl.ok(t, "rollout", "start", "deployment/web", "-n", "shop", "--cells=rz00a")
	f.setImage(t, "web", "app:2")
	f.waitImage(t, 0, "web", "app:2", 2)
	f.memberReady(t, 0, "web")
	f.rolloutStatus(t, "web", 0)
	historyBefore := oldCtl.ok(t, "rollout", "history", "deployment/web", "-n", "shop")

	placed := []memberRef{{namespaces, "", "shop"}}
	for _, o := range objs {
		if o.member.Resource != "namespaces" {
			placed = append(placed, memberRef{o.member, "shop", o.name})
		}
	}
	placed = append(placed, memberRef{deployments, "shop", "div"})
	uidsBefore := memberUIDs(ctx, t, members, placed)

	kept := []keptList{
		{cellv1alpha1.CellsResource, "shop", ""},
		{cellv1alpha1.TemplateRevisionsResource, "shop", ""},
		{cellv1alpha1.ClusterRegistrationsResource, "", ""},
		{kubefed.KubeFedClustersResource, federatedtypes.DefaultNamespace, ""},
		{kubefed.FederatedTypeConfigsResource, federatedtypes.DefaultNamespace, ""},
		{secrets, "shop", ""},
		{secrets, registration.BootstrapTokenNamespace, registration.TokenSecretName(tok.ID)},
		{rolebindings, "shop", ""},
		{namespaces, "", "shop"},
	}
	for _, o := range objs {
		kept = append(kept, keptList{o.gvr, "shop", ""})
	}
	before := snapshotKept(ctx, t, dyn, kept)
	t.Logf("the previous release's data: %d objects, set up in %s", len(before), time.Since(began).Round(time.Second))

	// --- The upgrade: controller and plane stopped, this release's
	// plane and then its controller started on the same data.
	upgradeBegan := time.Now()
	ctrl.proc.Stop(30 * time.Second)
	plane.s.Stop(30 * time.Second)
	plane.start(t, newBin, "new")
	if err := plane.s.WaitReady(ctx); err != nil {
		t.Fatalf("this release's plane on the previous release's data: %v\n%s", err, plane.s.Tail(40))
	}
	planeDown := time.Since(upgradeBegan)
	ctrl.start(t, newBin)
	t.Logf("upgraded %s → %s: the plane was down %s, the controller ready %s after the stop",
		oldVersion, strings.TrimSpace(versionOf(t, plane.s)), planeDown.Round(time.Millisecond), time.Since(upgradeBegan).Round(time.Millisecond))
	dyn = dynamic.NewForConfigOrDie(plane.s.RESTConfig(t))
	f.dyn, f.plane, f.ctl = dyn, plane.s, newCtl

	t.Run("every object is kept unchanged", func(t *testing.T) {
		after := snapshotKept(ctx, t, dyn, kept)
		for key, b := range before {
			a, ok := after[key]
			switch {
			case !ok:
				t.Errorf("%s is gone after the upgrade", key)
			case a.UID != b.UID:
				t.Errorf("%s: UID %s before the upgrade, %s after it", key, b.UID, a.UID)
			case !bytes.Equal(a.Content, b.Content):
				t.Errorf("%s changed by the upgrade:\nbefore %s\nafter  %s", key, b.Content, a.Content)
			}
		}
		for key := range after {
			if _, ok := before[key]; !ok {
				t.Logf("new after the upgrade: %s", key)
			}
		}
	})

	t.Run("secrets decrypt and stay encrypted at rest", func(t *testing.T) {
		s, err := plane.s.Client(t).CoreV1().Secrets("shop").Get(ctx, "plain", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("reading Secret shop/plain: %v", err)
		}
		if got := string(s.Data["password"]); got != "s3cr3t-plain" {
			t.Errorf("Secret shop/plain reads password=%q after the upgrade", got)
		}
		fs, err := dyn.Resource(fedSecretV2).Namespace("shop").Get(ctx, "creds", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("reading FederatedSecret shop/creds: %v", err)
		}
		if got, _, _ := unstructured.NestedString(fs.Object, "spec", "template", "data", "password"); got != b64("s3cr3t-fed") {
			t.Errorf("FederatedSecret shop/creds reads password=%q after the upgrade", got)
		}
		db := framework.OpenRawDatabase(t, plane.dataDir, "")
		for _, key := range []string{"/registry/secrets/shop/plain", "/registry/types.kubefed.io/federatedsecrets/shop/creds"} {
			rows := framework.RawRows(t, db, key)
			if len(rows) == 0 {
				t.Errorf("no stored row for %s", key)
			}
			for _, r := range rows {
				if r.Name == key && !r.Deleted && !bytes.HasPrefix(r.Value, []byte("k8s:enc:kms:v2:")) {
					t.Errorf("%s (row %d) is stored unencrypted: %.40q", key, r.ID, r.Value)
				}
			}
		}
		eventually(t, "member-1 holds Secret shop/creds", func() (bool, string) {
			obj := f.memberObject(t, 1, secrets, "shop", "creds")
			if obj == nil {
				return false, "absent"
			}
			got, _, _ := unstructured.NestedString(obj.Object, "data", "password")
			return got == b64("s3cr3t-fed"), "password=" + got
		})
	})

	t.Run("the controller keeps every object placed, and re-creates none", func(t *testing.T) {
		for _, o := range objs {
			want := both
			if o.name == "web" { // the rollout holds rz10a back
				want = map[string]string{"rz00a": "OK", "rz10a": "HeldBack"}
			}
			f.waitSettled(t, o.gvr, "shop", o.name, want)
		}
		uidsAfter := memberUIDs(ctx, t, members, placed)
		for key, uid := range uidsBefore {
			if uidsAfter[key] != uid {
				t.Errorf("%s: UID %s before the upgrade, %s after it", key, uid, uidsAfter[key])
			}
		}
	})

	t.Run("replicaDivision on a FederatedDeployment the previous release created", func(t *testing.T) {
		if _, err := dyn.Resource(fedDeployV2).Namespace("shop").Patch(ctx, "div", types.MergePatchType,
			[]byte(`{"spec":{"replicaDivision":{"mode":"Divide","topologies":[{"name":"rz00a","weight":1},{"name":"rz10a","weight":2}]}}}`),
			metav1.PatchOptions{}); err != nil {
			t.Fatalf("adding spec.replicaDivision: %v", err)
		}
		got, err := dyn.Resource(fedDeployV2).Namespace("shop").Get(ctx, "div", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if mode, _, _ := unstructured.NestedString(got.Object, "spec", "replicaDivision", "mode"); mode != "Divide" {
			t.Fatalf("spec.replicaDivision was not kept: %v", got.Object["spec"])
		}
		want := []int64{2, 4}
		eventually(t, "the members run 2 and 4 replicas of div", func() (bool, string) {
			var have []int64
			for i := range members {
				obj := f.memberObject(t, i, deployments, "shop", "div")
				n := int64(-1)
				if obj != nil {
					n, _, _ = unstructured.NestedInt64(obj.Object, "spec", "replicas")
				}
				have = append(have, n)
			}
			return slices.Equal(have, want), fmt.Sprintf("members run %v", have)
		})
		uids := memberUIDs(ctx, t, members, []memberRef{{deployments, "shop", "div"}})
		for key, uid := range uids {
			if uidsBefore[key] != uid {
				t.Errorf("%s re-created by the division: UID %s, was %s", key, uid, uidsBefore[key])
			}
		}
	})

	t.Run("a PropagationPolicy places a plain Deployment and kubectl reads its rollout", func(t *testing.T) {
		k.MustRun(t, `apiVersion: apps/v1
kind: Deployment
metadata: {name: native, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: native}}
  template:
    metadata: {labels: {app: native}}
    spec: {containers: [{name: app, image: "app:1"}]}
---
apiVersion: policy.cellfed.io/v1alpha1
kind: PropagationPolicy
metadata: {name: native, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: native}]
  placement: {topologies: [{name: rz00a}, {name: rz10a}]}
`, "apply", "-f", "-")
		for i := range members {
			eventually(t, fmt.Sprintf("member-%d holds Deployment shop/native", i), func() (bool, string) {
				obj := f.memberObject(t, i, deployments, "shop", "native")
				return obj != nil, "absent"
			})
			_, gen, _ := f.memberDeployment(t, i, "native")
			f.patchMemberStatus(t, i, deployments, "shop", "native", memberRolledOut(gen, 2))
		}
		if out, err := k.Run(ctx, "", "-n", "shop", "rollout", "status", "deployment/native", "--timeout=90s"); err != nil || !strings.Contains(out, "successfully rolled out") {
			t.Errorf("kubectl rollout status against the plane: %s %v; want successfully rolled out", out, err)
		}
		pol, err := dyn.Resource(policyv1alpha1.PropagationPoliciesResource).Namespace("shop").Get(ctx, "native", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n, _, _ := unstructured.NestedInt64(pol.Object, "status", "placed"); n != 1 {
			t.Errorf("PropagationPolicy shop/native: status.placed = %d, want 1", n)
		}
	})

	t.Run("this release finishes the rollout the previous release started", func(t *testing.T) {
		history := newCtl.ok(t, "rollout", "history", "deployment/web", "-n", "shop")
		if revisionLines(history) < 2 || revisionLines(history) < revisionLines(historyBefore) {
			t.Errorf("rollout history after the upgrade:\n%s\nbefore it:\n%s", history, historyBefore)
		}
		newCtl.ok(t, "rollout", "finish", "deployment/web", "-n", "shop")
		f.waitImage(t, 1, "web", "app:2", 2)
		f.memberReady(t, 1, "web")
		f.waitSettled(t, fedDeployV2, "shop", "web", both)
		fed, err := dyn.Resource(fedDeployV2).Namespace("shop").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, masked, _ := unstructured.NestedFieldNoCopy(fed.Object, "spec", "placementMask"); masked {
			t.Errorf("the placement mask is left after rollout finish: %v", fed.Object["spec"])
		}
	})

	t.Run("the tenant's grant still holds", func(t *testing.T) {
		for _, c := range []struct {
			as, verb, resource, want string
		}{
			{"alice", "create", "federateddeployments.types.kubefed.io", "yes"},
			{"alice", "create", "federateddeployments.types.kubefed.io -n default", "no"},
		} {
			args := append([]string{"auth", "can-i", c.verb}, strings.Fields(c.resource)...)
			args = append(args, "--as="+c.as)
			if !strings.Contains(c.resource, " -n ") {
				args = append(args, "-n", "shop")
			}
			out, _ := k.Run(ctx, "", args...)
			if strings.TrimSpace(out) != c.want {
				t.Errorf("kubectl %s: %q, want %s", strings.Join(args, " "), strings.TrimSpace(out), c.want)
			}
		}
		if out := newCtl.ok(t, "tenant", "list"); !strings.Contains(out, "shop") {
			t.Errorf("tenant list after the upgrade:\n%s", out)
		}
	})

	t.Run("doctor names only the pending registration", func(t *testing.T) {
		var last string
		err := framework.Poll(ctx, 2*time.Second, 90*time.Second, func(context.Context) (bool, error) {
			out, errOut, code := newCtl.run(t, doctorArgs...)
			var r doctor.Report
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				last = fmt.Sprintf("exit %d, output is not JSON (%v): %s%s", code, err, out, errOut)
				return false, nil
			}
			var unexpected []string
			for _, fd := range r.Findings {
				if fd.Name != doctor.RegistrationPending || !strings.Contains(fd.Object, "edge-old") {
					unexpected = append(unexpected, fd.Name+" "+fd.Object+": "+fd.Message)
				}
			}
			last = fmt.Sprintf("exit %d, findings %v, unexpected %v, not checked %v", code, r.Findings, unexpected, r.NotChecked())
			return len(unexpected) == 0, nil
		})
		if err != nil {
			t.Errorf("doctor on the upgraded federation: %v; last: %s", err, last)
		}
		t.Logf("doctor: %s", last)
	})

	t.Run("every CRD the plane owns is at this release's schema", func(t *testing.T) {
		checkCRDStamps(ctx, t, plane.s, newRelease)
	})
	t.Logf("the whole test took %s", time.Since(began).Round(time.Second))
}

// oldObject is a federated object of one default type, as the previous
// release's users would write it (v1beta2), and the member resource it
// places.
type oldObject struct {
	gvr    schema.GroupVersionResource
	member schema.GroupVersionResource
	kind   string
	name   string
	// template is the object's spec.template, as YAML flow.
	template string
}

func (o oldObject) yaml(cells []string) string {
	return `apiVersion: types.kubefed.io/v1beta2
kind: ` + o.kind + `
metadata: {name: ` + o.name + `, namespace: shop}
spec:
  placement: ` + framework.CellPlacement(cells...) + `
  template: ` + o.template + `
`
}

// oldFixtures holds an object for each type the previous release enables
// by default (its federatedtypes.DefaultTypes), by FederatedTypeConfig
// name.
var oldFixtures = map[string]oldObject{
	"namespaces": {fedResource("federatednamespaces", "v1beta2"), namespaces, "FederatedNamespace", "shop", `{}`},
	"configmaps": {fedCMV2, configmaps, "FederatedConfigMap", "settings", `{data: {color: blue}}`},
	"secrets": {fedSecretV2, secrets, "FederatedSecret", "creds",
		`{type: Opaque, data: {password: "` + b64("s3cr3t-fed") + `"}}`},
	"services": {fedServiceV2, services, "FederatedService", "front", `{spec: {selector: {app: web}, ports: [{port: 80}]}}`},
	"serviceaccounts": {fedResource("federatedserviceaccounts", "v1beta2"), schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"},
		"FederatedServiceAccount", "robot", `{metadata: {labels: {app: web}}}`},
	"deployments.apps": {fedDeployV2, deployments, "FederatedDeployment", "web",
		`{metadata: {labels: {app: web}}, spec: {replicas: 2, selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: app, image: "app:1"}]}}}}`},
	"statefulsets.apps": {fedResource("federatedstatefulsets", "v1beta2"), schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"},
		"FederatedStatefulSet", "db",
		`{spec: {replicas: 1, serviceName: db, selector: {matchLabels: {app: db}}, template: {metadata: {labels: {app: db}}, spec: {containers: [{name: db, image: "db:1"}]}}}}`},
	"daemonsets.apps": {fedResource("federateddaemonsets", "v1beta2"), schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"},
		"FederatedDaemonSet", "node-agent",
		`{spec: {selector: {matchLabels: {app: node-agent}}, template: {metadata: {labels: {app: node-agent}}, spec: {containers: [{name: a, image: "agent:1"}]}}}}`},
	"jobs.batch": {fedJobV2, jobs, "FederatedJob", "once",
		`{spec: {template: {spec: {restartPolicy: Never, containers: [{name: run, image: "busybox:1"}]}}}}`},
	"ingresses.networking.k8s.io": {fedResource("federatedingresses", "v1beta2"), schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"},
		"FederatedIngress", "site",
		`{spec: {rules: [{host: shop.example.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: front, port: {number: 80}}}}]}}]}}`},
}

var rolebindings = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// enabledTypes are the names of the FederatedTypeConfigs the plane holds.
func enabledTypes(ctx context.Context, t *testing.T, dyn dynamic.Interface) []string {
	t.Helper()
	list, err := dyn.Resource(kubefed.FederatedTypeConfigsResource).Namespace(federatedtypes.DefaultNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing FederatedTypeConfigs: %v", err)
	}
	var out []string
	for _, ftc := range list.Items {
		out = append(out, ftc.GetName())
	}
	sort.Strings(out)
	return out
}

// keptList is a list of objects (all of a resource in a namespace, or
// one by name) that an upgrade must keep.
type keptList struct {
	gvr       schema.GroupVersionResource
	namespace string
	name      string
}

// keptObject is what an upgrade must not change: the UID and the
// object's content (spec; data and type for Secrets; subjects and roleRef
// for RoleBindings; labels for Namespaces).
type keptObject struct {
	UID     types.UID
	Content []byte
}

func snapshotKept(ctx context.Context, t *testing.T, dyn dynamic.Interface, lists []keptList) map[string]keptObject {
	t.Helper()
	out := map[string]keptObject{}
	for _, l := range lists {
		ri := dyn.Resource(l.gvr).Namespace(l.namespace)
		var items []unstructured.Unstructured
		if l.name != "" {
			obj, err := ri.Get(ctx, l.name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				t.Fatalf("reading %s %s/%s: %v", l.gvr.Resource, l.namespace, l.name, err)
			}
			items = []unstructured.Unstructured{*obj}
		} else {
			list, err := ri.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatalf("listing %s in %q: %v", l.gvr.Resource, l.namespace, err)
			}
			items = list.Items
		}
		for _, obj := range items {
			content := map[string]any{}
			for _, f := range []string{"spec", "data", "type", "subjects", "roleRef"} {
				if v, ok := obj.Object[f]; ok {
					content[f] = v
				}
			}
			if l.gvr.Resource == "namespaces" {
				content["labels"] = obj.GetLabels()
			}
			raw, err := json.Marshal(content)
			if err != nil {
				t.Fatal(err)
			}
			key := fmt.Sprintf("%s.%s %s/%s", l.gvr.Resource, l.gvr.Group, obj.GetNamespace(), obj.GetName())
			out[key] = keptObject{UID: obj.GetUID(), Content: raw}
		}
	}
	return out
}

// revisionLines counts the lines of `rollout history` that name a
// revision (a number first).
func revisionLines(history string) int {
	n := 0
	for _, line := range strings.Split(history, "\n") {
		fields := strings.Fields(line)
		if len(fields) > 0 && fields[0] != "" && strings.Trim(fields[0], "0123456789") == "" {
			n++
		}
	}
	return n
}
