package vfs

import (
	"errors"
	"io/fs"
)

// NoReplaceRenamer is implemented by a file system that renames a file
// without replacing an existing one in one atomic call (Linux:
// renameat2(2) with RENAME_NOREPLACE).
type NoReplaceRenamer interface {
	// RenameNoReplace renames oldname to newname, failing with an error
	// wrapping fs.ErrExist when newname exists. It fails with
	// errors.ErrUnsupported, and does nothing, where the file system
	// holding the names cannot (RenameNoReplace then falls back).
	RenameNoReplace(oldname, newname string) error
}

// RenameNoReplace renames oldname to newname unless newname exists (an
// error wrapping fs.ErrExist): in one call where the FS implements
// NoReplaceRenamer and the file system supports it, else with Stat and
// Rename (so an error-injecting wrapper sees those). The fallback's check
// and rename race with other writers of the directory: callers hold the
// ROOT lock.
func RenameNoReplace(fsys FS, oldname, newname string) error {
	if r, ok := fsys.(NoReplaceRenamer); ok {
		if err := r.RenameNoReplace(oldname, newname); !errors.Is(err, errors.ErrUnsupported) {
			return err
		}
	}
	if _, err := fsys.Stat(newname); err == nil {
		return &fs.PathError{Op: "rename", Path: newname, Err: fs.ErrExist}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return fsys.Rename(oldname, newname)
}
