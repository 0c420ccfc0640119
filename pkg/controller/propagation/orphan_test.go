package propagation

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func memberObject(labels map[string]string, deleting bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace("ns")
	u.SetName("web")
	u.SetLabels(labels)
	if deleting {
		now := metav1.Now()
		u.SetDeletionTimestamp(&now)
	}
	return u
}

// TestOrphanReleases: once a federated object is gone, only member
// objects still labelled managed=true, and not being deleted, lose the
// label (KubeFed's "should have the managed label removed if not
// managed").
func TestOrphanReleases(t *testing.T) {
	for _, tc := range []struct {
		name    string
		members map[string]*unstructured.Unstructured
		want    []string
	}{
		{"nothing held", map[string]*unstructured.Unstructured{"m1": nil, "m2": nil}, nil},
		{"managed objects on two members", map[string]*unstructured.Unstructured{
			"m2": memberObject(map[string]string{"kubefed.io/managed": "true", "app": "web"}, false),
			"m1": memberObject(map[string]string{"kubefed.io/managed": "true"}, false),
			"m3": nil,
		}, []string{"m1", "m2"}},
		{"managed=false is not ours", map[string]*unstructured.Unstructured{
			"m1": memberObject(map[string]string{"kubefed.io/managed": "false"}, false),
		}, nil},
		{"no label", map[string]*unstructured.Unstructured{"m1": memberObject(nil, false)}, nil},
		{"being deleted is left alone", map[string]*unstructured.Unstructured{
			"m1": memberObject(map[string]string{"kubefed.io/managed": "true"}, true),
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := orphanReleases(tc.members); !slices.Equal(got, tc.want) {
				t.Fatalf("orphanReleases = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestTargetOfKey: the member object a gone federated object's key
// names, including a FederatedNamespace's (ns/ns is the Namespace ns).
func TestTargetOfKey(t *testing.T) {
	for _, tc := range []struct {
		name           string
		typ            Type
		key            string
		wantNS, wantNm string
	}{
		{"namespaced", Type{Namespaced: true, Target: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}}, "ns/web", "ns", "web"},
		{"namespace", Type{Namespaced: true, Target: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}}, "team/team", "", "team"},
		{"cluster scoped", Type{Target: schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}}, "reader", "", "reader"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns, name, err := tc.typ.targetOfKey(tc.key)
			if err != nil || ns != tc.wantNS || name != tc.wantNm {
				t.Fatalf("targetOfKey(%q) = %q, %q, %v; want %q, %q", tc.key, ns, name, err, tc.wantNS, tc.wantNm)
			}
		})
	}
}
