package kinedata

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	_ "github.com/go-sql-driver/mysql" // mysql
	_ "github.com/jackc/pgx/v5/stdlib" // pgx
	"github.com/k3s-io/kine/pkg/drivers"
	_ "github.com/k3s-io/kine/pkg/drivers/mysql"  // creates kine's schema
	_ "github.com/k3s-io/kine/pkg/drivers/pgsql"  // creates kine's schema
	_ "github.com/k3s-io/kine/pkg/drivers/sqlite" // creates kine's schema
	_ "github.com/mattn/go-sqlite3"               // sqlite3
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cellfed/cellfed/pkg/storage"
)

const columns = "id, name, created, deleted, create_revision, prev_revision, lease, value, old_value"

// querier is a *sql.DB or a *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Store is kine's table in one database, opened directly.
type Store struct {
	DB       *sql.DB
	Database storage.Database
	readOnly bool
}

// OpenSource opens a store that is only read: SQLite read-only, PostgreSQL
// with read-only transactions by default, MySQL with read-only
// transactions (every read of a Store opened here runs in one).
func OpenSource(ctx context.Context, d storage.Database) (*Store, error) {
	if !d.Exists() {
		return nil, fmt.Errorf("%s does not exist", d.Description)
	}
	return open(ctx, d, d.ReadOnlyDSN(), true)
}

// OpenTarget opens a store to write, creating the database and kine's
// table (with kine's own schema code) when missing.
func OpenTarget(ctx context.Context, d storage.Database) (*Store, error) {
	if d.Kind == storage.KindSQLite {
		if err := storage.EnsureWritableDir(filepath.Dir(d.SQLitePath)); err != nil {
			return nil, err
		}
	}
	if err := createSchema(ctx, d); err != nil {
		return nil, err
	}
	return open(ctx, d, d.DSN, false)
}

func open(ctx context.Context, d storage.Database, dsn string, readOnly bool) (*Store, error) {
	db, err := sql.Open(d.DriverName, dsn)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", d.Description, err)
	}
	if d.Kind == storage.KindSQLite {
		db.SetMaxOpenConns(1)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connecting to %s: %w", d.Description, err)
	}
	s := &Store{DB: db, Database: d, readOnly: readOnly}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM kine WHERE id < 0`).Scan(&n); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s holds no kine table (is it a plane's store?): %w", d.Description, err)
	}
	return s, nil
}

// createSchema lets kine's driver create the database and its table and
// indexes exactly as the plane's kine would; it starts nothing (no poll
// loop, no compaction, no row written).
func createSchema(ctx context.Context, d storage.Database) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	_, _, err := drivers.New(ctx, &wg, &drivers.Config{
		Endpoint:          d.KineEndpoint,
		MetricsRegisterer: prometheus.NewRegistry(),
	})
	if err != nil {
		return fmt.Errorf("creating kine's table in %s: %w", d.Description, err)
	}
	return nil
}

// OpenPair opens the source (read-only) and the target of a copy; close
// both when done.
func OpenPair(ctx context.Context, from, to storage.Database) (src, dst *Store, err error) {
	if src, err = OpenSource(ctx, from); err != nil {
		return nil, nil, err
	}
	if dst, err = OpenTarget(ctx, to); err != nil {
		src.Close()
		return nil, nil, err
	}
	return src, dst, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.DB.Close() }

// ReadTx begins a read-only transaction that sees one snapshot: REPEATABLE
// READ on MySQL (InnoDB's consistent read) and PostgreSQL; SQLite in WAL
// mode gives every read transaction one snapshot.
func (s *Store) ReadTx(ctx context.Context) (*sql.Tx, error) {
	opts := &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead}
	if s.Database.Kind == storage.KindSQLite {
		opts = nil // mattn's driver rejects isolation levels; mode=ro already forbids writes
	}
	tx, err := s.DB.BeginTx(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("starting a read transaction on %s: %w", s.Database.Description, err)
	}
	return tx, nil
}

// ph returns the n-th (1-based) placeholder.
func (s *Store) ph(n int) string {
	if s.Database.Kind == storage.KindPostgres {
		return "$" + strconv.Itoa(n)
	}
	return "?"
}

// Stats are a store's newest id, its row count and compacted revision.
type Stats struct {
	MaxID, Rows, CompactRevision int64
	// NextID is the highest id the database has handed out (its
	// auto-increment counter), ≥ MaxID when ids were burned.
	NextID int64
}

// StatsOf reads the stats through q.
func (s *Store) StatsOf(ctx context.Context, q querier) (Stats, error) {
	var st Stats
	var maxID, compact sql.NullInt64
	if err := q.QueryRowContext(ctx, `SELECT MAX(id), COUNT(*) FROM kine`).Scan(&maxID, &st.Rows); err != nil {
		return st, fmt.Errorf("reading the newest revision of %s: %w", s.Database.Description, err)
	}
	if err := q.QueryRowContext(ctx, `SELECT MAX(prev_revision) FROM kine WHERE name = '`+CompactKey+`'`).Scan(&compact); err != nil {
		return st, fmt.Errorf("reading the compacted revision of %s: %w", s.Database.Description, err)
	}
	st.MaxID, st.CompactRevision = maxID.Int64, compact.Int64
	next, err := s.counter(ctx, q)
	if err != nil {
		return st, err
	}
	st.NextID = max(next, st.MaxID)
	return st, nil
}

// counter reads the auto-increment counter (the last id handed out).
func (s *Store) counter(ctx context.Context, q querier) (int64, error) {
	var n sql.NullInt64
	var err error
	switch s.Database.Kind {
	case storage.KindSQLite:
		err = q.QueryRowContext(ctx, `SELECT seq FROM sqlite_sequence WHERE name = 'kine'`).Scan(&n)
		if errors.Is(err, sql.ErrNoRows) {
			err = nil
		}
	case storage.KindPostgres:
		err = q.QueryRowContext(ctx, `SELECT pg_sequence_last_value(pg_get_serial_sequence('kine', 'id')::regclass)`).Scan(&n)
	default:
		// information_schema's AUTO_INCREMENT is cached and stale on MySQL 8;
		// MAX(id) is what the counter restarts from on a MySQL restart anyway.
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading the revision counter of %s: %w", s.Database.Description, err)
	}
	return n.Int64, nil
}

// ReadRows reads up to limit rows with from < id ≤ to (to 0: no bound), in
// id order.
func (s *Store) ReadRows(ctx context.Context, q querier, from, to, limit int64) ([]Row, error) {
	query := `SELECT ` + columns + ` FROM kine WHERE id > ` + s.ph(1)
	args := []any{from}
	if to > 0 {
		query += ` AND id <= ` + s.ph(2)
		args = append(args, to)
	}
	query += ` ORDER BY id`
	if limit > 0 {
		query += ` LIMIT ` + strconv.FormatInt(limit, 10)
	}
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("reading rows after revision %d from %s: %w", from, s.Database.Description, err)
	}
	defer rows.Close()
	var out []Row
	for rows.Next() {
		var r Row
		var lease, created, deleted, createRev, prevRev sql.NullInt64
		if err := rows.Scan(&r.ID, &r.Name, &created, &deleted, &createRev, &prevRev, &lease, &r.Value, &r.OldValue); err != nil {
			return nil, fmt.Errorf("reading a row of %s: %w", s.Database.Description, err)
		}
		r.Created, r.Deleted, r.CreateRevision, r.PrevRevision, r.Lease = created.Int64, deleted.Int64, createRev.Int64, prevRev.Int64, lease.Int64
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading rows of %s: %w", s.Database.Description, err)
	}
	return out, nil
}

// EachRow calls fn for every row with id > from, in id order, reading in
// batches through q.
func (s *Store) EachRow(ctx context.Context, q querier, from, batch int64, fn func(Row) error) error {
	for {
		rows, err := s.ReadRows(ctx, q, from, 0, batch)
		if err != nil {
			return err
		}
		for _, r := range rows {
			if err := fn(r); err != nil {
				return err
			}
		}
		if int64(len(rows)) < batch {
			return nil
		}
		from = rows[len(rows)-1].ID
	}
}

// KeyHashes digests every key of the store (see KeyHashes) in one read
// transaction.
func (s *Store) KeyHashes(ctx context.Context, batch int64) (map[string]KeyHash, error) {
	tx, err := s.ReadTx(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }()
	h := NewKeyHashes()
	if err := s.EachRow(ctx, tx, 0, batch, func(r Row) error { h.Add(r); return nil }); err != nil {
		return nil, err
	}
	return h.Sums(), nil
}

// Insert writes rows with their ids in one transaction.
func (s *Store) Insert(ctx context.Context, rows []Row) error {
	if len(rows) == 0 {
		return nil
	}
	if s.readOnly {
		return fmt.Errorf("%s is opened read-only", s.Database.Description)
	}
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("starting a write to %s: %w", s.Database.Description, err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := s.insert(ctx, tx, rows); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("committing rows up to revision %d to %s: %w", rows[len(rows)-1].ID, s.Database.Description, err)
	}
	return nil
}

// insertChunk bounds one statement's rows (9 placeholders each; SQLite
// allows 32,766 per statement).
const insertChunk = 500

func (s *Store) insert(ctx context.Context, q querier, rows []Row) error {
	for len(rows) > 0 {
		chunk := rows[:min(len(rows), insertChunk)]
		rows = rows[len(chunk):]
		var b strings.Builder
		b.WriteString(`INSERT INTO kine(` + columns + `) VALUES `)
		args := make([]any, 0, 9*len(chunk))
		for i, r := range chunk {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString("(")
			for j := range 9 {
				if j > 0 {
					b.WriteString(",")
				}
				b.WriteString(s.ph(len(args) + j + 1))
			}
			b.WriteString(")")
			args = append(args, r.ID, r.Name, r.Created, r.Deleted, r.CreateRevision, r.PrevRevision, r.Lease, nonNil(r.Value), nonNil(r.OldValue))
		}
		if _, err := q.ExecContext(ctx, b.String(), args...); err != nil {
			return fmt.Errorf("writing rows %d–%d to %s: %w", chunk[0].ID, chunk[len(chunk)-1].ID, s.Database.Description, err)
		}
	}
	return nil
}

// nonNil writes empty values as empty, not NULL: kine's own rows hold
// empty values, never NULL, except its gap fillers (which it never reads).
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// Wipe deletes every row of the target.
func (s *Store) Wipe(ctx context.Context) error {
	if s.readOnly {
		return fmt.Errorf("%s is opened read-only", s.Database.Description)
	}
	if _, err := s.DB.ExecContext(ctx, `DELETE FROM kine`); err != nil {
		return fmt.Errorf("deleting the rows of %s: %w", s.Database.Description, err)
	}
	return nil
}

// SetCounter makes the database hand out ids above last next: SQLite's
// sqlite_sequence, MySQL's AUTO_INCREMENT, PostgreSQL's sequence.
func (s *Store) SetCounter(ctx context.Context, q querier, last int64) error {
	var err error
	switch s.Database.Kind {
	case storage.KindSQLite:
		var res sql.Result
		res, err = q.ExecContext(ctx, `UPDATE sqlite_sequence SET seq = ? WHERE name = 'kine'`, last)
		if err == nil {
			if n, _ := res.RowsAffected(); n == 0 {
				_, err = q.ExecContext(ctx, `INSERT INTO sqlite_sequence(name, seq) VALUES ('kine', ?)`, last)
			}
		}
	case storage.KindPostgres:
		_, err = q.ExecContext(ctx, `SELECT setval(pg_get_serial_sequence('kine', 'id'), $1)`, last)
	default:
		_, err = q.ExecContext(ctx, `ALTER TABLE kine AUTO_INCREMENT = `+strconv.FormatInt(last+1, 10))
	}
	if err != nil {
		return fmt.Errorf("setting the revision counter of %s to %d: %w", s.Database.Description, last, err)
	}
	return nil
}
