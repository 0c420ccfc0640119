package agent

import (
	"context"
	"net"

	"google.golang.org/grpc"
	"k8s.io/klog/v2"
	clientproto "sigs.k8s.io/apiserver-network-proxy/konnectivity-client/proto/client"
)

// refusedNetwork makes the ANP agent's dial fail without connecting
// anywhere: its name is the error the hub and the client see.
const refusedNetwork = "refused-target-not-this-cluster"

// rewriteDials intercepts the hub's dial requests on the agent's stream:
// a dial for <cluster>:<any port> goes to target, anything else is
// refused.
func rewriteDials(cluster, target string) grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		s, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			return nil, err
		}
		return &rewriteStream{ClientStream: s, cluster: cluster, target: target}, nil
	}
}

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
