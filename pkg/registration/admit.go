package registration

import (
	"crypto/x509"
	"fmt"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/pki"
)

// AdmitAgent is the tunnel hub's decision on an agent whose verified
// certificate names cluster, given the cluster's registration (nil when
// there is none): an agent certificate is honoured only while the
// registration is approved, and only the registration's current
// certificate. A revoked, denied or deleted registration refuses the agent
// although its certificate has not expired. A cluster without a
// registration (a certificate the holder of the agent CA key issued by
// hand) is admitted only when allowUnregistered is set. The plane's hub
// and the standalone cellfed-proxy both decide with it.
func AdmitAgent(reg *cellv1alpha1.ClusterRegistration, cluster string, cert *x509.Certificate, allowUnregistered bool) error {
	if reg == nil {
		if allowUnregistered {
			return nil
		}
		return fmt.Errorf("cluster %s has no ClusterRegistration; register it (cellfed-agent with a bootstrap token from `cellfedctl token create`), or start the hub with --tunnel-allow-unregistered-agents to admit agent certificates issued by hand", cluster)
	}
	if reg.DeletionTimestamp != nil {
		return fmt.Errorf("the registration of cluster %s is being deleted; its agent certificates are refused until they expire", cluster)
	}
	switch phase := Phase(reg.Status.Conditions); phase {
	case cellv1alpha1.RegistrationApproved, cellv1alpha1.RegistrationRegistered, cellv1alpha1.RegistrationFailed:
		return CurrentCertificate(reg, cert)
	default:
		return fmt.Errorf("the registration of cluster %s is %s; an administrator must approve it (a revoked one must be deleted and the agent must register again)", cluster, phase)
	}
}

// Disconnects says whether the hubs must drop the agent of reg at once:
// the registration is revoked, denied or being deleted.
func Disconnects(reg *cellv1alpha1.ClusterRegistration) bool {
	phase := Phase(reg.Status.Conditions)
	return reg.DeletionTimestamp != nil || phase == cellv1alpha1.RegistrationRevoked || phase == cellv1alpha1.RegistrationDenied
}

// CurrentCertificate admits only the registration's current agent
// certificate: the one last signed (status.certificate) and, while the
// agent has not switched to it yet, the one it acknowledged using (the
// annotation AnnotationAgentCertificate). A certificate a renewal
// superseded, or one issued by hand for a registered cluster, is refused
// although it has not expired.
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
	if ack := reg.Annotations[AnnotationAgentCertificate]; ack != "" && ack == serial {
		return nil
	}
	return fmt.Errorf("agent certificate %s of cluster %s is not the registration's current one (superseded by a renewal, or issued by hand); the agent must use the certificate the plane signed last", serial, reg.Name)
}

// ProxyCredentialGeneration is the generation of cluster's credential on
// the hubs' CONNECT frontend: the registration's
// spec.proxyCredentialGeneration, 0 without a registration (a hand-made
// tunnelled cluster). The hubs accept only the credential of this
// generation.
func ProxyCredentialGeneration(reg *cellv1alpha1.ClusterRegistration) int64 {
	if reg == nil {
		return 0
	}
	return reg.Spec.ProxyCredentialGeneration
}
