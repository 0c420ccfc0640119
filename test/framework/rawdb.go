package framework

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/stdlib"
	_ "github.com/mattn/go-sqlite3" // reads a plane's SQLite file directly
)

// RawRow is one row of kine's table as the database stores it.
type RawRow struct {
	ID      int64
	Name    string
	Value   []byte
	Deleted bool
}

// OpenRawDatabase opens the database under a plane, bypassing the API
// server: the SQLite file in dataDir when endpoint is empty, else the
// MySQL or PostgreSQL database of the --datastore-endpoint.
func OpenRawDatabase(t testing.TB, dataDir, endpoint string) *sql.DB {
	t.Helper()
	var db *sql.DB
	var err error
	switch {
	case endpoint == "":
		db, err = sql.Open("sqlite3", "file:"+filepath.Join(dataDir, "db", "state.db")+"?mode=ro&_busy_timeout=5000")
	case strings.HasPrefix(endpoint, "postgres://"):
		db, err = sql.Open("pgx", endpoint)
	default:
		cfg, perr := mysql.ParseDSN(strings.TrimPrefix(endpoint, "mysql://"))
		if perr != nil {
			t.Fatalf("parsing %s: %v", endpoint, perr)
		}
		db, err = sql.Open("mysql", cfg.FormatDSN())
	}
	if err != nil {
		t.Fatalf("opening the plane's database: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// RawRows returns every row (every revision, deleted or not) whose key
// starts with prefix.
func RawRows(t testing.TB, db *sql.DB, prefix string) []RawRow {
	t.Helper()
	q := `SELECT id, name, value, deleted FROM kine WHERE name LIKE ? ORDER BY id`
	if _, pg := db.Driver().(*stdlib.Driver); pg {
		q = strings.Replace(q, "?", "$1", 1)
	}
	rows, err := db.Query(q, prefix+"%")
	if err != nil {
		t.Fatalf("reading kine rows under %s: %v", prefix, err)
	}
	defer rows.Close()
	var out []RawRow
	for rows.Next() {
		var r RawRow
		if err := rows.Scan(&r.ID, &r.Name, &r.Value, &r.Deleted); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// MaxRawID is the newest row id: a start that writes nothing leaves it.
func MaxRawID(t testing.TB, db *sql.DB) int64 {
	t.Helper()
	var id sql.NullInt64
	if err := db.QueryRow(`SELECT MAX(id) FROM kine`).Scan(&id); err != nil {
		t.Fatalf("reading the newest kine row: %v", err)
	}
	return id.Int64
}

// LatestRawRows keeps the newest row of every key that is not deleted:
// what the API server reads now.
func LatestRawRows(rows []RawRow) map[string]RawRow {
	latest := map[string]RawRow{}
	for _, r := range rows { // ordered by id
		latest[r.Name] = r
	}
	for name, r := range latest {
		if r.Deleted {
			delete(latest, name)
		}
	}
	return latest
}
