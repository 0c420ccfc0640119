package admission

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
)

func storedObject(gvr schema.GroupVersionResource, kind, namespace, name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(gvr.GroupVersion().String())
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetLabels(labels)
	return u
}

// TestCacheMissReadsLive: what a cache does not hold yet (written a
// moment ago) is read from the API server before admission says it does
// not exist.
func TestCacheMissReadsLive(t *testing.T) {
	const fedNS = "kube-federation-system"
	// The server's copy of "cached" differs from the cache's: a hit must
	// not read the server.
	cachedCluster := storedObject(kubefed.KubeFedClustersResource, "KubeFedCluster", fedNS, "cached", map[string]string{"where": "server"})
	liveCluster := storedObject(kubefed.KubeFedClustersResource, "KubeFedCluster", fedNS, "live", map[string]string{"where": "server"})
	liveCell := storedObject(cellv1alpha1.CellsResource, "Cell", "shop", "rz00a", nil)
	liveNS := storedObject(namespacesResource, "Namespace", "", "shop", map[string]string{"cellfed.io/tenant": "acme"})

	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		kubefed.KubeFedClustersResource: "KubeFedClusterList",
		cellv1alpha1.CellsResource:      "CellList",
		namespacesResource:              "NamespaceList",
	}, cachedCluster, liveCluster, liveCell, liveNS)
	nsIndexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	i := NewInformers(client, corelisters.NewNamespaceLister(nsIndexer), func() bool { return true }, fedNS)
	// Only "cached" is in the cache; nothing was started.
	clusterStore := i.factory.ForResource(kubefed.KubeFedClustersResource).Informer().GetStore()
	if err := clusterStore.Add(storedObject(kubefed.KubeFedClustersResource, "KubeFedCluster", fedNS, "cached", map[string]string{"where": "cache"})); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		cluster    string
		wantOK     bool
		wantLabels string
	}{
		{"cached", true, "cache"},
		{"live", true, "server"},
		{"absent", false, ""},
	} {
		lbls, ok, err := i.ClusterLabels(tc.cluster)
		if err != nil || ok != tc.wantOK || lbls["where"] != tc.wantLabels {
			t.Errorf("ClusterLabels(%s) = %v, %v, %v; want where=%q, %v", tc.cluster, lbls, ok, err, tc.wantLabels, tc.wantOK)
		}
	}

	if c, err := i.Cell("shop", "rz00a"); err != nil || c == nil || c.Name != "rz00a" {
		t.Errorf("Cell(shop, rz00a) = %v, %v; want the Cell the server holds", c, err)
	}
	if c, err := i.Cell("shop", "nope"); err != nil || c != nil {
		t.Errorf("Cell(shop, nope) = %v, %v; want nil, nil", c, err)
	}

	ns, err := i.Namespace("shop")
	if err != nil || ns == nil || ns.Labels["cellfed.io/tenant"] != "acme" {
		t.Errorf("Namespace(shop) = %v, %v; want the server's, with its tenant label", ns, err)
	}
	if ns, err := i.Namespace("nope"); err != nil || ns != nil {
		t.Errorf("Namespace(nope) = %v, %v; want nil, nil", ns, err)
	}
	if err := nsIndexer.Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cached"}}); err != nil {
		t.Fatal(err)
	}
	if ns, err := i.Namespace("cached"); err != nil || ns == nil || ns.Name != "cached" {
		t.Errorf("Namespace(cached) = %v, %v; want the cached one", ns, err)
	}
}
