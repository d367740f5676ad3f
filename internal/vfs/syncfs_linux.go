//go:build linux

package vfs

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// syncFS calls syncfs(2) on an fd of name: it flushes the written data and
// the metadata of every file and directory of the file system holding name.
func syncFS(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		f.Close()
		return fmt.Errorf("syncfs %s: %w", name, err)
	}
	return f.Close()
}
