//go:build unix

package storage

import (
	"errors"
	"os"
	"syscall"
)

// noFollow makes opening a lock file fail on a symlink.
const noFollow = syscall.O_NOFOLLOW

// flock takes a non-blocking flock on f; false when another open file
// holds a conflicting one.
func flock(f *os.File, exclusive bool) (bool, error) {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}
