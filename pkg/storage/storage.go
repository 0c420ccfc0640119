package storage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/k3s-io/kine/pkg/drivers/generic"
	"github.com/k3s-io/kine/pkg/endpoint"
	kinetls "github.com/k3s-io/kine/pkg/tls"
	"k8s.io/klog/v2"
)

// maxUnixSocketPath keeps kine's socket path under the kernel's sun_path limit.
const maxUnixSocketPath = 100

// emulatedETCDVersion is the etcd version kine reports to the API server,
// which decides by it how to serve consistent reads (lists without
// resourceVersion, DeleteCollection, watch-list, the resource size
// estimator's key reads): from its watch cache once an etcd
// watch-progress request has confirmed the cache is current, or from
// storage when that request is not supported (etcd before 3.4.31 and
// 3.5.0–3.5.12; k8s.io/apiserver/pkg/storage/feature). kine v0.17.3 and
// later answer a progress request at once (v0.16.4 waited for a 100 ms
// tick and its poll loop's next turn, up to 1 s, so the plane reported
// 3.5.12 and read such lists from the database) and start watches at
// exactly the requested revision (v0.17.0–v0.17.2 could resend the
// events of a batch from before it). 3.6.11 is kine's own default.
const emulatedETCDVersion = "3.6.11"

// Backend is a running kine.
type Backend struct {
	// Endpoints are the etcd endpoints the API server stores into.
	Endpoints []string
	// Description names the database without credentials, for logs.
	Description string
}

// Start validates the data dir and the database, then starts kine serving
// on a private unix socket. kine stops when ctx is cancelled; cancel it
// only after the API server using it has stopped.
func Start(ctx context.Context, o *Options) (*Backend, error) {
	return start(ctx, o, "kine.sock", "")
}

// start runs kine for o's endpoint on the unix socket socketName in the
// data dir (or a private directory when that path is too long); resource
// names the --datastore-override it serves ("" for the main store).
func start(ctx context.Context, o *Options, socketName, resource string) (*Backend, error) {
	if o.DataDir == "" {
		return nil, fmt.Errorf("storage: no data directory set")
	}
	if err := EnsureWritableDir(o.DataDir); err != nil {
		return nil, err
	}
	installLogBridge()

	backendTLS := kinetls.Config{CAFile: o.CAFile, CertFile: o.CertFile, KeyFile: o.KeyFile}
	var kineEndpoint, description string
	var afterStart func(context.Context) error
	switch o.Kind() {
	case KindMySQL:
		cfg, err := o.mysqlConfig()
		if err != nil {
			return nil, err
		}
		if err := checkMySQL(ctx, cfg, backendTLS, o.SkipMySQLSafetyChecks); err != nil {
			return nil, err
		}
		description = fmt.Sprintf("mysql %s@%s/%s", cfg.User, cfg.Addr, cfg.DBName)
		holdDB, err := openMySQL(cfg, backendTLS, "")
		if err != nil {
			return nil, err
		}
		if err := holdMySQLShared(ctx, holdDB, cfg, description); err != nil {
			return nil, err
		}
		keepMark, err := o.recoverMySQL(ctx, cfg, backendTLS, markPath(o.DataDir, resource))
		if err != nil {
			return nil, err
		}
		kineEndpoint = sharedSchemePrefix + "mysql://" + cfg.FormatDSN()
		afterStart = func(ctx context.Context) error {
			if err := installOrderedIDsMySQL(ctx, cfg, backendTLS); err != nil {
				return err
			}
			return keepMark(ctx)
		}
	case KindPostgres:
		cfg, endpoint, err := o.postgresConfig()
		if err != nil {
			return nil, err
		}
		if err := checkPostgres(ctx, cfg, o.SkipMySQLSafetyChecks); err != nil {
			return nil, err
		}
		description = fmt.Sprintf("postgres %s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
		if err := holdPostgresShared(ctx, cfg, description); err != nil {
			return nil, err
		}
		kineEndpoint = sharedSchemePrefix + endpoint
		afterStart = func(ctx context.Context) error { return installOrderedIDs(ctx, cfg) }
	default:
		path := o.sqlitePath()
		if err := EnsureWritableDir(filepath.Dir(path)); err != nil {
			return nil, err
		}
		kineEndpoint = sharedSchemePrefix + o.sqliteEndpoint()
		description = "sqlite " + path
		release, err := holdFile(path+".lock", false, holderName("cellfed-apiserver"), description)
		if err != nil {
			return nil, err
		}
		context.AfterFunc(ctx, release)
	}

	socket, cleanup, err := socketPath(o.DataDir, socketName)
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, cleanup)
	etcd, err := endpoint.Listen(ctx, endpoint.Config{
		Listener: "unix://" + socket,
		Endpoint: kineEndpoint,
		ConnectionPoolConfig: generic.ConnectionPoolConfig{
			MaxIdle:     o.MaxIdleConns,
			MaxOpen:     o.MaxOpenConns,
			MaxLifetime: o.ConnMaxLifetime,
			MaxIdleTime: o.ConnMaxIdleTime,
		},
		BackendTLSConfig:    backendTLS,
		MetricsRegisterer:   metricsRegisterer{},
		NotifyInterval:      o.NotifyInterval,
		EmulatedETCDVersion: emulatedETCDVersion,
		CompactInterval:     o.CompactInterval,
		CompactTimeout:      o.CompactTimeout,
		CompactMinRetain:    o.CompactMinRetain,
		CompactBatchSize:    o.CompactBatchSize,
		PollBatchSize:       o.PollBatchSize,
		PollInterval:        o.PollInterval,
		GRPCServer:          newGRPCServer(o),
	})
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("starting kine on %s: %w", description, err)
	}
	// kine has created its table; nothing writes until the API server starts.
	if afterStart != nil {
		if err := afterStart(ctx); err != nil {
			cleanup()
			return nil, err
		}
	}
	klog.InfoS("Storage ready", "backend", description, "etcd", etcd.Endpoints)
	return &Backend{Endpoints: etcd.Endpoints, Description: description}, nil
}

// EnsureWritableDir creates dir if needed and proves a file can be written
// there, so a read-only data dir fails at start with a clear message.
func EnsureWritableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cannot create data directory %s: %w; choose another --data-dir or fix its permissions", dir, err)
	}
	f, err := os.CreateTemp(dir, ".write-test-")
	if err != nil {
		return fmt.Errorf("data directory %s is not writable: %w; choose another --data-dir or fix its permissions", dir, err)
	}
	name := f.Name()
	_ = f.Close()
	return os.Remove(name)
}

// socketPath returns kine's socket path: in the data dir when it fits the
// unix socket limit, otherwise in a private temporary directory, which
// cleanup removes.
func socketPath(dataDir, name string) (path string, cleanup func(), err error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return "", nil, fmt.Errorf("resolving data dir: %w", err)
	}
	p := filepath.Join(abs, name)
	if len(p) <= maxUnixSocketPath {
		return p, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "cellfed-kine-")
	if err != nil {
		return "", nil, fmt.Errorf("creating kine socket directory: %w", err)
	}
	return filepath.Join(dir, name), func() { _ = os.RemoveAll(dir) }, nil
}
