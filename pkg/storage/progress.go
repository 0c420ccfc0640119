package storage

import (
	"context"
	"math"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/protobuf/proto"
)

// newGRPCServer is the server kine serves the API server on: kine's own
// settings (etcd's keepalive, stream and message limits; no TLS, the
// socket is the plane's own) plus progressRetry.
func newGRPCServer(o *Options) *grpc.Server {
	opts := []grpc.ServerOption{
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: embed.DefaultGRPCKeepAliveMinTime}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: embed.DefaultGRPCKeepAliveInterval, Timeout: embed.DefaultGRPCKeepAliveTimeout}),
		grpc.MaxConcurrentStreams(embed.DefaultMaxConcurrentStreams),
		grpc.MaxRecvMsgSize(int(embed.DefaultMaxRequestBytes) + 512*1024),
		grpc.MaxSendMsgSize(math.MaxInt32),
	}
	if o.ProgressRetryInterval > 0 {
		opts = append(opts, grpc.StreamInterceptor(progressRetry(o.ProgressRetryInterval, int(progressRetryFor/o.ProgressRetryInterval))))
	}
	return grpc.NewServer(opts...)
}

// progressRetryFor bounds how long one progress request is repeated; the
// API server asks again every 100 ms while it waits, which starts over.
const progressRetryFor = 3 * time.Second

// watchMethod is the etcd Watch stream, the only stream kine serves that
// carries progress requests.
const watchMethod = "/etcdserverpb.Watch/Watch"

// progressRetry makes kine answer a watch progress request as soon as it
// can, not a tick later. The API server serves a consistent list from its
// watch cache once storage confirms the cache has caught up: it sends a
// progress request and, while it waits, another every 100 ms. kine v0.17
// answers a request only if every watch on the stream has already been
// sent the current revision, and otherwise drops it; a request that
// arrives a moment after a write (the poll loop has not delivered it yet)
// therefore costs the list the API server's next 100 ms turn. This
// interceptor repeats an unanswered request to kine every interval, up to
// tries times, so the answer comes within an interval of kine catching
// up. Each repeat costs kine one read of the current revision (an index
// lookup); while a watch on the stream lags, that is one read per
// interval.
func progressRetry(interval time.Duration, tries int) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if info.FullMethod != watchMethod || tries <= 0 {
			return handler(srv, ss)
		}
		s := newProgressStream(ss, interval, tries)
		defer s.cancel()
		return handler(srv, s)
	}
}

type received struct {
	req *etcdserverpb.WatchRequest
	err error
}

// progressStream is a Watch stream whose RecvMsg also yields the repeated
// progress requests, and whose SendMsg notices kine's progress answers.
type progressStream struct {
	grpc.ServerStream
	ctx      context.Context
	cancel   context.CancelFunc
	interval time.Duration
	tries    int

	recv   chan received
	repeat chan struct{}
	start  sync.Once // the reader goroutine

	mu      sync.Mutex
	pending bool   // a progress request is unanswered
	round   uint64 // counts arm calls: a repeater stops when a newer one runs
}

func newProgressStream(ss grpc.ServerStream, interval time.Duration, tries int) *progressStream {
	ctx, cancel := context.WithCancel(ss.Context())
	return &progressStream{
		ServerStream: ss, ctx: ctx, cancel: cancel, interval: interval, tries: tries,
		recv: make(chan received), repeat: make(chan struct{}),
	}
}

// read passes the client's requests to RecvMsg; only it calls the
// underlying RecvMsg, as gRPC requires.
func (s *progressStream) read() {
	for {
		req := &etcdserverpb.WatchRequest{}
		err := s.ServerStream.RecvMsg(req)
		select {
		case s.recv <- received{req, err}:
		case <-s.ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// RecvMsg returns the client's next request, or a repeat of its
// unanswered progress request.
func (s *progressStream) RecvMsg(m any) error {
	dst, ok := m.(*etcdserverpb.WatchRequest)
	if !ok {
		return s.ServerStream.RecvMsg(m)
	}
	s.start.Do(func() { go s.read() })
	select {
	case r := <-s.recv:
		if r.err != nil {
			return r.err
		}
		if r.req.GetProgressRequest() != nil {
			s.arm()
		}
		proto.Reset(dst)
		proto.Merge(dst, r.req)
		return nil
	case <-s.repeat:
		proto.Reset(dst)
		dst.RequestUnion = &etcdserverpb.WatchRequest_ProgressRequest{ProgressRequest: &etcdserverpb.WatchProgressRequest{}}
		return nil
	case <-s.ctx.Done():
		return s.ctx.Err()
	}
}

// arm starts repeating the progress request unless it repeats already.
func (s *progressStream) arm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending {
		return
	}
	s.pending = true
	s.round++
	go s.repeatUnanswered(s.round)
}

func (s *progressStream) repeatUnanswered(round uint64) {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for range s.tries {
		select {
		case <-t.C:
		case <-s.ctx.Done():
			return
		}
		if !s.stillPending(round) {
			return
		}
		select {
		case s.repeat <- struct{}{}:
		case <-s.ctx.Done():
			return
		}
	}
	s.mu.Lock()
	if s.round == round {
		s.pending = false // the client asks again itself
	}
	s.mu.Unlock()
}

func (s *progressStream) stillPending(round uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending && s.round == round
}

// SendMsg passes kine's responses on; a progress answer (the stream-wide
// response kine sends for a progress request) ends the repeats.
func (s *progressStream) SendMsg(m any) error {
	if r, ok := m.(*etcdserverpb.WatchResponse); ok && isProgressAnswer(r) {
		s.mu.Lock()
		s.pending = false
		s.mu.Unlock()
	}
	return s.ServerStream.SendMsg(m)
}

// isProgressAnswer tells kine's answer to a progress request: no events,
// no watch created or cancelled, and the stream's invalid watch id.
func isProgressAnswer(r *etcdserverpb.WatchResponse) bool {
	return r.WatchId == clientv3.InvalidWatchID && len(r.Events) == 0 && !r.Created && !r.Canceled
}
