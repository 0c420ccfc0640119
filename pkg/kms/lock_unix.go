//go:build unix

package kms

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// lockDir takes an exclusive advisory lock on the key file's directory, so
// that concurrent AddKey and RemoveKey calls (from several processes) do
// not lose each other's changes: the file itself is replaced by rename, so
// a lock on it would not hold across the change.
func lockDir(dir string) (unlock func(), err error) {
	d, err := os.Open(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("the key file's directory %s does not exist; create a key file with `cellfed-kms generate`", dir)
		}
		return nil, fmt.Errorf("locking the key file's directory: %w", err)
	}
	if err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX); err != nil {
		d.Close()
		return nil, fmt.Errorf("locking the key file's directory %s: %w", dir, err)
	}
	return func() {
		_ = syscall.Flock(int(d.Fd()), syscall.LOCK_UN)
		d.Close()
	}, nil
}
