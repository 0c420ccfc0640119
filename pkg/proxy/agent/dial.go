package agent

import (
	"net"

	"google.golang.org/grpc"
	"k8s.io/klog/v2"
	clientproto "sigs.k8s.io/apiserver-network-proxy/konnectivity-client/proto/client"
)

// refusedNetwork makes the ANP agent's dial fail without connecting
// anywhere: its name is the error the hub and the client see.
const refusedNetwork = "refused-target-not-this-cluster"

// rewriteStream rewrites the hub's dial requests on the agent's stream:
// a dial for <cluster>:<any port> goes to target, anything else is
// refused.
type rewriteStream struct {
	grpc.ClientStream
	cluster, target string
}

func (s *rewriteStream) RecvMsg(m any) error {
	if err := s.ClientStream.RecvMsg(m); err != nil {
		return err
	}
	if pkt, ok := m.(*clientproto.Packet); ok && pkt.Type == clientproto.PacketType_DIAL_REQ {
		rewriteDial(pkt.GetDialRequest(), s.cluster, s.target)
	}
	return nil
}

// rewriteDial points an allowed dial at target and makes any other fail.
func rewriteDial(req *clientproto.DialRequest, cluster, target string) {
	if req == nil {
		return
	}
	host, _, err := net.SplitHostPort(req.Address)
	if err != nil {
		host = req.Address
	}
	if host == cluster && req.Protocol == "tcp" {
		req.Address = target
		return
	}
	klog.InfoS("Refused a dial for another target", "cluster", cluster, "address", req.Address, "protocol", req.Protocol)
	req.Protocol = refusedNetwork
	req.Address = ""
}
