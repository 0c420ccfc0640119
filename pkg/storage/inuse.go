package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A running plane holds every database it serves, and the data tools that
// must not run beside it (restore overwrites the store; migrate reads it
// whole and unchanged) take the database exclusively or refuse. Each hold
// is released by the operating system or the database server when its
// holder dies, so a SIGKILLed plane leaves nothing stale behind:
//
//   - SQLite: a flock on <database file>.lock (a plane's shared, a tool's
//     exclusive); the file names its last holder.
//   - PostgreSQL: a session-level advisory lock on the database (a plane's
//     shared, a tool's exclusive); pg_stat_activity names the holders.
//   - MySQL/MariaDB: named locks (GET_LOCK) held by one session each, so
//     every replica takes one of holdSlots plane names and a tool takes
//     them all; the process list names the holders.
//
// backup reads a consistent snapshot of a live store and split copies out
// of a live plane by design: neither takes a hold.

// holdKeepalive is how often a plane checks that its database session
// still holds its lock, and takes it again after the session was lost
// (the database restarted, the connection was cut).
const holdKeepalive = 30 * time.Second

// holdGrace is how long a data tool waits for a held store to be let go.
const holdGrace = 3 * time.Second

// holdSlots is how many plane replicas can hold one MySQL database.
const holdSlots = 32

// InUseError is returned by HoldExclusive when something holds the store.
type InUseError struct {
	// Database names the store without credentials.
	Database string
	// Holders say what holds it, as far as the database tells (process,
	// host, connection).
	Holders []string
}

func (e *InUseError) Error() string {
	who := "unknown holder"
	if len(e.Holders) > 0 {
		who = strings.Join(e.Holders, "; ")
	}
	return fmt.Sprintf("%s is in use by a running cellfed-apiserver (held by: %s); stop every cellfed-apiserver using this database (each replica of the plane, and any plane naming it in --datastore-override), then run again",
		e.Database, who)
}

// HoldExclusive takes d for a data tool (what, e.g. "cellfed-apiserver
// restore", names it to others) until release is called. It fails with an
// *InUseError when a plane (or another tool) holds d. While the tool holds
// it, a plane starting on d refuses to start.
//
// A plane that is stopping lets go of its store as it exits: a held store
// is tried again for up to holdGrace before the tool refuses.
func HoldExclusive(ctx context.Context, d Database, what string) (release func(), err error) {
	deadline := time.Now().Add(holdGrace)
	for {
		release, err = holdExclusive(ctx, d, what)
		var inUse *InUseError
		if !errors.As(err, &inUse) || time.Now().After(deadline) {
			return release, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func holdExclusive(ctx context.Context, d Database, what string) (release func(), err error) {
	who := holderName(what)
	switch d.Kind {
	case KindSQLite:
		if _, err := os.Stat(filepath.Dir(d.SQLitePath)); errors.Is(err, fs.ErrNotExist) {
			return func() {}, nil // a plane creates the directory before it holds the store
		}
		return holdFile(d.SQLitePath+".lock", true, who, d.Description)
	case KindMySQL:
		return holdMySQLExclusive(ctx, d, who)
	case KindPostgres:
		return holdPostgresExclusive(ctx, d, who)
	}
	return nil, fmt.Errorf("storage: unknown database kind %q", d.Kind)
}

// holderName is what a hold says about its holder: the program, its PID
// and host, and since when.
func holderName(what string) string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown host"
	}
	return fmt.Sprintf("%s pid %d on %s since %s", what, os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))
}

// errHeldByTool is the plane's refusal when a data tool holds its store.
func errHeldByTool(description string, holders []string) error {
	who := "a cellfed-apiserver restore or migrate"
	if len(holders) > 0 {
		who = strings.Join(holders, "; ")
	}
	return fmt.Errorf("refusing to start: %s is held by a data tool (%s); wait for it to finish or stop it, then start the plane again", description, who)
}

// holdFile takes a flock on path (creating it, 0600, never through a
// symlink) and writes who into it. Shared holds (planes) coexist; an
// exclusive one (a tool) excludes every other.
func holdFile(path string, exclusive bool, who, description string) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|noFollow, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the lock file of %s: %w", description, err)
	}
	locked, err := flock(f, exclusive)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	if !locked {
		b := make([]byte, 512)
		n, _ := f.ReadAt(b, 0)
		f.Close()
		var holders []string
		if s := strings.TrimSpace(string(b[:n])); s != "" {
			holders = []string{s}
		}
		if exclusive {
			return nil, &InUseError{Database: description, Holders: holders}
		}
		return nil, errHeldByTool(description, holders)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(who+"\n"), 0)
	}
	return func() { f.Close() }, nil // closing the file releases the flock
}
