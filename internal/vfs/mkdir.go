package vfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Mkdirer is implemented by a file system that creates one directory in
// one call, telling whether it was there before (OS: mkdir(2)).
type Mkdirer interface {
	// Mkdir creates the directory name, whose parent must exist. It fails
	// with an error wrapping fs.ErrExist when name exists, and one
	// wrapping fs.ErrNotExist when its parent does not.
	Mkdir(name string) error
}

// Mkdir creates the directory name as Mkdirer says: in one call on a file
// system that implements Mkdirer, else with Stat and MkdirAll (so an
// error-injecting wrapper sees those). A directory Mkdir created is empty
// and new, which a caller that holds the ROOT lock may rely on: it need
// not list it or check names in it. Its entry is durable as MkdirAll's
// is (see the package doc: SyncDir of its parent, or SyncFS).
func Mkdir(fsys FS, name string) error {
	if m, ok := fsys.(Mkdirer); ok {
		return m.Mkdir(name)
	}
	if _, err := fsys.Stat(name); err == nil {
		return &fs.PathError{Op: "mkdir", Path: name, Err: fs.ErrExist}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if _, err := fsys.Stat(filepath.Dir(name)); err != nil {
		return err
	}
	return fsys.MkdirAll(name)
}

func (osFS) Mkdir(name string) error { return os.Mkdir(name, 0o755) }
