// Package informers is cellfed-controller's one set of plane caches.
// Every controller of the process reads Namespaces, the federation
// namespace's KubeFedClusters and Secrets, Cells, PropagatedVersions and
// FederatedTypeConfigs from here, so each is listed and watched once per
// process, and cached without managedFields. (The federated objects of
// each type are cached by that type's propagation controller, which
// starts and stops with the type.)
package informers

import (
	"sync"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/pkg/propagatedversion"
)

// Factory holds the shared caches. Build it with New, hand it to every
// controller, and Start it. A cache exists once a controller asks for it;
// one asked for after Start starts at once. A controller adds its
// handlers and indexers before or after Start (a late handler is told
// every cached object; indexers must come before the cache starts, so a
// controller adds them where it asks for the cache, before Start).
type Factory struct {
	all   dynamicinformer.DynamicSharedInformerFactory
	fedNS dynamicinformer.DynamicSharedInformerFactory
	kube  informers.SharedInformerFactory
	kubeF informers.SharedInformerFactory
	// stored lists and watches only stored PropagatedVersions.
	stored dynamicinformer.DynamicSharedInformerFactory

	// records are the propagation records the propagation controllers
	// keep in federated objects' status.
	records *Records

	mu     sync.Mutex
	stop   <-chan struct{} // set by Start
	caches map[string]cache.SharedIndexInformer
}

// New builds the caches of the plane the clients reach; fedNamespace
// holds the KubeFedClusters and their Secrets.
func New(plane dynamic.Interface, kube kubernetes.Interface, fedNamespace string) *Factory {
	return &Factory{
		all:   dynamicinformer.NewDynamicSharedInformerFactory(plane, 0),
		fedNS: dynamicinformer.NewFilteredDynamicSharedInformerFactory(plane, 0, fedNamespace, nil),
		kube:  informers.NewSharedInformerFactory(kube, 0),
		kubeF: informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(fedNamespace)),
		stored: dynamicinformer.NewFilteredDynamicSharedInformerFactory(plane, 0, metav1.NamespaceAll, func(o *metav1.ListOptions) {
			o.LabelSelector = propagatedversion.StoredOnly
		}),
		caches:  map[string]cache.SharedIndexInformer{},
		records: NewRecords(),
	}
}

// Records is the process's index of the propagation records kept in
// federated objects' status.
func (f *Factory) Records() *Records { return f.records }

// Start starts every cache asked for, and those asked for later.
func (f *Factory) Start(stop <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stop = stop
	f.startLocked()
}

func (f *Factory) startLocked() {
	f.all.Start(f.stop)
	f.fedNS.Start(f.stop)
	f.kube.Start(f.stop)
	f.kubeF.Start(f.stop)
	f.stored.Start(f.stop)
}

// get returns the cache named, making it with mk (and transform, when
// set) the first time.
func (f *Factory) get(name string, mk func() cache.SharedIndexInformer, transform cache.TransformFunc, indexers cache.Indexers) cache.SharedIndexInformer {
	f.mu.Lock()
	defer f.mu.Unlock()
	if inf, ok := f.caches[name]; ok {
		return inf
	}
	inf := mk()
	if transform != nil {
		if err := inf.SetTransform(transform); err != nil {
			klog.ErrorS(err, "Setting a cache's transform", "cache", name)
		}
	}
	// A dynamic informer comes indexed by namespace already: adding an
	// index of that name again would fail the whole call.
	have := inf.GetIndexer().GetIndexers()
	add := cache.Indexers{}
	for name, fn := range indexers {
		if _, ok := have[name]; !ok {
			add[name] = fn
		}
	}
	if len(add) > 0 {
		if err := inf.AddIndexers(add); err != nil {
			klog.ErrorS(err, "Indexing a cache", "cache", name)
		}
	}
	f.caches[name] = inf
	if f.stop != nil {
		f.startLocked()
	}
	return inf
}

// Namespaces of the plane.
func (f *Factory) Namespaces() cache.SharedIndexInformer {
	return f.get("namespaces", func() cache.SharedIndexInformer { return f.kube.Core().V1().Namespaces().Informer() }, StripManagedFields, nil)
}

// Secrets of the federation namespace.
func (f *Factory) Secrets() cache.SharedIndexInformer {
	return f.get("secrets", func() cache.SharedIndexInformer { return f.kubeF.Core().V1().Secrets().Informer() }, StripManagedFields, nil)
}

// KubeFedClusters of the federation namespace.
func (f *Factory) KubeFedClusters() cache.SharedIndexInformer {
	return f.get("kubefedclusters", func() cache.SharedIndexInformer {
		return f.fedNS.ForResource(kubefed.KubeFedClustersResource).Informer()
	}, StripManagedFields, nil)
}

// Cells of every namespace, indexed by namespace (cache.NamespaceIndex)
// and by the physical cluster they are on (CellsByCluster).
func (f *Factory) Cells() cache.SharedIndexInformer {
	return f.get("cells", func() cache.SharedIndexInformer { return f.all.ForResource(cellv1alpha1.CellsResource).Informer() },
		StripManagedFields, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, CellsByCluster: cellCluster})
}

// CellsByCluster indexes Cells by spec.cluster.
const CellsByCluster = "byCluster"

func cellCluster(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	cluster, _, _ := unstructured.NestedString(u.Object, "spec", "cluster")
	return []string{cluster}, nil
}

// FederatedTypeConfigs of the plane.
func (f *Factory) FederatedTypeConfigs() cache.SharedIndexInformer {
	return f.get("federatedtypeconfigs", func() cache.SharedIndexInformer {
		return f.all.ForResource(kubefed.FederatedTypeConfigsResource).Informer()
	}, StripManagedFields, nil)
}

// ReplicaSchedulingPreferences (KubeFed's RSPs) of every namespace.
func (f *Factory) ReplicaSchedulingPreferences() cache.SharedIndexInformer {
	return f.get("replicaschedulingpreferences", func() cache.SharedIndexInformer {
		return f.all.ForResource(kubefed.ReplicaSchedulingPreferencesResource).Informer()
	}, StripManagedFields, nil)
}

// StripManagedFields is a cache transform dropping metadata.managedFields
// of any API object.
func StripManagedFields(obj any) (any, error) {
	if m, err := apimeta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// ObjectsIn lists the cached objects of inf in namespace ns (inf must be
// indexed by namespace).
func ObjectsIn(inf cache.SharedIndexInformer, ns string) []metav1.Object {
	items, _ := inf.GetIndexer().ByIndex(cache.NamespaceIndex, ns)
	return objects(items)
}

// Objects lists every cached object of inf.
func Objects(inf cache.SharedIndexInformer) []metav1.Object { return objects(inf.GetStore().List()) }

func objects(items []any) []metav1.Object {
	out := make([]metav1.Object, 0, len(items))
	for _, item := range items {
		if m, err := apimeta.Accessor(item); err == nil {
			out = append(out, m)
		}
	}
	return out
}

// StoredPropagatedVersions are the PropagatedVersions the plane stores
// (KubeFed's controller writes them), without the views the plane computes
// from federated objects' status: those are known from Records, and a
// watch shows only stored ones.
func (f *Factory) StoredPropagatedVersions(transform cache.TransformFunc, indexers cache.Indexers) cache.SharedIndexInformer {
	return f.get("propagatedversions", func() cache.SharedIndexInformer {
		return f.stored.ForResource(kubefed.PropagatedVersionsResource).Informer()
	}, transform, indexers)
}
