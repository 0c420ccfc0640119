// Package proxy is the tunnel hub: an apiserver-network-proxy (ANP)
// server that reaches member clusters through connections their agents
// open out to it, routed by cluster name.
//
// Agents connect to the agent listener with a client certificate from the
// agent CA naming one cluster (pki.ClusterFromAgentCert). The hub binds
// every agent stream to that cluster: the agent may announce only
// host=<cluster> and an agent ID <cluster>/<anything>, so it can neither
// receive another cluster's traffic nor close another cluster's
// connections. ANP routes with its destHost strategy only: a dial for
// <cluster>:<port> goes to an agent that announced host=<cluster>, and a
// dial for a cluster without an agent fails at once.
//
// Clients reach a cluster two ways:
//   - the gRPC tunnel frontend (konnectivity-client), mTLS with a
//     certificate from the plane's CA; see Dialer;
//   - the HTTP CONNECT frontend, the proxy of a KubeFedCluster's
//     spec.proxyURL (ConnectURL): the proxy user names the cluster and the
//     password is a per-cluster credential derived from a hub secret and
//     the cluster's credential generation (raised to revoke one cluster's
//     credential). The frontend speaks TLS by default (https:// proxy
//     URLs): Go's HTTP client verifies an https proxy with the CA it
//     verifies the member with, so the plane appends the hub's CA
//     (ConnectCA) to the tunnelled KubeFedCluster's caBundle, which is
//     what unmodified KubeFed puts in its REST config. The KubeFedCluster
//     keeps the member's real endpoint and CA, so TLS runs end to end from
//     the client to the member API server inside the TLS connection to
//     the hub.
//
// The agent listener and the client frontends never share trust: the
// agent listener accepts only agent-CA certificates, the gRPC frontend
// only plane-CA certificates.
package proxy
