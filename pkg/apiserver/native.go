package apiserver

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	svmv1beta1 "k8s.io/api/storagemigration/v1beta1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/kubernetes/pkg/controlplane"
	controlplaneapiserver "k8s.io/kubernetes/pkg/controlplane/apiserver"
	appsrest "k8s.io/kubernetes/pkg/registry/apps/rest"
	autoscalingrest "k8s.io/kubernetes/pkg/registry/autoscaling/rest"
	batchrest "k8s.io/kubernetes/pkg/registry/batch/rest"
	pvcstore "k8s.io/kubernetes/pkg/registry/core/persistentvolumeclaim/storage"
	corerest "k8s.io/kubernetes/pkg/registry/core/rest"
	networkingrest "k8s.io/kubernetes/pkg/registry/networking/rest"
	policyrest "k8s.io/kubernetes/pkg/registry/policy/rest"

	"github.com/cellfed/cellfed/pkg/servicestore"
)

// The plane stores the workload APIs app teams ship, as kube-apiserver
// serves them (validation, defaulting, discovery, OpenAPI, server-side
// apply), and runs none of them: no controller on the plane creates
// ReplicaSets, Pods or Jobs' Pods, allocates Service IPs or node ports,
// or binds volumes. docs/native-objects.md lists what it does per kind.

// nativeVersions are the group versions served besides the generic
// control plane's.
var nativeVersions = []schema.GroupVersion{
	appsv1.SchemeGroupVersion,
	batchv1.SchemeGroupVersion,
	networkingv1.SchemeGroupVersion,
	policyv1.SchemeGroupVersion,
	autoscalingv2.SchemeGroupVersion,
}

// notNative are the resources of nativeVersions the plane does not serve:
// controller revisions are written by the StatefulSet and DaemonSet
// controllers, ingress classes belong to each member's platform, and IP
// addresses and service CIDRs are the allocation the plane does not do.
var notNative = []schema.GroupVersionResource{
	appsv1.SchemeGroupVersion.WithResource("controllerrevisions"),
	networkingv1.SchemeGroupVersion.WithResource("ingressclasses"),
	networkingv1.SchemeGroupVersion.WithResource("ipaddresses"),
	networkingv1.SchemeGroupVersion.WithResource("servicecidrs"),
}

// resourceConfig is the generic control plane's with the native workload
// APIs enabled. --runtime-config applies on top of it.
func resourceConfig() *serverstorage.ResourceConfig {
	c := controlplane.DefaultGenericAPIResourceConfigSource()
	c.EnableVersions(nativeVersions...)
	c.DisableResources(notNative...)
	// Storage version migrations (served while the StorageVersionMigrator
	// gate is on, as it is by default): a release that changes a storage
	// version rewrites the stored objects through them.
	c.EnableVersions(svmv1beta1.SchemeGroupVersion)
	return c
}

// nativeStorageProviders replaces the generic core provider with one that
// also serves Services and PersistentVolumeClaims, and adds the native
// workload groups.
func nativeStorageProviders(generic []controlplaneapiserver.RESTStorageProvider) []controlplaneapiserver.RESTStorageProvider {
	out := make([]controlplaneapiserver.RESTStorageProvider, 0, len(generic)+5)
	for _, p := range generic {
		if core, ok := p.(*corerest.GenericConfig); ok {
			p = coreProvider{core}
		}
		out = append(out, p)
	}
	return append(out,
		appsrest.StorageProvider{},
		batchrest.RESTStorageProvider{},
		networkingrest.RESTStorageProvider{},
		policyrest.RESTStorageProvider{},
		autoscalingrest.RESTStorageProvider{},
	)
}

// coreProvider is the generic control plane's core group (config maps,
// secrets, service accounts, namespaces, events, resource quotas) plus
// Services, stored without allocation (package servicestore), and
// PersistentVolumeClaims, stored as Kubernetes stores them (no binder
// runs on the plane). Pods, nodes, endpoints and the rest of core stay
// unserved.
type coreProvider struct {
	*corerest.GenericConfig
}

func (p coreProvider) NewRESTStorage(resources serverstorage.APIResourceConfigSource, options generic.RESTOptionsGetter) (genericapiserver.APIGroupInfo, error) {
	info, err := p.GenericConfig.NewRESTStorage(resources, options)
	if err != nil {
		return info, err
	}
	storage := info.VersionedResourcesStorageMap["v1"]
	if storage == nil {
		storage = map[string]rest.Storage{}
	}
	if r := "services"; resources.ResourceEnabled(corev1.SchemeGroupVersion.WithResource(r)) {
		svc, status, err := servicestore.NewREST(options)
		if err != nil {
			return info, fmt.Errorf("services storage: %w", err)
		}
		storage[r], storage[r+"/status"] = svc, status
	}
	if r := "persistentvolumeclaims"; resources.ResourceEnabled(corev1.SchemeGroupVersion.WithResource(r)) {
		pvc, status, err := pvcstore.NewREST(options)
		if err != nil {
			return info, fmt.Errorf("persistentvolumeclaims storage: %w", err)
		}
		storage[r], storage[r+"/status"] = pvc, status
	}
	if len(storage) > 0 {
		info.VersionedResourcesStorageMap["v1"] = storage
	}
	return info, nil
}
