package apiserver

import (
	"net"
	"strconv"
)

// planeAddresses are the host:port the plane serves its API on: the bind
// address (every local address and loopback when it binds all), the
// external host and the serving certificate's extra names. Registration
// admission refuses a member endpoint among them.
func (o *Options) planeAddresses() []string {
	ss := o.ControlPlane.SecureServing
	port := strconv.Itoa(ss.BindPort)
	var hosts []string
	if ip := ss.BindAddress; ip == nil || ip.IsUnspecified() {
		hosts = append(hosts, "127.0.0.1", "::1")
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if n, ok := a.(*net.IPNet); ok {
					hosts = append(hosts, n.IP.String())
				}
			}
		}
	} else {
		hosts = append(hosts, ip.String())
	}
	if h := o.ControlPlane.GenericServerRunOptions.ExternalHost; h != "" {
		if host, _, err := net.SplitHostPort(h); err == nil {
			h = host
		}
		hosts = append(hosts, h)
	}
	hosts = append(hosts, o.ExtraSANs...)
	out := make([]string, 0, len(hosts))
	for _, h := range hosts {
		out = append(out, net.JoinHostPort(h, port))
	}
	return out
}
