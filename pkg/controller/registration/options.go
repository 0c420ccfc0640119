package registration

import (
	"errors"
	"fmt"
	"time"

	"github.com/cellfed/cellfed/pkg/registration"
)

// Options configure the controller. NewOptions holds the defaults.
type Options struct {
	// FederationNamespace holds KubeFedClusters and their Secrets.
	FederationNamespace string
	// CertValidity is how long agent certificates are valid.
	CertValidity time.Duration
	// Workers reconcile registrations in parallel.
	Workers int
	// Resync re-checks every registration this often.
	Resync time.Duration
	// AllowUnregisteredAgents admits tunnel agents whose certificate (signed
	// by hand with the agent CA) belongs to no ClusterRegistration.
	AllowUnregisteredAgents bool
}

// NewOptions returns the defaults: 30-day certificates, 2 workers.
func NewOptions() Options {
	return Options{FederationNamespace: registration.DefaultMemberNamespace, CertValidity: 30 * 24 * time.Hour, Workers: 2, Resync: 10 * time.Minute}
}

// Validate checks the options.
func (o Options) Validate() error {
	var errs []error
	if o.CertValidity < 10*time.Second {
		errs = append(errs, fmt.Errorf("--agent-cert-validity=%v is too short; agent certificates must be valid for at least 10s (agents renew them at two thirds of their lifetime)", o.CertValidity))
	}
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("registration workers must be at least 1, got %d", o.Workers))
	}
	return errors.Join(errs...)
}
