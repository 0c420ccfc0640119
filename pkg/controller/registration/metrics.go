package registration

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/certexpiry"
	"github.com/cellfed/cellfed/pkg/pki"
)

// The plane's state metrics, read from the registration cache and the
// plane's PKI files at each scrape (on the plane's /metrics).
var (
	registrationCreatedDesc = metrics.NewDesc("cellfed_registration_created_timestamp_seconds",
		"When each ClusterRegistration was created (Unix seconds), by registration and phase (Pending, Approved, Registered, Denied, Revoked, Failed); time() minus it is how long a Pending one has waited.",
		[]string{"registration", "phase"}, nil, metrics.ALPHA, "")
	agentCertExpiryDesc = metrics.NewDesc("cellfed_registration_certificate_expiry_timestamp_seconds",
		"When the agent certificate the plane signed for each registration expires (Unix seconds), by registration.",
		[]string{"registration"}, nil, metrics.ALPHA, "")
	planeCertExpiryDesc = metrics.NewDesc("cellfed_plane_certificate_expiry_timestamp_seconds",
		"When the plane's certificates in its PKI directory expire (Unix seconds), by certificate (ca, agent-ca, serving).",
		[]string{"certificate"}, nil, metrics.ALPHA, "")
)

// registrationSample is one registration's contribution to the metrics.
type registrationSample struct {
	name, phase string
	created     time.Time
	certExpiry  time.Time // zero: no certificate signed yet
}

// registrationSamples turns cached registrations into samples, a pure
// function; objects that are not registrations are skipped.
func registrationSamples(objs []runtime.Object) []registrationSample {
	out := make([]registrationSample, 0, len(objs))
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		var reg cellv1alpha1.ClusterRegistration
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &reg); err != nil {
			continue
		}
		phase := string(reg.Status.Phase)
		if phase == "" {
			phase = string(cellv1alpha1.RegistrationPending)
		}
		s := registrationSample{name: reg.Name, phase: phase, created: reg.CreationTimestamp.Time}
		if reg.Status.CertificateExpiry != nil {
			s.certExpiry = reg.Status.CertificateExpiry.Time
		}
		out = append(out, s)
	}
	return out
}

// stateCollector exports registrations and the plane's certificates.
type stateCollector struct {
	metrics.BaseStableCollector
	list  func() ([]runtime.Object, error)
	files func() pki.Files
}

func (c *stateCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- registrationCreatedDesc
	ch <- agentCertExpiryDesc
	ch <- planeCertExpiryDesc
}

func (c *stateCollector) CollectWithStability(ch chan<- metrics.Metric) {
	objs, err := c.list()
	if err != nil {
		klog.ErrorS(err, "Listing registrations for metrics")
	}
	for _, s := range registrationSamples(objs) {
		ch <- metrics.NewLazyConstMetric(registrationCreatedDesc, metrics.GaugeValue, float64(s.created.Unix()), s.name, s.phase)
		if !s.certExpiry.IsZero() {
			ch <- metrics.NewLazyConstMetric(agentCertExpiryDesc, metrics.GaugeValue, float64(s.certExpiry.Unix()), s.name)
		}
	}
	files := c.files()
	for name, path := range map[string]string{"ca": files.CACert(), "agent-ca": files.AgentCACert(), "serving": files.ServingCert()} {
		if at, err := certexpiry.File(path); err == nil {
			ch <- metrics.NewLazyConstMetric(planeCertExpiryDesc, metrics.GaugeValue, float64(at.Unix()), name)
		}
	}
}

var (
	registerOnce sync.Once
	current      struct {
		sync.Mutex
		c *Controller
	}
)

// registerMetrics makes the latest controller of the process the one
// /metrics reads (a process builds one; tests build several).
func registerMetrics(c *Controller) {
	current.Lock()
	current.c = c
	current.Unlock()
	latest := func() *Controller {
		current.Lock()
		defer current.Unlock()
		return current.c
	}
	registerOnce.Do(func() {
		legacyregistry.CustomMustRegister(&stateCollector{
			list:  func() ([]runtime.Object, error) { return latest().regs.List(labelsEverything()) },
			files: func() pki.Files { return latest().pki },
		})
	})
}
