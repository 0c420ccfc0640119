package admission

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// PlaneEndpointReason says why endpoint, a registration's
// spec.apiEndpoint, cannot be a member's: it is one of the plane's own
// serving addresses, planeAddresses (host:port each), and the plane
// would be federated to itself through the agent's tunnel. "" when it
// is not. A loopback endpoint on a port the plane serves on loopback is
// the plane's too, whichever loopback name it uses. It is a pure
// function.
func PlaneEndpointReason(endpoint string, planeAddresses []string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Hostname() == "" {
		return "" // the URL rule reports it
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	host := u.Hostname()
	for _, a := range planeAddresses {
		h, p, err := net.SplitHostPort(a)
		if err != nil || p != port {
			continue
		}
		if sameHost(h, host) || (isLoopback(h) && isLoopback(host)) {
			return fmt.Sprintf("%s is the plane's own address (it serves on %s), not a member's; give the member API server's URL as the agent reaches it (cellfed-agent --kubeconfig names it)", endpoint, a)
		}
	}
	return ""
}

func sameHost(a, b string) bool {
	if ia, ib := net.ParseIP(a), net.ParseIP(b); ia != nil && ib != nil {
		return ia.Equal(ib)
	}
	return strings.EqualFold(strings.TrimSuffix(a, "."), strings.TrimSuffix(b, "."))
}

func isLoopback(h string) bool {
	if ip := net.ParseIP(h); ip != nil {
		return ip.IsLoopback()
	}
	return strings.EqualFold(h, "localhost")
}
