package proxy

import (
	"strings"
	"testing"
)

func TestOptionsValidate(t *testing.T) {
	valid := func() *Options {
		o := NewOptions()
		o.ServingCertFile, o.ServingKeyFile, o.AgentCAFile, o.ClientCAFile, o.ConnectSecretFile, o.ConnectCAFile = "s.crt", "s.key", "a.crt", "c.crt", "secret", "c.crt"
		return o
	}
	tests := []struct {
		name    string
		mutate  func(*Options)
		wantErr string // "" = valid
	}{
		{"defaults with files", func(*Options) {}, ""},
		{"hub disabled needs no files", func(o *Options) { *o = *NewOptions(); o.AgentPort = 0 }, ""},
		{"only the gRPC frontend", func(o *Options) { o.ConnectPort = 0 }, ""},
		{"no frontend", func(o *Options) { o.ConnectPort, o.GRPCPort = 0, 0 }, "needs a client frontend"},
		{"port out of range", func(o *Options) { o.ConnectPort = 70000 }, "out of range"},
		{"bind address not an IP", func(o *Options) { o.AgentBindAddress = "hub.example" }, "not an IP address"},
		{"keepalive too short", func(o *Options) { o.KeepaliveTime = 0 }, "at least 1s"},
		{"no dial timeout", func(o *Options) { o.DialTimeout = 0 }, "dial-timeout"},
		{"no agent CA", func(o *Options) { o.AgentCAFile = "" }, "no agent CA file"},
		{"no secret", func(o *Options) { o.ConnectSecretFile = "" }, "no CONNECT secret file"},
		{"TLS CONNECT without its CA", func(o *Options) { o.ConnectCAFile = "" }, "the TLS CONNECT frontend needs the CA of its serving certificate"},
		{"plain CONNECT needs no CA", func(o *Options) { o.ConnectCAFile, o.ConnectTLS = "", false }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid()
			tt.mutate(o)
			errs := o.Validate()
			var joined []string
			for _, e := range errs {
				joined = append(joined, e.Error())
			}
			got := strings.Join(joined, "; ")
			switch {
			case tt.wantErr == "" && len(errs) > 0:
				t.Fatalf("refused: %s", got)
			case tt.wantErr != "" && !strings.Contains(got, tt.wantErr):
				t.Fatalf("got %q, want an error containing %q", got, tt.wantErr)
			}
		})
	}
}
