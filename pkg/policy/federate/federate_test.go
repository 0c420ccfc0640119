package federate

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	policyv1alpha1 "github.com/cellfed/cellfed/pkg/apis/policy/v1alpha1"
	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
	"github.com/cellfed/cellfed/pkg/policy/selection"
	"github.com/cellfed/cellfed/pkg/tracing"
)

func object(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := utiljson.Unmarshal(j, &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  uid: 0b6a2c1e-0000-4000-8000-000000000001
  resourceVersion: "42"
  generation: 3
  creationTimestamp: "2026-12-01T00:00:00Z"
  managedFields: [{manager: kubectl, operation: Apply}]
  finalizers: [example.com/x]
  labels: {app: web}
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: "{}"
    deployment.kubernetes.io/revision: "3"
    cellfed.io/placed-by-policy: PropagationPolicy/shop/web
    team: shop
spec:
  replicas: 4
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "nginx:1.27"}]}
status:
  replicas: 4
  readyReplicas: 4
`

func TestTemplate(t *testing.T) {
	tests := []struct {
		name string
		obj  string
		want string // the template as JSON
	}{
		{
			name: "deployment: plane metadata and status dropped",
			obj:  deployment,
			want: `{"metadata":{"annotations":{"team":"shop"},"labels":{"app":"web"}},"spec":{"replicas":4,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"image":"nginx:1.27","name":"web"}]}}}}`,
		},
		{
			name: "service: cluster IPs and health-check port dropped",
			obj: `apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop, uid: u}
spec: {clusterIP: 10.0.0.7, clusterIPs: [10.0.0.7], healthCheckNodePort: 30001, ports: [{port: 80}], selector: {app: web}}
`,
			want: `{"spec":{"ports":[{"port":80}],"selector":{"app":"web"}}}`,
		},
		{
			name: "headless service keeps clusterIP None",
			obj: `apiVersion: v1
kind: Service
metadata: {name: db, namespace: shop}
spec: {clusterIP: None, clusterIPs: [None], ports: [{port: 5432}]}
`,
			want: `{"spec":{"clusterIP":"None","clusterIPs":["None"],"ports":[{"port":5432}]}}`,
		},
		{
			name: "job: generated selector and controller-uid labels dropped",
			obj: `apiVersion: batch/v1
kind: Job
metadata: {name: once, namespace: shop}
spec:
  selector: {matchLabels: {batch.kubernetes.io/controller-uid: abc}}
  template:
    metadata: {labels: {batch.kubernetes.io/controller-uid: abc, controller-uid: abc, job-name: once, app: once}}
    spec: {restartPolicy: Never, containers: [{name: a, image: x}]}
`,
			want: `{"spec":{"template":{"metadata":{"labels":{"app":"once","job-name":"once"}},"spec":{"containers":[{"image":"x","name":"a"}],"restartPolicy":"Never"}}}}`,
		},
		{
			name: "job with a manual selector keeps it",
			obj: `apiVersion: batch/v1
kind: Job
metadata: {name: once, namespace: shop}
spec:
  manualSelector: true
  selector: {matchLabels: {app: once}}
  template:
    metadata: {labels: {app: once}}
    spec: {restartPolicy: Never, containers: [{name: a, image: x}]}
`,
			want: `{"spec":{"manualSelector":true,"selector":{"matchLabels":{"app":"once"}},"template":{"metadata":{"labels":{"app":"once"}},"spec":{"containers":[{"image":"x","name":"a"}],"restartPolicy":"Never"}}}}`,
		},
		{
			name: "claim: bound volume and binder annotations dropped",
			obj: `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: shop, annotations: {pv.kubernetes.io/bind-completed: "yes", volume.kubernetes.io/storage-provisioner: x, keep: me}}
spec: {accessModes: [ReadWriteOnce], volumeName: pv-1, resources: {requests: {storage: 1Gi}}}
`,
			want: `{"metadata":{"annotations":{"keep":"me"}},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`,
		},
		{
			name: "service account: token secrets dropped",
			obj: `apiVersion: v1
kind: ServiceAccount
metadata: {name: sa, namespace: shop}
secrets: [{name: sa-token-x}]
imagePullSecrets: [{name: registry}]
`,
			want: `{"imagePullSecrets":[{"name":"registry"}]}`,
		},
		{
			name: "configmap: data kept",
			obj: `apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: shop, uid: u, resourceVersion: "1"}
data: {a: b}
binaryData: {c: ZA==}
immutable: true
`,
			want: `{"binaryData":{"c":"ZA=="},"data":{"a":"b"},"immutable":true}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := object(t, tt.obj)
			before := toJSON(t, obj.Object)
			if got := toJSON(t, Template(obj)); got != tt.want {
				t.Errorf("Template =\n  %s\nwant\n  %s", got, tt.want)
			}
			if toJSON(t, obj.Object) != before {
				t.Error("Template changed the native object")
			}
		})
	}
}

func webPolicy() Policy {
	return Policy{
		Ref: selection.Policy{Kind: policyv1alpha1.KindPropagationPolicy, Namespace: "shop", Name: "web-everywhere"},
		Spec: &policyv1alpha1.PropagationPolicySpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}},
			Placement: policyv1alpha1.Placement{
				Topologies: []typesv1beta2.Topology{{Name: "rz00a"}, {Name: "rz10a"}},
			},
			Overrides: []policyv1alpha1.Override{{TopologyName: "rz10a", ClusterOverrides: []policyv1alpha1.ClusterOverride{{Path: "/spec/replicas", Value: &runtime.RawExtension{Raw: []byte("5")}}}}},
			ReplicaDivision: &policyv1alpha1.ReplicaDivision{
				Mode:       typesv1beta2.DivisionDivide,
				Topologies: []policyv1alpha1.DivisionTopology{{Name: "rz00a", Weight: ptr.To[int32](2), MaxReplicas: ptr.To[int32](9)}},
			},
		},
	}
}

func TestBuild(t *testing.T) {
	native := object(t, deployment)
	fed, err := Build(native, webPolicy(), FederatedGVK("Deployment"))
	if err != nil {
		t.Fatal(err)
	}
	if fed.GetAPIVersion() != "types.kubefed.io/v1beta2" || fed.GetKind() != "FederatedDeployment" || fed.GetName() != "web" || fed.GetNamespace() != "shop" {
		t.Errorf("federated object is %s %s %s/%s", fed.GetAPIVersion(), fed.GetKind(), fed.GetNamespace(), fed.GetName())
	}
	refs := fed.GetOwnerReferences()
	if len(refs) != 1 || refs[0].UID != native.GetUID() || refs[0].Kind != "Deployment" || refs[0].APIVersion != "apps/v1" || refs[0].Controller == nil || !*refs[0].Controller {
		t.Errorf("owner references = %+v, want the Deployment as controller", refs)
	}
	if l := fed.GetLabels()[policyv1alpha1.LabelPropagationPolicy]; l != "web-everywhere" {
		t.Errorf("policy label = %q", l)
	}
	if a := PolicyOf(fed); a != "PropagationPolicy/shop/web-everywhere" {
		t.Errorf("policy annotation = %q", a)
	}

	// The spec reads back as a v1beta2 federated object with the policy's
	// placement, overrides and division.
	var obj typesv1beta2.FederatedObject
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(fed.Object, &obj); err != nil {
		t.Fatal(err)
	}
	s := obj.Spec
	if s.Placement.TopologyType != typesv1beta2.TopologyCell || len(s.Placement.Topologies) != 2 || s.Placement.Topologies[1].Name != "rz10a" {
		t.Errorf("placement = %+v", s.Placement)
	}
	if len(s.Overrides) != 1 || s.Overrides[0].TopologyName != "rz10a" || string(s.Overrides[0].ClusterOverrides[0].Value.Raw) != "5" {
		t.Errorf("overrides = %s", toJSON(t, s.Overrides))
	}
	if d := s.ReplicaDivision; d == nil || d.Mode != typesv1beta2.DivisionDivide || *d.Topologies[0].Weight != 2 || *d.Topologies[0].MaxReplicas != 9 {
		t.Errorf("replicaDivision = %s", toJSON(t, s.ReplicaDivision))
	}
	if s.PlacementMask != nil {
		t.Errorf("placementMask = %+v, want none", s.PlacementMask)
	}
	if !strings.Contains(string(s.Template.Raw), `"image":"nginx:1.27"`) || strings.Contains(string(s.Template.Raw), "readyReplicas") {
		t.Errorf("template = %s", s.Template.Raw)
	}
}

func TestBuildScopes(t *testing.T) {
	tests := []struct {
		name, obj, fedNamespace, label string
		ref                            selection.Policy
	}{
		{
			name:         "cluster-scoped object, cluster policy",
			obj:          "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: reader, uid: u1}\nrules: []\n",
			ref:          selection.Policy{Kind: policyv1alpha1.KindClusterPropagationPolicy, Name: "rbac"},
			fedNamespace: "",
			label:        policyv1alpha1.LabelClusterPropagationPolicy,
		},
		{
			name:         "a namespace's federated object lives in it",
			obj:          "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop, uid: u2}\n",
			ref:          selection.Policy{Kind: policyv1alpha1.KindClusterPropagationPolicy, Name: "namespaces"},
			fedNamespace: "shop",
			label:        policyv1alpha1.LabelClusterPropagationPolicy,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			native := object(t, tt.obj)
			fed, err := Build(native, Policy{Ref: tt.ref, Spec: &policyv1alpha1.PropagationPolicySpec{}}, FederatedGVK(native.GetKind()))
			if err != nil {
				t.Fatal(err)
			}
			if fed.GetNamespace() != tt.fedNamespace || fed.GetLabels()[tt.label] != tt.ref.Name {
				t.Errorf("namespace %q labels %v", fed.GetNamespace(), fed.GetLabels())
			}
		})
	}
}

func TestBuildNeedsUID(t *testing.T) {
	native := object(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: shop}\n")
	if _, err := Build(native, webPolicy(), FederatedGVK("ConfigMap")); err == nil {
		t.Fatal("Build of an object without a uid: no error")
	}
}

func TestMerge(t *testing.T) {
	native := object(t, deployment)
	desired, err := Build(native, webPolicy(), FederatedGVK("Deployment"))
	if err != nil {
		t.Fatal(err)
	}
	existing := object(t, `apiVersion: types.kubefed.io/v1beta2
kind: FederatedDeployment
metadata:
  name: web
  namespace: shop
  resourceVersion: "7"
  labels: {rollout.cellfed.io/active: "true", policy.cellfed.io/propagationpolicy: old-policy}
  annotations: {rollout.cellfed.io/auto: "true", policy.cellfed.io/policy: PropagationPolicy/shop/old-policy}
spec:
  template: {spec: {replicas: 1}}
  placement: {topologies: [{name: rz00a}]}
  placementMask: {topologies: [{name: rz00a}]}
  retainReplicas: true
status:
  ready: 1/1
`)
	tests := []struct {
		strategy policyv1alpha1.ReleaseStrategy
		mask     bool
	}{
		{strategy: policyv1alpha1.ReleaseImmediate, mask: false},
		{strategy: policyv1alpha1.ReleaseRollout, mask: true},
	}
	for _, tt := range tests {
		t.Run(string(tt.strategy), func(t *testing.T) {
			got := Merge(existing, desired, tt.strategy)
			if _, found, _ := unstructured.NestedMap(got.Object, "spec", "placementMask"); found != tt.mask {
				t.Errorf("placementMask kept = %v, want %v", found, tt.mask)
			}
			if _, found, _ := unstructured.NestedBool(got.Object, "spec", "retainReplicas"); found {
				t.Error("retainReplicas kept, but the policy does not set it")
			}
			if r, _, _ := unstructured.NestedInt64(got.Object, "spec", "template", "spec", "replicas"); r != 4 {
				t.Errorf("template replicas = %d, want the native 4", r)
			}
			if got.GetResourceVersion() != "7" || got.Object["status"] == nil {
				t.Error("resourceVersion or status not kept")
			}
			if got.GetLabels()["rollout.cellfed.io/active"] != "true" || got.GetAnnotations()["rollout.cellfed.io/auto"] != "true" {
				t.Error("the rollout's labels and annotations not kept")
			}
			if got.GetLabels()[policyv1alpha1.LabelPropagationPolicy] != "web-everywhere" || PolicyOf(got) != "PropagationPolicy/shop/web-everywhere" {
				t.Errorf("policy label/annotation = %v / %q", got.GetLabels(), PolicyOf(got))
			}
			if len(got.GetOwnerReferences()) != 1 {
				t.Errorf("owner references = %v", got.GetOwnerReferences())
			}
			if !Changed(existing, desired, tt.strategy) || Changed(got, desired, tt.strategy) {
				t.Error("Changed: want true before the merge and false after")
			}
			// As the API server returns it: whole numbers decode as int64.
			var stored map[string]any
			if err := utiljson.Unmarshal([]byte(toJSON(t, got.Object)), &stored); err != nil {
				t.Fatal(err)
			}
			if Changed(&unstructured.Unstructured{Object: stored}, desired, tt.strategy) {
				t.Error("Changed: the stored merge differs from desired (number types?)")
			}
			if existing.GetLabels()[policyv1alpha1.LabelPropagationPolicy] != "old-policy" {
				t.Error("Merge changed existing")
			}
		})
	}
}

func TestEditedOwnedFields(t *testing.T) {
	base := object(t, `apiVersion: types.kubefed.io/v1beta2
kind: FederatedConfigMap
metadata: {name: cfg, namespace: shop}
spec:
  template: {data: {a: b}}
  placement: {topologies: [{name: rz00a}]}
`)
	tests := []struct {
		name     string
		edit     func(u *unstructured.Unstructured)
		strategy policyv1alpha1.ReleaseStrategy
		want     []string
	}{
		{name: "labels only", edit: func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"x": "y"}) }},
		{name: "status only", edit: func(u *unstructured.Unstructured) { u.Object["status"] = map[string]any{"ready": "1/1"} }},
		{name: "template", edit: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "c", "spec", "template", "data", "a")
		}, want: []string{"spec.template"}},
		{name: "placement and overrides", edit: func(u *unstructured.Unstructured) {
			unstructured.RemoveNestedField(u.Object, "spec", "placement")
			_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"topologyName": "rz00a"}}, "spec", "overrides")
		}, want: []string{"spec.placement", "spec.overrides"}},
		{name: "mask under Immediate", edit: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, map[string]any{"topologies": []any{}}, "spec", "placementMask")
		}, want: []string{"spec.placementMask"}},
		{name: "mask under Rollout is the rollout's", strategy: policyv1alpha1.ReleaseRollout, edit: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, map[string]any{"topologies": []any{}}, "spec", "placementMask")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			edited := base.DeepCopy()
			tt.edit(edited)
			strategy := tt.strategy
			if strategy == "" {
				strategy = policyv1alpha1.ReleaseImmediate
			}
			if got := EditedOwnedFields(base, edited, strategy); !slices.Equal(got, tt.want) {
				t.Errorf("EditedOwnedFields = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestBuildCarriesTheTrace: the trace of the native object's last traced
// write goes on the federated object, so its release joins that trace,
// and never into the template (members would be written on every traced
// write, and would hold the plane's trace).
func TestBuildCarriesTheTrace(t *testing.T) {
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	native := object(t, deployment)
	ann := native.GetAnnotations()
	ann[tracing.Annotation] = tp
	native.SetAnnotations(ann)
	fed, err := Build(native, webPolicy(), FederatedGVK("Deployment"))
	if err != nil {
		t.Fatal(err)
	}
	if got := fed.GetAnnotations()[tracing.Annotation]; got != tp {
		t.Errorf("federated object's %s = %q, want %q", tracing.Annotation, got, tp)
	}
	if tmpl := toJSON(t, fed.Object["spec"]); strings.Contains(tmpl, tracing.Annotation) {
		t.Errorf("the template holds %s: %s", tracing.Annotation, tmpl)
	}

	// A later traced write of the native object changes the federated
	// object (its release gets the new trace); an untraced one keeps
	// what is there.
	next := native.DeepCopy()
	ann = next.GetAnnotations()
	ann[tracing.Annotation] = "00-1af7651916cd43dd8448eb211c80319c-c7ad6b7169203331-01"
	next.SetAnnotations(ann)
	desired, err := Build(next, webPolicy(), FederatedGVK("Deployment"))
	if err != nil {
		t.Fatal(err)
	}
	if !Changed(fed, desired, policyv1alpha1.ReleaseImmediate) {
		t.Error("a new trace of the native object does not change its federated object")
	}
	untraced := native.DeepCopy()
	ann = untraced.GetAnnotations()
	delete(ann, tracing.Annotation)
	untraced.SetAnnotations(ann)
	desired, err = Build(untraced, webPolicy(), FederatedGVK("Deployment"))
	if err != nil {
		t.Fatal(err)
	}
	if Changed(fed, desired, policyv1alpha1.ReleaseImmediate) {
		t.Error("an untraced native object changes its federated object")
	}
}
