package agent

import (
	"testing"
)

func TestTargetFromHost(t *testing.T) {
	tests := []struct{ host, want string }{
		{"https://10.0.0.1:6443", "10.0.0.1:6443"},
		{"https://kubernetes.default.svc", "kubernetes.default.svc:443"},
		{"10.0.0.1:6443", "10.0.0.1:6443"},
		{"https://[::1]:6443", "[::1]:6443"},
		{"http://localhost", "localhost:80"},
	}
	for _, tt := range tests {
		got, err := TargetFromHost(tt.host)
		if err != nil || got != tt.want {
			t.Errorf("TargetFromHost(%q) = %q, %v; want %q", tt.host, got, err, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	base := func() *Options {
		o := NewOptions()
		o.Cluster, o.HubAddress, o.HubCAFile, o.CertFile, o.KeyFile = "alpha", "hub:8132", "ca", "c", "k"
		return o
	}
	if err := base().Validate(); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
	for name, mutate := range map[string]func(*Options){
		"bad cluster":          func(o *Options) { o.Cluster = "Alpha_1" },
		"agent ID of another":  func(o *Options) { o.AgentID = "beta/1" },
		"no hub port":          func(o *Options) { o.HubAddress = "hub" },
		"no certificate":       func(o *Options) { o.CertFile = "" },
		"no hub CA":            func(o *Options) { o.HubCAFile = "" },
		"zero connect timeout": func(o *Options) { o.ConnectTimeout = 0 },
	} {
		o := base()
		mutate(o)
		if err := o.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
