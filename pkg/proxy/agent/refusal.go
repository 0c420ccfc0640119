package agent

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	clientproto "sigs.k8s.io/apiserver-network-proxy/konnectivity-client/proto/client"
	"sigs.k8s.io/apiserver-network-proxy/proto/header"
)

// refusals slows down an agent the hub refuses (a revoked registration, a
// superseded certificate): each refusal in a row waits longer before the
// next attempt, up to a cap, so a refused agent does not knock once a
// second forever; a connection the hub accepts starts over. It also keeps
// the hub's reason, which gRPC hides from ANP's agent.
type refusals struct {
	base, limit time.Duration

	mu   sync.Mutex
	n    int
	last error
}

// refusalDelay is the wait before the attempt after n refusals in a row:
// none after none, then base growing by half each time, at most limit.
func refusalDelay(base, limit time.Duration, n int) time.Duration {
	if n <= 0 {
		return 0
	}
	d := float64(base) * math.Pow(1.5, float64(n-1))
	if d > float64(limit) {
		return limit
	}
	return time.Duration(d)
}

func (r *refusals) delay() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return refusalDelay(r.base, r.limit, r.n)
}

func (r *refusals) refused(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	r.last = err
}

func (r *refusals) accepted() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n, r.last = 0, nil
}

// Last is the hub's reason for refusing the latest attempt, nil once an
// attempt was accepted.
func (r *refusals) Last() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// interceptStream waits out the refusal backoff before each connection
// attempt and wraps the stream so that refusals are seen and dials are
// rewritten.
func interceptStream(cluster, target string, r *refusals) grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		if d := r.delay(); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			}
		}
		s, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			return nil, err
		}
		return &agentStream{rewriteStream: rewriteStream{ClientStream: s, cluster: cluster, target: target}, refusals: r}, nil
	}
}

type agentStream struct {
	rewriteStream
	refusals *refusals
}

// Header is where ANP's agent learns the hub accepted it (the hub's
// server ID). A stream the hub ended at once, refusing the agent, has no
// header, and gRPC keeps the reason for Recv: without it the agent would
// only log "expected one server ID in the context, got []".
func (s *agentStream) Header() (metadata.MD, error) {
	md, err := s.ClientStream.Header()
	if err != nil || len(md.Get(header.ServerID)) > 0 {
		if err == nil {
			s.refusals.accepted()
		}
		return md, err
	}
	if md != nil {
		return md, nil // headers without a server ID: not a refusal; ANP reports it
	}
	recvErr := s.ClientStream.RecvMsg(&clientproto.Packet{})
	why := "it closed the connection"
	if st, ok := status.FromError(recvErr); ok && recvErr != nil {
		why = fmt.Sprintf("%s (%s)", st.Message(), st.Code())
	}
	refusal := fmt.Errorf("the tunnel hub refused this agent: %s", why)
	s.refusals.refused(refusal)
	return nil, fmt.Errorf("%w; next attempt in %s or more", refusal, s.refusals.delay().Round(time.Millisecond))
}
