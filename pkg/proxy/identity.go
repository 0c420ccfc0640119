package proxy

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"sigs.k8s.io/apiserver-network-proxy/pkg/server/proxystrategies"
	"sigs.k8s.io/apiserver-network-proxy/proto/header"

	"github.com/cellfed/cellfed/pkg/pki"
)

// identifierHost is the only agent identifier the hub accepts; the value
// must be the agent's own cluster.
const identifierHost = string(header.Host)

// routingStrategies are ANP's routing strategies the hub uses: destHost
// only. With "default" listed, a dial for an unknown cluster would go to
// a random agent.
var routingStrategies = []proxystrategies.ProxyStrategy{proxystrategies.ProxyStrategyDestHost}

// verifiedPeerCert returns the verified leaf certificate of a gRPC
// stream's TLS peer.
func verifiedPeerCert(ctx context.Context) (*x509.Certificate, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil, errors.New("no peer information")
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok {
		return nil, errors.New("the connection is not TLS")
	}
	if len(info.State.VerifiedChains) == 0 || len(info.State.VerifiedChains[0]) == 0 {
		return nil, errors.New("no verified client certificate")
	}
	return info.State.VerifiedChains[0][0], nil
}

// agentFromCert returns the cluster a verified agent certificate names.
func agentFromCert(ctx context.Context) (string, *x509.Certificate, error) {
	cert, err := verifiedPeerCert(ctx)
	if err != nil {
		return "", nil, err
	}
	cluster, err := pki.ClusterFromAgentCert(cert)
	if err != nil {
		return "", nil, err
	}
	return cluster, cert, nil
}

// checkAgentMetadata enforces the binding of an agent's announced identity
// to the cluster its certificate names: exactly one agent ID of the form
// <cluster>/<suffix>, and identifiers that are only host=<cluster>. It
// returns the agent ID.
func checkAgentMetadata(cluster string, md metadata.MD) (string, error) {
	ids := md.Get(header.AgentID)
	if len(ids) != 1 {
		return "", fmt.Errorf("expected one agent ID, got %d", len(ids))
	}
	agentID := ids[0]
	suffix, ok := strings.CutPrefix(agentID, cluster+"/")
	if !ok || suffix == "" {
		return "", fmt.Errorf("agent ID %q does not start with %q, the cluster of the agent's certificate", agentID, cluster+"/")
	}
	idents := md.Get(header.AgentIdentifiers)
	if len(idents) != 1 {
		return "", fmt.Errorf("expected one set of agent identifiers, got %d", len(idents))
	}
	if err := checkIdentifiers(cluster, idents[0]); err != nil {
		return "", err
	}
	return agentID, nil
}

// checkIdentifiers accepts only host=<cluster> (repeated is harmless);
// IP, CIDR, default-route and unknown identifiers are refused, as is a
// host naming another cluster.
func checkIdentifiers(cluster, encoded string) error {
	values, err := url.ParseQuery(encoded)
	if err != nil {
		return fmt.Errorf("agent identifiers %q are not URL-encoded: %w", encoded, err)
	}
	if len(values) == 0 {
		return fmt.Errorf("no agent identifiers; announce %s=%s", identifierHost, cluster)
	}
	for key, vs := range values {
		if key != identifierHost {
			return fmt.Errorf("agent identifier type %q is not allowed; announce only %s=%s", key, identifierHost, cluster)
		}
		for _, v := range vs {
			if v != cluster {
				return fmt.Errorf("agent for cluster %q may not announce %s=%q", cluster, identifierHost, v)
			}
		}
	}
	return nil
}
