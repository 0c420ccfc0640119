package propagation

import (
	"context"
	"reflect"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/workqueue"

	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	typesv1b1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
	"github.com/cellfed/cellfed/pkg/controller/informers"
	"github.com/cellfed/cellfed/pkg/conversion"
	"github.com/cellfed/cellfed/pkg/propagatedversion"
)

// storedPV is a PropagatedVersion as KubeFed's controller stores it.
func storedPV(ns, name string, v propagatedversion.Versions) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "core.kubefed.io/v1alpha1", "kind": "PropagatedVersion",
		"metadata": map[string]any{"name": name, "namespace": ns, "resourceVersion": "3"},
		"status":   v.Content(),
	}}
}

// TestRecordInStatus checks how a release's record is written for a type
// the plane stores as v1beta2: in the status write (one plane write, no
// PropagatedVersion), nothing when the status already carries it, and a
// stored PropagatedVersion KubeFed's controller left is read as the
// record at start and deleted once the status carries it. The cell
// counts' index follows the record.
func TestRecordInStatus(t *testing.T) {
	rec := propagatedversion.Versions{TemplateVersion: "t1", OverridesVersion: "o1", Clusters: map[string]string{"m0": "gen:1", "m1": "gen:1"}}
	okStatus := []typesv1b1.ClusterStatus{{Name: "m0", Status: StatusOK, Generation: 2}, {Name: "m1", Status: StatusOK, Generation: 2}}
	for _, tc := range []struct {
		name string
		// inStatus is the record the stored object's status carries;
		// pv the stored PropagatedVersion, if any.
		inStatus, pv *propagatedversion.Versions
		next         propagatedversion.Versions
		// want: the plane actions (verb resource/subresource).
		want []string
	}{
		{"a new record rides in the status write", nil, nil, rec, []string{"update federateddeployments/status"}},
		{"a record already in the status costs nothing", &rec, nil, rec, nil},
		{"a changed record is one status write", &rec, nil,
			propagatedversion.Versions{TemplateVersion: "t2", OverridesVersion: "o1", Clusters: map[string]string{"m0": "gen:2", "m1": "gen:2"}},
			[]string{"update federateddeployments/status"}},
		{"KubeFed's stored record is superseded once", nil, &rec, rec,
			[]string{"update federateddeployments/status", "delete propagatedversions/"}},
		{"KubeFed's stored record wins over an older one in the status", &propagatedversion.Versions{TemplateVersion: "t0", Clusters: map[string]string{"m0": "gen:7"}}, &rec, rec,
			[]string{"update federateddeployments/status", "delete propagatedversions/"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The status the members show, so only the record can
			// make a write.
			rep := report{clusters: okStatus, placed: sets.New("m0", "m1")}
			st := nextStatus(typesv1b1.Status{}, 2, rep, PolicyFor(deploymentType).Ready != nil, metav1.Now())
			stored := fedWithStatus(t, &st)
			if err := conversion.Convert(stored.Object, "types.kubefed.io/v1beta2"); err != nil {
				t.Fatal(err)
			}
			if tc.inStatus != nil {
				stored.Object["status"].(map[string]any)["record"] = tc.inStatus.Content()
			}
			objs := []runtime.Object{stored.DeepCopy()}
			if tc.pv != nil {
				objs = append(objs, storedPV("ns1", "deployment-web", *tc.pv))
			}
			plane := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{kubefed.PropagatedVersionsResource: "PropagatedVersionList"}, objs...)
			index := informers.NewRecords()
			c := &Controller{typ: deploymentType, policy: PolicyFor(deploymentType), env: Env{Plane: plane}, objs: newObjects()}
			c.records = newVersionStore(plane, deploymentType, c.objs, index)
			if err := c.records.load(context.Background()); err != nil {
				t.Fatal(err)
			}
			plane.ClearActions()
			key := "ns1/web"
			cur := c.records.get(key, stored)
			if tc.pv != nil && !cur.exists {
				t.Fatal("the stored PropagatedVersion was not read as the record")
			}
			next := newRecord(tc.next.TemplateVersion, tc.next.OverridesVersion)
			next.clusters = tc.next.Clusters
			if err := c.records.save(context.Background(), key, stored, next); err != nil {
				t.Fatal(err)
			}
			fed, err := c.view(stored)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.writeStatus(context.Background(), stored, fed, rep); err != nil {
				t.Fatalf("writeStatus: %v", err)
			}
			var got []string
			for _, a := range plane.Actions() {
				got = append(got, a.GetVerb()+" "+a.GetResource().Resource+"/"+a.GetSubresource())
				if u, ok := a.(interface{ GetObject() runtime.Object }); ok && a.GetVerb() == "update" {
					obj := u.GetObject().(*unstructured.Unstructured)
					written, ok := propagatedversion.InStatus(obj.Object)
					if !ok || !written.Equal(tc.next) {
						t.Errorf("status.record written %+v (%v), want %+v", written, ok, tc.next)
					}
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("plane actions %v, want %v", got, tc.want)
			}
			if keys := sets.List(index.Keys("m0")); !reflect.DeepEqual(keys, []string{"ns1/deployment-web"}) {
				t.Errorf("index of m0 = %v, want the record", keys)
			}
			if c.records.get(key, nil).exists {
				t.Error("the stored PropagatedVersion is still taken as existing")
			}
		})
	}
}

// TestRecordsIndex checks the cell counts' index: a record counts for
// the clusters it lists, a change moves it, and a stopped type's records
// go.
func TestRecordsIndex(t *testing.T) {
	r := informers.NewRecords()
	var told [][]string
	r.OnChange(func(c []string) { told = append(told, c) })
	steps := []struct {
		name   string
		do     func()
		counts map[string]int
		told   []string
	}{
		{"a record", func() { r.Set("cm", "a/configmap-x", []string{"m1", "m0"}) }, map[string]int{"m0": 1, "m1": 1}, []string{"m0", "m1"}},
		{"the same again tells nobody", func() { r.Set("cm", "a/configmap-x", []string{"m0", "m1"}) }, map[string]int{"m0": 1, "m1": 1}, nil},
		{"moved", func() { r.Set("cm", "a/configmap-x", []string{"m1", "m2"}) }, map[string]int{"m0": 0, "m1": 1, "m2": 1}, []string{"m0", "m1", "m2"}},
		{"another type", func() { r.Set("deploy", "a/deployment-x", []string{"m2"}) }, map[string]int{"m1": 1, "m2": 2}, []string{"m2"}},
		{"forgotten", func() { r.Set("cm", "a/configmap-x", nil) }, map[string]int{"m1": 0, "m2": 1}, []string{"m1", "m2"}},
		{"forgetting none tells nobody", func() { r.Set("cm", "a/configmap-y", nil) }, map[string]int{"m2": 1}, nil},
		{"a type stops", func() { r.DropOwner("deploy") }, map[string]int{"m2": 0}, []string{"m2"}},
	}
	for _, s := range steps {
		told = nil
		s.do()
		for cluster, n := range s.counts {
			if got := r.Keys(cluster).Len(); got != n {
				t.Errorf("%s: %s counts %d, want %d", s.name, cluster, got, n)
			}
		}
		var flat []string
		for _, c := range told {
			flat = append(flat, c...)
		}
		if !slices.Equal(flat, s.told) {
			t.Errorf("%s: told %v, want %v", s.name, flat, s.told)
		}
	}
	var none *informers.Records
	none.Set("x", "y", []string{"z"})
	if none.Keys("z").Len() != 0 {
		t.Error("a nil index keeps records")
	}
}

// TestRecordDroppedByAnOldCRD checks that a type whose CRD drops
// status.record (built before it) keeps its records as stored
// PropagatedVersions once a status write comes back without the record.
func TestRecordDroppedByAnOldCRD(t *testing.T) {
	rep := report{clusters: []typesv1b1.ClusterStatus{{Name: "m0", Status: StatusOK, Generation: 2}}, placed: sets.New("m0")}
	stored := fedWithStatus(t, nil)
	if err := conversion.Convert(stored.Object, "types.kubefed.io/v1beta2"); err != nil {
		t.Fatal(err)
	}
	plane := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{kubefed.PropagatedVersionsResource: "PropagatedVersionList"}, stored.DeepCopy())
	plane.PrependReactor("update", "federateddeployments", func(a clienttesting.Action) (bool, runtime.Object, error) {
		obj := a.(clienttesting.UpdateAction).GetObject().(*unstructured.Unstructured).DeepCopy()
		unstructured.RemoveNestedField(obj.Object, "status", "record")
		return true, obj, nil
	})
	c := &Controller{typ: deploymentType, policy: PolicyFor(deploymentType), env: Env{Plane: plane}, objs: newObjects(),
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	defer c.queue.ShutDown()
	c.records = newVersionStore(plane, deploymentType, c.objs, nil)
	key := "ns1/web"
	next := newRecord("t1", "o1")
	next.clusters["m0"] = "gen:1"
	if err := c.records.save(context.Background(), key, stored, next); err != nil {
		t.Fatal(err)
	}
	fed, err := c.view(stored)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.writeStatus(context.Background(), stored, fed, rep); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.records.inStatusRecord(key, stored); ok {
		t.Fatal("records still kept in the status after the CRD dropped one")
	}
	plane.ClearActions()
	if err := c.records.save(context.Background(), key, fed, next); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range plane.Actions() {
		got = append(got, a.GetVerb()+" "+a.GetResource().Resource+"/"+a.GetSubresource())
	}
	if want := []string{"create propagatedversions/", "update propagatedversions/status"}; !slices.Equal(got, want) {
		t.Errorf("plane actions %v, want %v", got, want)
	}
}
