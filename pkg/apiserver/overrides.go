package apiserver

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericregistry "k8s.io/apiserver/pkg/registry/generic"

	"github.com/cellfed/cellfed/pkg/storage"
)

// overrideGetter stores the custom resources named by --datastore-override
// on their own kine. The API server's storage factory applies per-resource
// etcd servers (--etcd-servers-overrides) to built-in resources only: the
// apiextensions server gives every CRD the main store's configuration,
// so its options getter is wrapped here.
type overrideGetter struct {
	delegate genericregistry.RESTOptionsGetter
	servers  map[schema.GroupResource][]string
}

func newOverrideGetter(delegate genericregistry.RESTOptionsGetter, backends []storage.OverrideBackend) genericregistry.RESTOptionsGetter {
	if len(backends) == 0 {
		return delegate
	}
	g := overrideGetter{delegate: delegate, servers: map[schema.GroupResource][]string{}}
	for _, b := range backends {
		g.servers[b.Resource] = b.Endpoints
	}
	return g
}

// GetRESTOptions returns the delegate's options, pointed at the
// resource's own kine when it has one.
func (g overrideGetter) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (genericregistry.RESTOptions, error) {
	opts, err := g.delegate.GetRESTOptions(resource, example)
	if err != nil {
		return opts, err
	}
	servers, ok := g.servers[resource]
	if !ok || opts.StorageConfig == nil {
		return opts, nil
	}
	cfg := *opts.StorageConfig
	cfg.Transport.ServerList = append([]string(nil), servers...)
	opts.StorageConfig = &cfg
	return opts, nil
}
