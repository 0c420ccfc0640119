package storage

import (
	"strings"
	"testing"
)

func TestPostgresRefusal(t *testing.T) {
	safe := postgresSettings{versionNum: 150020, versionText: "15.20", fsync: "on", synchronousCommit: "on", isolation: "read committed", readOnly: "off"}
	tests := []struct {
		name          string
		mutate        func(s *postgresSettings)
		want          string // "" = accepted
		wantSkippable bool
	}{
		{"safe", func(*postgresSettings) {}, "", false},
		{"synchronous_commit local", func(s *postgresSettings) { s.synchronousCommit = "local" }, "", false},
		{"too old", func(s *postgresSettings) { s.versionNum, s.versionText = 90624, "9.6.24" }, "kine needs 10 or later", false},
		{"standby", func(s *postgresSettings) { s.inRecovery = true }, "point --datastore-endpoint at the primary", false},
		{"read only", func(s *postgresSettings) { s.readOnly = "on" }, "default_transaction_read_only=on", false},
		{"fsync off", func(s *postgresSettings) { s.fsync = "off" }, "fsync = on", true},
		{"async commit", func(s *postgresSettings) { s.synchronousCommit = "off" }, "synchronous_commit = on", true},
		{"serializable", func(s *postgresSettings) { s.isolation = "serializable" }, "'read committed'", true},
		{"repeatable read", func(s *postgresSettings) { s.isolation = "repeatable read" }, "serialization errors", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := safe
			tt.mutate(&s)
			why, skippable := postgresRefusal(s)
			if tt.want == "" {
				if why != "" {
					t.Fatalf("refused: %s", why)
				}
				return
			}
			if !strings.Contains(why, tt.want) {
				t.Errorf("refusal %q does not mention %q", why, tt.want)
			}
			if skippable != tt.wantSkippable {
				t.Errorf("skippable = %v, want %v", skippable, tt.wantSkippable)
			}
		})
	}
}

func TestPostgresConfig(t *testing.T) {
	o := NewOptions()
	o.Endpoint = "postgres://Plane:s3cret@db.example:6543/?sslmode=require"
	cfg, endpoint, err := o.postgresConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Database != "kubernetes" || cfg.User != "Plane" || cfg.Host != "db.example" || cfg.Port != 6543 {
		t.Errorf("config = %s@%s:%d/%s, want Plane@db.example:6543/kubernetes", cfg.User, cfg.Host, cfg.Port, cfg.Database)
	}
	for _, want := range []string{"connect_timeout=5", "sslmode=require", "/kubernetes?"} {
		if !strings.Contains(endpoint, want) {
			t.Errorf("kine endpoint %q lacks %q", endpoint, want)
		}
	}
	o.Endpoint = "postgres://u:s3cret@h:5432/x?sslmode=bogus"
	if _, _, err := o.postgresConfig(); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("bad sslmode: err %v, want an error without the password", err)
	}
}
