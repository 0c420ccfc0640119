//go:build !unix

package storage

import "os"

const noFollow = 0

// flock is not available here: a SQLite store is not held.
func flock(*os.File, bool) (bool, error) { return true, nil }
