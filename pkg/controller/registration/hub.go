package registration

import (
	"context"
	"crypto/x509"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/pki"
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
	if reg.DeletionTimestamp != nil || registration.Phase(reg.Status.Conditions) == cellv1alpha1.RegistrationRevoked ||
		registration.Phase(reg.Status.Conditions) == cellv1alpha1.RegistrationDenied {
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

// Admit is the tunnel hub's admission of an agent whose certificate
// names cluster: an agent certificate is honoured only while the
// cluster's registration is approved. A revoked, denied or deleted
// registration refuses the agent even though its certificate has not
// expired.
func (c *Controller) Admit(_ context.Context, cluster string, cert *x509.Certificate) error {
	if !c.regsSync() {
		return fmt.Errorf("the plane is still loading registrations; retry in a moment")
	}
	reg, err := c.get(cluster)
	if err != nil {
		return fmt.Errorf("reading the registration of cluster %s: %w", cluster, err)
	}
	if reg == nil {
		// A certificate the holder of the agent CA key issued by hand (a
		// registration that issued certificates cannot disappear before
		// they expire: its finalizer). Admitted only when the plane is
		// told to.
		if c.opts.AllowUnregisteredAgents {
			return nil
		}
		return fmt.Errorf("cluster %s has no ClusterRegistration; register it (cellfed-agent with a bootstrap token from `cellfedctl token create`), or start the plane with --tunnel-allow-unregistered-agents to admit agent certificates issued by hand", cluster)
	}
	if reg.DeletionTimestamp != nil {
		return fmt.Errorf("the registration of cluster %s is being deleted; its agent certificates are refused until they expire", cluster)
	}
	switch phase := registration.Phase(reg.Status.Conditions); phase {
	case cellv1alpha1.RegistrationApproved, cellv1alpha1.RegistrationRegistered, cellv1alpha1.RegistrationFailed:
		return CurrentCertificate(reg, cert)
	default:
		return fmt.Errorf("the registration of cluster %s is %s; an administrator must approve it (a revoked one must be deleted and the agent must register again)", cluster, phase)
	}
}

// CurrentCertificate admits only the registration's current agent
// certificate: the one last signed (status.certificate) and, while the
// agent has not switched to it yet, the one it acknowledged using (the
// annotation cellfed.io/agent-certificate-serial). A certificate a
// renewal superseded, or one issued by hand for a registered cluster, is
// refused although it has not expired.
func CurrentCertificate(reg *cellv1alpha1.ClusterRegistration, cert *x509.Certificate) error {
	if cert == nil {
		return fmt.Errorf("no agent certificate was presented")
	}
	serial := cert.SerialNumber.Text(16)
	if len(reg.Status.Certificate) > 0 {
		signed, err := pki.ParseCertificatePEM(reg.Status.Certificate)
		if err != nil {
			return fmt.Errorf("the registration of cluster %s holds no valid certificate: %w", reg.Name, err)
		}
		if signed.SerialNumber.Cmp(cert.SerialNumber) == 0 {
			return nil
		}
	}
	if ack := reg.Annotations[registration.AnnotationAgentCertificate]; ack != "" && ack == serial {
		return nil
	}
	return fmt.Errorf("agent certificate %s of cluster %s is not the registration's current one (superseded by a renewal, or issued by hand); the agent must use the certificate the plane signed last", serial, reg.Name)
}
