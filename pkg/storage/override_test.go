package storage

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestParseOverride(t *testing.T) {
	tests := []struct {
		in      string
		want    Override
		wantErr string
	}{
		{in: "core.kubefed.io/propagatedversions=sqlite:///d/pv.db", want: Override{schema.GroupResource{Group: "core.kubefed.io", Resource: "propagatedversions"}, "sqlite:///d/pv.db"}},
		{in: "events=mysql://u:p@tcp(h:3306)/ev", want: Override{schema.GroupResource{Resource: "events"}, "mysql://u:p@tcp(h:3306)/ev"}},
		{in: "core/events=postgres://u@h/ev", want: Override{schema.GroupResource{Resource: "events"}, "postgres://u@h/ev"}},
		{in: "/events=postgresql://u@h/ev", want: Override{schema.GroupResource{Resource: "events"}, "postgresql://u@h/ev"}},
		{in: "coordination.k8s.io/leases", wantErr: "want GROUP/RESOURCE=DSN"},
		{in: "=sqlite:///x", wantErr: "want GROUP/RESOURCE=DSN"},
		{in: "coordination.k8s.io/Leases=sqlite:///x", wantErr: "not a plural resource name"},
		{in: "a/b/c=sqlite:///x", wantErr: "not a plural resource name"},
		{in: "events=etcd://h:2379", wantErr: `unsupported scheme "etcd"`},
		{in: "events=/var/lib/x.db", wantErr: "unsupported scheme"},
		{in: "events=sqlite://", wantErr: "needs a file path"},
		{in: "events=mysql://root:s3cret@tcp(h:1)x(", wantErr: ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseOverride(tt.in)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ParseOverride(%q): %v", tt.in, err)
				}
				if tt.want.Endpoint != "" && got != tt.want {
					t.Fatalf("ParseOverride(%q) = %+v, want %+v", tt.in, got, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ParseOverride(%q) error %v, want one containing %q", tt.in, err, tt.wantErr)
			}
		})
	}
}

func TestParseOverridesRefusesSharedDatabases(t *testing.T) {
	tests := []struct {
		name    string
		flags   []string
		main    string
		mainDB  string
		wantErr string
	}{
		{"two resources", []string{"events=sqlite:///d/ev.db", "coordination.k8s.io/leases=sqlite:///d/leases.db"}, "", "/d/db/state.db", ""},
		{"resource twice", []string{"events=sqlite:///d/a.db", "core/events=sqlite:///d/b.db"}, "", "/d/db/state.db", "core/events is given more than once"},
		{"main sqlite file", []string{"events=sqlite:///d/db/state.db?_journal_mode=WAL"}, "", "/d/db/state.db", "the plane's main database"},
		{"main mysql", []string{"events=mysql://u:pw@tcp(h:3306)/cellfed"}, "mysql://u:pw@tcp(h:3306)/cellfed", "", "the plane's main database"},
		{"one database for two", []string{"events=mysql://u@tcp(h:3306)/x", "coordination.k8s.io/leases=mysql://u@tcp(h:3306)/x?tls=true"}, "", "/d/db/state.db", "already the database of core/events"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errs := ParseOverrides(tt.flags, tt.main, tt.mainDB)
			if tt.wantErr == "" {
				if len(errs) != 0 {
					t.Fatalf("errors %v, want none", errs)
				}
				return
			}
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tt.wantErr) {
				t.Fatalf("errors %v, want one containing %q", errs, tt.wantErr)
			}
			if strings.Contains(errs[0].Error(), "pw@") {
				t.Errorf("error leaks the password: %v", errs[0])
			}
		})
	}
}
