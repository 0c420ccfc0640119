package storage

import (
	"bytes"
	"context"
	"fmt"

	"github.com/k3s-io/kine/pkg/server"
)

// checkedCreate is a kine backend that acknowledges a create only when the
// new row is in the database.
//
// kine v0.17.5's Create, when its insert fails, looks the key up; when that
// read works and finds no key, it returns revision 0 and no error, and
// kine's server answers the transaction as succeeded at its current
// revision. The API server then acknowledges an object that was never
// written, and no watch ever sees it. It takes an insert that fails while
// a read succeeds: a PostgreSQL backend that outlived its killed
// postmaster beside one that did not (seen in TestPlaneSurvivesDatabaseRestart),
// a MySQL deadlock or lock wait timeout, a full disk, a trigger. Each
// create is therefore read back at the revision it reports; a row that is
// not there, or not this create's, is an error, which the API server
// returns and its client retries. It costs one indexed read per create.
type checkedCreate struct {
	server.Backend
}

func (c checkedCreate) Create(ctx context.Context, key string, value []byte, lease int64) (int64, error) {
	var err error
	for range createTries {
		var rev int64
		rev, err = c.Backend.Create(ctx, key, value, lease)
		if err != nil {
			return rev, err
		}
		var kv *server.KeyValue
		if _, kv, err = c.Backend.Get(ctx, key, rev, false); err != nil {
			return 0, fmt.Errorf("create of %s: reading it back at revision %d: %w", key, rev, err)
		}
		if createdAt(kv, rev, value) {
			return rev, nil
		}
		// The insert failed and nothing was stored: a transient failure
		// (a busy or failing connection) is worth another try.
		err = fmt.Errorf("create of %s was not stored: kine reported revision %d without its row (an insert that failed); retry the request", key, rev)
	}
	return 0, err
}

// createTries bounds the creates tried when kine reports one it did not
// store.
const createTries = 3

// createdAt reports whether kv, read at rev, is the row a create that
// reported rev wrote.
func createdAt(kv *server.KeyValue, rev int64, value []byte) bool {
	return kv != nil && kv.ModRevision == rev && kv.CreateRevision == rev && bytes.Equal(kv.Value, value)
}
