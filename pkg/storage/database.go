package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Database says how a tool reaches the plane's database directly, without
// kine: the plane's data tools (migrate, backup, restore) read and write
// kine's table through database/sql.
type Database struct {
	// Kind is KindSQLite, KindMySQL or KindPostgres.
	Kind string
	// DriverName and DSN open the database with database/sql (the drivers
	// kine links: sqlite3, mysql, pgx).
	DriverName, DSN string
	// KineEndpoint is the endpoint kine is given for it.
	KineEndpoint string
	// SQLitePath is the database file (SQLite only).
	SQLitePath string
	// Description names it without credentials.
	Description string
}

// DatabaseFor resolves what the data tools are given: a data directory
// (its embedded SQLite database, DIR/db/state.db), or an endpoint as
// --datastore-endpoint takes it. TLS towards MySQL or PostgreSQL is set in
// the DSN (tls=, sslmode=) for these tools.
func DatabaseFor(dirOrEndpoint string) (Database, error) {
	o := NewOptions()
	if !strings.Contains(dirOrEndpoint, "://") {
		if dirOrEndpoint == "" {
			return Database{}, fmt.Errorf("no database given: pass a plane's data directory or a sqlite://, mysql:// or postgres:// endpoint")
		}
		o.DataDir = dirOrEndpoint
	} else {
		o.Endpoint = dirOrEndpoint
	}
	return o.Database()
}

// Database resolves the options' database the way Start does.
func (o *Options) Database() (Database, error) {
	switch o.Kind() {
	case KindMySQL:
		cfg, err := o.mysqlConfig()
		if err != nil {
			return Database{}, err
		}
		return Database{
			Kind: KindMySQL, DriverName: "mysql", DSN: cfg.FormatDSN(), KineEndpoint: "mysql://" + cfg.FormatDSN(),
			Description: fmt.Sprintf("mysql %s@%s/%s", cfg.User, cfg.Addr, cfg.DBName),
		}, nil
	case KindPostgres:
		cfg, endpoint, err := o.postgresConfig()
		if err != nil {
			return Database{}, err
		}
		return Database{
			Kind: KindPostgres, DriverName: "pgx", DSN: endpoint, KineEndpoint: endpoint,
			Description: fmt.Sprintf("postgres %s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database),
		}, nil
	}
	if o.Endpoint != "" && !strings.HasPrefix(o.Endpoint, "sqlite://") {
		scheme, _, _ := strings.Cut(o.Endpoint, "://")
		return Database{}, fmt.Errorf("unsupported scheme %q: use a data directory, sqlite:///path/state.db, mysql://user:pass@tcp(host:3306)/db or postgres://user:pass@host:5432/db", scheme)
	}
	path := o.sqlitePath()
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return Database{
		Kind: KindSQLite, DriverName: "sqlite3", DSN: "file:" + path + "?" + SQLitePragmas,
		KineEndpoint: "sqlite://" + path + "?" + SQLitePragmas, SQLitePath: path,
		Description: "sqlite " + path,
	}, nil
}

// ReadOnlyDSN opens the database so that the connection cannot write:
// SQLite in mode=ro, PostgreSQL with default_transaction_read_only. MySQL
// has no such connection option; readers use read-only transactions.
func (d Database) ReadOnlyDSN() string {
	switch d.Kind {
	case KindSQLite:
		return "file:" + d.SQLitePath + "?mode=ro&_busy_timeout=30000"
	case KindPostgres:
		sep := "?"
		if strings.Contains(d.DSN, "?") {
			sep = "&"
		}
		return d.DSN + sep + "default_transaction_read_only=on"
	}
	return d.DSN
}

// Exists reports whether a SQLite database file is there (other kinds:
// true; the server answers).
func (d Database) Exists() bool {
	if d.Kind != KindSQLite {
		return true
	}
	_, err := os.Stat(d.SQLitePath)
	return err == nil
}
