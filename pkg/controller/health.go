package controller

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"k8s.io/component-base/metrics/legacyregistry"
	_ "k8s.io/component-base/metrics/prometheus/restclient" // client-go request metrics on /metrics
	_ "k8s.io/component-base/metrics/prometheus/workqueue"  // workqueue depth and latency per type on /metrics
	"k8s.io/klog/v2"
)

// serveHealth answers /healthz always, /readyz once this replica leads
// (or runs without election) and the clusters are loaded, and /metrics
// (Prometheus text: the propagation metrics, workqueue depth and latency
// per type, client-go request metrics, Go runtime and process), and with
// profiling net/http/pprof under /debug/pprof/.
func serveHealth(ctx context.Context, addr string, ready *sync.Map, profiling bool) error {
	mux := http.NewServeMux()
	if profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	mux.Handle("/metrics", legacyregistry.Handler())
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		_, synced := ready.Load("synced")
		if !synced {
			http.Error(w, "not leading or clusters not loaded", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("health address %s: %w", addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	klog.InfoS("Serving health checks", "address", ln.Addr().String())
	return nil
}
