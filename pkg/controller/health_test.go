package controller

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
)

func TestServeHealthProfiling(t *testing.T) {
	for _, tc := range []struct {
		name      string
		profiling bool
		want      int
	}{
		{name: "off by default", profiling: false, want: http.StatusNotFound},
		{name: "on with --profiling", profiling: true, want: http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if err := serveHealth(ctx, addr, &sync.Map{}, tc.profiling); err != nil {
				t.Fatal(err)
			}
			for path, want := range map[string]int{"/healthz": http.StatusOK, "/debug/pprof/heap": tc.want, "/debug/pprof/cmdline": tc.want} {
				resp, err := http.Get(fmt.Sprintf("http://%s%s", addr, path))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
				}
			}
		})
	}
}
