package framework

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// StartRoundRobin is a TCP load balancer on loopback in front of
// backends (host:port), like a Service in front of plane replicas: each
// connection goes to the next backend that accepts it, so a dead backend
// is skipped. It returns its address; it stops when the test ends.
func StartRoundRobin(t testing.TB, backends ...string) string {
	t.Helper()
	return StartRoundRobinOn(t, "127.0.0.1", backends...)
}

// StartRoundRobinOn is StartRoundRobin listening on host (a free port):
// a NetNS's HostIP lets agents inside the namespace reach it.
func StartRoundRobinOn(t testing.TB, host string, backends ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("listening on %s: %v", host, err)
	}
	var next atomic.Uint64
	var wg sync.WaitGroup
	var mu sync.Mutex
	open := map[net.Conn]struct{}{}
	track := func(c net.Conn, add bool) {
		mu.Lock()
		defer mu.Unlock()
		if add {
			open[c] = struct{}{}
		} else {
			delete(open, c)
		}
	}
	serve := func(in net.Conn) {
		defer wg.Done()
		defer in.Close()
		start := next.Add(1)
		var out net.Conn
		for i := range uint64(len(backends)) {
			c, err := net.DialTimeout("tcp", backends[(start+i)%uint64(len(backends))], 2*time.Second)
			if err == nil {
				out = c
				break
			}
		}
		if out == nil {
			return
		}
		defer out.Close()
		track(in, true)
		track(out, true)
		defer track(in, false)
		defer track(out, false)
		done := make(chan struct{}, 2)
		pipe := func(dst, src net.Conn) {
			_, _ = io.Copy(dst, src)
			if tc, ok := dst.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			done <- struct{}{}
		}
		go pipe(out, in)
		go pipe(in, out)
		<-done
		<-done
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go serve(c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}
