package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	kinetls "github.com/k3s-io/kine/pkg/tls"
	"k8s.io/klog/v2"
)

// A MySQL plane's database can change under it: a failover promotes a
// replica that may lack the last writes the old primary acknowledged
// (asynchronous replication, or semi-synchronous replication that fell
// back to asynchronous), and an operator may point the plane at another
// server. The new server then hands out again revisions that clients
// already hold for other writes, and a watch resumed from one of them
// silently skips what follows.
//
// So the plane keeps, in its data directory, the served mark: the
// database server it runs on and the newest revision it has seen there
// (written once a second). When it starts on another server, or on the
// same one behind its mark, it first moves the store's revision above
// every revision it may have served, by RevisionGap, and writes kine's
// compaction marker there: every resourceVersion a client holds is then
// compacted (410 Gone; client-go relists) and none is ahead of the store.
// The jump is recorded in the database (table cellfed_lineage), so the
// plane's other replicas, started on the same new server after it, do
// not jump again while it already serves. A plane that finds the server
// behind its connection changed while it runs exits, so that its restart
// takes the same path.

// servedMarkFile is the main store's served mark in the data directory
// (a --datastore-override's store has its own, see markPath).
const servedMarkFile = "served-revision.json"

// RevisionGap is how far above a revision the plane may have served a
// store starts after its server changed: the mark is written once a
// second, so revisions served since lie above it. Revisions are 64-bit: a
// million per failover costs nothing.
const RevisionGap = 1_000_000

// servedMark is what the plane last saw of its database.
type servedMark struct {
	// Server identifies the database server (see mysqlServerIdentity).
	Server string `json:"server"`
	// Revision is the store's newest revision then.
	Revision int64 `json:"revision"`
	// Time is when it was written.
	Time time.Time `json:"time"`
}

// markPath is the served mark's file for the store of a resource override
// (group/resource), or of the main store when resource is "".
func markPath(dataDir, resource string) string {
	if resource == "" {
		return filepath.Join(dataDir, servedMarkFile)
	}
	name := strings.NewReplacer("/", "_", ".", "_").Replace(resource)
	return filepath.Join(dataDir, strings.TrimSuffix(servedMarkFile, ".json")+"-"+name+".json")
}

func readServedMark(path string) (servedMark, bool, error) {
	var m servedMark
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return m, false, nil
	}
	if err != nil {
		return m, false, fmt.Errorf("reading the served mark: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, false, fmt.Errorf("the served mark %s is damaged (%v): move it away only if this plane never served clients from this data directory", path, err)
	}
	return m, true, nil
}

func writeServedMark(path string, m servedMark) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("writing the served mark: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing the served mark: %w", err)
	}
	return nil
}

// lineageState is what the plane finds at start.
type lineageState struct {
	mark    servedMark
	hasMark bool
	// server identifies the server the plane connects to now.
	server string
	// storeMax is the store's newest revision (0 when kine's table is
	// missing: hasTable false).
	storeMax int64
	hasTable bool
	// jumped is the highest revision a plane jumped to on this server
	// (0: never).
	jumped int64
}

// lineageDecision is what to do about it.
type lineageDecision struct {
	// jumpTo is the revision to move the store to (0: none).
	jumpTo int64
	// reason says why, for the log.
	reason string
	// refuse, when set, stops the plane.
	refuse error
}

// decideLineage is the start-up rule, a pure function of what was found.
func decideLineage(s lineageState, gap int64) lineageDecision {
	if !s.hasMark || s.mark.Revision == 0 {
		return lineageDecision{} // nothing served from this data directory yet
	}
	if s.jumped > s.mark.Revision {
		// A plane (another replica) already moved this server's store
		// above everything this one served.
		return lineageDecision{}
	}
	var reason string
	switch {
	case s.mark.Server != s.server:
		reason = fmt.Sprintf("the database server changed (was %s, now %s): a failover or a move may have lost writes this plane served", s.mark.Server, s.server)
	case s.storeMax < s.mark.Revision:
		reason = fmt.Sprintf("the store is at revision %d, behind revision %d this plane served: writes were lost or the database was restored", s.storeMax, s.mark.Revision)
	default:
		return lineageDecision{}
	}
	if !s.hasTable {
		return lineageDecision{refuse: fmt.Errorf("refusing to start: %s, and the database holds no kine table at all, so it is not a copy of the plane's data. Point --datastore-endpoint at the promoted replica of the plane's database; to start over on an empty database on purpose, remove %s from the data directory", reason, servedMarkFile)}
	}
	return lineageDecision{jumpTo: max(s.mark.Revision, s.storeMax) + max(gap, 1), reason: reason}
}

// mysqlServerIdentity names the server db is connected to: host, port,
// server_id and, on MySQL, server_uuid. A promoted replica differs from
// its old primary (replication requires distinct server ids).
func mysqlServerIdentity(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) (string, error) {
	rows, err := q.QueryContext(ctx, "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('hostname', 'port', 'server_id', 'server_uuid')")
	if err != nil {
		return "", fmt.Errorf("reading the MySQL server's identity: %w", err)
	}
	defer rows.Close()
	v := map[string]string{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return "", fmt.Errorf("reading the MySQL server's identity: %w", err)
		}
		v[strings.ToLower(name)] = value
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("reading the MySQL server's identity: %w", err)
	}
	id := fmt.Sprintf("%s:%s server_id=%s", v["hostname"], v["port"], v["server_id"])
	if u := v["server_uuid"]; u != "" {
		id += " server_uuid=" + u
	}
	return id, nil
}

const lineageTable = `CREATE TABLE IF NOT EXISTS cellfed_lineage (
	server VARCHAR(255) NOT NULL,
	revision BIGINT NOT NULL,
	reason VARCHAR(1024) NOT NULL,
	at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
	PRIMARY KEY (server, revision)
)`

// recoverMySQLLineage runs the start-up rule on db (the plane's MySQL
// database, kine not started) under a server-wide lock, so replicas
// starting together jump once, and writes the new mark.
func recoverMySQLLineage(ctx context.Context, db *sql.DB, mark string) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connecting to MySQL: %w", err)
	}
	defer conn.Close()
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK('cellfed_lineage', 60)").Scan(&got); err != nil || got.Int64 != 1 {
		return fmt.Errorf("taking the lineage lock on MySQL (another plane replica holds it for over 60 s?): %v", err)
	}
	defer func() { _, _ = conn.ExecContext(context.WithoutCancel(ctx), "SELECT RELEASE_LOCK('cellfed_lineage')") }()

	var s lineageState
	if s.mark, s.hasMark, err = readServedMark(mark); err != nil {
		return err
	}
	if s.server, err = mysqlServerIdentity(ctx, conn); err != nil {
		return err
	}
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'kine'").Scan(&n); err != nil {
		return fmt.Errorf("looking for kine's table: %w", err)
	}
	s.hasTable = n > 0
	if s.hasTable {
		var m sql.NullInt64
		if err := conn.QueryRowContext(ctx, "SELECT MAX(id) FROM kine").Scan(&m); err != nil {
			return fmt.Errorf("reading the store's revision: %w", err)
		}
		s.storeMax = m.Int64
	}
	if _, err := conn.ExecContext(ctx, lineageTable); err != nil {
		return fmt.Errorf("creating table cellfed_lineage: %w", err)
	}
	var j sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT MAX(revision) FROM cellfed_lineage WHERE server = ?", s.server).Scan(&j); err != nil {
		return fmt.Errorf("reading table cellfed_lineage: %w", err)
	}
	s.jumped = j.Int64

	d := decideLineage(s, RevisionGap)
	if d.refuse != nil {
		return d.refuse
	}
	rev := s.storeMax
	if d.jumpTo > 0 {
		if err := jumpMySQL(ctx, conn, s.server, d); err != nil {
			return err
		}
		klog.InfoS("Moved the store's revision above every revision this plane may have served; clients holding an older resourceVersion relist",
			"reason", d.reason, "from", s.storeMax, "to", d.jumpTo)
		rev = d.jumpTo
	}
	return writeServedMark(mark, servedMark{Server: s.server, Revision: rev, Time: time.Now()})
}

// jumpMySQL moves kine's compaction marker to d.jumpTo (the row's id
// moves the AUTO_INCREMENT counter past it) and records the jump.
func jumpMySQL(ctx context.Context, conn *sql.Conn, server string, d lineageDecision) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("moving the store's revision: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	// kine keeps one compaction marker; it would drop both of two.
	if _, err := tx.ExecContext(ctx, `DELETE FROM kine WHERE name = 'compact_rev_key'`); err != nil {
		return fmt.Errorf("moving the store's revision: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO kine(id, name, created, deleted, create_revision, prev_revision, lease, value, old_value)
		VALUES (?, 'compact_rev_key', 1, 0, 0, ?, 0, '', '')`, d.jumpTo, d.jumpTo); err != nil {
		return fmt.Errorf("moving the store's revision to %d: %w", d.jumpTo, err)
	}
	reason := d.reason
	if len(reason) > 1024 {
		reason = reason[:1024]
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO cellfed_lineage(server, revision, reason) VALUES (?, ?, ?)", server, d.jumpTo, reason); err != nil {
		return fmt.Errorf("recording the revision jump: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("moving the store's revision to %d: %w", d.jumpTo, err)
	}
	return nil
}

// keepServedMark writes the served mark once a second while ctx lasts,
// and ends the process when the server behind the connection changes
// (a failover behind a virtual address): the restart then moves the
// store's revision as the start-up rule says.
func keepServedMark(ctx context.Context, db *sql.DB, path string, exit func(error)) {
	defer db.Close()
	mark, _, err := readServedMark(path)
	if err != nil {
		klog.ErrorS(err, "Not keeping the served mark")
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		server, err := mysqlServerIdentity(qctx, db)
		var rev sql.NullInt64
		if err == nil {
			err = db.QueryRowContext(qctx, "SELECT MAX(id) FROM kine").Scan(&rev)
		}
		cancel()
		if err != nil {
			klog.V(2).InfoS("Reading the store's revision for the served mark", "err", err)
			continue
		}
		if server != mark.Server {
			exit(fmt.Errorf("the database server behind --datastore-endpoint changed (was %s, now %s): exiting, so that the restart moves the store's revision above what this plane served", mark.Server, server))
			return
		}
		if rev.Int64 <= mark.Revision {
			continue
		}
		mark = servedMark{Server: server, Revision: rev.Int64, Time: time.Now()}
		if err := writeServedMark(path, mark); err != nil {
			klog.ErrorS(err, "Keeping the served mark")
		}
	}
}

// recoverMySQL runs the start-up rule on the plane's MySQL database and
// returns what keeps the served mark once kine runs.
func (o *Options) recoverMySQL(ctx context.Context, cfg *mysql.Config, backendTLS kinetls.Config, mark string) (func(context.Context) error, error) {
	if err := ensureMySQLDatabase(ctx, cfg, backendTLS); err != nil {
		return nil, err
	}
	db, err := openMySQL(cfg, backendTLS, cfg.DBName)
	if err != nil {
		return nil, err
	}
	if err := recoverMySQLLineage(ctx, db, mark); err != nil {
		db.Close()
		return nil, err
	}
	return func(ctx context.Context) error {
		go keepServedMark(ctx, db, mark, func(err error) {
			klog.ErrorS(err, "Stopping the plane")
			klog.FlushAndExit(klog.ExitFlushTimeout, 1)
		})
		return nil
	}, nil
}
