// Package registrations is the standalone tunnel hub's view of the
// plane's ClusterRegistrations: cellfed-proxy admits an agent only while
// its cluster's registration is approved (registration.AdmitAgent, the
// decision the plane's embedded hub makes) and drops the agent of a
// registration that is revoked, denied or deleted. It watches
// registrations through the plane's API with a narrow identity, one the
// ClusterRole cellfed:tunnel-hub (read of clusterregistrations, nothing
// else) is bound to.
package registrations

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/registration"
	"github.com/cellfed/cellfed/pkg/roles"
)

// resync is how often the informer replays its cache to the handlers.
const resync = 10 * time.Minute

// Watcher holds the plane's ClusterRegistrations for the hub.
type Watcher struct {
	client            dynamic.Interface
	informer          cache.SharedIndexInformer
	allowUnregistered bool
}

// New watches the ClusterRegistrations of the plane cfg reaches.
// disconnect, when set, is called with the cluster of every registration
// that is revoked, denied or deleted. allowUnregistered admits agents of
// clusters that have no registration (hand-issued certificates).
func New(cfg *rest.Config, allowUnregistered bool, disconnect func(cluster string) int) (*Watcher, error) {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the plane's client: %w", err)
	}
	factory := dynamicinformer.NewDynamicSharedInformerFactory(client, resync)
	w := &Watcher{
		client:            client,
		informer:          factory.ForResource(cellv1alpha1.ClusterRegistrationsResource).Informer(),
		allowUnregistered: allowUnregistered,
	}
	if disconnect != nil {
		drop := func(obj any) {
			if reg, ok := decode(obj); ok && registration.Disconnects(reg) {
				if n := disconnect(reg.Name); n > 0 {
					klog.InfoS("Disconnected the agent of a registration", "cluster", reg.Name, "phase", registration.Phase(reg.Status.Conditions), "connections", n)
				}
			}
		}
		if _, err := w.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    drop,
			UpdateFunc: func(_, obj any) { drop(obj) },
			DeleteFunc: func(obj any) {
				if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = d.Obj
				}
				if u, ok := obj.(*unstructured.Unstructured); ok {
					disconnect(u.GetName())
				}
			},
		}); err != nil {
			return nil, fmt.Errorf("watching registrations: %w", err)
		}
	}
	return w, nil
}

// Run watches until ctx ends.
func (w *Watcher) Run(ctx context.Context) { w.informer.RunWithContext(ctx) }

// WaitForSync waits until the first list arrived or ctx ends.
func (w *Watcher) WaitForSync(ctx context.Context) bool {
	return cache.WaitForCacheSync(ctx.Done(), w.informer.HasSynced)
}

// Admit is the hub's admission of an agent whose verified certificate
// names cluster.
func (w *Watcher) Admit(_ context.Context, cluster string, cert *x509.Certificate) error {
	if !w.informer.HasSynced() {
		return errors.New("the hub is still loading registrations from the plane; retry in a moment")
	}
	obj, exists, err := w.informer.GetStore().GetByKey(cluster)
	if err != nil {
		return fmt.Errorf("reading the registration of cluster %s: %w", cluster, err)
	}
	var reg *cellv1alpha1.ClusterRegistration
	if exists {
		r, ok := decode(obj)
		if !ok {
			return fmt.Errorf("the registration of cluster %s does not decode", cluster)
		}
		reg = r
	}
	return registration.AdmitAgent(reg, cluster, cert, w.allowUnregistered)
}

// ProxyCredentialGeneration is the hub's CONNECT credential generation of
// cluster (registration.ProxyCredentialGeneration).
func (w *Watcher) ProxyCredentialGeneration(cluster string) (int64, error) {
	if !w.informer.HasSynced() {
		return 0, errors.New("the hub is still loading registrations from the plane; retry in a moment")
	}
	obj, exists, err := w.informer.GetStore().GetByKey(cluster)
	if err != nil {
		return 0, fmt.Errorf("reading the registration of cluster %s: %w", cluster, err)
	}
	if !exists {
		return 0, nil
	}
	reg, ok := decode(obj)
	if !ok {
		return 0, fmt.Errorf("the registration of cluster %s does not decode", cluster)
	}
	return registration.ProxyCredentialGeneration(reg), nil
}

func decode(obj any) (*cellv1alpha1.ClusterRegistration, bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, false
	}
	var reg cellv1alpha1.ClusterRegistration
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &reg); err != nil {
		return nil, false
	}
	return &reg, true
}

// Check lists one registration, so a hub whose identity may not read
// them fails at start with what to do rather than refusing every agent.
func (w *Watcher) Check(ctx context.Context) error {
	_, err := w.client.Resource(cellv1alpha1.ClusterRegistrationsResource).List(ctx, metav1.ListOptions{Limit: 1})
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("the hub may not read ClusterRegistrations with --plane-kubeconfig: %w; bind the ClusterRole %s to its identity", err, roles.TunnelHub)
	case err != nil:
		return fmt.Errorf("reading ClusterRegistrations from the plane: %w", err)
	}
	return nil
}
