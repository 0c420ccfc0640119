package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/cellfed/cellfed/pkg/rollout"
	"github.com/cellfed/cellfed/test/framework"
)

var serviceAccounts = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}

// helmChartPolicy places the chart's objects of namespace shop on both
// cells: every Deployment, Service and ServiceAccount (the Deployment's
// ServiceAccount would follow it anyway, as a dependency). Each change
// of the Deployment goes out cell by cell, through an automatic rollout.
const helmChartPolicy = `
apiVersion: policy.cellfed.io/v1alpha1
kind: PropagationPolicy
metadata: {name: chart, namespace: shop}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment}
  - {apiVersion: v1, kind: Service}
  - {apiVersion: v1, kind: ServiceAccount}
  placement: {topologies: [{name: rz00a}, {name: rz10a}]}
  release: {strategy: Rollout, batchSize: 1}
`

// playMemberDeployments plays each member's Deployment controller and
// kubelets for namespace ns, as make demo does: a Deployment whose
// observedGeneration is behind its generation gets, after a short delay,
// the status of a rolled-out Deployment (every replica updated, ready
// and available; Available and Progressing conditions as kube's
// controller writes them). It returns when the test ends.
func playMemberDeployments(t *testing.T, f *federation, ns string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for i, m := range f.members {
		dyn := dynamic.NewForConfigOrDie(m.RESTConfig(t))
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				list, err := dyn.Resource(deployments).Namespace(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					continue
				}
				for _, d := range list.Items {
					if gen, _, _ := unstructured.NestedInt64(d.Object, "status", "observedGeneration"); gen >= d.GetGeneration() {
						continue
					}
					replicas, found, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
					if !found {
						replicas = 1
					}
					body, _ := json.Marshal(map[string]any{"status": memberRolledOut(d.GetGeneration(), int(replicas))})
					pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
					if _, err := dyn.Resource(deployments).Namespace(ns).Patch(pctx, d.GetName(), types.MergePatchType, body, metav1.PatchOptions{}, "status"); err != nil && ctx.Err() == nil {
						t.Logf("member-%d: playing deployment %s/%s ready: %v", i, ns, d.GetName(), err)
					}
					pcancel()
				}
			}
		}()
	}
}

// helmCommand runs bin/helm against the plane.
type helmCommand struct {
	bin, kubeconfig, home string
}

func newHelm(t *testing.T, kubeconfig string) helmCommand {
	t.Helper()
	bin := filepath.Join(framework.RepoRoot(t), "bin", "helm")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing: run `make helm` first (it builds Helm v4 from hack/helm): %v", bin, err)
	}
	return helmCommand{bin: bin, kubeconfig: kubeconfig, home: t.TempDir()}
}

// run runs helm with args and returns its standard output (Helm writes
// warnings, such as a group-readable kubeconfig, to standard error); it
// fails the test on a non-zero exit.
func (h helmCommand) run(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.bin, append([]string{"--kubeconfig=" + h.kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(h.home, "cache"), "HELM_CONFIG_HOME="+filepath.Join(h.home, "config"), "HELM_DATA_HOME="+filepath.Join(h.home, "data"))
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// memberImage is the image of deployment ns/name on member i ("" when
// absent).
func (f *federation) memberImage(t *testing.T, i int, ns, name string) string {
	t.Helper()
	d := f.memberObject(t, i, deployments, ns, name)
	if d == nil {
		return ""
	}
	return firstImage(d)
}

// imageOn is memberImage for a goroutine other than the test's: it
// reads through dyn and says what it could not read instead of failing
// the test.
func imageOn(ctx context.Context, dyn dynamic.Interface, ns, name string) string {
	d, err := dyn.Resource(deployments).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "error: " + err.Error()
	}
	return firstImage(d)
}

// firstImage is the image of a Deployment's first container.
func firstImage(d *unstructured.Unstructured) string {
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		return "no containers"
	}
	img, _ := cs[0].(map[string]any)["image"].(string)
	return img
}

// sampleCellByCell samples the images of shop/web on two members while a
// release goes from image from to image to, until the returned stop is
// called; stop reports whether a sample ever showed one member on to and
// the other still on from (the release went out cell by cell).
func sampleCellByCell(t *testing.T, members []dynamic.Interface, from, to string) (stop func() bool) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // when the release fails the test
	seen := make(chan bool, 1)
	go func() {
		oneByOne := false
		for ctx.Err() == nil {
			a, b := imageOn(ctx, members[0], "shop", "web"), imageOn(ctx, members[1], "shop", "web")
			oneByOne = oneByOne || (a == from && b == to) || (a == to && b == from)
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
		seen <- oneByOne
	}()
	return func() bool {
		cancel()
		return <-seen
	}
}

// chartResources are the resources of the kinds `helm create`'s chart
// renders with its default values.
var chartResources = map[string]schema.GroupVersionResource{
	"Deployment": deployments, "Service": services, "ServiceAccount": serviceAccounts,
}

// TestHelmNativePath: Helm v4, unmodified, against the plane, with an
// unmodified chart from `helm create` and one PropagationPolicy placing
// the namespace's workloads on two cells. `helm install --wait` returns
// once both cells run the Deployment (its status on the plane is the
// aggregate over the cells), and the members hold every object of the
// chart; `helm upgrade --wait` with a new image goes out cell by cell
// through the policy's rollout and returns once both cells run it;
// `helm rollback` brings the old image back to both, cell by cell too;
// `helm uninstall` removes from the members what the policy placed.
func TestHelmNativePath(t *testing.T) {
	t.Parallel()
	f := startFederation(t, 2)
	helm := newHelm(t, f.plane.Kubeconfig)
	charts := t.TempDir()
	helm.run(t, "create", filepath.Join(charts, "web"))
	f.kubectl.MustRun(t, helmChartPolicy, "apply", "-f", "-")
	playMemberDeployments(t, f, "shop")

	members := make([]dynamic.Interface, len(f.members))
	for i, m := range f.members {
		members[i] = dynamic.NewForConfigOrDie(m.RESTConfig(t))
	}

	start := time.Now()
	helm.run(t, "install", "web", filepath.Join(charts, "web"), "-n", "shop", "--wait", "--timeout=5m")
	t.Logf("helm install --wait returned after %v, both cells ready", time.Since(start).Round(100*time.Millisecond))

	// Every object the release holds, as Helm rendered it.
	type chartObject struct {
		gvr  schema.GroupVersionResource
		name string
	}
	var chartObjects []chartObject
	for _, o := range decodeYAMLDocs(t, helm.run(t, "get", "manifest", "web", "-n", "shop")) {
		gvr, ok := chartResources[o.GetKind()]
		if !ok {
			t.Fatalf("the chart renders a %s (%s): add its resource to chartResources and its kind to helmChartPolicy", o.GetKind(), o.GetName())
		}
		if ns := o.GetNamespace(); ns != "" && ns != "shop" {
			t.Fatalf("the chart renders %s %s in namespace %q, not shop", o.GetKind(), o.GetName(), ns)
		}
		chartObjects = append(chartObjects, chartObject{gvr, o.GetName()})
	}
	if len(chartObjects) != len(chartResources) {
		t.Errorf("helm get manifest: %d objects %v, want one of each of %d kinds", len(chartObjects), chartObjects, len(chartResources))
	}
	for i := range f.members {
		for _, o := range chartObjects {
			if f.memberObject(t, i, o.gvr, "shop", o.name) == nil {
				t.Errorf("after helm install: member-%d has no %s shop/%s", i, o.gvr.Resource, o.name)
			}
		}
		d := f.memberObject(t, i, deployments, "shop", "web")
		if d == nil {
			continue
		}
		if gen, _, _ := unstructured.NestedInt64(d.Object, "status", "observedGeneration"); gen < d.GetGeneration() {
			t.Errorf("helm install --wait returned while member-%d's Deployment was not rolled out (observedGeneration %d < generation %d)", i, gen, d.GetGeneration())
		}
	}

	// The chart's ServiceAccount: a member's token controller may list
	// token Secrets in it (each one did before Kubernetes 1.24). A write
	// from the plane keeps that list, so the plane and the member never
	// take turns rewriting it (karmada#2573).
	for i, m := range members {
		patch := fmt.Sprintf(`{"secrets":[{"name":"web-token-member-%d"}]}`, i)
		if _, err := m.Resource(serviceAccounts).Namespace("shop").Patch(context.Background(), "web", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatalf("playing member-%d's token controller: %v", i, err)
		}
	}
	f.kubectl.MustRun(t, "", "-n", "shop", "annotate", "serviceaccount", "web", "example.com/touched=yes")
	eventually(t, "the plane's change of the ServiceAccount on both members, their token Secrets kept", func() (bool, string) {
		var got []string
		ok := true
		for i := range f.members {
			sa := f.memberObject(t, i, serviceAccounts, "shop", "web")
			if sa == nil {
				return false, fmt.Sprintf("member-%d has no ServiceAccount", i)
			}
			secrets, _, _ := unstructured.NestedSlice(sa.Object, "secrets")
			touched := sa.GetAnnotations()["example.com/touched"]
			ok = ok && touched == "yes"
			got = append(got, fmt.Sprintf("member-%d: touched=%q secrets=%v", i, touched, secrets))
		}
		return ok, strings.Join(got, "; ")
	})
	for i := range f.members {
		secrets, _, _ := unstructured.NestedSlice(f.memberObject(t, i, serviceAccounts, "shop", "web").Object, "secrets")
		if want := fmt.Sprintf("web-token-member-%d", i); len(secrets) != 1 || secrets[0].(map[string]any)["name"] != want {
			t.Errorf("member-%d's ServiceAccount lists token Secrets %v after the plane's write, want its own %s", i, secrets, want)
		}
	}

	oldImage := f.memberImage(t, 0, "shop", "web")
	if oldImage == "" || oldImage != f.memberImage(t, 1, "shop", "web") {
		t.Fatalf("after install the members run %q and %q", oldImage, f.memberImage(t, 1, "shop", "web"))
	}

	// The upgrade goes out cell by cell: sampled while Helm waits, one
	// member runs the new image while the other still runs the old.
	const newTag = "1.27.5"
	repo, _, _ := strings.Cut(oldImage, ":")
	newImage := repo + ":" + newTag
	stop := sampleCellByCell(t, members, oldImage, newImage)
	start = time.Now()
	helm.run(t, "upgrade", "web", filepath.Join(charts, "web"), "-n", "shop", "--set=image.tag="+newTag, "--wait", "--timeout=5m")
	t.Logf("helm upgrade --wait returned after %v", time.Since(start).Round(100*time.Millisecond))
	oneByOne := stop()
	for i := range f.members {
		if img := f.memberImage(t, i, "shop", "web"); img != newImage {
			t.Errorf("helm upgrade --wait returned while member-%d runs %q, want %s", i, img, newImage)
		}
	}
	if !oneByOne {
		t.Error("the upgrade never showed one cell on the new image and the other on the old: it was not released cell by cell")
	}
	eventually(t, "the policy's rollout of the upgrade finished", func() (bool, string) {
		fed, err := f.dyn.Resource(fedDeployV2).Namespace("shop").Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ann := fed.GetAnnotations()
		_, masked, _ := unstructured.NestedFieldNoCopy(fed.Object, "spec", "placementMask")
		return ann[rollout.AnnotationState] == rollout.StateFinished && !masked,
			fmt.Sprintf("state %q message %q, mask left: %v", ann[rollout.AnnotationState], ann[rollout.AnnotationMessage], masked)
	})
	if out := f.kubectl.MustRun(t, "", "-n", "shop", "rollout", "status", "deployment/web", "--timeout=60s"); !strings.Contains(out, "successfully rolled out") {
		t.Errorf("kubectl rollout status against the plane after the upgrade: %q", out)
	}

	stop = sampleCellByCell(t, members, newImage, oldImage)
	helm.run(t, "rollback", "web", "1", "-n", "shop", "--wait", "--timeout=5m")
	oneByOne = stop()
	for i := range f.members {
		if img := f.memberImage(t, i, "shop", "web"); img != oldImage {
			t.Errorf("after helm rollback --wait member-%d runs %q, want %q", i, img, oldImage)
		}
	}
	if !oneByOne {
		t.Error("the rollback never showed one cell on the old image and the other on the new: it was not released cell by cell")
	}

	helm.run(t, "uninstall", "web", "-n", "shop", "--wait", "--timeout=5m")
	eventually(t, "the chart's objects removed from both members", func() (bool, string) {
		for i := range f.members {
			for _, o := range chartObjects {
				if f.memberObject(t, i, o.gvr, "shop", o.name) != nil {
					return false, fmt.Sprintf("member-%d still holds %s shop/%s", i, o.gvr.Resource, o.name)
				}
			}
		}
		return true, ""
	})
	if _, err := f.dyn.Resource(deployments).Namespace("shop").Get(context.Background(), "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("deployment shop/web on the plane after helm uninstall: %v, want NotFound", err)
	}
}
