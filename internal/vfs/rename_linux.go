//go:build linux

package vfs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// RenameNoReplace calls renameat2(2) with RENAME_NOREPLACE: one call,
// where os.Rename and a Stat before it take three (os.Rename looks the new
// name up again). A file system without the flag (EINVAL) or a kernel
// without renameat2 (ENOSYS) reports errors.ErrUnsupported.
func (osFS) RenameNoReplace(oldname, newname string) error {
	err := unix.Renameat2(unix.AT_FDCWD, oldname, unix.AT_FDCWD, newname, unix.RENAME_NOREPLACE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS):
		return errors.ErrUnsupported
	}
	return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
}
