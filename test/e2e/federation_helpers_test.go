// The federation fixture: a plane, real members joined with cellfedctl,
// two tenant workspaces with cells and cellfed-controller, and how tests
// read what it released.

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/cellfed/cellfed/test/framework"
)

// federation is a plane with members joined through `cellfedctl join`,
// two tenant workspaces with cells, and cellfed-controller running.
type federation struct {
	plane      *framework.Server
	kubectl    framework.Kubectl
	dyn        dynamic.Interface
	members    []*framework.Server
	memberKube []kubernetes.Interface
	ctl        cellfedctl
	controller *framework.Controller
}

// cellsOn is where the fixture's cells live: member index by cell.
// member-0 hosts two cells of shop (rz00a, rz01a) and one of shop2.
var cellsOn = map[string]int{
	"shop/rz00a": 0, "shop/rz01a": 0, "shop/rz10a": 1, "shop/rz20a": 2,
	"shop2/rz00a": 0, "shop2/rz20a": 2,
}

// startFederation starts a federation with members members and
// cellfed-controller run with controllerArgs.
func startFederation(t *testing.T, members int, controllerArgs ...string) *federation {
	t.Helper()
	return startFederationWith(t, members, framework.PlaneOptions{}, controllerArgs...)
}

// startFederationWith is startFederation with the plane's options.
func startFederationWith(t *testing.T, members int, plane framework.PlaneOptions, controllerArgs ...string) *federation {
	t.Helper()
	f := &federation{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		f.members = framework.StartMembers(t, members)
	}()
	f.plane = framework.StartPlane(t, plane)
	wg.Wait()
	f.kubectl = framework.Kubectl{Kubeconfig: f.plane.Kubeconfig}
	f.dyn = dynamic.NewForConfigOrDie(f.plane.RESTConfig(t))
	f.ctl = newCellfedctl(t, f.plane.Kubeconfig)
	for i, m := range f.members {
		f.memberKube = append(f.memberKube, m.Client(t))
		f.ctl.ok(t, "join", fmt.Sprintf("member-%d", i), "--kubeconfig-member="+m.Kubeconfig)
	}
	f.kubectl.MustRun(t, framework.TenantNamespaces, "apply", "-f", "-")
	for cell, m := range cellsOn {
		ns, name, _ := strings.Cut(cell, "/")
		if m < members {
			f.ctl.ok(t, "cell", "create", name, "-n", ns, fmt.Sprintf("--cluster=member-%d", m), "--label=zone=z"+name[2:3])
		}
	}
	f.controller = framework.StartController(t, f.plane, controllerArgs...)
	return f
}

// memberObject reads an object from member i (nil when absent).
func (f *federation) memberObject(t *testing.T, i int, gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	dyn := dynamic.NewForConfigOrDie(f.members[i].RESTConfig(t))
	obj, err := dyn.Resource(gvr).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("reading %s %s/%s in member-%d: %v", gvr.Resource, ns, name, i, err)
	}
	return obj
}

// topologyStatus returns status.topologies of a v1beta2 object as
// "name=status" strings, and the Propagation condition's status.
func (f *federation) topologyStatus(t *testing.T, gvr schema.GroupVersionResource, ns, name string) ([]string, string) {
	t.Helper()
	obj, err := f.dyn.Resource(gvr).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return []string{err.Error()}, ""
	}
	tops, _, _ := unstructured.NestedSlice(obj.Object, "status", "topologies")
	var out []string
	for _, tp := range tops {
		m := tp.(map[string]any)
		out = append(out, fmt.Sprintf("%v=%v", m["name"], m["status"]))
	}
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	cond := ""
	for _, c := range conds {
		if m := c.(map[string]any); m["type"] == "Propagation" {
			cond = fmt.Sprint(m["status"])
		}
	}
	return out, cond
}

// waitStatus waits until status.topologies reads want ("name=status,...")
// and, unless wantCond is "", the Propagation condition is wantCond.
func (f *federation) waitStatus(t *testing.T, gvr schema.GroupVersionResource, ns, name, want, wantCond string) {
	t.Helper()
	eventually(t, "status of "+ns+"/"+name, func() (bool, string) {
		got, cond := f.topologyStatus(t, gvr, ns, name)
		s := strings.Join(got, ",")
		return s == want && (wantCond == "" || cond == wantCond), s + " Propagation=" + cond
	})
}

// topology is one entry of a v1beta2 object's status.topologies.
type topology struct {
	Name         string         `json:"name"`
	Status       string         `json:"status"`
	Generation   int64          `json:"generation"`
	Ready        *bool          `json:"ready"`
	RemoteStatus map[string]any `json:"remoteStatus"`
	Message      string         `json:"message"`
}

// fedStatus reads a v1beta2 object's generation and status.
func (f *federation) fedStatus(t *testing.T, gvr schema.GroupVersionResource, ns, name string) (gen, observed int64, tops map[string]topology, st map[string]any) {
	t.Helper()
	obj, err := f.dyn.Resource(gvr).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading %s %s/%s: %v", gvr.Resource, ns, name, err)
	}
	st, _, _ = unstructured.NestedMap(obj.Object, "status")
	observed, _, _ = unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	raw, _ := json.Marshal(st["topologies"])
	var list []topology
	_ = json.Unmarshal(raw, &list)
	tops = map[string]topology{}
	for _, tp := range list {
		tops[tp.Name] = tp
	}
	return obj.GetGeneration(), observed, tops, st
}

// waitSettled waits until the controller has handled the object's
// current generation and every topology has the wanted status; it
// returns the topologies then.
func (f *federation) waitSettled(t *testing.T, gvr schema.GroupVersionResource, ns, name string, want map[string]string) map[string]topology {
	t.Helper()
	var tops map[string]topology
	eventually(t, fmt.Sprintf("%s %s/%s settled as %v", gvr.Resource, ns, name, want), func() (bool, string) {
		gen, observed, got, _ := f.fedStatus(t, gvr, ns, name)
		tops = got
		ok := observed == gen && len(got) == len(want)
		for n, s := range want {
			ok = ok && got[n].Status == s
		}
		return ok, fmt.Sprintf("generation %d observed %d topologies %+v", gen, observed, got)
	})
	return tops
}

// memberDeployment reads shop/name in member i: its image, generation and
// resource version (zero values when absent).
func (f *federation) memberDeployment(t *testing.T, i int, name string) (img string, generation int64, rv string) {
	t.Helper()
	obj := f.memberObject(t, i, deployments, "shop", name)
	if obj == nil {
		return "", 0, ""
	}
	return image(obj), obj.GetGeneration(), obj.GetResourceVersion()
}

// patchMemberStatus plays the member's controllers: it merges status
// into the member object's status subresource.
func (f *federation) patchMemberStatus(t *testing.T, i int, gvr schema.GroupVersionResource, ns, name string, status map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"status": status})
	dyn := dynamic.NewForConfigOrDie(f.members[i].RESTConfig(t))
	if _, err := dyn.Resource(gvr).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, body, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatalf("patching the status of %s %s/%s in member-%d: %v", gvr.Resource, ns, name, i, err)
	}
}

// deploymentStatus is what a member's deployment controller reports for
// a rolled-out Deployment with replicas replicas at generation gen.
func deploymentStatus(gen int64, replicas, ready int) map[string]any {
	return map[string]any{"observedGeneration": gen, "replicas": replicas, "updatedReplicas": replicas,
		"readyReplicas": ready, "availableReplicas": ready}
}
