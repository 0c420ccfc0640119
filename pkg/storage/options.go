// Package storage runs kine in-process and hands the API server an etcd
// endpoint backed by SQLite (the embedded default) or MySQL/MariaDB.
// It is the only package that knows which database sits under the plane.
package storage

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Backend kinds understood by Options.Endpoint.
const (
	KindSQLite   = "sqlite"
	KindMySQL    = "mysql"
	KindPostgres = "postgres"
)

// SQLitePragmas are appended to a sqlite endpoint that names no parameters:
// WAL so readers never block the writer, a 30 s busy timeout instead of
// instant SQLITE_BUSY errors, and immediate transactions so writers queue
// instead of deadlocking on lock upgrades.
const SQLitePragmas = "_journal_mode=WAL&_busy_timeout=30000&_synchronous=NORMAL&_txlock=immediate&_stmt_cache_size=20&cache=shared"

// MaxNotifyInterval bounds kine's progress-notification interval. The API
// server's watch cache of a resource nobody writes learns newer revisions
// (written to other resources) only from these notifications, and its
// freshness checks (the resource size estimator once a minute per resource,
// and consistent reads it serves) wait at most 3 s for them. kine v0.16.4
// sends one every interval plus up to 10 % jitter, after its poll loop
// (which turns at least every second) has caught up: interval ≤ 2 s keeps
// the answer under 3 s.
const MaxNotifyInterval = 2 * time.Second

// pollInterval is how often kine reads its table when nothing woke it.
// kine wakes its poll loop on its own writes with a send that is dropped
// while the loop is busy, so a write can wait for the next tick before
// its watch event and the watch caches' progress answers go out; a
// consistent list waits for that. kine's default of 1 s made the p99 of a
// consistent list after an idle second 629 ms (BenchmarkConsistentList-
// AfterIdle, SQLite); at 100 ms it costs ten indexed one-row reads a
// second on an idle plane.
const pollInterval = 100 * time.Millisecond

// Options configures the embedded kine. Every field has a working default
// from NewOptions; a zero Options is never passed to kine.
type Options struct {
	// Endpoint is "" (SQLite in DataDir), "sqlite://<path>[?params]" or
	// "mysql://user:pass@tcp(host:port)/db[?params]" (a go-sql-driver DSN).
	Endpoint string
	// DataDir holds the SQLite database and kine's unix socket. It is set
	// by the owner of the data dir (the API server), not by a flag.
	DataDir string

	// TLS towards the database (MySQL only).
	CAFile, CertFile, KeyFile string

	// Connection pool.
	MaxOpenConns    int
	MaxIdleConns    int
	ConnMaxLifetime time.Duration
	ConnMaxIdleTime time.Duration

	// MySQL DSN timeouts applied when the DSN does not set them, so that a
	// hung database fails requests instead of blocking them forever.
	DialTimeout  time.Duration
	ReadTimeout  time.Duration
	WriteTimeout time.Duration

	// kine tuning.
	NotifyInterval   time.Duration
	CompactInterval  time.Duration
	CompactTimeout   time.Duration
	CompactMinRetain int64
	CompactBatchSize int64
	PollBatchSize    int64
	PollInterval     time.Duration
	// ProgressRetryInterval repeats an unanswered watch progress request
	// to kine this often (see progressRetry); 0 turns it off.
	ProgressRetryInterval time.Duration

	// OverrideFlags are --datastore-override GROUP/RESOURCE=DSN: resources
	// stored on their own kine and database (see Overrides).
	OverrideFlags []string

	// SkipMySQLSafetyChecks starts on a MySQL or PostgreSQL server whose
	// settings are known to lose writes or watch events. Only for people
	// who know what they do.
	SkipMySQLSafetyChecks bool
}

// NewOptions returns the defaults the plane runs with.
func NewOptions() *Options {
	return &Options{
		MaxOpenConns:     0, // unlimited: capping it costs throughput (see shared/notes/kine.md)
		MaxIdleConns:     20,
		ConnMaxLifetime:  30 * time.Minute,
		ConnMaxIdleTime:  5 * time.Minute,
		DialTimeout:      5 * time.Second,
		ReadTimeout:      30 * time.Second,
		WriteTimeout:     30 * time.Second,
		NotifyInterval:   time.Second, // see MaxNotifyInterval
		CompactInterval:  0,           // the API server drives compaction (--etcd-compaction-interval)
		CompactTimeout:   5 * time.Second,
		CompactMinRetain: 1000,
		CompactBatchSize: 1000,
		PollBatchSize:    500,
		PollInterval:     pollInterval,
		// Off until it is shown not to provoke MariaDB 10.11's crash on
		// kine's poll query (two CI runs lost a MariaDB primary with it on).
		ProgressRetryInterval: 10 * time.Millisecond,
	}
}

// AddFlags registers the storage flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Endpoint, "datastore-endpoint", o.Endpoint,
		"Storage for the plane. Empty: embedded SQLite in --data-dir. Or sqlite:///path/state.db, mysql://user:pass@tcp(host:3306)/dbname (go-sql-driver DSN) or postgres://user:pass@host:5432/dbname?sslmode=verify-full; the database is created if missing.")
	fs.StringVar(&o.CAFile, "datastore-cafile", o.CAFile, "CA bundle that verifies the MySQL or PostgreSQL server's certificate (enables TLS).")
	fs.StringVar(&o.CertFile, "datastore-certfile", o.CertFile, "Client certificate presented to the MySQL or PostgreSQL server.")
	fs.StringVar(&o.KeyFile, "datastore-keyfile", o.KeyFile, "Key of --datastore-certfile.")
	fs.IntVar(&o.MaxOpenConns, "datastore-max-open-connections", o.MaxOpenConns, "Maximum open database connections (0 = unlimited).")
	fs.IntVar(&o.MaxIdleConns, "datastore-max-idle-connections", o.MaxIdleConns, "Maximum idle database connections.")
	fs.DurationVar(&o.ConnMaxLifetime, "datastore-connection-max-lifetime", o.ConnMaxLifetime, "Maximum time a database connection is reused.")
	fs.DurationVar(&o.ConnMaxIdleTime, "datastore-connection-max-idle-time", o.ConnMaxIdleTime, "Maximum time a database connection stays idle.")
	fs.DurationVar(&o.DialTimeout, "datastore-dial-timeout", o.DialTimeout, "MySQL connect timeout, applied when the DSN sets no timeout=.")
	fs.DurationVar(&o.ReadTimeout, "datastore-read-timeout", o.ReadTimeout, "MySQL read timeout, applied when the DSN sets no readTimeout=.")
	fs.DurationVar(&o.WriteTimeout, "datastore-write-timeout", o.WriteTimeout, "MySQL write timeout, applied when the DSN sets no writeTimeout=.")
	fs.DurationVar(&o.NotifyInterval, "datastore-notify-interval", o.NotifyInterval, "Interval of kine's watch progress notifications, which tell the API server's watch caches of resources nobody writes that storage has moved on. Must stay below 2s (see docs/operations.md).")
	fs.StringArrayVar(&o.OverrideFlags, "datastore-override", o.OverrideFlags,
		"GROUP/RESOURCE=DSN (repeatable): store this resource on its own kine and database, e.g. core.kubefed.io/propagatedversions=sqlite:///var/lib/cellfed/propagatedversions.db, core/events=mysql://user:pass@tcp(db:3306)/cellfed_events or coordination.k8s.io/leases=postgres://... Each database is checked as --datastore-endpoint is and must be used by no other resource. Backups must cover every database (see docs/operations.md).")
	fs.DurationVar(&o.ProgressRetryInterval, "datastore-progress-retry-interval", o.ProgressRetryInterval, "How often an unanswered watch progress request (the API server's check before it serves a consistent list from its cache) is repeated to kine, for up to 3 s; 0 leaves it to the API server, which asks every 100 ms (a list right after a write then waits up to 100 ms more). Each repeat is one read of the database's current revision.")
	fs.DurationVar(&o.PollInterval, "datastore-poll-interval", o.PollInterval, "How often kine reads the database for writes it did not make itself (other replicas of the plane on one database).")
	fs.Int64Var(&o.PollBatchSize, "datastore-poll-batch-size", o.PollBatchSize, "Rows kine reads per watch poll.")
	fs.BoolVar(&o.SkipMySQLSafetyChecks, "unsafe-skip-mysql-safety-checks", o.SkipMySQLSafetyChecks,
		"Start even if the MySQL server runs with innodb_autoinc_lock_mode=2 or innodb_snapshot_isolation=ON, which can lose watch events. Do not use in production.")
	fs.BoolVar(&o.SkipMySQLSafetyChecks, "unsafe-skip-database-safety-checks", o.SkipMySQLSafetyChecks,
		"Start even if the MySQL or PostgreSQL server runs with settings that can lose writes or watch events (see docs/operations.md). Do not use in production.")
}

// Kind reports which backend the endpoint selects.
func (o *Options) Kind() string {
	switch {
	case strings.HasPrefix(o.Endpoint, "mysql://"):
		return KindMySQL
	case strings.HasPrefix(o.Endpoint, "postgres://"), strings.HasPrefix(o.Endpoint, "postgresql://"):
		return KindPostgres
	}
	return KindSQLite
}

// Validate reports option errors, each saying how to fix it.
func (o *Options) Validate() []error {
	var errs []error
	switch {
	case o.Endpoint == "", strings.HasPrefix(o.Endpoint, "sqlite://"), o.Kind() != KindSQLite:
	default:
		scheme, _, _ := strings.Cut(o.Endpoint, "://")
		errs = append(errs, fmt.Errorf("--datastore-endpoint: unsupported scheme %q: use sqlite:///path/state.db, mysql://user:pass@tcp(host:3306)/db or postgres://user:pass@host:5432/db", scheme))
	}
	if o.NotifyInterval <= 0 || o.NotifyInterval > MaxNotifyInterval {
		errs = append(errs, fmt.Errorf("--datastore-notify-interval must be positive and at most %s, got %s: a longer interval makes the API server's watch caches time out waiting for revisions written to other resources (\"Too large resource version\")", MaxNotifyInterval, o.NotifyInterval))
	}
	if _, err := o.Overrides(); err != nil {
		errs = append(errs, err)
	}
	if o.PollInterval <= 0 {
		errs = append(errs, fmt.Errorf("--datastore-poll-interval must be positive, got %s", o.PollInterval))
	}
	if o.ProgressRetryInterval < 0 || o.ProgressRetryInterval >= 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("--datastore-progress-retry-interval must be 0 (off) or below the API server's 100 ms between progress requests, got %s", o.ProgressRetryInterval))
	}
	if o.PollBatchSize <= 0 {
		errs = append(errs, fmt.Errorf("--datastore-poll-batch-size must be positive, got %d", o.PollBatchSize))
	}
	if o.MaxOpenConns < 0 || o.MaxIdleConns < 0 {
		errs = append(errs, fmt.Errorf("database connection limits must not be negative"))
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		errs = append(errs, fmt.Errorf("--datastore-certfile and --datastore-keyfile must be given together"))
	}
	return errs
}

// sqliteEndpoint returns the kine endpoint for SQLite, with pragmas added
// when the user gave none.
func (o *Options) sqliteEndpoint() string {
	if o.Endpoint == "" {
		return "sqlite://" + filepath.Join(o.DataDir, "db", "state.db") + "?" + SQLitePragmas
	}
	if strings.Contains(o.Endpoint, "?") {
		return o.Endpoint
	}
	return o.Endpoint + "?" + SQLitePragmas
}

// sqlitePath is the database file of a SQLite endpoint.
func (o *Options) sqlitePath() string {
	p := strings.TrimPrefix(o.sqliteEndpoint(), "sqlite://")
	p, _, _ = strings.Cut(p, "?")
	return p
}
