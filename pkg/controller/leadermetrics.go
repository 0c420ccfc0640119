package controller

// leader_election_master_status{name="cellfed-controller"} on /metrics:
// 1 on the replica holding the leader Lease, 0 on the others; the
// monitoring rules (manifests/monitoring) alert when no replica leads.
import _ "k8s.io/component-base/metrics/prometheus/clientgo/leaderelection"
