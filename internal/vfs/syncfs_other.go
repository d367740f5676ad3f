//go:build !linux

package vfs

import (
	"os"
	"syscall"
)

// syncFS falls back to sync(2), which flushes every file system; the
// platforms without syncfs(2) have no narrower call that covers directory
// entries. name must still exist, as with syncfs.
func syncFS(name string) error {
	if _, err := os.Stat(name); err != nil {
		return err
	}
	syscall.Sync()
	return nil
}
