package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	kinetls "github.com/k3s-io/kine/pkg/tls"
)

const defaultMySQLDatabase = "kubernetes"

// mysqlConfig parses the DSN of a mysql:// endpoint and fills in the
// timeouts it lacks.
func (o *Options) mysqlConfig() (*mysql.Config, error) {
	dsn := strings.TrimPrefix(o.Endpoint, "mysql://")
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		// The driver's parse errors never quote the DSN, which may hold a password.
		return nil, fmt.Errorf("--datastore-endpoint is not a valid MySQL DSN (%v); expected mysql://user:pass@tcp(host:3306)/dbname", err)
	}
	if cfg.DBName == "" {
		cfg.DBName = defaultMySQLDatabase
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = o.DialTimeout
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = o.ReadTimeout
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = o.WriteTimeout
	}
	return cfg, nil
}

// unsafeSetting is a server variable value that loses or corrupts data under kine.
type unsafeSetting struct {
	variable, badValue, risk, fix string
}

var unsafeSettings = []unsafeSetting{
	{
		variable: "innodb_autoinc_lock_mode",
		badValue: "2",
		risk:     "revisions are then assigned out of commit order, so watchers (every informer and controller) can permanently miss writes",
		fix:      "set innodb_autoinc_lock_mode=1 in the [mysqld] section of the server configuration and restart the server",
	},
	{
		variable: "wsrep_on",
		badValue: "ON",
		risk:     "it is a Galera cluster node: Galera's multi-writer auto-increment (each node its own offset) hands out revisions out of commit order across nodes, so watchers permanently miss writes",
		fix:      "run the plane on a single MySQL/MariaDB primary with asynchronous or semi-synchronous replicas (docs/backup-and-migration.md, failover), not on Galera",
	},
	{
		variable: "read_only",
		badValue: "ON",
		risk:     "it is a read-only server (a replica): every write of the plane would fail",
		fix:      "point --datastore-endpoint at the primary, or promote this replica first (STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only=OFF)",
	},
	{
		variable: "innodb_snapshot_isolation",
		badValue: "ON",
		risk:     "kine's compaction then fails and updates falsely conflict, so the database grows without bound and writes are refused",
		fix:      "set innodb_snapshot_isolation=OFF in the [mysqld] section of the server configuration (or SET GLOBAL innodb_snapshot_isolation=OFF)",
	},
}

// checkMySQL connects to the server (not the database, which kine creates)
// and refuses settings that are known to lose data under kine.
func checkMySQL(ctx context.Context, cfg *mysql.Config, backendTLS kinetls.Config, skipSafety bool) error {
	db, err := openMySQL(cfg, backendTLS, "")
	if err != nil {
		return err
	}
	defer db.Close()
	pingCtx, cancel := context.WithTimeout(ctx, cfg.Timeout+cfg.ReadTimeout)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		return fmt.Errorf("cannot connect to MySQL at %s as user %q: %v; check that the server runs and --datastore-endpoint (host, port, user, password) is right", cfg.Addr, cfg.User, err)
	}
	if skipSafety {
		return nil
	}
	for _, s := range unsafeSettings {
		var name, value string
		// The names are constants: SHOW cannot take placeholders.
		err := db.QueryRowContext(pingCtx, "SHOW GLOBAL VARIABLES LIKE '"+s.variable+"'").Scan(&name, &value)
		if errors.Is(err, sql.ErrNoRows) {
			continue // this server does not have the variable
		}
		if err != nil {
			return fmt.Errorf("reading %s from MySQL at %s: %w", s.variable, cfg.Addr, err)
		}
		if strings.EqualFold(value, s.badValue) {
			return fmt.Errorf("refusing to start: MySQL at %s runs with %s=%s; %s. Fix: %s; or pass --unsafe-skip-mysql-safety-checks if you accept the risk",
				cfg.Addr, s.variable, value, s.risk, s.fix)
		}
	}
	return nil
}

// openMySQL opens a connection pool of the plane's own (not kine's) to
// the server of cfg, on database dbName ("" for none).
func openMySQL(cfg *mysql.Config, backendTLS kinetls.Config, dbName string) (*sql.DB, error) {
	probe := cfg.Clone()
	probe.DBName = dbName
	tlsConfig, err := backendTLS.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading MySQL TLS files: %w", err)
	}
	if tlsConfig != nil {
		if err := mysql.RegisterTLSConfig("cellfed-probe", tlsConfig); err != nil {
			return nil, fmt.Errorf("registering MySQL TLS config: %w", err)
		}
		probe.TLSConfig = "cellfed-probe"
	}
	connector, err := mysql.NewConnector(probe)
	if err != nil {
		return nil, fmt.Errorf("MySQL DSN for %s: %w", cfg.Addr, err)
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(2)
	return db, nil
}

// ensureMySQLDatabase creates the plane's database when missing (kine
// would, a moment later), so the lineage table can live in it.
func ensureMySQLDatabase(ctx context.Context, cfg *mysql.Config, backendTLS kinetls.Config) error {
	db, err := openMySQL(cfg, backendTLS, "")
	if err != nil {
		return err
	}
	defer db.Close()
	name := strings.ReplaceAll(cfg.DBName, "`", "``")
	if _, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS `"+name+"`"); err != nil {
		return fmt.Errorf("creating database %s on MySQL at %s: %w", cfg.DBName, cfg.Addr, err)
	}
	return nil
}

// orderedIDsMySQL makes kine's revisions commit in the order they are
// handed out on MySQL and MariaDB. InnoDB hands out an auto-increment id
// when the row is inserted, not when it commits; kine v0.17 inserts in an
// explicit transaction (BEGIN, INSERT, COMMIT: a round trip between id and
// commit), so a list can report revision 634 while row 630 is still
// uncommitted, and a client that lists and then watches from 635 (every
// informer) never sees 630 (measured with kine v0.17.5 and
// TestListThenWatchConsistency; kine v0.16.4 inserted with autocommit and
// the window was too short to show). The trigger locks the one row of
// kine_order before the id is assigned (InnoDB assigns it after BEFORE
// triggers) and the row lock is held until the insert commits, so inserts
// are serialized, as on SQLite and on PostgreSQL (orderedIDsSQL).
var orderedIDsMySQL = []string{
	`CREATE TABLE IF NOT EXISTS kine_order (id INTEGER PRIMARY KEY) ENGINE=InnoDB`,
	`INSERT IGNORE INTO kine_order (id) VALUES (1)`,
	`CREATE TRIGGER kine_ordered_id BEFORE INSERT ON kine FOR EACH ROW
BEGIN
	DECLARE locked INTEGER;
	SELECT id INTO locked FROM kine_order WHERE id = 1 FOR UPDATE;
END`,
}

// installOrderedIDsMySQL applies orderedIDsMySQL to the table kine has
// created. It is idempotent: every start (and every replica) runs it; a
// trigger that exists already is kept.
func installOrderedIDsMySQL(ctx context.Context, cfg *mysql.Config, backendTLS kinetls.Config) error {
	db, err := openMySQL(cfg, backendTLS, cfg.DBName)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout+30*time.Second)
	defer cancel()
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND TRIGGER_NAME = 'kine_ordered_id'`).Scan(&n); err != nil {
		return fmt.Errorf("reading the triggers of MySQL database %s at %s: %w", cfg.DBName, cfg.Addr, err)
	}
	stmts := orderedIDsMySQL
	if n > 0 {
		stmts = stmts[:2]
	}
	for _, stmt := range stmts {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			var me *mysql.MySQLError
			if errors.As(err, &me) && me.Number == 1359 { // trigger already exists: another replica made it
				continue
			}
			return fmt.Errorf("ordering kine's revisions in MySQL database %s at %s (the plane's user needs the CREATE and TRIGGER privileges there; with binary logging also log_bin_trust_function_creators=1 or SUPER): %w", cfg.DBName, cfg.Addr, err)
		}
	}
	return nil
}
