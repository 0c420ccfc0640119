package proxy

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Dial results counted by cellfed_tunnel_dials_total.
const (
	dialSuccess = "success"
	dialError   = "error"   // the agent could not reach its API server, or refused the target
	dialNoAgent = "noagent" // no agent connected for the cluster
)

var (
	agentsGauge = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      "cellfed",
		Subsystem:      "tunnel",
		Name:           "agents",
		Help:           "Agents connected to the tunnel hub, per cluster.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"cluster"})
	dialsCounter = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "cellfed",
		Subsystem:      "tunnel",
		Name:           "dials_total",
		Help:           "Dials through the tunnel hub, per cluster and result (success, error, noagent).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"cluster", "result"})
	rejectedCounter = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "cellfed",
		Subsystem:      "tunnel",
		Name:           "failures_total",
		Help:           "Refused agents and proxy requests, per reason (agent_certificate, agent_identity, agent_admission, proxy_auth).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
	bytesCounter = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "cellfed",
		Subsystem:      "tunnel",
		Name:           "bytes_total",
		Help:           "Payload bytes through the tunnel hub, per cluster and direction (in: from the member, out: to the member).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"cluster", "direction"})

	registerOnce sync.Once
)

// registerMetrics adds the hub's metrics to the legacy registry, which the
// plane serves on /metrics.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(agentsGauge, dialsCounter, rejectedCounter, bytesCounter)
	})
}
