package storage

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"k8s.io/klog/v2"
)

// postgresHoldKey is the advisory lock a plane holds shared and a data
// tool exclusively (advisory locks are per database; 7243001 and 7243002
// order kine's writes, see orderedIDsSQL).
const postgresHoldKey = 7243003

// holdQueryTimeout bounds each statement of taking or checking a hold.
const holdQueryTimeout = 30 * time.Second

// mysqlHoldNames are the named locks of a MySQL database: one per plane
// replica (slots) and the tool's. GET_LOCK names are server-wide and at
// most 64 characters: they carry a digest of the database name.
func mysqlHoldNames(dbName string) (slots []string, tool string) {
	sum := sha256.Sum256([]byte(dbName))
	base := "cellfed." + hex.EncodeToString(sum[:8])
	for i := range holdSlots {
		slots = append(slots, fmt.Sprintf("%s.plane.%d", base, i))
	}
	return slots, base + ".tool"
}

// mysqlHolder names the session holding lock name ("" when none).
func mysqlHolder(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, name string) string {
	var id sql.NullInt64
	if err := q.QueryRowContext(ctx, `SELECT IS_USED_LOCK(?)`, name).Scan(&id); err != nil || !id.Valid {
		return ""
	}
	var host sql.NullString
	// Seeing other users' sessions needs the PROCESS privilege: without
	// it the connection id is all there is.
	if err := q.QueryRowContext(ctx, `SELECT HOST FROM information_schema.PROCESSLIST WHERE ID = ?`, id.Int64).Scan(&host); err == nil && host.String != "" {
		return fmt.Sprintf("MySQL connection %d from %s", id.Int64, host.String)
	}
	return fmt.Sprintf("MySQL connection %d", id.Int64)
}

// getLock takes a named lock without waiting.
func getLock(ctx context.Context, c *sql.Conn, name string) (bool, error) {
	var got sql.NullInt64
	if err := c.QueryRowContext(ctx, `SELECT GET_LOCK(?, 0)`, name).Scan(&got); err != nil {
		return false, err
	}
	return got.Valid && got.Int64 == 1, nil
}

// holdMySQLExclusive takes the tool's lock and every plane slot of d.
func holdMySQLExclusive(ctx context.Context, d Database, who string) (func(), error) {
	cfg, err := mysql.ParseDSN(d.DSN)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.Description, err)
	}
	dbName := cfg.DBName
	cfg.DBName = "" // the names are server-wide; the database may not exist yet
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.Description, err)
	}
	db := sql.OpenDB(connector)
	ctx, cancel := context.WithTimeout(ctx, holdQueryTimeout)
	defer cancel()
	c, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("connecting to %s to check that no plane runs on it: %w", d.Description, err)
	}
	release := func() { c.Close(); db.Close() } // ending the session releases its locks
	slots, tool := mysqlHoldNames(dbName)
	got, err := getLock(ctx, c, tool)
	if err != nil {
		release()
		return nil, fmt.Errorf("locking %s: %w", d.Description, err)
	}
	if !got {
		h := mysqlHolder(ctx, c, tool)
		release()
		return nil, &InUseError{Database: d.Description, Holders: []string{"another cellfed-apiserver data tool, " + h}}
	}
	var holders []string
	for _, name := range slots {
		got, err := getLock(ctx, c, name)
		if err != nil {
			release()
			return nil, fmt.Errorf("locking %s: %w", d.Description, err)
		}
		if !got {
			holders = append(holders, "cellfed-apiserver on "+mysqlHolder(ctx, c, name))
		}
	}
	if len(holders) > 0 {
		release()
		return nil, &InUseError{Database: d.Description, Holders: holders}
	}
	klog.V(2).InfoS("Holding the database for a data tool", "database", d.Description, "holder", who)
	return release, nil
}

// mysqlPlaneHold is a plane replica's slot on a MySQL database.
type mysqlPlaneHold struct {
	db          *sql.DB
	description string
	slots       []string
	tool        string
	conn        *sql.Conn
	slot        string
}

// take opens a session and takes a free slot in it.
func (h *mysqlPlaneHold) take(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, holdQueryTimeout)
	defer cancel()
	c, err := h.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connecting to %s to hold it: %w", h.description, err)
	}
	for _, name := range h.slots {
		got, err := getLock(ctx, c, name)
		if err != nil {
			c.Close()
			return fmt.Errorf("holding %s: %w", h.description, err)
		}
		if got {
			h.conn, h.slot = c, name
			return nil
		}
	}
	// Every slot is taken: a tool holds them, or holdSlots replicas run.
	tool := mysqlHolder(ctx, c, h.tool)
	c.Close()
	if tool != "" {
		return errHeldByTool(h.description, []string{tool})
	}
	return fmt.Errorf("refusing to start: %d plane replicas hold %s already (the most one database takes)", holdSlots, h.description)
}

// held reports whether the session still holds its slot.
func (h *mysqlPlaneHold) held(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, holdQueryTimeout)
	defer cancel()
	var mine sql.NullBool
	err := h.conn.QueryRowContext(ctx, `SELECT IS_USED_LOCK(?) = CONNECTION_ID()`, h.slot).Scan(&mine)
	return err == nil && mine.Valid && mine.Bool
}

// drop discards the session (and with it its lock).
func (h *mysqlPlaneHold) drop() {
	if h.conn == nil {
		return
	}
	_ = h.conn.Raw(func(any) error { return driver.ErrBadConn }) // never back into the pool
	h.conn.Close()
	h.conn = nil
}

// holdMySQLShared holds a slot of cfg's database for a plane replica
// until ctx ends, taking it again when the session is lost.
func holdMySQLShared(ctx context.Context, db *sql.DB, cfg *mysql.Config, description string) error {
	slots, tool := mysqlHoldNames(cfg.DBName)
	h := &mysqlPlaneHold{db: db, description: description, slots: slots, tool: tool}
	if err := h.take(ctx); err != nil {
		db.Close()
		return err
	}
	keep(ctx, description, func(ctx context.Context) error {
		if h.conn != nil && h.held(ctx) {
			return nil
		}
		h.drop()
		return h.take(ctx)
	}, func() { h.drop(); db.Close() })
	return nil
}

// keep runs check every holdKeepalive until ctx ends, then stop.
func keep(ctx context.Context, description string, check func(context.Context) error, stop func()) {
	go func() {
		defer stop()
		t := time.NewTicker(holdKeepalive)
		defer t.Stop()
		lost := false
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			err := check(ctx)
			switch {
			case err != nil && ctx.Err() == nil:
				klog.ErrorS(err, "The plane lost its hold on its database: data tools (restore, migrate) will not see it running until it is taken again", "database", description)
				lost = true
			case err == nil && lost:
				klog.InfoS("The plane holds its database again", "database", description)
				lost = false
			}
		}
	}()
}

// postgresHolders lists the sessions other than conn's that hold the
// advisory lock of conn's database.
func postgresHolders(ctx context.Context, conn *pgx.Conn) []string {
	rows, err := conn.Query(ctx, `SELECT a.pid, COALESCE(a.application_name, ''), COALESCE(host(a.client_addr), 'local socket')
		FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.pid <> pg_backend_pid()
		  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND l.classid = 0 AND l.objid = $1 AND l.objsubid = 1`, postgresHoldKey)
	if err != nil {
		return nil
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var pid int
		var app, addr string
		if rows.Scan(&pid, &app, &addr) != nil {
			return out
		}
		if app == "" {
			app = "unnamed session"
		}
		out = append(out, fmt.Sprintf("%s (PostgreSQL backend %d from %s)", app, pid, addr))
	}
	return out
}

// connectPostgresHolder opens a session named who (application_name is
// at most 63 bytes: the rest is cut).
func connectPostgresHolder(ctx context.Context, cfg *pgx.ConnConfig, who string) (*pgx.Conn, error) {
	cfg = cfg.Copy()
	if len(who) > 63 {
		who = who[:63]
	}
	cfg.RuntimeParams["application_name"] = who
	return pgx.ConnectConfig(ctx, cfg)
}

// holdPostgresExclusive takes the advisory lock of d's database
// exclusively.
func holdPostgresExclusive(ctx context.Context, d Database, who string) (func(), error) {
	cfg, err := pgx.ParseConfig(d.DSN)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.Description, err)
	}
	ctx, cancel := context.WithTimeout(ctx, holdQueryTimeout)
	defer cancel()
	conn, err := connectPostgresHolder(ctx, cfg, who)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "3D000" { // invalid_catalog_name
		return func() {}, nil // a plane creates the database before it holds it
	}
	if err != nil {
		return nil, fmt.Errorf("connecting to %s to check that no plane runs on it: %w", d.Description, err)
	}
	release := func() { conn.Close(context.Background()) } // ending the session releases its locks
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, postgresHoldKey).Scan(&got); err != nil {
		release()
		return nil, fmt.Errorf("locking %s: %w", d.Description, err)
	}
	if !got {
		holders := postgresHolders(ctx, conn)
		release()
		return nil, &InUseError{Database: d.Description, Holders: holders}
	}
	return release, nil
}

// ensurePostgresDatabase creates cfg's database when it is missing, as
// kine would a moment later, so the plane can hold it before kine starts.
// The maintenance database "postgres" is reached only then.
func ensurePostgresDatabase(ctx context.Context, cfg *pgx.ConnConfig) error {
	ctx, cancel := context.WithTimeout(ctx, holdQueryTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "3D000" { // invalid_catalog_name: the database is missing
		if err == nil {
			conn.Close(context.WithoutCancel(ctx))
		}
		return nil // there, or the plane's hold reports why not
	}
	probe := cfg.Copy()
	probe.Database = "postgres"
	conn, err = pgx.ConnectConfig(ctx, probe)
	if err != nil {
		return fmt.Errorf("connecting to PostgreSQL at %s:%d: %w", cfg.Host, cfg.Port, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var n int
	if err := conn.QueryRow(ctx, `SELECT COUNT(*) FROM pg_database WHERE datname = $1`, cfg.Database).Scan(&n); err != nil {
		return fmt.Errorf("looking for database %s on PostgreSQL at %s:%d: %w", cfg.Database, cfg.Host, cfg.Port, err)
	}
	if n > 0 {
		return nil
	}
	_, err = conn.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{cfg.Database}.Sanitize())
	if err != nil && !(errors.As(err, &pgErr) && pgErr.Code == "42P04") { // duplicate_database: another replica made it
		return fmt.Errorf("creating database %s on PostgreSQL at %s:%d: %w", cfg.Database, cfg.Host, cfg.Port, err)
	}
	return nil
}

// holdPostgresShared holds cfg's database for a plane replica until ctx
// ends, taking it again when the session is lost.
func holdPostgresShared(ctx context.Context, cfg *pgx.ConnConfig, description string) error {
	if err := ensurePostgresDatabase(ctx, cfg); err != nil {
		return err
	}
	who := holderName("cellfed-apiserver")
	var conn *pgx.Conn
	take := func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, holdQueryTimeout)
		defer cancel()
		c, err := connectPostgresHolder(ctx, cfg, who)
		if err != nil {
			return fmt.Errorf("connecting to %s to hold it: %w", description, err)
		}
		var got bool
		if err := c.QueryRow(ctx, `SELECT pg_try_advisory_lock_shared($1)`, postgresHoldKey).Scan(&got); err != nil {
			c.Close(context.WithoutCancel(ctx))
			return fmt.Errorf("holding %s: %w", description, err)
		}
		if !got {
			holders := postgresHolders(ctx, c)
			c.Close(context.WithoutCancel(ctx))
			return errHeldByTool(description, holders)
		}
		conn = c
		return nil
	}
	if err := take(ctx); err != nil {
		return err
	}
	drop := func() {
		if conn != nil {
			conn.Close(context.Background())
			conn = nil
		}
	}
	keep(ctx, description, func(ctx context.Context) error {
		if conn != nil {
			pctx, cancel := context.WithTimeout(ctx, holdQueryTimeout)
			err := conn.Ping(pctx)
			cancel()
			if err == nil {
				return nil
			}
		}
		drop()
		return take(ctx)
	}, drop)
	return nil
}
