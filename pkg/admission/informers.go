package admission

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	fedv1beta1 "sigs.k8s.io/kubefed/pkg/apis/core/v1beta1"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	typesv1b1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
	"github.com/cellfed/cellfed/pkg/federatedtypes"
	"github.com/cellfed/cellfed/pkg/placement"
)

// Resources admission watches.

// Informers is a Lookup backed by informers: namespaces from the API
// server's shared informers, Cells, KubeFedClusters and
// FederatedTypeConfigs from a dynamic informer factory started once their
// CRDs are served (Start).
type Informers struct {
	federationNamespace string
	namespaces          corelisters.NamespaceLister
	namespacesSynced    cache.InformerSynced
	factory             dynamicinformer.DynamicSharedInformerFactory
	cells, clusters     cache.GenericLister
	typeConfigs         cache.GenericLister
	synced              []cache.InformerSynced
	client              dynamic.Interface
}

// NewInformers prepares the informers; nothing runs until Start.
func NewInformers(client dynamic.Interface, namespaces corelisters.NamespaceLister, namespacesSynced cache.InformerSynced, federationNamespace string) *Informers {
	f := dynamicinformer.NewDynamicSharedInformerFactory(client, 10*time.Minute)
	i := &Informers{federationNamespace: federationNamespace, namespaces: namespaces, namespacesSynced: namespacesSynced, factory: f, client: client}
	for _, x := range []struct {
		gvr    schema.GroupVersionResource
		lister *cache.GenericLister
	}{
		{cellv1alpha1.CellsResource, &i.cells},
		{kubefed.KubeFedClustersResource, &i.clusters},
		{kubefed.FederatedTypeConfigsResource, &i.typeConfigs},
	} {
		inf := f.ForResource(x.gvr)
		*x.lister = inf.Lister()
		i.synced = append(i.synced, inf.Informer().HasSynced)
	}
	i.synced = append(i.synced, namespacesSynced)
	return i
}

// Start runs the informers until ctx is done.
func (i *Informers) Start(ctx context.Context) { i.factory.Start(ctx.Done()) }

// WaitForSync waits until every informer has synced, or ctx is done.
func (i *Informers) WaitForSync(ctx context.Context) bool {
	return cache.WaitForCacheSync(ctx.Done(), i.synced...)
}

// HasSynced says whether every informer has synced.
func (i *Informers) HasSynced() bool {
	for _, s := range i.synced {
		if !s() {
			return false
		}
	}
	return true
}

// liveReadTimeout bounds the read behind a cache miss.
const liveReadTimeout = 5 * time.Second

// orLive reads an object the cache does not hold from the API server.
// The caches lag writes a little (more on a loaded plane, or on another
// replica): one kubectl apply of a namespace and a Cell in it, or of a
// KubeFedCluster and a Cell on it, writes the second before the cache has
// the first. A miss is rare (new objects, bad input), so each costs one
// read. It returns nil, nil when the object does not exist.
func (i *Informers) orLive(gvr schema.GroupVersionResource, namespace, name string, cached runtime.Object, err error) (runtime.Object, error) {
	if !apierrors.IsNotFound(err) {
		return cached, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), liveReadTimeout)
	defer cancel()
	u, err := i.client.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s %s/%s missing from the cache: %w", gvr.Resource, namespace, name, err)
	}
	return u, nil
}

var namespacesResource = corev1.SchemeGroupVersion.WithResource("namespaces")

func (i *Informers) Namespace(name string) (*corev1.Namespace, error) {
	ns, err := i.namespaces.Get(name)
	if err == nil {
		return ns, nil
	}
	o, err := i.orLive(namespacesResource, "", name, nil, err)
	if o == nil || err != nil {
		return nil, err
	}
	var live corev1.Namespace
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.(*unstructured.Unstructured).Object, &live); err != nil {
		return nil, fmt.Errorf("decoding namespace %s: %w", name, err)
	}
	return &live, nil
}

func (i *Informers) Cell(namespace, name string) (*cellv1alpha1.Cell, error) {
	o, err := i.cells.ByNamespace(namespace).Get(name)
	o, err = i.orLive(cellv1alpha1.CellsResource, namespace, name, o, err)
	if o == nil || err != nil {
		return nil, err
	}
	return toCell(o)
}

func (i *Informers) Cells(namespace string, selector labels.Selector) ([]*cellv1alpha1.Cell, error) {
	list, err := i.cells.ByNamespace(namespace).List(selector)
	if err != nil {
		return nil, err
	}
	out := make([]*cellv1alpha1.Cell, 0, len(list))
	for _, o := range list {
		c, err := toCell(o)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func (i *Informers) ClusterLabels(name string) (map[string]string, bool, error) {
	o, err := i.clusters.ByNamespace(i.federationNamespace).Get(name)
	o, err = i.orLive(kubefed.KubeFedClustersResource, i.federationNamespace, name, o, err)
	if o == nil || err != nil {
		return nil, false, err
	}
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return nil, false, fmt.Errorf("unexpected %T in the cluster cache", o)
	}
	return u.GetLabels(), true, nil
}

func (i *Informers) CellsOnCluster(cluster string) ([]*cellv1alpha1.Cell, error) {
	list, err := i.cells.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var out []*cellv1alpha1.Cell
	for _, o := range list {
		c, err := toCell(o)
		if err != nil {
			return nil, err
		}
		if c.Spec.Cluster == cluster || (c.Spec.Move != nil && c.Spec.Move.To == cluster) {
			out = append(out, c)
		}
	}
	return out, nil
}

// namespacedTypes are the federated API resources of the enabled
// namespaced types, from the FederatedTypeConfigs.
func (i *Informers) namespacedTypes() ([]fedv1beta1.APIResource, error) {
	list, err := i.typeConfigs.ByNamespace(i.federationNamespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var out []fedv1beta1.APIResource
	for _, o := range list {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		var ftc fedv1beta1.FederatedTypeConfig
		if err := decodeContent(u.Object, &ftc); err != nil || ftc.Spec.FederatedType.Scope != "Namespaced" {
			continue
		}
		out = append(out, ftc.Spec.FederatedType)
	}
	return out, nil
}

// FederatedObjects lists the namespace's federated objects type by type
// (it runs only when a namespace's tenancy labels change) until limit.
func (i *Informers) FederatedObjects(namespace string, limit int) ([]string, error) {
	types, err := i.namespacedTypes()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out []string
	for _, ft := range types {
		gvr := schema.GroupVersionResource{Group: ft.Group, Version: ft.Version, Resource: ft.PluralName}
		objs, err := i.client.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{Limit: int64(limit)})
		if err != nil {
			if apierrors.IsNotFound(err) {
				continue // a type that is not served yet has no objects
			}
			return nil, fmt.Errorf("listing %s in %s: %w", gvr.Resource, namespace, err)
		}
		for _, obj := range objs.Items {
			out = append(out, ft.Kind+"/"+obj.GetName())
			if len(out) >= limit {
				return out, nil
			}
		}
	}
	return out, nil
}

// ObjectsPlacing lists the namespace's federated objects type by type (it
// runs only when a Cell is deleted) and counts those whose placement
// (KubeFed's view: cluster names or a cluster selector) selects cluster.
func (i *Informers) ObjectsPlacing(namespace, cluster string, clusterLabels map[string]string, limit int) ([]string, int, error) {
	types, err := i.namespacedTypes()
	if err != nil {
		return nil, 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	self := []placement.Topology{{Name: cluster, Labels: clusterLabels}}
	var names []string
	count := 0
	for _, ft := range types {
		gvr := schema.GroupVersionResource{Group: ft.Group, Version: ft.Version, Resource: ft.PluralName}
		objs, err := i.client.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) {
				continue // a type that is not served yet has no objects
			}
			return nil, 0, fmt.Errorf("listing %s in %s: %w", gvr.Resource, namespace, err)
		}
		for _, obj := range objs.Items {
			raw, found, _ := unstructured.NestedMap(obj.Object, "spec", "placement")
			if !found {
				continue
			}
			var p typesv1b1.Placement
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &p); err != nil {
				continue // an unreadable placement selects nothing
			}
			sel, err := placement.Clusters(p, self, func(t placement.Topology) placement.Topology { return t })
			if err != nil || !sel.Has(cluster) {
				continue
			}
			count++
			if len(names) < limit {
				names = append(names, ft.Kind+"/"+obj.GetName())
			}
		}
	}
	return names, count, nil
}

func (i *Informers) Target(federatedKind string) (federatedtypes.Target, bool, error) {
	list, err := i.typeConfigs.ByNamespace(i.federationNamespace).List(labels.Everything())
	if err != nil {
		return federatedtypes.Target{}, false, err
	}
	for _, o := range list {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		// Decode only the one that matches: this runs on every write.
		if kind, _, _ := unstructured.NestedString(u.Object, "spec", "federatedType", "kind"); kind != federatedKind {
			continue
		}
		var ftc fedv1beta1.FederatedTypeConfig
		if err := decodeContent(u.Object, &ftc); err != nil {
			continue
		}
		tt := ftc.Spec.TargetType
		return federatedtypes.Target{Group: tt.Group, Version: tt.Version, Kind: tt.Kind, Plural: tt.PluralName, Namespaced: tt.Scope == "Namespaced"}, true, nil
	}
	return federatedtypes.Target{}, false, nil
}

// CellSelectors reads the namespace's federated objects of every enabled
// namespaced type in v1beta2 (a list per type: it runs only when a Cell
// is written) and returns those placing by a cell selector.
func (i *Informers) CellSelectors(namespace string) ([]SelectorUse, error) {
	types, err := i.namespacedTypes()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out []SelectorUse
	for _, ft := range types {
		gvr := schema.GroupVersionResource{Group: ft.Group, Version: typesv1beta2.Version, Resource: ft.PluralName}
		objs, err := i.client.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue // a type that is not served yet has no objects to warn about
		}
		for _, obj := range objs.Items {
			var fo typesv1beta2.FederatedObject
			if err := decodeContent(obj.Object, &fo); err != nil || fo.Spec.Placement.TopologySelector == nil {
				continue
			}
			if t := fo.Spec.Placement.TopologyType; t != "" && t != typesv1beta2.TopologyCell {
				continue
			}
			out = append(out, SelectorUse{Kind: ft.Kind, Name: obj.GetName(), Selector: fo.Spec.Placement.TopologySelector})
		}
	}
	return out, nil
}

func toCell(o any) (*cellv1alpha1.Cell, error) {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("unexpected %T in the cell cache", o)
	}
	var c cellv1alpha1.Cell
	if err := decodeContent(u.Object, &c); err != nil {
		return nil, fmt.Errorf("decoding cell %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return &c, nil
}
