package proxy

import (
	"strings"
	"testing"

	"google.golang.org/grpc/metadata"
)

func TestCheckAgentMetadata(t *testing.T) {
	md := func(kv ...string) metadata.MD { return metadata.Pairs(kv...) }
	tests := []struct {
		name    string
		md      metadata.MD
		wantErr string // "" = accepted
	}{
		{"own cluster", md("agentID", "alpha/1", "agentIdentifiers", "host=alpha"), ""},
		{"own cluster twice", md("agentID", "alpha/1", "agentIdentifiers", "host=alpha&host=alpha"), ""},
		{"another cluster's host", md("agentID", "alpha/1", "agentIdentifiers", "host=beta"), `may not announce host="beta"`},
		{"own and another host", md("agentID", "alpha/1", "agentIdentifiers", "host=alpha&host=beta"), `may not announce host="beta"`},
		{"ipv4", md("agentID", "alpha/1", "agentIdentifiers", "host=alpha&ipv4=10.0.0.1"), `"ipv4" is not allowed`},
		{"ipv6", md("agentID", "alpha/1", "agentIdentifiers", "ipv6=::1"), `"ipv6" is not allowed`},
		{"cidr", md("agentID", "alpha/1", "agentIdentifiers", "cidr=0.0.0.0/0"), `"cidr" is not allowed`},
		{"default route", md("agentID", "alpha/1", "agentIdentifiers", "default-route=true"), `"default-route" is not allowed`},
		{"unknown type", md("agentID", "alpha/1", "agentIdentifiers", "Host=alpha"), `"Host" is not allowed`},
		{"no identifiers", md("agentID", "alpha/1"), "expected one set of agent identifiers"},
		{"empty identifiers", md("agentID", "alpha/1", "agentIdentifiers", ""), "no agent identifiers"},
		{"two identifier sets", md("agentID", "alpha/1", "agentIdentifiers", "host=alpha", "agentIdentifiers", "host=beta"), "expected one set"},
		{"bad encoding", md("agentID", "alpha/1", "agentIdentifiers", "host=%zz"), "not URL-encoded"},
		{"another cluster's agent ID", md("agentID", "beta/1", "agentIdentifiers", "host=alpha"), `does not start with "alpha/"`},
		{"prefix of a longer name", md("agentID", "alpha-2/1", "agentIdentifiers", "host=alpha"), `does not start with "alpha/"`},
		{"bare cluster as agent ID", md("agentID", "alpha", "agentIdentifiers", "host=alpha"), "does not start with"},
		{"empty suffix", md("agentID", "alpha/", "agentIdentifiers", "host=alpha"), "does not start with"},
		{"no agent ID", md("agentIdentifiers", "host=alpha"), "expected one agent ID"},
		{"two agent IDs", md("agentID", "alpha/1", "agentID", "alpha/2", "agentIdentifiers", "host=alpha"), "expected one agent ID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := checkAgentMetadata("alpha", tt.md)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.wantErr == "" && id != tt.md.Get("agentID")[0]:
				t.Fatalf("agent ID %q", id)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("got %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}
