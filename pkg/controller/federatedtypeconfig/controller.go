// Package federatedtypeconfig is the FederatedTypeConfig controller: for
// each FederatedTypeConfig with propagation enabled it runs one
// propagation controller (package propagation) and, beside it, one
// rollout controller (package rolloutcontroller), restarts them when the
// config changes, and writes each config's status as KubeFed's
// controller-manager does. It also answers the propagation controllers'
// questions that span types: a namespace's tenant and its
// FederatedNamespace placement.
package federatedtypeconfig

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/cellfed/cellfed/pkg/controller/informers"

	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	typesv1beta1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
	"github.com/cellfed/cellfed/pkg/controller/clusters"
	"github.com/cellfed/cellfed/pkg/controller/nativestatus"
	"github.com/cellfed/cellfed/pkg/controller/propagation"
	"github.com/cellfed/cellfed/pkg/controller/rolloutcontroller"
	"github.com/cellfed/cellfed/pkg/tenancy"
)

// Controller runs one propagation controller and one rollout controller
// per enabled FederatedTypeConfig, restarting them when the config
// changes.
type Controller struct {
	ctx      context.Context
	plane    dynamic.Interface
	reg      *clusters.Registry
	recorder record.EventRecorder
	opts     propagation.Options
	rollout  rolloutcontroller.Options
	caches   *informers.Factory
	informer cache.SharedIndexInformer
	// namespaces are the plane's namespaces, for their tenancy labels.
	namespaces cache.SharedIndexInformer

	retry time.Duration // before a failed type's controller starts again

	mu      sync.Mutex
	running map[string]*runningType
}

type runningType struct {
	typ    propagation.Type
	ctrl   *propagation.Controller
	cancel context.CancelFunc
}

// New returns the controller; the propagation and rollout controllers it
// starts live until ctx ends. Clusters come from reg, whose changes the
// caller passes on with ClusterChanged.
func New(ctx context.Context, plane dynamic.Interface, caches *informers.Factory, reg *clusters.Registry, recorder record.EventRecorder, opts propagation.Options, rolloutOpts rolloutcontroller.Options) *Controller {
	return &Controller{
		ctx: ctx, plane: plane, reg: reg, recorder: recorder, opts: opts, rollout: rolloutOpts, retry: 5 * time.Second,
		caches:     caches,
		informer:   caches.FederatedTypeConfigs(),
		namespaces: caches.Namespaces(),
		running:    map[string]*runningType{},
	}
}

// Run watches FederatedTypeConfigs and namespaces until ctx ends.
func (s *Controller) Run(ctx context.Context) error {
	sync := func(any) { s.sync() }
	if _, err := s.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: sync, UpdateFunc: func(_, o any) { sync(o) }, DeleteFunc: sync,
	}); err != nil {
		return err
	}
	// A namespace whose tenant changes changes which clusters its
	// objects may reach; one whose Pod Security level changes, what its
	// member namespaces enforce (its FederatedNamespace is written again).
	if _, err := s.namespaces.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*corev1.Namespace)
			n, ok2 := cur.(*corev1.Namespace)
			if ok1 && ok2 && (tenancy.TenantOf(o.Labels) != tenancy.TenantOf(n.Labels) ||
				o.Labels[tenancy.LabelPodSecurity] != n.Labels[tenancy.LabelPodSecurity]) {
				s.requeueNamespace(n.Name, true)
			}
		},
	}); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// Primed reports whether a propagation controller runs, with its records
// indexed, for every enabled FederatedTypeConfig: only then does the
// process's record index (informers.Records) list every object a cluster
// holds.
func (s *Controller) Primed() bool {
	if !s.informer.HasSynced() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, obj := range s.informer.GetStore().List() {
		t, ok, err := propagation.TypeFor(obj.(*unstructured.Unstructured))
		if err != nil || !ok {
			continue
		}
		r := s.running[t.Name]
		if r == nil || !r.ctrl.Primed() {
			return false
		}
	}
	return true
}

// sync starts controllers for new enabled types and stops the others. A
// controller that stops on an error is marked stopped and started again
// after a back-off.
func (s *Controller) sync() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return
	}
	want := map[string]*propagation.Type{}
	for _, obj := range s.informer.GetStore().List() {
		t, ok, err := propagation.TypeFor(obj.(*unstructured.Unstructured))
		if err != nil {
			klog.ErrorS(err, "Skipping FederatedTypeConfig")
			continue
		}
		if ok {
			want[t.Name] = t
		}
	}
	nsChanged := false
	for name, r := range s.running {
		if t := want[name]; t == nil || *t != r.typ {
			klog.InfoS("Stopping propagation", "type", name)
			r.cancel()
			delete(s.running, name)
			nsChanged = nsChanged || r.typ.IsNamespace()
		}
	}
	for name, t := range want {
		if s.running[name] != nil {
			continue
		}
		ctx, cancel := context.WithCancel(s.ctx)
		ctrl := propagation.New(t, s.opts, propagation.Env{
			Plane: s.plane, Clusters: s.reg, Recorder: s.recorder, Tenants: s.tenantOf,
			Namespaces: s.namespacePlacement, NamespaceChanged: s.namespaceChanged, Records: s.caches.Records(),
			PodSecurity: s.podSecurityOf,
		})
		r := &runningType{typ: *t, ctrl: ctrl, cancel: cancel}
		s.running[name] = r
		nsChanged = nsChanged || t.IsNamespace()
		// The type's rollouts run and stop with its propagation.
		go func() {
			caches := rolloutcontroller.Caches{Cells: s.caches.Cells(), KubeFedClusters: s.caches.KubeFedClusters(), StatusConfirmed: ctrl.StatusConfirmed}
			if t.Stored.Version == typesv1beta2.Version {
				caches.Federated = ctrl.Informer() // one watch of the type
			}
			if err := rolloutcontroller.New(t.Federated, s.plane, caches, s.recorder, s.rollout).Run(ctx); err != nil && ctx.Err() == nil {
				klog.ErrorS(err, "Rollout controller stopped", "type", name)
			}
		}()
		if t.Stored.Version == typesv1beta2.Version {
			// Native objects placed through the type get their status
			// aggregated over the cells (status.topologies is v1beta2's).
			go func() {
				if err := nativestatus.New(t.Target, t.TargetKind, s.plane, ctrl.Informer()).Run(ctx); err != nil && ctx.Err() == nil {
					klog.ErrorS(err, "Native status controller stopped", "type", name)
				}
			}()
		}
		go func() {
			err := ctrl.Run(ctx)
			if err == nil || ctx.Err() != nil {
				return
			}
			klog.ErrorS(err, "Propagation stopped; restarting it", "type", name, "after", s.retry)
			cancel()
			s.mu.Lock()
			if s.running[name] == r {
				delete(s.running, name)
			}
			s.mu.Unlock()
			time.AfterFunc(s.retry, s.sync)
		}()
	}
	if nsChanged {
		// The namespace rule of every namespaced type changed.
		for _, r := range s.running {
			go r.ctrl.ClusterChanged()
		}
	}
	s.reportLocked()
}

// reportLocked writes each FederatedTypeConfig's status as KubeFed's
// controller-manager does: observedGeneration and whether its
// propagation controller runs (kubefedctl disable waits for NotRunning).
// Only a change is written.
func (s *Controller) reportLocked() {
	for _, obj := range s.informer.GetStore().List() {
		u := obj.(*unstructured.Unstructured)
		state := "NotRunning"
		if s.running[u.GetName()] != nil {
			state = "Running"
		}
		cur, _, _ := unstructured.NestedString(u.Object, "status", "propagationController")
		gen, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		if cur == state && gen == u.GetGeneration() {
			continue
		}
		next := u.DeepCopy()
		_ = unstructured.SetNestedField(next.Object, state, "status", "propagationController")
		_ = unstructured.SetNestedField(next.Object, u.GetGeneration(), "status", "observedGeneration")
		go func() {
			_, err := s.plane.Resource(kubefed.FederatedTypeConfigsResource).Namespace(next.GetNamespace()).UpdateStatus(s.ctx, next, metav1.UpdateOptions{})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				// A conflict brings a newer object, and another sync.
				klog.ErrorS(err, "Writing FederatedTypeConfig status", "name", next.GetName())
			}
		}()
	}
}

// namespacePlacement is KubeFed's namespace placement for namespaced
// types: only while namespaces are federated (the Namespace type runs),
// from its controller's cache of FederatedNamespaces.
func (s *Controller) namespacePlacement(ns string) (*typesv1beta1.Placement, bool, error) {
	s.mu.Lock()
	var nsCtrl *propagation.Controller
	for _, r := range s.running {
		if r.typ.IsNamespace() {
			nsCtrl = r.ctrl
		}
	}
	s.mu.Unlock()
	if nsCtrl == nil {
		return nil, false, nil
	}
	obj, err := nsCtrl.FederatedNamespace(ns)
	if err != nil || obj == nil {
		return nil, true, err
	}
	p, err := propagation.PlacementOf(obj)
	if err != nil {
		// An unreadable FederatedNamespace federates nothing.
		return &typesv1beta1.Placement{Clusters: []typesv1beta1.ClusterReference{}}, true, nil
	}
	return p, true, nil
}

// namespaceChanged requeues the namespaced objects of ns in every type
// but the Namespace type: its FederatedNamespace changed.
func (s *Controller) namespaceChanged(ns string) { s.requeueNamespace(ns, false) }

// requeueNamespace requeues the objects of ns in every namespaced type,
// the FederatedNamespace too when withNamespaceType is set.
func (s *Controller) requeueNamespace(ns string, withNamespaceType bool) {
	s.mu.Lock()
	ctrls := make([]*propagation.Controller, 0, len(s.running))
	for _, r := range s.running {
		if r.typ.Namespaced && (withNamespaceType || !r.typ.IsNamespace()) {
			ctrls = append(ctrls, r.ctrl)
		}
	}
	s.mu.Unlock()
	for _, c := range ctrls {
		c.NamespaceChanged(ns)
	}
}

// tenantOf is the tenant of namespace ns ("" when it has none).
func (s *Controller) tenantOf(ns string) (string, error) {
	if !s.namespaces.HasSynced() {
		return "", fmt.Errorf("namespaces are not loaded yet")
	}
	obj, ok, err := s.namespaces.GetStore().GetByKey(ns)
	if err != nil || !ok {
		return "", err
	}
	return tenancy.TenantOf(obj.(*corev1.Namespace).Labels), nil
}

// podSecurityOf is the Pod Security level of namespace ns's member
// namespaces (tenancy.PodSecurityLevel).
func (s *Controller) podSecurityOf(ns string) (string, error) {
	if !s.namespaces.HasSynced() {
		return "", fmt.Errorf("namespaces are not loaded yet")
	}
	obj, ok, err := s.namespaces.GetStore().GetByKey(ns)
	if err != nil {
		return "", err
	}
	var labels map[string]string
	if ok {
		labels = obj.(*corev1.Namespace).Labels
	}
	return tenancy.PodSecurityLevel(ns, labels, s.opts.PodSecurityLevel), nil
}

// ClusterChanged tells every running propagation controller that the
// member clusters changed.
func (s *Controller) ClusterChanged() {
	s.mu.Lock()
	ctrls := make([]*propagation.Controller, 0, len(s.running))
	for _, r := range s.running {
		ctrls = append(ctrls, r.ctrl)
	}
	s.mu.Unlock()
	for _, c := range ctrls {
		c.ClusterChanged()
	}
}
