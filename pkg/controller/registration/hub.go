package registration

import (
	"context"
	"crypto/x509"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/registration"
)

// Tunnel is what the controller needs of the tunnel hub.
type Tunnel interface {
	// Disconnect closes every connection of cluster's agent and returns
	// how many there were.
	Disconnect(cluster string) int
}

// disconnectRevoked drops the agent of a revoked, denied or deleting
// registration from this process's hub.
func (c *Controller) disconnectRevoked(obj any) {
	if c.tunnel == nil {
		return
	}
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	var reg cellv1alpha1.ClusterRegistration
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &reg); err != nil {
		return
	}
	if registration.Disconnects(&reg) {
		c.tunnel.Disconnect(reg.Name)
	}
}

// disconnectDeleted drops the agent of a deleted registration from this
// process's hub.
func (c *Controller) disconnectDeleted(obj any) {
	if c.tunnel == nil {
		return
	}
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.tunnel.Disconnect(key)
	}
}

// Admit is the embedded tunnel hub's admission of an agent whose
// certificate names cluster (registration.AdmitAgent decides).
func (c *Controller) Admit(_ context.Context, cluster string, cert *x509.Certificate) error {
	if !c.regsSync() {
		return fmt.Errorf("the plane is still loading registrations; retry in a moment")
	}
	reg, err := c.get(cluster)
	if err != nil {
		return fmt.Errorf("reading the registration of cluster %s: %w", cluster, err)
	}
	return registration.AdmitAgent(reg, cluster, cert, c.opts.AllowUnregisteredAgents)
}

// ProxyCredentialGeneration is the embedded hub's current CONNECT
// credential generation of cluster: its registration's
// spec.proxyCredentialGeneration, 0 for a cluster without one.
func (c *Controller) ProxyCredentialGeneration(cluster string) (int64, error) {
	if !c.regsSync() {
		return 0, fmt.Errorf("the plane is still loading registrations; retry in a moment")
	}
	reg, err := c.get(cluster)
	if err != nil {
		return 0, fmt.Errorf("reading the registration of cluster %s: %w", cluster, err)
	}
	return registration.ProxyCredentialGeneration(reg), nil
}

// CurrentCertificate is registration.CurrentCertificate.
func CurrentCertificate(reg *cellv1alpha1.ClusterRegistration, cert *x509.Certificate) error {
	return registration.CurrentCertificate(reg, cert)
}
