// Package proxy will hold the apiserver-network-proxy hub that reaches
// member clusters through agent-initiated reverse tunnels, by cluster name.
package proxy
