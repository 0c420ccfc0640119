package storage

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// minPostgresVersion is the oldest server kine's schema works on (its
// migration runs ALTER SEQUENCE ... AS BIGINT, PostgreSQL 10+).
const minPostgresVersion = 100000

// postgresConfig parses a postgres:// (or postgresql://) endpoint the way
// kine will use it: database "kubernetes" when the URL names none, the
// name folded to lower case, TLS files from --datastore-* flags, and the
// dial timeout when the URL sets no connect_timeout. It also returns that
// URL as kine's endpoint (kine keeps parameters it finds in it).
func (o *Options) postgresConfig() (*pgx.ConnConfig, string, error) {
	_, rest, _ := strings.Cut(o.Endpoint, "://")
	u, err := url.Parse("postgres://" + rest)
	if err != nil {
		// url errors quote the input, which may hold a password.
		return nil, "", fmt.Errorf("--datastore-endpoint is not a valid PostgreSQL URL; expected postgres://user:pass@host:5432/dbname?sslmode=verify-full")
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/" + defaultMySQLDatabase
	}
	u.Path = strings.ToLower(u.Path)
	q := u.Query()
	tlsFiles := map[string]string{"sslrootcert": o.CAFile, "sslcert": o.CertFile, "sslkey": o.KeyFile}
	for param, file := range tlsFiles {
		if file != "" && !q.Has(param) {
			q.Set(param, file)
			if !q.Has("sslmode") {
				q.Set("sslmode", "verify-full")
			}
		}
	}
	if !q.Has("connect_timeout") {
		q.Set("connect_timeout", strconv.Itoa(max(1, int(o.DialTimeout.Seconds()))))
	}
	u.RawQuery = q.Encode()
	cfg, err := pgx.ParseConfig(u.String())
	if err != nil {
		// pgx replaces the password in its parse errors.
		return nil, "", fmt.Errorf("--datastore-endpoint is not a valid PostgreSQL URL (%v); expected postgres://user:pass@host:5432/dbname?sslmode=verify-full", err)
	}
	return cfg, u.String(), nil
}

// postgresSettings is what the plane reads from the server before starting.
type postgresSettings struct {
	versionNum                                                 int
	inRecovery                                                 bool
	fsync, synchronousCommit, isolation, readOnly, versionText string
}

// postgresRefusal returns why kine must not run on a server with these
// settings, or "" when they are safe, and whether
// --unsafe-skip-database-safety-checks may override it: settings that lose
// writes or make them fail may be, a server too old for kine's schema or
// one that takes no writes may not. Pure, so the rules have a table test.
func postgresRefusal(s postgresSettings) (why string, skippable bool) {
	switch {
	case s.versionNum < minPostgresVersion:
		return fmt.Sprintf("PostgreSQL %s is too old: kine needs 10 or later; upgrade the server", s.versionText), false
	case s.inRecovery:
		return "the server is a read-only standby (pg_is_in_recovery() is true); point --datastore-endpoint at the primary", false
	case strings.EqualFold(s.readOnly, "on"):
		return "default_transaction_read_only=on, so every write is refused; set it off for the plane's role or database (ALTER ROLE ... SET default_transaction_read_only = off)", false
	case strings.EqualFold(s.fsync, "off"):
		return "fsync=off: a server or machine crash can lose or corrupt acknowledged writes, and the store would then be older than what clients have seen. Fix: fsync = on in postgresql.conf and reload", true
	case strings.EqualFold(s.synchronousCommit, "off"):
		return "synchronous_commit=off: a server crash loses the last acknowledged writes, and the store would then be older than what clients have seen. Fix: synchronous_commit = on in postgresql.conf (or ALTER ROLE/DATABASE ... SET synchronous_commit = on)", true
	case strings.EqualFold(s.isolation, "serializable"), strings.EqualFold(s.isolation, "repeatable read"):
		return fmt.Sprintf("default_transaction_isolation=%q: kine's compare-and-swap writes and compaction then fail with serialization errors it does not retry, so writes are refused and the database grows without bound. Fix: default_transaction_isolation = 'read committed' (ALTER DATABASE ... SET default_transaction_isolation = 'read committed')", s.isolation), true
	}
	return "", false
}

// checkPostgres connects to the server and refuses settings under which
// kine cannot work or loses acknowledged writes. It reads them in the
// plane's database when that exists (settings can be set per database or
// role), else in the maintenance database "postgres" (kine creates the
// plane's database at start).
func checkPostgres(ctx context.Context, cfg *pgx.ConnConfig, skipSafety bool) error {
	addr := fmt.Sprintf("%s:%d", cfg.Host, cfg.Port)
	connCtx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout+30*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(connCtx, cfg)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "3D000" { // invalid_catalog_name: database not created yet
		probe := cfg.Copy()
		probe.Database = "postgres"
		conn, err = pgx.ConnectConfig(connCtx, probe)
	}
	if err != nil {
		return fmt.Errorf("cannot connect to PostgreSQL at %s as user %q: %v; check that the server runs and --datastore-endpoint (host, port, user, password, sslmode) is right", addr, cfg.User, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var s postgresSettings
	err = conn.QueryRow(connCtx, `SELECT current_setting('server_version_num')::int, current_setting('server_version'),
		pg_is_in_recovery(), current_setting('fsync'), current_setting('synchronous_commit'),
		current_setting('default_transaction_isolation'), current_setting('default_transaction_read_only')`).
		Scan(&s.versionNum, &s.versionText, &s.inRecovery, &s.fsync, &s.synchronousCommit, &s.isolation, &s.readOnly)
	if err != nil {
		return fmt.Errorf("reading settings from PostgreSQL at %s: %w", addr, err)
	}
	why, skippable := postgresRefusal(s)
	switch {
	case why == "", skippable && skipSafety:
		return nil
	case skippable:
		return fmt.Errorf("refusing to start: PostgreSQL at %s: %s; or pass --unsafe-skip-database-safety-checks if you accept the risk", addr, why)
	}
	return fmt.Errorf("refusing to start: PostgreSQL at %s: %s", addr, why)
}

// orderedIDsSQL makes kine's revisions commit in the order they are handed
// out. A PostgreSQL sequence hands out ids when a row is inserted, not when
// it commits, so a list can report revision 915 while row 904 is still
// uncommitted; a client that lists and then watches from 916 (every
// informer) never sees 904 (measured: 17 of 24 clients missed events in
// TestListThenWatchConsistency). The id default takes a transaction-scoped
// advisory lock before nextval: the lock is held until the inserting
// statement commits, so inserts are serialized (as on SQLite) and every id
// below the newest committed one is committed or burned by a rollback,
// which kine's poll loop fills as a gap. Advisory locks are per database.
var orderedIDsSQL = []string{
	`CREATE OR REPLACE FUNCTION kine_ordered_id() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_advisory_xact_lock(7243001); -- any constant, the same for every writer of this database
	RETURN nextval(pg_get_serial_sequence('kine', 'id'));
END $$`,
	`ALTER TABLE kine ALTER COLUMN id SET DEFAULT kine_ordered_id()`,
}

// installOrderedIDs applies orderedIDsSQL to the table kine has created.
// It is idempotent: every start (and every replica) runs it.
func installOrderedIDs(ctx context.Context, cfg *pgx.ConnConfig) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout+30*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connecting to PostgreSQL at %s:%d to order kine's revisions: %w", cfg.Host, cfg.Port, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// Replicas starting together would race on CREATE OR REPLACE FUNCTION
	// ("tuple concurrently updated"): one at a time.
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7243002)`); err != nil {
			return err
		}
		for _, stmt := range orderedIDsSQL {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("ordering kine's revisions in PostgreSQL database %s (the plane's role must own the table kine): %w", cfg.Database, err)
	}
	return nil
}
